"""Known library leaks for Node: the v8 default rules' known_leak groups on a real Node program.

tests/js/known_leaks.js leaks two ways: request contexts kept by pooled connections' keep-alive
timers through Node's AsyncLocalStorage (the store Node puts on every async resource made inside
run(); the program holds no reference to them), and sessions kept in the program's own list. The
oracle is the snapshot itself, by brute force: which objects the program made, who refers to them,
and which objects (and bytes) become unreachable when one store is taken away, by a plain
breadth-first search per store. Against it: `heapdb analyze` (text and --json), which reports the first as a
known leak with its reason and link, apart, and leaves the second to the program.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.rules import KnownLeakRule, compile_rules
from heapdb.loader.rules.defaults import default_rules
from tests.support.v8 import write_known_leaks_snapshot

POOL_SIZE, REQUESTS = 12, 60  # as tests/js/known_leaks.js makes them
STORE = "<symbol kResourceStore>"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_known_leaks_snapshot(tmp_path_factory.mktemp("known-leaks"))


@pytest.fixture(scope="module")
def graph(snapshot: Path) -> HeapGraph:
    return formats.read_graph(snapshot)


def holders(graph: HeapGraph, node: int) -> list[tuple[str, str]]:
    """Every reference into ``node``: its holder's type and the reference's name."""
    found = []
    for e in np.flatnonzero(graph.edge_to == node).tolist():
        source = int(np.searchsorted(graph.edge_start, e, side="right")) - 1
        numeric = graph.edge_kind[e] in (EdgeKind.ELEMENT, EdgeKind.HIDDEN)
        found.append(
            (graph.type_name(source), str(graph.edge_name[e]) if numeric else graph.strings[graph.edge_name[e]])
        )
    return found


def names(rule: KnownLeakRule, reference: str) -> bool:
    """Whether ``rule``'s path starts with a reference named ``reference``."""
    first = None if rule.path is None else rule.path.steps[0].name
    return first is not None and first.matches(reference)


def reachable(graph: HeapGraph, removed: set[int]) -> set[int]:
    """The objects the root reaches without passing ``removed``: breadth first, weak references left
    out, a level at a time."""
    g = graph
    strong = g.edge_kind != EdgeKind.WEAK
    seen = np.zeros(g.node_count, dtype=bool)
    seen[list(removed)] = True
    seen[g.root] = True
    frontier = np.array([g.root], dtype=np.int64)
    while frontier.size:
        starts, counts = g.edge_start[frontier], g.edge_start[frontier + 1] - g.edge_start[frontier]
        edges = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        targets = np.unique(g.edge_to[edges[strong[edges]]])
        frontier = targets[~seen[targets]].astype(np.int64)
        seen[frontier] = True
    seen[list(removed)] = False
    return set(np.flatnonzero(seen).tolist())


def test_a_known_node_leak_is_reported_apart_and_the_programs_own_is_not(snapshot: Path, graph: HeapGraph) -> None:
    g = graph
    of_type = {t: [v for v in range(g.node_count) if g.type_name(v) == t] for t in ("RequestContext", "Session")}
    contexts, sessions = of_type["RequestContext"], of_type["Session"]
    # What the program made: a context per pooled connection (the others were freed), a session per request.
    assert len(contexts) == POOL_SIZE and len(sessions) == REQUESTS
    # Nothing of the program's holds a context: only the timers' store, which Node set.
    assert all(holders(g, c) == [("Timeout", STORE)] for c in contexts)
    named = np.flatnonzero(g.edge_kind == EdgeKind.PROPERTY).tolist()
    targets = {int(g.edge_to[e]) for e in named if g.strings[int(g.edge_name[e])] == STORE}
    everything = reachable(g, set())
    targets &= everything
    # What each store alone keeps alive (itself and what goes with it when it goes), brute force:
    # the known leak. Text shared by several contexts goes with none of them alone, and stays out.
    gone = set().union(*(everything - reachable(g, {t}) for t in targets))

    rules = default_rules("v8")
    compiled = compile_rules(rules, g)
    result = analysis.analyze(g)
    assert compiled.known_leak is not None
    covered = analysis.spread_down(result, compiled.known_leak)
    store_rule = next(i for i, r in enumerate(compiled.known_leaks) if names(r, STORE))
    assert set(np.flatnonzero(covered == store_rule).tolist()) == gone
    assert set(contexts) <= gone
    # The program's own leak is its own: no known leak covers a session or anything it holds.
    assert not any(covered[v] >= 0 for v in sessions)

    report = json.loads(CliRunner().invoke(main, ["analyze", str(snapshot), "--json"]).stdout)
    rows = {row["reason"]: row for row in report["rules"]["known_leaks"]}
    store = rows[compiled.known_leaks[store_rule].reason]
    assert store["objects"] == len(gone)
    assert store["retained_size"] == int(g.self_size[list(gone)].sum())
    assert store["link"].startswith("https://nodejs.org/api/async_context.html")
    # The one AsyncLocalStorage, entered and never disabled, stays in Node's storage list: known too.
    storages = [v for v in range(g.node_count) if g.type_name(v) == "AsyncLocalStorage"]
    listed = next(r for r in compiled.known_leaks if names(r, "storageList"))
    assert len(storages) == 1 and covered[storages[0]] == compiled.known_leaks.index(listed)
    assert rows[listed.reason]["objects"] >= 1
    # No other known leak in a Node program that has none of them.
    assert set(rows) == {listed.reason, store["reason"]}

    text = CliRunner().invoke(main, ["analyze", str(snapshot)]).stdout
    section = text.split("Known leaks (known_leak rules: reported apart from new leaks):", 1)[1]
    assert store["reason"] in section and store["link"] in section
    assert "Session" not in section


def test_the_known_leaks_can_be_switched_off(snapshot: Path) -> None:
    report = json.loads(
        CliRunner().invoke(main, ["analyze", str(snapshot), "--json", "--disable-group", "node-known-leaks"]).stdout
    )
    assert report["rules"]["known_leaks"] == [] and "node-known-leaks" in report["rules"]["disabled_groups"]
    text = CliRunner().invoke(main, ["analyze", str(snapshot), "--rules", "none"]).stdout
    assert "Known leaks" not in text


def test_heapdb_rules_lists_the_default_rules_by_kind() -> None:
    listed = json.loads(CliRunner().invoke(main, ["rules", "defaults", "--json"]).stdout)
    java = {g["name"]: g["rules"] for g in listed["java"]}
    assert sum(kinds.get("lifecycle", 0) for kinds in java.values()) == len(default_rules("java").lifecycles)
    assert java["android-library-leaks"] == {"known_leak": len(default_rules("java").known_leaks)}
    v8 = {g["name"]: g["rules"] for g in listed["v8"]}
    assert sum(kinds.get("known_leak", 0) for kinds in v8.values()) == len(default_rules("v8").known_leaks)
    shown = CliRunner().invoke(main, ["rules", "defaults", "java"])
    assert shown.exit_code == 0 and shown.stdout == default_rules("java").text
    wrong = CliRunner().invoke(main, ["rules", "defaults", "jvm"])
    assert wrong.exit_code == 2 and "v8, luau, python, java" in wrong.output
