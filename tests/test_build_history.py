"""Questions over a history of builds: growth across a range of builds, one type's bytes per build,
where each leak signature first appeared, a gate against a pruned release, and their pages.

A history of :data:`BUILDS` small V8 builds (:mod:`heapgen.history`: a cache that gains a record at
every build, a leak that comes and stays, another that comes and goes) is loaded with `--meta
build=N` (N from a random base, so that no other module's builds interleave), each gated against
the one before and recorded, and all but the newest :data:`FULL` pruned to their summaries, as
``benchmarks/history.py`` does with a thousand. Every answer is checked against what the test
computes from the loaded graphs themselves (per-type totals, the first and last build holding each
leak's holder, what the newest build retains under the leak), never from heapdb's stored totals.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotFound, ParameterError
from heapdb.loader import analysis, formats, store
from heapdb.loader.analysis import Analysis
from heapdb.loader.graph import HeapGraph
from heapdb.loader.store import Snapshot, prune, purge
from heapdb.queries import builds as history
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import SERIES_SHOWN
from heapdb.service.links import to_json
from heapgen.history import Plan, write_build

BUILDS = 14  # more than a growth series shows whole (SERIES_SHOWN), for MCP's shape
FULL = 5  # the newest builds kept whole; the others pruned
PLAN = Plan(BUILDS)


# --- pure parts ---------------------------------------------------------------------------------


def _snapshot(sid: int, tag: str, build: str | None) -> Snapshot:
    meta = json.dumps({} if build is None else {"build": build})
    return Snapshot.from_properties({"sid": sid, "tag": tag, "status": "ready", "meta": meta})


def test_builds_sort_by_number_then_load_order_and_ranges_cut_them() -> None:
    loaded = [
        _snapshot(1, "b10", "10"),
        _snapshot(2, "b9", "9"),
        _snapshot(3, "no-build", None),  # not a build
        _snapshot(4, "rc", "release-candidate"),
        _snapshot(5, "b9-again", "9"),  # build 9 loaded again: its newest load counts
        _snapshot(6, "b12", "12"),
    ]
    order = [s.tag for s in history.loaded_builds(loaded)]
    assert order == ["b9-again", "b10", "b12", "rc"]

    def tags(text: str) -> list[str]:
        return [s.tag for s in history.in_range(loaded, text)]

    assert tags("all") == order
    assert tags("10..") == ["b10", "b12", "rc"]  # numbered from 10, then the unnumbered
    assert tags("..11") == ["b9-again", "b10"]  # a number no build has still cuts
    assert tags("9..12") == ["b9-again", "b10", "b12"]
    assert tags("b10..rc") == ["b10", "b12", "rc"]  # by tag
    assert tags("release-candidate..") == ["rc"]  # by build name
    assert tags("13..") == ["rc"]
    with pytest.raises(NotFound):
        history.in_range(loaded, "nothing-like-it..")
    for bad in ("", "all builds", "1..2..3", "..", "12"):
        with pytest.raises(ParameterError):
            params.TypeHistory(type="T", builds=bad)
    with pytest.raises(ParameterError):
        history.series(["a", "b", "c"], loaded, "all")


# --- a history in Neo4j -------------------------------------------------------------------------


class History:
    """The loaded builds: number -> tag, graph and analysis; and their build numbers' base."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.tags: dict[int, str] = {}
        self.graphs: dict[int, tuple[HeapGraph, Analysis]] = {}

    def name(self, n: int) -> str:
        return str(self.base + n)

    @property
    def range(self) -> str:
        return f"{self.name(1)}..{self.name(BUILDS)}"


