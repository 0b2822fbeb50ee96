"""``heapdb diff A B --by dominator``: what grew along the dominator tree, against brute force.

The oracle computes each snapshot's dominator tree with igraph (``Graph.dominator``), names every
object by the types along its chain of dominators with a plain dict walk, and sums each group; every
group heapdb answers, at the top level and drilled into, must carry the same counts and bytes, and
the one-line answer must follow the documented rule. Two hand-made snapshots are loaded (built so that
a wrong rule fails: one type under two parents, objects whose dominator is not their referrer, ids
that differ between the builds); random trees check the grouping in process; the leaking program's
series checks that the answer leads to what it leaks.
"""

from __future__ import annotations

import json
import math
import random
import re
import uuid
from collections import defaultdict
from html import unescape
from urllib.parse import parse_qs, urlsplit

import igraph
import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ParameterError
from heapdb.loader import analysis, store
from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo
from heapdb.queries import catalog, dominator_diff, params
from heapdb.queries.dominator_diff import DominatorColumns, DominatorDiff, DominatorGroups
from heapdb.queries.questions import Questions
from heapdb.service import compare_pages, links
from heapdb.service.app import create_app
from tests.support.chromium import ChromiumPage
from tests.support.pages import AXE, IMPACTS, SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded

Figures = tuple[int, int, int]  # objects, self size, retained size
Oracle = dict[tuple[str, ...], Figures]

# What tests/js/leak.js leaks into (tests/test_mcp.py names the same holders).
LEAK_HOLDERS = ("LeakyCache", "EventEmitter")

# --- the oracle -------------------------------------------------------------------------------------


def oracle(step: list[str], parent: dict[int, int], root: int, self_size: list[int]) -> Oracle:
    """Per signature (the steps along the chain of dominators, the root left out): objects, self size
    and retained size, from each object's immediate dominator (``parent``), by a plain walk."""
    children: dict[int, list[int]] = defaultdict(list)
    for v, d in parent.items():
        children[d].append(v)
    order, todo = [], [root]
    while todo:  # depth first, so that a node comes before everything it dominates
        v = todo.pop()
        order.append(v)
        todo.extend(children[v])
    retained = {v: self_size[v] for v in order}
    for v in reversed(order):
        if v != root:
            retained[parent[v]] += retained[v]
    signature: dict[int, tuple[str, ...]] = {root: ()}
    groups: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0, 0])
    for v in order:
        if v != root:
            signature[v] = (*signature[parent[v]], step[v])
        sums = groups[signature[v]]
        sums[0] += 1
        sums[1] += self_size[v]
        sums[2] += retained[v]
    return {k: (a, b, c) for k, (a, b, c) in groups.items()}


def igraph_oracle(graph: HeapGraph) -> Oracle:
    """The oracle on a hand-made graph: igraph's dominator tree over every reference (these graphs
    have no weak ones), synthetic objects named by their names."""
    n = graph.ids.size
    sources = np.repeat(np.arange(n), np.diff(graph.edge_start))
    g = igraph.Graph(n=n, edges=list(zip(sources.tolist(), graph.edge_to.tolist())), directed=True)
    dom = g.dominator(graph.root, mode="out")
    parent = {v: int(d) for v, d in enumerate(dom) if v != graph.root and not math.isnan(d) and d >= 0}
    synthetic = graph.node_kinds.index("synthetic")
    step = [graph.strings[graph.name[v] if graph.kind[v] == synthetic else graph.type[v]] for v in range(n)]
    return oracle(step, parent, graph.root, graph.self_size.tolist())


_CHILDREN: dict[int, tuple[Oracle, dict[tuple[str, ...], list[tuple[str, ...]]]]] = {}


def below(groups: Oracle, hops: tuple[str, ...]) -> dict[tuple[str, ...], Figures]:
    """The groups one level below ``hops`` (an index per oracle, made once: the leak's have thousands)."""
    if id(groups) not in _CHILDREN or _CHILDREN[id(groups)][0] is not groups:
        index: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
        for k in groups:
            if k:
                index[k[:-1]].append(k)
        _CHILDREN[id(groups)] = (groups, index)
    return {k: groups[k] for k in _CHILDREN[id(groups)][1].get(hops, [])}


