"""Every question as a page: ``/ask/{question}``, with its subject and parameters in the query string.

The questions that have a page of their own (a snapshot, an object, a type, a comparison) are shown
there; the others had only the CLI, REST and MCP: lifelines, heapdomstats, the suspects with their
accumulation points, the inspections, the CI gate's verdict, the leak signatures and one signature's
history. This page is generated from their declarations (:mod:`heapdb.registry`) as the CLI's
commands and the REST routes are: a GET form of the question's subject and parameters (defaults,
choices and help from :mod:`heapdb.queries.params`), and the answer as the text the CLI prints for
it, each ``@id`` a link to its object's page where the subject is one snapshot. One signature's
history also has its retained bytes drawn build by build. The JSON twin answers what the REST
route answers.

A field left empty is "not given", since a browser sends every field of a form.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from markupsafe import Markup, escape

from heapdb.errors import NotFound, ParameterError
from heapdb.queries.params import field_shape
from heapdb.queries.questions import Questions
from heapdb.queries.results import SignatureHistory
from heapdb.registry import BY_NAME, Part, Question
from heapdb.renderers import charts
from heapdb.service import links
from heapdb.service.pages import add_page, object_page, respond, templates, wants_json

ASK = links.ASK_PAGE
TAG_FIELDS = 3  # empty fields offered for a list of tags (growth asks for three or more)
_OBJECT_ID = re.compile(r"@(-?\d+)\b")


def ask_page(question: str, **values: Any) -> str:
    """The page of ``question`` with these subject parts and parameters (lists repeat their key)."""
    query = {k: v for k, v in values.items() if v is not None and v != "" and v != []}
    base = links.page_path(ASK, question=question)
    return f"{base}?{urlencode(query, doseq=True)}" if query else base


templates.globals.update(ask_page=ask_page)


@dataclass(frozen=True)
class Field:
    """One input of a question's form."""

    name: str
    label: str
    hint: str
    values: list[str]  # as sent (a list of tags has several)
    choices: list[str] | None  # a select's options ("" first where "not given" is one)
    required: bool
    repeated: bool = False


def _given(request: Request, name: str) -> list[str]:
    return [v for v in request.query_params.getlist(name) if v != ""]


def _part_field(part: Part, request: Request) -> Field:
    values = _given(request, part.rest_name)
    if part.kind == "tags":
        values = values + [""] * max(TAG_FIELDS - len(values), 1)
    return Field(
        part.rest_name,
        part.rest_name,
        part.description,
        values or [""],
        None,
        required=part.kind != "since" and not part.optional,
        repeated=part.kind == "tags",
    )


def _param_field(name: str, info: Any, request: Request) -> Field:
    shape = field_shape(info)
    choices = (
        list(shape.choices) if shape.choices is not None else ["true", "false"] if shape.annotation is bool else None
    )
    default = info.get_default() if not info.is_required() else None
    shown = "" if default in (None, ()) else str(default).lower() if isinstance(default, bool) else str(default)
    if choices is not None and default is None:
        choices = ["", *choices]
    hint = info.description or ""
    return Field(
        name,
        name,
        hint + (f" (default {shown})" if shown else ""),
        _given(request, name) or [shown],
        choices,
        required=info.is_required(),
        repeated=shape.repeated,
    )


def _subject(question: Question, request: Request) -> list[Any] | None:
    """The subject's values from the query, or None while a required one is missing."""
    found: list[Any] = []
    for part in question.subject.parts:
        given = _given(request, part.rest_name)
        if part.kind == "tags":
            found.append(given)
            if not given and not (part.optional and request.query_params):
                return None
        elif part.kind == "since":
            found.append(given[-1] if given else None)
        elif not given:
            return None
        elif part.kind in ("object", "signature", "run"):
            try:
                found.append(int(given[-1]))
            except ValueError:
                raise ParameterError(f"{part.rest_name}: expected a whole number, got {given[-1][:40]!r}") from None
        else:
            found.append(given[-1])
    return found


def _linked(text: str, tag: str | None) -> Markup:
    """The answer's text, escaped, each ``@id`` a link to that object in ``tag``."""
    safe = str(escape(text))
    if tag is None:
        return Markup(safe)
    return Markup(_OBJECT_ID.sub(lambda m: f'<a href="{escape(object_page(tag, int(m[1])))}">@{m[1]}</a>', safe))


def _history_chart(answer: SignatureHistory) -> Markup | None:
    seen = answer.observations
    if len(seen) < 2:
        return None
    return charts.trend_svg([o.build for o in seen], [("retained", [o.retained_size for o in seen])], "Retained size")


def add_question_pages(app: FastAPI, questions: Callable[[], Questions]) -> None:
    """``/ask/{question}`` and its JSON twin on ``app`` (not in the OpenAPI description)."""

    def ask(request: Request, name: str, twin: bool) -> Response:
        question = BY_NAME.get(name)
        if question is None:
            raise NotFound(f"no question {name!r}: the questions are {', '.join(sorted(BY_NAME))}")
        model = question.model
        values = {}
        if model is not None:
            for field, info in model.model_fields.items():
                given = _given(request, field)
                if given:
                    values[field] = tuple(given) if field_shape(info).repeated else given[-1]
        subject = _subject(question, request)
        answer = None
        required = [] if model is None else [f for f, info in model.model_fields.items() if info.is_required()]
        if subject is not None and all(f in values for f in required):
            p = None if model is None else model(**values)
            answer = question.answer(questions(), subject, p)
        if wants_json(request, twin):
            if answer is None:
                missing = [
                    part.rest_name for part in question.subject.parts if part.kind != "since" and not part.optional
                ]
                missing += [f for f in required if f not in values]
                raise ParameterError(f"{question.name} needs {', '.join(missing)} in the query")
            return JSONResponse(links.to_json(answer))  # what the question's REST route answers
        fields = [_part_field(part, request) for part in question.subject.parts]
        if model is not None:
            fields += [_param_field(field, info, request) for field, info in model.model_fields.items()]
        one_tag = subject[0] if subject and question.subject.kind in ("snapshot", "object") else None
        data = {
            "question": question,
            "fields": fields,
            "answer": answer,
            "text": None if answer is None else _linked(question.render_text(answer), one_tag),
            "chart": _history_chart(answer) if isinstance(answer, SignatureHistory) else None,
            "snapshot": {"tag": one_tag} if one_tag else None,
            "others": sorted(BY_NAME),
        }
        return respond(request, "ask.html", data, twin)

    add_page(app, ASK, lambda request, twin, question: ask(request, question, twin))
