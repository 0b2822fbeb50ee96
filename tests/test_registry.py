"""Every question is declared once (heapdb.registry) and offered by all four front ends from that
declaration: a command, a line of `heapdb --help`, a REST route documenting its answer, an MCP tool;
each with the same summary."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from heapdb.cli import COMMANDS, QUESTION_MODULE, main
from heapdb.queries import params
from heapdb.registry import QUESTIONS, Question
from heapdb.service import question_routes, schemas
from heapdb.service.app import create_app
from heapdb.service.mcp import build_server

# MCP tools that are not questions: the snapshot list, the stored queries, the pages of an answer.
OTHER_TOOLS = {"snapshots", "queries", "query", "page"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app(connect=lambda: None).openapi()  # type: ignore[arg-type,return-value]


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    listed = asyncio.run(build_server(connect=lambda: None).list_tools())  # type: ignore[arg-type,return-value]
    return {tool.name: tool.description or "" for tool in listed}


def test_every_name_resolves() -> None:
    """The method, parameter model, renderer and result each declaration names exist and agree."""
    assert len({q.name for q in QUESTIONS}) == len(QUESTIONS)
    for q in QUESTIONS:
        method = q.method
        takes = [p for p in inspect.signature(method).parameters if p != "self"]
        assert len(takes) >= len(q.subject.parts) + (q.model is not None), q.name
        assert q.model is None or issubclass(q.model, params.Params), q.name
        assert callable(q.render_text), q.name
        assert schemas.json_type(q.result) is not None, q.name


def test_every_parameter_model_belongs_to_a_question() -> None:
    models = {cls for cls in vars(params).values() if isinstance(cls, type) and issubclass(cls, params.Params)}
    assert models - {params.Params} == {q.model for q in QUESTIONS if q.model is not None}


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.name)
def test_a_command_and_a_help_line(q: Question) -> None:
    assert COMMANDS[q.name] == (QUESTION_MODULE, q.summary)
    command = main.commands[q.name]
    assert command.help is not None and command.help.split("\n\n")[0] == q.summary


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.name)
def test_a_route_with_its_answer_documented(q: Question, openapi: dict[str, Any]) -> None:
    # The spec names path parameters without their converters ({tag}, not {tag:segment}).
    path = question_routes.path(q).replace(":segment", "")
    route = openapi["paths"][path]["get"]
    assert route["summary"] == q.summary
    documented = route["responses"]["200"]["content"]["application/json"]["schema"]
    assert documented, f"{path} documents no answer"
    for read in q.reads:
        assert str(question_routes.ERRORS[read][0]) in route["responses"], (q.name, read)


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q.name)
def test_a_tool(q: Question, tools: dict[str, str]) -> None:
    assert tools[q.tool_name].startswith(q.summary)


def test_no_front_end_has_a_question_the_registry_lacks(openapi: dict[str, Any], tools: dict[str, str]) -> None:
    assert set(tools) - OTHER_TOOLS == {q.tool_name for q in QUESTIONS}
    commands = {name for name, (module, _) in COMMANDS.items() if module == QUESTION_MODULE}
    assert commands == {q.name for q in QUESTIONS}


def test_object_references_are_documented_as_permalinks(openapi: dict[str, Any]) -> None:
    """A leak cluster's `why` is sent as a why-alive path, and the schema says so."""
    cluster = openapi["components"]["schemas"]["LeakCluster"]["properties"]["why"]
    assert cluster["type"] == "string" and "/why" in cluster["description"]