def expected_rows(old: Oracle, new: Oracle, hops: tuple[str, ...]) -> list[tuple[tuple[str, ...], Figures, Figures]]:
    """The groups below ``hops`` in either build, in the documented order."""
    keys = below(old, hops).keys() | below(new, hops).keys()
    none = (0, 0, 0)
    rows = [(k, old.get(k, none), new.get(k, none)) for k in keys]
    return sorted(rows, key=lambda r: (-(r[2][2] - r[1][2]), -(r[2][0] - r[1][0]), r[0][-1]))


def expected_chain(old: Oracle, new: Oracle, hops: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The documented rule: the group below that grew most, while it grew and carries at least half
    its parent's growth."""
    chain = []
    while rows := expected_rows(old, new, hops):
        key, a, b = rows[0]
        grew = b[2] - a[2]
        here = new.get(hops, (0, 0, 0))[2] - old.get(hops, (0, 0, 0))[2]
        if grew <= 0 or 2 * grew < here:
            break
        hops = key
        chain.append(hops)
    return chain


def assert_level(answer: DominatorDiff, old: Oracle, new: Oracle, hops: tuple[str, ...]) -> None:
    """Every group below ``hops``, its figures, their order, and the one-line answer."""
    none = (0, 0, 0)
    assert tuple(answer.under.hops) == hops
    assert (answer.under.objects_before, answer.under.self_before, answer.under.retained_before) == old.get(hops, none)
    assert (answer.under.objects_after, answer.under.self_after, answer.under.retained_after) == new.get(hops, none)
    got = [
        (
            tuple(g.hops),
            (g.objects_before, g.self_before, g.retained_before),
            (g.objects_after, g.self_after, g.retained_after),
        )
        for g in answer.changes
    ]
    assert got == expected_rows(old, new, hops)
    assert [tuple(g.hops) for g in answer.concentration] == expected_chain(old, new, hops)
    for g in answer.changes:
        assert g.key == dominator_diff.path_key(g.hops) and g.label == " > ".join(g.hops)
        assert g.below == len(below(old, tuple(g.hops)).keys() | below(new, tuple(g.hops)).keys())


# --- hand-made snapshots ---------------------------------------------------------------------------


def build(nodes: list[tuple[str, str, int]], edges: list[tuple[int, int]], first_id: int) -> HeapGraph:
    """nodes: (type, node kind, self size), node 0 the root; a synthetic node is named after its
    type's parenthesis-free form, so that the oracle can tell name from type. Ids start at ``first_id``."""
    strings = ["", "(synthetic)"]

    def intern(s: str) -> int:
        if s not in strings:
            strings.append(s)
        return strings.index(s)

    kinds = ["synthetic", "object"]
    n = len(nodes)
    types = [intern("(synthetic)" if k == "synthetic" else t) for t, k, _ in nodes]
    names = [intern(t) for t, _, _ in nodes]
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(
        n,
        np.array([a for a, _ in edges], dtype=np.int64),
        np.array([b for _, b in edges]),
        np.full(len(edges), int(EdgeKind.PROPERTY)),
        np.zeros(len(edges)),
    )
    graph = HeapGraph(
        ids=first_id + np.arange(n, dtype=np.int64) * 2,
        kind=np.array([kinds.index(k) for _, k, _ in nodes], dtype=np.uint8),
        type=np.array(types, dtype=np.int32),
        name=np.array(names, dtype=np.int32),
        self_size=np.array([s for _, _, s in nodes], dtype=np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=strings,
        node_kinds=kinds,
        meta={"format": "test"},
    )
    graph.validate()
    return graph


ROOT, GC = ("(root)", "synthetic", 0), ("(GC roots)", "synthetic", 0)
BEFORE_NODES = [ROOT, GC, ("A", "object", 10), ("A", "object", 11), ("B", "object", 12), ("C", "object", 20)]
BEFORE_NODES += [("C", "object", 21), ("D", "object", 30), ("X", "object", 5), ("Y", "object", 6)]
BEFORE_NODES += [("Z", "object", 7), ("C", "object", 22), ("E", "object", 40)]
BEFORE_EDGES = [(0, 1), (0, 2), (0, 3), (0, 4), (2, 5), (4, 6), (2, 7), (4, 7), (3, 8), (8, 9), (9, 10), (8, 10)]
BEFORE_EDGES += [(1, 11), (5, 12)]
# After: the As' Cs gain members and Es, B's C is gone, D is now held by one A only (so it moves
# below it), X holds a second Z past a Y, F is new at the top, and (GC roots) holds a second C.
AFTER_NODES = [*BEFORE_NODES, ("C", "object", 50), ("E", "object", 60), ("E", "object", 61), ("Z", "object", 70)]
AFTER_NODES += [("Y", "object", 8), ("F", "object", 90), ("C", "object", 23)]
AFTER_EDGES = [(0, 1), (0, 2), (0, 3), (0, 4), (2, 5), (2, 7), (3, 8), (8, 9), (9, 10), (8, 10), (1, 11), (5, 12)]
AFTER_EDGES += [(3, 13), (13, 14), (13, 15), (8, 17), (17, 16), (8, 16), (0, 18), (1, 19), (11, 19), (19, 11)]


@pytest.fixture(scope="module")
def small(database: Database) -> tuple[dict[str, str], dict[str, Oracle]]:
    """The two hand-made snapshots, loaded, and their oracles."""
    graphs = {"before": build(BEFORE_NODES, BEFORE_EDGES, 100), "after": build(AFTER_NODES, AFTER_EDGES, 5000)}
    run = uuid.uuid4().hex[:8]
    tags = {}
    for label, graph in graphs.items():
        tags[label] = f"test-domdiff-{label}-{run}"
        store.load(database, store.LoadInput.from_analysis(graph, analysis.analyze(graph)), tags[label])
    return tags, {label: igraph_oracle(graph) for label, graph in graphs.items()}


def test_the_hand_made_graphs_tell_a_wrong_rule_apart() -> None:
    """The oracle itself: C stays two groups under A and under B, D's dominator is the root though
    both A and B hold it, Z's is X though Y holds it."""
    before = igraph_oracle(build(BEFORE_NODES, BEFORE_EDGES, 100))
    assert {("A", "C"), ("B", "C"), ("D",), ("A", "X", "Z"), ("(GC roots)", "C")} <= before.keys()
    assert ("A", "D") not in before and ("A", "X", "Y", "Z") not in before
    after = igraph_oracle(build(AFTER_NODES, AFTER_EDGES, 5000))
    assert ("A", "D") in after and ("B", "C") not in after and after[("A", "X", "Z")][0] == 2


def test_every_group_equals_brute_force_at_two_levels(database: Database, small) -> None:
    tags, oracles = small
    ask = Questions(database)
    old, new = oracles["before"], oracles["after"]
    top = ask.diff(tags["before"], tags["after"], params.Diff(by="dominator", limit=1000))
    assert isinstance(top, DominatorDiff) and top.by == "dominator" and top.trail == []
    assert_level(top, old, new, ())
    # Drilled by key, by path, and into a group only one build has.
    for hops in (("A",), ("A", "X"), ("A", "C"), ("B",), ("(GC roots)",)):
        by_key = ask.diff(
            tags["before"], tags["after"], params.Diff(by="dominator", under=dominator_diff.path_key(hops))
        )
        assert isinstance(by_key, DominatorDiff)
        assert_level(by_key, old, new, hops)
        assert by_key.trail == [dominator_diff.path_key(hops[: i + 1]) for i in range(len(hops))]
        by_path = ask.diff(tags["before"], tags["after"], params.Diff(by="dominator", under=" > ".join(hops)))
        assert by_path == by_key
    gone = ask.diff(tags["before"], tags["after"], params.Diff(by="dominator", under="B > C"))
    assert isinstance(gone, DominatorDiff) and gone.under.objects_after == 0 and gone.under.objects_before == 1
    # The samples: the group's members retaining most in the newer build, ids of that build.
    c = next(g for g in top.changes if g.hops == ["A"])
    assert [s.retained_size for s in c.samples] == sorted((s.retained_size for s in c.samples), reverse=True)
    assert all(s.id >= 5000 and s.type == "A" and s.why.tag == tags["after"] for s in c.samples)
    assert len(c.samples) == 2  # both As, fewer than the default three


@pytest.mark.parametrize("keys", ["hashed", "all colliding"])
def test_grouping_equals_brute_force_on_random_trees(keys: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, on random graphs of few types (so that one type recurs at many places); with
    every path key the same, the groups must still be exactly the signatures."""
    if keys == "all colliding":
        monkeypatch.setattr(dominator_diff, "path_keys_of", lambda c: np.zeros(c.ids.size, dtype=np.uint64))
    rng = random.Random(40)
    for _ in range(60):
        n = rng.randint(1, 60)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 3 * n))]
        edges += [(rng.randrange(i), i) for i in range(1, n) if rng.random() < 0.7]  # mostly reachable
        types = [rng.choice("PQR") for _ in range(n)]
        dom = igraph.Graph(n=n, edges=edges, directed=True).dominator(0, mode="out")
        parent = {v: int(d) for v, d in enumerate(dom) if v and not math.isnan(d) and d >= 0}
        sizes = [rng.randint(0, 9) for _ in range(n)]
        expected = oracle(types, parent, 0, sizes)
        kept = [0, *sorted(parent)]
        retained = dict.fromkeys(kept, 0)
        for v in sorted(kept, key=lambda v: -len(_chain(parent, v))):  # deepest first
            retained[v] += sizes[v]
            if v:
                retained[parent[v]] += retained[v]
        columns = DominatorColumns.from_arrays(
            np.array(kept, dtype=np.int64) * 7 + 3,  # ids unlike the indices
            np.array(["PQR".index(types[v]) for v in kept], dtype=np.int64),
            list("PQR"),
            np.array([parent.get(v, v) * 7 + 3 for v in kept], dtype=np.int64),  # the root its own dominator
            np.array([sizes[v] for v in kept], dtype=np.int64),
            np.array([retained[v] for v in kept], dtype=np.int64),
        )
        groups = DominatorGroups.build(columns)
        n_groups = groups.parent.size
        got = {
            tuple(groups.hops(g)): (int(groups.objects[g]), int(groups.self_size[g]), int(groups.retained_size[g]))
            for g in range(groups.parent.size)
        }
        assert got == expected
        assert all(groups.find(list(k)) is not None for k in expected)
        if keys == "hashed":  # worked out for all objects at once, each as path_key works out one
            assert all(f"{int(groups.key[g]):016x}" == dominator_diff.path_key(groups.hops(g)) for g in range(n_groups))


def _chain(parent: dict[int, int], v: int) -> list[int]:
    out = [v]
    while out[-1] in parent:
        out.append(parent[out[-1]])
    return out


# --- the leaking program ---------------------------------------------------------------------------


def stored_oracle(database: Database, tag: str) -> Oracle:
    """Brute force on what the load stored: the stored query's rows, grouped by a plain walk."""
    rows = catalog.run(database, "dominator-columns", {"tag": tag})[0]["objects"]
    index = {row[0]: i for i, row in enumerate(rows)}
    parent = {i: index[row[2]] for i, row in enumerate(rows) if row[2] != row[0]}
    (root,) = set(range(len(rows))) - parent.keys()
    return oracle([row[1] for row in rows], parent, root, [row[3] for row in rows])


def test_on_the_leaking_program_the_answer_leads_to_what_it_leaks(
    database: Database, leak_series_loaded: dict[str, Loaded]
) -> None:
    base, final = leak_series_loaded["baseline"], leak_series_loaded["final"]
    ask = Questions(database)
    old, new = stored_oracle(database, base.tag), stored_oracle(database, final.tag)
    top = ask.diff(base.tag, final.tag, params.Diff(by="dominator", limit=10_000))
    assert isinstance(top, DominatorDiff)
    assert_level(top, old, new, ())
    # The growth concentrates where the leaking structures hang, then splits among them.
    assert top.concentration, "the growth concentrates somewhere"
    last = top.concentration[-1]
    named = [g.hops[-1] for g in top.split] + last.hops
    assert set(LEAK_HOLDERS) & set(named), named
    grew = {tuple(g.hops): g.retained_delta for g in [*top.concentration, *top.split]}
    assert grew == {k: new.get(k, (0, 0, 0))[2] - old.get(k, (0, 0, 0))[2] for k in grew}
    # Drilled into the cache: its growth concentrates along the leaked items (down to their payloads).
    cache = next(g for g in top.split if g.hops[-1] == "LeakyCache")
    drilled = ask.diff(base.tag, final.tag, params.Diff(by="dominator", under=cache.key, limit=10_000))
    assert isinstance(drilled, DominatorDiff)
    assert_level(drilled, old, new, tuple(cache.hops))
    assert "LeakedItem" in drilled.concentration[-1].hops[len(cache.hops) :], drilled.concentration[-1].hops
    # The same figures from the analysis in process: what the load stored is the analysis's tree.
    local = {}
    for label, loaded in (("before", base), ("after", final)):
        g, r = loaded.graph, loaded.result
        synthetic = g.node_kinds.index("synthetic")
        step = [
            g.strings[g.name[v] if g.kind[v] == synthetic and v != g.root else g.type[v]] for v in range(g.ids.size)
        ]
        parent = {v: int(r.idom[v]) for v in np.flatnonzero(r.reachable).tolist() if v != g.root}
        local[label] = oracle(step, parent, g.root, r.self_size.tolist())
    assert local["before"] == old and local["after"] == new


# --- front ends and bad input ------------------------------------------------------------------------


def test_cli_rest_and_page_answer_the_same_and_drill(database: Database, small, client: TestClient) -> None:
    tags, _oracles = small
    before, after = tags["before"], tags["after"]
    ask = Questions(database)
    top = ask.diff(before, after, params.Diff(by="dominator"))
    assert isinstance(top, DominatorDiff)
    expected = json.loads(json.dumps(links.to_json(top)))
    result = CliRunner().invoke(main, ["diff", before, after, "--by", "dominator", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == expected
    assert client.get(f"/api/diff/{before}/{after}", params={"by": "dominator"}).json() == expected
    text = CliRunner().invoke(main, ["diff", before, after, "--by", "dominator", "--under", "A"])
    assert text.exit_code == 0, text.output
    assert "below: A:" in text.stdout and f"--under {dominator_diff.path_key(['A'])}" not in text.stdout
    for g in top.changes:
        assert g.key in CliRunner().invoke(main, ["diff", before, after, "--by", "dominator"]).stdout
    # The page: a row drills into its group (the link the page gives is the one URL builder's).
    html = client.get(compare_pages.compare_page(before, after, "dominator")).text
    drills = [unescape(h) for h in re.findall(r'<th scope="row"><a class="ref" href="([^"]+)"', html)]
    assert drills == [
        compare_pages.compare_page(before, after, "dominator", under=g.key) for g in top.changes if g.below
    ]
    where = re.search(r'<p id="concentration">(.*?)</p>', html, flags=re.S)
    assert where is not None and top.concentration
    assert [unescape(h) for h in re.findall(r'<a class="ref" href="([^"]+)"', where.group(1))] == [
        compare_pages.compare_page(before, after, "dominator", under=g.key) for g in top.concentration
    ]
    twin = client.get(
        compare_pages.compare_page(before, after, "dominator", under=dominator_diff.path_key(["A"])).replace(
            "?", ".json?", 1
        )
    )
    assert twin.json()["diff"]["under"]["hops"] == ["A"]


def test_bad_input_is_a_clear_error(database: Database, small, client: TestClient) -> None:
    tags, _ = small
    before, after = tags["before"], tags["after"]
    ask = Questions(database)
    for under in ("0123456789abcdef", "A > Nothing", "Nothing"):
        with pytest.raises(ParameterError, match="no group"):
            ask.diff(before, after, params.Diff(by="dominator", under=under))
    with pytest.raises(ParameterError, match="use it with by dominator"):
        ask.diff(before, after, params.Diff(by="type", under="A"))
    result = CliRunner().invoke(main, ["diff", before, after, "--by", "dominator", "--under", "0123456789abcdef"])
    assert result.exit_code == 1 and "no group '0123456789abcdef'" in result.stderr
    assert "Traceback" not in result.output
    assert client.get(f"/api/diff/{before}/{after}", params={"by": "dominator", "under": "Nothing"}).status_code == 422


def test_a_person_drills_down_in_chromium(database: Database, small) -> None:
    tags, oracles = small
    before, after = tags["before"], tags["after"]
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=90) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + compare_pages.compare_page(before, after, "type"))
        top = browser.follow('p.choices a[href*="by=dominator"]')
        assert "by=dominator" in top
        browser.screenshot(SCREENSHOTS / "compare-dominator.png")
        drilled = browser.follow('#dominator-groups tbody th a[href*="under="]')
        under = parse_qs(urlsplit(drilled).query)["under"][0]
        hops = Questions(database).diff(before, after, params.Diff(by="dominator", under=under))
        assert isinstance(hops, DominatorDiff) and len(hops.under.hops) == 1
        rows = browser.evaluate("document.querySelectorAll('#dominator-groups tbody tr').length")
        assert rows == len(expected_rows(oracles["before"], oracles["after"], tuple(hops.under.hops)))
        here = "document.querySelector('nav.breadcrumb [aria-current=location]').textContent"
        assert browser.evaluate(here) == hops.under.hops[-1]
        browser.screenshot(SCREENSHOTS / "compare-dominator-drilled.png")
        assert browser.accessibility_violations(AXE, IMPACTS) == []
        # Back up by the trail: the root's groups again.
        browser.follow("nav.breadcrumb a")
        assert browser.evaluate("document.querySelectorAll('#dominator-groups tbody tr').length") == len(
            expected_rows(oracles["before"], oracles["after"], ())
        )
        assert browser.problems == []