@pytest.fixture(scope="module")
def built(database: Database, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("history")
    h = History(random.randrange(10**9, 2 * 10**9))
    run = uuid.uuid4().hex[:8]
    questions = Questions(database)
    for n in range(1, BUILDS + 1):
        graph = formats.read_graph(write_build(n, PLAN, out / f"build-{n}.heapsnapshot"))
        result = analysis.analyze(graph)
        h.tags[n], h.graphs[n] = f"test-history-{n}-{run}", (graph, result)
        store.load(database, store.LoadInput.from_analysis(graph, result), h.tags[n], meta={"build": h.name(n)})
        if n > 1:
            questions.record_gate(questions.gate(h.tags[n - 1], h.tags[n]))
    # Only this module's builds: `heapdb prune` would prune the other modules' snapshots too.
    sids = [questions.snapshot(h.tags[n]).sid for n in range(1, BUILDS - FULL + 1)]
    assert len(prune.mark(database, sids)) == BUILDS - FULL
    purge.purge(database, wait=True)
    yield h
    database.write("MATCH (n) WHERE n:Build OR n:Signature OR n:SignatureObservation OR n:GateRun DETACH DELETE n")


def per_type(graph: HeapGraph, result: Analysis) -> dict[str, tuple[int, int]]:
    """Brute force: each type's reachable objects and their summed self size."""
    totals: dict[str, tuple[int, int]] = {}
    for node in np.flatnonzero(result.reachable):
        if int(node) == graph.root:
            continue
        count, size = totals.get(graph.type_name(int(node)), (0, 0))
        totals[graph.type_name(int(node))] = (count + 1, size + int(graph.self_size[node]))
    return totals


def retained_by_type(graph: HeapGraph, result: Analysis, type_name: str) -> int:
    """What the objects of a type retain, each byte once (none of this history's types nests)."""
    members = [n for n in range(graph.node_count) if result.reachable[n] and graph.type_name(n) == type_name]
    assert all(graph.type_name(int(result.idom[n])) != type_name for n in members)
    return int(sum(int(result.retained_size[n]) for n in members))


def test_growth_across_a_range_of_builds_is_every_type_that_grew_at_every_step(
    built: History, database: Database
) -> None:
    answer = Questions(database).growth([], params.Growth(by="type", builds=built.range, limit=1000))
    assert answer.tags == [built.tags[n] for n in range(1, BUILDS + 1)]
    series = [per_type(*built.graphs[n]) for n in range(1, BUILDS + 1)]
    types = set().union(*series)

    def at(t: str) -> list[tuple[int, int]]:
        return [s.get(t, (0, 0)) for s in series]

    grew = {t for t in types if all(b[1] > a[1] and b[0] >= a[0] for a, b in zip(at(t), at(t)[1:], strict=False))}
    assert "Record" in grew and "Widget" not in grew
    assert {r.label for r in answer.rows} == grew
    for row in answer.rows:
        assert row.counts == [c for c, _ in at(row.label)]
        assert row.sizes == [s for _, s in at(row.label)]
    by_path = Questions(database).growth([], params.Growth(by="path", builds=built.range))
    record = next(r for r in by_path.rows if r.hops[-1].endswith("Record"))
    assert record.counts == [c for c, _ in at("Record")]


def test_one_types_bytes_per_build_page_by_page(built: History, database: Database) -> None:
    q = Questions(database)
    whole = q.type_history(params.TypeHistory(type="Record", builds=built.range, limit=BUILDS))
    assert whole.total == BUILDS and [r.build for r in whole.rows] == [built.name(n) for n in range(1, BUILDS + 1)]
    for n, row in enumerate(whole.rows, 1):
        graph, result = built.graphs[n]
        assert (row.objects, row.self_size) == per_type(graph, result)["Record"]
        assert row.retained_size == retained_by_type(graph, result, "Record")
        assert row.summary == (n <= BUILDS - FULL) and row.tag == built.tags[n]
    page = q.type_history(params.TypeHistory(type="Record", builds=built.range, offset=5, limit=4))
    assert page.rows == whole.rows[5:9] and page.total == BUILDS and page.offset == 5
    late = q.type_history(params.TypeHistory(type="LeakedItem", builds=f"{built.name(PLAN.leak_from - 1)}.."))
    rows = [r for r in late.rows if r.build in {built.name(n) for n in built.graphs}]
    assert rows[0].objects == 0  # the build before the leak had none
    assert [r.objects for r in rows[1:]] == [PLAN.leaked_items(n) for n in range(PLAN.leak_from, BUILDS + 1)]


def _first_and_last(built: History, type_name: str) -> tuple[str, str]:
    holding = [n for n in range(1, BUILDS + 1) if type_name in per_type(*built.graphs[n])]
    return built.name(holding[0]), built.name(holding[-1])


def test_signatures_say_where_each_leak_first_appeared(built: History, database: Database) -> None:
    q = Questions(database)
    mine = {
        s.type: s for s in q.signatures() if s.first_seen and s.first_seen.isdigit() and int(s.first_seen) > built.base
    }
    assert set(mine) == {"LeakHolder", "SessionStore"}
    for type_name, status in (("LeakHolder", "recurring"), ("SessionStore", "fixed")):
        first, last = _first_and_last(built, type_name)
        assert (mine[type_name].first_seen, mine[type_name].last_seen, mine[type_name].status) == (first, last, status)
    since = q.signatures(built.name(PLAN.session_until))
    assert mine["LeakHolder"].signature in {s.signature for s in since}
    assert mine["SessionStore"].signature not in {s.signature for s in since}
    # One signature's builds, a page at a time: the page is a slice of the whole, first/last of them all.
    sig = mine["SessionStore"].signature
    whole = q.history(sig, params.History(limit=params.MAX_BUILDS))
    page = q.history(sig, params.History(offset=3, limit=4))
    assert page.observations == whole.observations[3:7] and page.builds == whole.builds == len(whole.observations)
    assert (page.first_seen, page.last_seen) == _first_and_last(built, "SessionStore")
    present = [o.build for o in whole.observations if o.present and o.build in {built.name(n) for n in built.graphs}]
    assert present == [built.name(n) for n in range(PLAN.session_from, PLAN.session_until)]


def test_a_gate_against_a_pruned_release_finds_the_leak_since(built: History, database: Database) -> None:
    q = Questions(database)
    release, newest = 2, BUILDS
    assert q.snapshot(built.tags[release]).summary
    report = q.gate(built.tags[release], built.tags[newest])
    assert not report.passed
    leak = next(f for f in report.findings if f.type == "LeakHolder")
    assert leak.kind == "new-leak" and leak.fails
    assert leak.bytes_after == retained_by_type(*built.graphs[newest], "LeakHolder")
    assert {f.type for f in report.findings if f.fails} == {"LeakHolder"}  # the sessions were fixed since


def test_front_ends_answer_the_same_paged(built: History, database: Database, client: TestClient) -> None:
    q = Questions(database)
    growth = q.growth([], params.Growth(builds=built.range))
    assert client.get("/api/growth", params={"builds": built.range}).json() == to_json(growth)
    assert client.get("/api/growth", params={"builds": built.range, "tag": built.tags[1]}).status_code == 422
    page: dict[str, Any] = {"type": "Record", "builds": built.range, "offset": 3, "limit": 5}
    answer = q.type_history(params.TypeHistory(**page))
    assert client.get("/api/type-history", params=page).json() == to_json(answer)
    assert client.get("/ask/type-history.json", params=page).json() == to_json(answer)
    html = client.get("/ask/type-history", params=page).text
    assert f"builds 4–8 of {BUILDS:,}; --offset 8 for the next" in html
    assert client.get("/ask/type-history").status_code == 200  # the form, no answer yet
    assert client.get("/ask/growth", params={"builds": built.range}).status_code == 200
    sig = next(s.signature for s in q.signatures() if s.type == "SessionStore")
    assert client.get(f"/api/signatures/{sig}", params={"limit": 2}).json() == to_json(
        q.history(sig, params.History(limit=2))
    )
    cli = CliRunner().invoke(
        main, ["type-history", "--type", "Record", "--builds", built.range, "--json", "--limit", "5"]
    )
    assert cli.exit_code == 0, cli.output
    assert (
        json.loads(cli.output)["rows"] == to_json(q.type_history(params.TypeHistory(**{**page, "offset": 0})))["rows"]
    )
    cli = CliRunner().invoke(main, ["growth", "--builds", built.range, "--json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.output)["tags"] == growth.tags


def test_mcp_answers_growth_over_many_builds_in_pages(built: History, database: Database) -> None:
    import anyio
    from mcp.types import TextContent

    from heapdb.service.mcp import build_server

    server = build_server(lambda: database, timeout=60)
    answers: dict[str, Any] = {}

    async def run() -> None:
        for tool, arguments in (
            ("growth", {"builds": built.range}),
            ("type-history", {"type": "Record", "builds": built.range, "limit": 3, "offset": 2}),
        ):
            result = await server.call_tool(tool, arguments)
            content = result.content[0]  # type: ignore[union-attr]
            assert isinstance(content, TextContent) and not result.is_error, content  # type: ignore[union-attr]
            answers[tool] = json.loads(content.text)

    anyio.run(run)
    q = Questions(database)
    growth = q.growth([], params.Growth(builds=built.range))
    shown = answers["growth"]
    half = SERIES_SHOWN // 2
    assert shown["tags"] == growth.tags[:half] + growth.tags[-half:]
    assert [r["counts"] for r in shown["rows"]] == [r.counts[:half] + r.counts[-half:] for r in growth.rows]
    assert BUILDS > SERIES_SHOWN and f"{BUILDS} snapshots" in shown["series"]
    rows = q.type_history(params.TypeHistory(type="Record", builds=built.range, limit=3, offset=2)).rows
    assert [r["retained_size"] for r in answers["type-history"]["rows"]] == [r.retained_size for r in rows]


def test_history_of_builds_is_declared_on_every_front_end(tmp_path: Path) -> None:
    from heapdb.registry import BY_NAME

    assert BY_NAME["growth"].subject.parts[0].optional and BY_NAME["type-history"].model is params.TypeHistory
    missing = CliRunner().invoke(main, ["growth"])
    assert missing.exit_code == 2 and "at least three" in missing.output
