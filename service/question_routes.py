"""The questions' REST routes, generated from their declarations in :mod:`heapdb.registry`.

A route's path is its subject's base path (:data:`BASES`) and the question's own ``route``; its
path and query parameters are the subject's parts, then the fields of the question's parameter
model (each a query key, with the declared default, bounds and help), then ``format`` where the
answer has drawings. Each route documents its answer with a model derived from the result type
(:mod:`heapdb.service.schemas`) and sends :func:`heapdb.service.links.to_json` of it, object
references as why-alive permalinks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Response
from fastapi import Path as FastAPIPath
from fastapi.responses import JSONResponse

from heapdb.errors import NotFound, ParameterError
from heapdb.queries import results
from heapdb.queries.questions import Questions
from heapdb.registry import QUESTIONS, Part, Question
from heapdb.renderers import drawing, text
from heapdb.service import links, schemas

# Where each kind of subject's routes hang; a question's ``route`` follows.
BASES = {
    "snapshot": links.SNAPSHOT,
    "object": links.OBJECT,
    "two snapshots": links.DIFF,
    "signature": links.SIGNATURE,
    "gate run": links.GATE_RUN,
}
OTHER_BASE = links.API

GRAPH_MEDIA = {"json": "application/json", "dot": "text/vnd.graphviz; charset=utf-8", "svg": "image/svg+xml"}
DRAWINGS: dict[str | None, tuple[str, ...]] = {"graph": ("json", "dot", "svg"), "flame": ("json", "svg"), None: ()}
FORMAT_HELP = {"graph": "json, or a drawing: GraphViz dot or SVG", "flame": "json, or with by=path an SVG flame graph"}
MAX_ID = 2**63 - 1  # ids are 64-bit in Neo4j: a wider number is a 422 here, not an overflow in the driver
ERRORS = {
    "objects": (410, "The snapshot was pruned to its summaries: its objects are gone (`heapdb prune`)."),
    "references": (409, "A load is still writing the snapshot's references: ask again soon."),
}


def path(question: Question) -> str:
    return BASES.get(question.subject.kind, OTHER_BASE) + question.route


def _annotation(part: Part, in_path: bool) -> tuple[Any, Any]:
    """A subject part's annotation as a route parameter, and its default."""
    where: Any = FastAPIPath if in_path else Query
    if part.kind == "object":
        return Annotated[
            int, FastAPIPath(ge=-MAX_ID - 1, le=MAX_ID, description=part.description)
        ], inspect.Parameter.empty
    if part.kind == "signature":
        return Annotated[int, FastAPIPath(ge=0, le=MAX_ID, description=part.description)], inspect.Parameter.empty
    if part.kind == "run":
        return Annotated[int, FastAPIPath(ge=1, le=MAX_ID, description=part.description)], inspect.Parameter.empty
    if part.kind == "tags":
        annotation = Annotated[list[str], Query(description=part.description + " Repeat the key.")]
        return annotation, [] if part.optional else inspect.Parameter.empty
    if part.kind == "since":
        return Annotated[str | None, Query(min_length=1, description=part.description)], None
    bounds = {} if in_path else {"min_length": 1}
    return Annotated[str, where(description=part.description, **bounds)], inspect.Parameter.empty


def _signature(question: Question, route: str) -> inspect.Signature:
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = []
    for part in question.subject.parts:
        annotation, default = _annotation(part, "{" + part.rest_name in route)
        parameters.append(inspect.Parameter(part.rest_name, keyword, annotation=annotation, default=default))
    if question.model is not None:
        parameters.append(inspect.Parameter("p", keyword, annotation=Annotated[question.model, Query()]))
    formats = DRAWINGS[question.drawings]
    if formats:
        chosen = Annotated[Literal[formats], Query(description=FORMAT_HELP[question.drawings or ""])]  # type: ignore[valid-type]
        parameters.append(inspect.Parameter("format", keyword, annotation=chosen, default="json"))
    return inspect.Signature(parameters)


def _respond(question: Question, answer: Any, fmt: str, p: Any, subject: list[Any]) -> Response:
    if question.drawings == "flame" and fmt == "svg":
        assert isinstance(answer, results.Diff)
        flame = text.growth_flamegraph(answer)
        if flame is None:
            before, after = subject
            raise NotFound(f"nothing grew from {before} to {after}: there is no flame graph to draw")
        return Response(flame, media_type=GRAPH_MEDIA["svg"])
    if fmt == "dot":
        return Response(drawing.dot(answer), media_type=GRAPH_MEDIA["dot"])
    if fmt == "svg":
        return Response(drawing.svg(answer), media_type=GRAPH_MEDIA["svg"])
    return JSONResponse(links.to_json(answer))


def add_question_route(app: FastAPI, question: Question, questions: Callable[[], Questions]) -> None:
    route = path(question)
    names = [part.rest_name for part in question.subject.parts]

    def endpoint(**values: Any) -> Response:
        subject = [values.pop(name) for name in names]
        p, fmt = values.pop("p", None), values.pop("format", "json")
        if question.drawings == "flame" and fmt == "svg" and p.by != "path":
            raise ParameterError("format=svg draws retainer paths: use it with by=path")
        return _respond(question, question.answer(questions(), subject, p), fmt, p, subject)

    endpoint.__name__ = question.name
    endpoint.__signature__ = _signature(question, route)  # type: ignore[attr-defined]
    formats = DRAWINGS[question.drawings]
    responses: dict[int | str, dict[str, Any]] = {}
    if formats:
        responses[200] = {"content": {GRAPH_MEDIA[f]: {} for f in formats}}
    for needed in question.reads:
        status, description = ERRORS[needed]
        responses[status] = {"model": schemas.ErrorBody, "description": description}
    app.get(
        route,
        summary=question.summary,
        response_model=schemas.json_type(question.result),
        responses=responses,
    )(endpoint)


def add_question_routes(app: FastAPI, questions: Callable[[], Questions]) -> None:
    """Every question's route on ``app``, asked of ``questions()``."""
    for question in QUESTIONS:
        add_question_route(app, question, questions)
