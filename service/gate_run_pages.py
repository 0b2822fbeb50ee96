"""The CI gate's recorded runs as pages: ``/gate-runs`` lists them newest first, a page at a time
(``?candidate=TAG`` for one candidate's runs), and ``/gate-runs/{run_id}`` shows one run as it was
decided: the verdict, the thresholds and where each came from, the findings that failed it (each
linked to its leak signature's history and its sample object), the others, known leaks apart, and
the notes. Each page's JSON twin is the REST route's answer (``/api/gate-runs``,
``/api/gate-runs/{id}``). A run's snapshots may have been dropped since: their names then link
nowhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.renderers.ci_report import KIND_WORDS
from heapdb.service import links
from heapdb.service.pages import add_page, query_values, respond, templates, wants_json

RUNS = links.GATE_RUNS_PAGE
RUN = links.GATE_RUN_PAGE


def gate_runs_page(**query: Any) -> str:
    """The runs' page with this query (``candidate``, ``offset``, ``limit``; None and defaults left out)."""
    defaults = params.GateRuns()
    kept = {k: v for k, v in query.items() if v is not None and v != getattr(defaults, k)}
    return f"{RUNS}?{urlencode(kept)}" if kept else RUNS


def gate_run_page(run_id: int) -> str:
    return links.page_path(RUN, run_id=run_id)


templates.globals.update(gate_runs_page=gate_runs_page, gate_run_page=gate_run_page, finding_kinds=KIND_WORDS)


def add_gate_run_pages(app: FastAPI, questions: Callable[[], Questions]) -> None:
    """The gate runs' pages on ``app``, twins first (not in the OpenAPI description)."""

    def every(request: Request, twin: bool) -> Response:
        view = params.GateRuns(**query_values(request, params.GateRuns))
        answer = questions().gate_runs(view)
        if wants_json(request, twin):
            return JSONResponse(links.to_json(answer))
        return respond(request, "gate_runs.html", {"gate_runs": answer, "view": view}, twin)

    def one(request: Request, run_id: int, twin: bool) -> Response:
        ask = questions()
        run = ask.gate_run(run_id)
        if wants_json(request, twin):
            return JSONResponse(links.to_json(run))
        loaded = {s.tag for s in ask.snapshots()} & {run.baseline, run.candidate}
        return respond(request, "gate_run.html", {"run": run, "loaded": loaded}, twin)

    add_page(app, RUNS, every)
    add_page(app, RUN, one)
