"""Tokens per team (``heapdb tokens``, ``HEAPDB_SCOPED_TOKENS``) against the OWASP API Top 10's
authorization cases, on every route of the service, every MCP tool and the CLI.

Two teams' snapshots are loaded (tiny synthetic heaps, team B's types renamed so that its leak
signatures are its own), each team's gate run recorded, and a load job of each made. Then:

- object level (BOLA): every route that names a snapshot (in its path, its query or by an id that
  belongs to one: a load job, a gate run, a leak signature) is asked with team A's token about team
  A's (not 401, 403 or 404, and nothing of team B in the answer) and about team B's, which must
  answer exactly what an unknown one of team A answers (404 where a snapshot is named); every list
  leaves team B out. :data:`ROUTES` classifies every route of the app: a new route fails
  :func:`test_every_route_is_classified` until it says how it names snapshots, and is then checked.
- function level (BFLA): every write route is refused (403) to the environment's read token and to
  scoped tokens, but the uploads and cancels a write token's patterns cover.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, cast

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from heapdb import settings
from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader import analysis, store
from heapdb.loader.store import tokens
from heapdb.queries import catalog, params
from heapdb.queries.questions import Questions
from heapdb.registry import QUESTIONS, Question
from heapdb.scopes import Scope
from heapdb.service import access, jobs, links
from heapdb.service.app import create_app
from heapdb.service.question_routes import path as question_path
from heapgen.synth import synth_graph
from tests.support.serving import served

TEAM = uuid.uuid4().hex[:6]
A, B = f"{TEAM}-a", f"{TEAM}-b"
READ, WRITE = f"read-{uuid.uuid4().hex}", f"write-{uuid.uuid4().hex}"  # the environment's tokens


@dataclasses.dataclass(frozen=True)
class World:
    """What a request names: three tags (oldest first), an object and a type of the first, a gate
    run, a leak signature and a load job."""

    tags: tuple[str, str, str]
    object_id: int
    type_name: str
    run_id: int
    sig: int
    job_id: str

    def naming(self, position: int, tag: str) -> World:
        changed = list(self.tags)
        changed[position] = tag
        return dataclasses.replace(self, tags=(changed[0], changed[1], changed[2]))


@dataclasses.dataclass(frozen=True)
class Setup:
    own: World  # team A's
    theirs: World  # team B's: its tag, object, run, signature and job
    unknown: World  # what exists nowhere (team B's tag that is not there)
    a_tags: tuple[str, str]
    b_tags: tuple[str, str]
    reader: str  # team A's read token
    writer: str  # team A's write token


def _load(database: Database, tag: str, seed: int, objects: int, team_b: bool) -> None:
    graph = synth_graph(objects, objects * 4, seed=seed)
    if team_b:  # its own types, so that its retainer paths (leak signatures) are its own
        graph = dataclasses.replace(graph, strings=["B" + s if s.startswith("Type") else s for s in graph.strings])
    store.load(database, store.LoadInput.from_analysis(graph, analysis.analyze(graph)), tag)


def _done_job(database: Database, tag: str) -> str:
    """A finished load job of ``tag`` (a queued one would count against other tests' queue)."""
    job = jobs.new_job(uuid.uuid4().hex[:16], tag, replace=False, size=1, fmt="v8", meta={})
    jobs.JobStore(lambda: database).create(dataclasses.replace(job, phase="done"))
    return job.id


@pytest.fixture(scope="module")
def setup(database: Database) -> Setup:
    a_tags, b_tags = (f"{A}/x1", f"{A}/x2"), (f"{B}/y1", f"{B}/y2")
    for team_b, pair in ((False, a_tags), (True, b_tags)):
        for i, tag in enumerate(pair):
            _load(database, tag, seed=i, objects=300 * (i + 1), team_b=team_b)
    ask = Questions(database, timeout=60)
    gate = params.Gate(min_bytes=256, max_growth="1")  # noise: 32 bytes, so absent is absent
    runs, sigs = [], []
    for pair, types in ((a_tags, "→ Type"), (b_tags, "→ BType")):
        report = ask.gate(pair[0], pair[1], gate)
        runs.append(ask.record_gate(report).id)
        sigs.append(next(f.signature for f in report.findings if f.signature is not None and types in f.path))

    def world(tag: str, run: int, sig: int, job: str) -> World:
        found = ask.snapshot(tag)
        type_name = next(t.type for t in ask.types(found, params.Types()) if "Type" in t.type)
        return World((tag, a_tags[1], a_tags[0]), found.root_id or 0, type_name, run, sig, job)

    own = world(a_tags[0], runs[0], sigs[0], _done_job(database, a_tags[0]))
    theirs = world(b_tags[0], runs[1], sigs[1], _done_job(database, b_tags[0]))
    unknown = dataclasses.replace(
        theirs, tags=(f"{B}/missing", *theirs.tags[1:]), run_id=10**12, sig=12345, job_id="0" * 16
    )
    _, reader = tokens.create_token(database, "team A, reading", [f"{A}/*"], [])
    _, writer = tokens.create_token(database, "team A, writing", [], [f"{A}/*"])
    return Setup(own, theirs, unknown, a_tags, b_tags, reader, writer)


@pytest.fixture(scope="module")
def app() -> Iterator[FastAPI]:
    """The service with scoped tokens on (it connects to Neo4j on its first request)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(settings.SCOPED_TOKENS.name, "1")
        env.setenv(settings.API_TOKEN.name, READ)
        env.setenv(settings.API_WRITE_TOKEN.name, WRITE)
        yield create_app(timeout=60)


def client(app: FastAPI, token: str) -> TestClient:
    return TestClient(app, headers={"Authorization": f"Bearer {token}"}, raise_server_exceptions=False)


# --- how each route names snapshots ----------------------------------------------------------------

Request = tuple[str, dict[str, Any]]  # a path, its query


def _parts(question: Question, w: World) -> dict[str, Any]:
    """A question's subject in ``w``: its tags in order, then its ids."""
    tags = iter(w.tags)
    values: dict[str, Any] = {}
    for part in question.subject.parts:
        values[part.rest_name] = {
            "tag": lambda: next(tags),
            "tags": lambda: list(w.tags),
            "object": lambda: w.object_id,
            "signature": lambda: w.sig,
            "run": lambda: w.run_id,
            "since": lambda: w.tags[0],
        }[part.kind]()
    required = {"type": w.type_name, "text": "Type"}  # find, instances, lifelines, search
    if question.model is not None:
        values |= {n: required[n] for n in question.model.model_fields if n in required}
    return values


def _split(template: str, values: dict[str, Any]) -> Request:
    """``values`` as the template's path values and the rest as the query."""
    in_path = {k: v for k, v in values.items() if "{" + k in template}
    return links.path(template, **in_path), {k: v for k, v in values.items() if k not in in_path}


def _question_route(question: Question) -> Callable[[World], list[Request]]:
    return lambda w: [_split(question_path(question), _parts(question, w))]


def _stored(name: str, w: World) -> dict[str, Any]:
    """A stored query's required parameters in ``w``."""
    tags = iter(w.tags)
    values: dict[str, Any] = {}
    for p in catalog.get(name).parameters:
        if p.name == "tags":
            values[p.name] = list(w.tags)
        elif p.name in catalog.SNAPSHOT_PARAMETERS:
            values[p.name] = next(tags) if p.required else None
        elif p.required:
            values[p.name] = {"id": w.object_id, "ids": [w.object_id], "type": w.type_name, "sig": w.sig}.get(
                p.name, [w.sig] if p.type == "list<int>" else 1 if p.type == "int" else "x"
            )
    return {k: v for k, v in values.items() if v is not None}


PER_SNAPSHOT = [q.name for q in catalog.catalog().values() if q.per_snapshot]
# Neo4j plans a stored query the first time it runs (about a second each here): a few show that a
# team's own tags pass; every one is checked with another team's, refused before Neo4j is asked.
OWN_QUERIES = [links.path(links.QUERY, name=n) for n in ("snapshot", "top", "growth-types", "instances")]
ACROSS = [q.name for q in catalog.catalog().values() if not q.per_snapshot]


def _fill(template: str, **values: Any) -> str:
    """A page's path, or its twin's (whose ``.json`` is the template's, not a segment's)."""
    twin = template.endswith(links.JSON_SUFFIX)
    return links.path(template, **values) if twin else links.page_path(template, **values)


def _each_question(template: str) -> Callable[[World], list[Request]]:
    # A question about no snapshot names none in its subject (type-history's type is a type's name).
    return lambda w: [(_fill(template, question=q.name), _parts(q, w)) for q in QUESTIONS if q.subject.parts]


def _one(template: str, **fixed: Any) -> Callable[[World], list[Request]]:
    """A page or route of one snapshot (and object, type, run) of ``w``, its query ``fixed``."""

    def requests(w: World) -> list[Request]:
        values = {"tag": w.tags[0], "object_id": w.object_id, "type": w.type_name, "run_id": w.run_id}
        return [(_fill(template, **values), dict(fixed))]

    return requests


def _pages(page: str, build: Callable[[str], Callable[[World], list[Request]]]) -> dict[str, Any]:
    return {page: build(page), links.twin_of(page): build(links.twin_of(page))}


# Routes that name snapshots: what to ask of each in a world. 404 expected for another team's.
NAMING: dict[str, Callable[[World], list[Request]]] = {
    **{question_path(q): _question_route(q) for q in QUESTIONS if q.subject.parts},
    links.SNAPSHOT: lambda w: [(links.path(links.SNAPSHOT, tag=w.tags[0]), {})],
    links.INSTANCES + "?since": lambda w: [  # a question's parameter naming a second snapshot
        (links.path(links.INSTANCES, tag=w.tags[1]), {"type": w.type_name, "since": w.tags[0]})
    ],
    links.QUERY: lambda w: [(links.path(links.QUERY, name=n), _stored(n, w)) for n in PER_SNAPSHOT],
    links.JOB: lambda w: [(links.path(links.JOB, job_id=w.job_id), {})],
    **_pages(links.SNAPSHOT_PAGE, _one),
    **_pages(links.OBJECT_PAGE, _one),
    **_pages(links.TREEMAP_PAGE, _one),
    **_pages(links.TYPE_PAGE, _one),
    **_pages(links.OWNERS_PAGE, _one),
    **_pages(links.TREE_PAGE, _one),
    **_pages(links.GATE_RUN_PAGE, _one),
    **_pages(links.SEARCH_PAGE, lambda page: lambda w: [(page, {"tag": w.tags[0], "text": "Type"})]),
    **_pages(links.COMPARE_PAGE, lambda page: lambda w: [(page, {"before": w.tags[0], "after": w.tags[1]})]),
    **_pages(links.LEAKS_PAGE, lambda page: lambda w: [(page, {"tag": list(w.tags)})]),
    **_pages(links.GROWTH_PAGE, lambda page: lambda w: [(page, {"tag": list(w.tags)})]),
    **_pages(links.ASK_PAGE, _each_question),
    **_pages(links.QUERY_PAGE, lambda page: lambda w: [(_fill(page, name="top"), _stored("top", w))]),
}
TYPE_HISTORY = question_path(next(q for q in QUESTIONS if q.name == "type-history"))
# Lists that may name snapshots in a filter: another team's answers as an unknown one, not 404.
FILTERING: dict[str, Callable[[World], list[Request]]] = {
    links.GATE_RUNS + "?candidate": lambda w: [(links.GATE_RUNS, {"candidate": w.tags[0]})],
    # A range of builds may end at a tag: another team's is no loaded build of the caller's.
    TYPE_HISTORY + "?builds": lambda w: [(TYPE_HISTORY, {"type": w.type_name, "builds": f"{w.tags[0]}.."})],
    links.JOBS + "?tag": lambda w: [(links.JOBS, {"tag": w.tags[0]})],
}
# Routes that list what the token may read, or name nothing of a team's.
LISTS = [links.SNAPSHOTS, links.SNAPSHOTS + "?all=true", links.JOBS, links.GATE_RUNS, links.SIGNATURES, links.QUERIES]
LISTS += [links.RULES, links.HOME_PAGE, links.GATE_RUNS_PAGE, links.QUERIES_PAGE, links.RULES_PAGE]
LISTS += [links.twin_of(p) for p in (links.HOME_PAGE, links.GATE_RUNS_PAGE, links.QUERIES_PAGE, links.RULES_PAGE)]
LISTS += [links.SEARCH_PAGE]  # without a tag: the newest snapshot the token may read
NO_TEAM = [links.RULE, links.RULE_PAGE, links.twin_of(links.RULE_PAGE)]  # rule sets belong to no team
OPEN = [links.HEALTH, links.LOGIN, links.OPENAPI, links.API_DOCS, "/docs/oauth2-redirect", "/redoc"]
WRITES = {("POST", links.SNAPSHOTS), ("DELETE", links.JOB), ("POST", links.RULE), ("DELETE", links.RULE)}


def app_routes(app: FastAPI) -> set[tuple[str, str]]:
    """Every (method, path template) the app answers, the included routers' too."""
    found: set[tuple[str, str]] = set()
    for route in app.routes:
        for r in getattr(getattr(route, "original_router", None), "routes", [route]):
            for method in getattr(r, "methods", None) or ():
                found.add((method, getattr(r, "path", "")))
    return {(m, p) for m, p in found if m != "HEAD"}


def test_every_route_is_classified(app: FastAPI) -> None:
    classified = {p.partition("?")[0] for p in [*NAMING, *FILTERING, *LISTS, *NO_TEAM, *OPEN]}
    unknown = {(m, p) for m, p in app_routes(app) if (m, p) not in WRITES and p not in classified and m == "GET"}
    assert not unknown, f"routes tests/test_tokens.py does not check: say how they name snapshots: {unknown}"
    writes = {(m, p) for m, p in app_routes(app) if m != "GET" and p != links.LOGIN}
    assert writes == WRITES, "a write route the function-level test does not know"


def _text(response: Any, *replaced: Any) -> str:
    """The answer's text, the values ``replaced`` (tags, ids) by one mark."""
    text = response if isinstance(response, str) else response.text
    for value in sorted(replaced, key=lambda v: -len(str(v))):  # a long id before a shorter one inside it
        for form in {str(value), links.encode_segment(value), json.dumps(str(value))[1:-1]}:
            text = text.replace(form, "<X>")
    return text


def _ask(c: TestClient, request: Request) -> Any:
    return c.get(request[0], params=request[1])


def _theirs_as_unknown(
    c: TestClient, s: Setup, route: str, make: Callable[[World], list[Request]], status: int | None
) -> None:
    """Team B's snapshot (run, signature, job), named in each position, answers as one of team B
    that does not exist (``status``, when given): nothing tells whether it exists."""
    w = s.theirs
    variants = [(w, s.unknown)]
    for i in (1, 2):  # team B's tag in a later position, the others team A's
        variants.append((s.own.naming(i, s.theirs.tags[0]), s.own.naming(i, s.unknown.tags[0])))
    for theirs, unknown in variants:
        for mine, missing, own in zip(make(theirs), make(unknown), make(s.own), strict=True):
            if mine == own:  # the route does not name this position
                continue
            got, expected = _ask(c, mine), _ask(c, missing)
            assert status is None or got.status_code == status, (route, mine, got.status_code, got.text[:300])
            assert got.status_code == expected.status_code, (route, mine)
            ids = (w.run_id, w.sig, w.job_id, s.unknown.run_id, s.unknown.sig, s.unknown.job_id)
            assert _text(got, s.theirs.tags[0], *ids) == _text(expected, s.unknown.tags[0], *ids), (route, mine)


def test_a_team_reads_its_own_and_nothing_of_another(app: FastAPI, setup: Setup) -> None:
    c = client(app, setup.reader)
    for route, make in NAMING.items():
        for request in make(setup.own):
            if route == links.QUERY and request[0] not in OWN_QUERIES:
                continue
            answer = _ask(c, request)
            assert answer.status_code not in (401, 403, 404), (route, request, answer.status_code, answer.text[:300])
            assert not any(t in answer.text for t in setup.b_tags), (route, request)
        _theirs_as_unknown(c, setup, route, make, 404)
    for route, make in FILTERING.items():
        _theirs_as_unknown(c, setup, route, make, None)
    for route in [*LISTS, *NO_TEAM]:
        path, _, query = route.partition("?")
        answer = c.get(links.path(path, name="nothing"), params=dict([query.split("=")]) if query else {})
        assert answer.status_code not in (401, 403) and answer.status_code < 500, (route, answer.text[:300])
        assert not any(t in answer.text for t in setup.b_tags), route
    listed = c.get(links.SNAPSHOTS).json()
    assert {s["tag"] for s in listed} == set(setup.a_tags)
    assert [j["tag"] for j in c.get(links.JOBS).json()] == [setup.own.tags[0]]
    assert [r["id"] for r in c.get(links.GATE_RUNS).json()["runs"]] == [setup.own.run_id]
    assert setup.own.sig in [s["signature"] for s in c.get(links.SIGNATURES).json()]


def test_another_teams_snapshot_answers_as_an_unknown_one(app: FastAPI, setup: Setup) -> None:
    """The same 404 as a tag of the team's own that no snapshot has, the same body; for a write
    token too (its patterns imply reading)."""
    for token in (setup.reader, setup.writer):
        c = client(app, token)
        for template in (links.SNAPSHOT, links.TOP, links.twin_of(links.SNAPSHOT_PAGE), links.SNAPSHOT_PAGE):
            theirs = c.get(_fill(template, tag=setup.b_tags[0]))
            unknown = c.get(_fill(template, tag=f"{A}/missing"))
            assert theirs.status_code == unknown.status_code == 404
            assert _text(theirs, setup.b_tags[0]) == _text(unknown, f"{A}/missing"), template
        assert {s["tag"] for s in c.get(links.SNAPSHOTS).json()} == set(setup.a_tags)


def test_the_stored_queries_across_snapshots_are_the_administrators(app: FastAPI, setup: Setup) -> None:
    for token, status in ((setup.reader, 403), (setup.writer, 403), (READ, 200)):
        c = client(app, token)
        for name in ACROSS:
            answer = c.get(links.path(links.QUERY, name=name), params=_stored(name, setup.own))
            assert answer.status_code == status, (name, answer.text[:300])
        page = c.get(_fill(links.twin_of(links.QUERY_PAGE), name=ACROSS[0]))
        assert page.status_code == status


def test_writes_are_refused_but_a_write_tokens_own(app: FastAPI, setup: Setup) -> None:
    new_a, new_b = f"{A}/new", f"{B}/new"

    def writes(token: str) -> list[int]:
        c = client(app, token)
        return [
            c.post(links.SNAPSHOTS, params={"tag": new_a, "check": "true"}).status_code,
            c.post(links.SNAPSHOTS, params={"tag": new_b, "check": "true"}).status_code,
            c.delete(links.path(links.JOB, job_id=setup.own.job_id)).status_code,
            c.delete(links.path(links.JOB, job_id=setup.theirs.job_id)).status_code,
            c.post(links.path(links.RULE, name="r"), content=b"").status_code,
            c.delete(links.path(links.RULE, name="r")).status_code,
        ]

    assert writes(READ) == [403] * 6
    assert writes(setup.reader) == [403, 404, 403, 404, 403, 403]
    assert writes(setup.writer) == [200, 404, 409, 404, 403, 403]  # 409: the job has ended
    assert writes(WRITE)[:4] == [200, 200, 409, 409]


def test_a_browser_signs_in_with_its_teams_token(app: FastAPI, setup: Setup) -> None:
    browser = TestClient(app, raise_server_exceptions=False)
    signed = browser.post(links.LOGIN, data={"token": setup.reader, "next": "/"}, follow_redirects=False)
    assert signed.status_code == 303
    home = browser.get(links.HOME_PAGE)
    assert setup.a_tags[0] in home.text and setup.b_tags[0] not in home.text
    assert browser.get(links.page_path(links.SNAPSHOT_PAGE, tag=setup.b_tags[0])).status_code == 404
    assert browser.post(links.LOGIN, data={"token": "heapdb_nothing"}).status_code == 401


def test_without_scoped_tokens_they_are_refused(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.API_TOKEN.name, READ)
    monkeypatch.delenv(settings.SCOPED_TOKENS.name, raising=False)
    c = client(create_app(timeout=60), setup.reader)
    assert c.get(links.SNAPSHOTS).status_code == 401


def test_with_scoped_tokens_on_every_call_needs_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even without HEAPDB_API_TOKEN: an open service would show every team everything."""
    monkeypatch.setenv(settings.SCOPED_TOKENS.name, "1")
    monkeypatch.delenv(settings.API_TOKEN.name, raising=False)
    offline = create_app(lambda: cast(Database, object()), timeout=60)  # a secret not heapdb's asks nothing
    for headers in ({}, {"Authorization": "Bearer not-one-of-ours"}):
        c = TestClient(offline, headers=headers, raise_server_exceptions=False)
        assert c.get(links.SNAPSHOTS).status_code == 401
        assert c.get(links.HOME_PAGE, follow_redirects=False).headers["location"].startswith(links.LOGIN)
        assert c.post(links.SNAPSHOTS, params={"tag": "x"}).status_code in (401, 403)


def test_mcp_tools_see_one_teams_snapshots(setup: Setup, database: Database) -> None:
    from heapdb.service.mcp import build_server, http_app

    server = build_server(lambda: database, timeout=60)
    answers: dict[str, dict[str, str]] = {}

    async def agent(session: ClientSession) -> None:
        tools = {t.name for t in (await session.list_tools()).tools}
        by_tool = {q.tool_name: q for q in QUESTIONS}
        assert tools - set(by_tool) == {"snapshots", "queries", "query", "page"}
        for name, w in (("own", setup.own), ("theirs", setup.theirs), ("unknown", setup.unknown)):
            said = answers.setdefault(name, {})
            for tool, q in by_tool.items():
                if q.subject.parts:
                    arguments = {p.name: v for p, v in zip(q.subject.parts, _parts(q, w).values(), strict=False)}
                    arguments |= {k: v for k, v in _parts(q, w).items() if k in ("type", "text")}
                    said[tool] = await _call(session, tool, arguments)
            for query in PER_SNAPSHOT[:5]:
                said[f"query {query}"] = await _call(session, "query", {"name": query, "parameters": _stored(query, w)})
        answers["other"] = {
            "across": await _call(session, "query", {"name": "builds"}),
            "lists": "".join([await _call(session, t, {}) for t in ("snapshots", "signatures", "gate-runs")]),
        }

    with served(http_app(server, "127.0.0.1", None, access.Tokens(lambda: database))) as port:
        _mcp_session(f"http://127.0.0.1:{port}{links.MCP}", setup.reader, agent)
    ids = (setup.theirs.run_id, setup.theirs.sig, setup.unknown.run_id, setup.unknown.sig)
    for tool, said in answers["theirs"].items():
        own = answers["own"][tool]
        assert not any(m in own for m in UNKNOWN) and not any(t in own for t in setup.b_tags), (tool, own)
        assert said.startswith("error") and any(m in said for m in UNKNOWN), (tool, said)
        replaced = (*ids, setup.theirs.tags[0], setup.unknown.tags[0])
        assert _text(said, *replaced) == _text(answers["unknown"][tool], *replaced), tool
    assert "only the service's own tokens" in answers["other"]["across"]
    lists = answers["other"]["lists"]
    assert setup.a_tags[0] in lists and str(setup.own.sig) in lists and not any(t in lists for t in setup.b_tags)


UNKNOWN = ("no snapshot tagged", "no gate run", "no leak signature", "no recorded build or tag")


async def _call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    result = await session.call_tool(tool, arguments)
    content = result.content[0]
    assert isinstance(content, TextContent)
    return ("error: " if result.is_error else "") + content.text


def _mcp_session(url: str, token: str, agent: Callable[[ClientSession], Any]) -> None:
    async def run() -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await agent(session)

    anyio.run(run)


def test_tokens_are_created_listed_and_revoked_from_the_cli(app: FastAPI, setup: Setup) -> None:
    runner = CliRunner()
    made = runner.invoke(main, ["tokens", "create", "--name", "ci", "--read", f"{A}/*", "--json"])
    assert made.exit_code == 0, made.output
    token = json.loads(made.stdout)
    assert token["read"] == [f"{A}/*"] and token["secret"].startswith(tokens.SECRET_PREFIX)
    listed = json.loads(runner.invoke(main, ["tokens", "list", "--json"]).stdout)
    assert token["id"] in [t["id"] for t in listed] and all("secret" not in t and "digest" not in t for t in listed)
    assert client(app, token["secret"]).get(links.SNAPSHOTS).status_code == 200
    revoked = runner.invoke(main, ["tokens", "revoke", token["id"]])
    assert revoked.exit_code == 0, revoked.output
    with pytest.MonkeyPatch.context() as env:
        env.setenv(settings.SCOPED_TOKENS.name, "1")
        env.setenv(settings.API_TOKEN.name, READ)
        assert client(create_app(timeout=60), token["secret"]).get(links.SNAPSHOTS).status_code == 401
    assert token["id"] not in [t["id"] for t in json.loads(runner.invoke(main, ["tokens", "list", "--json"]).stdout)]
    assert runner.invoke(main, ["tokens", "revoke", "nothing"]).exit_code == 1
    assert runner.invoke(main, ["tokens", "create", "--name", "x"]).exit_code == 1  # no pattern: sees nothing
    for command in ([], ["create"], ["list"], ["revoke"]):
        assert runner.invoke(main, ["tokens", *command, "--help"]).exit_code == 0


def test_a_revoke_takes_effect_within_the_lookup_time(database: Database) -> None:
    record, secret = tokens.create_token(database, "short-lived", [f"{A}/*"], [])
    remembered = access.Tokens(lambda: database, seconds=0.5)
    assert remembered.scope_of(secret) == Scope(read=(f"{A}/*",))
    tokens.revoke_token(database, record.id)
    assert remembered.scope_of(secret) is not None  # remembered for a moment: no round trip per request
    time.sleep(0.5)
    assert remembered.scope_of(secret) is None
    assert access.LOOKUP_SECONDS <= 5


# The stored queries' text parameters that name no snapshot; any other names one, and must be in
# catalog.SNAPSHOT_PARAMETERS for a token's scope to be checked against it.
NOT_SNAPSHOTS = {"bucket", "kinds", "mode", "name_contains", "names", "owner", "sort", "text", "type"}


def test_every_stored_query_parameter_naming_a_snapshot_is_declared() -> None:
    texts = {
        p.name
        for q in catalog.catalog().values()
        for p in q.parameters
        if p.type in ("string", "list<string>") and not p.name.startswith("ignore_")
    }
    assert texts - NOT_SNAPSHOTS <= set(catalog.SNAPSHOT_PARAMETERS), "a stored query names snapshots undeclared"


def test_patterns() -> None:
    scope = Scope(read=("team-a/*",), write=("team-a/ci-*",))
    assert scope.reads("team-a/x/y") and scope.reads("team-a/ci-1") and not scope.reads("team-b/x")
    assert scope.writes("team-a/ci-1") and not scope.writes("team-a/x") and not scope.reads("TEAM-A/x")
    assert Scope(write=("a*",)).reads("ab")  # writing implies reading
