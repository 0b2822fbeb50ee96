"""Duplicate strings (heapdb.loader.inspections.strings) against memlab's `string` analysis and brute force.

- Real V8 snapshots of two Node programs (tests/js/dup_strings.js: 3,000 copies of one 1.6 kB
  configuration text and equal greetings built by differently shaped concatenations; leak.js): every
  string value memlab groups is one of ours with the same copies, ids and bytes, the totals are its
  "All strings" statistics, and the report's top lists are its top lists.
- Small generated graphs with concatenations, sliced strings and code objects: the groups equal
  those of a brute force that builds every content the way memlab does.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.inspections import strings
from tests.support.v8 import (
    assert_ranked_as_memlab,
    read_beside_memlab,
    run_memlab_strings,
    v8_graph,
    write_duplicate_strings_snapshot,
)


def _v8_strings() -> formats.StringKinds:
    assert formats.V8.strings is not None
    return formats.V8.strings


V8_STRINGS = _v8_strings()


def our_groups(graph: HeapGraph, result: analysis.Analysis) -> dict[str, tuple[int, int, list[int]]]:
    """Every group as content -> (copies, retained bytes, sorted ids), the content whole."""
    grouped = strings.string_groups(graph, result)
    assert grouped is not None
    found = {}
    for g in range(grouped.count.shape[0]):
        content = strings.text_of(graph, [int(grouped.first[g])], 1 << 40, V8_STRINGS)[0]
        members = grouped.members(g)
        assert len(content) == grouped.length[g]
        found[content] = (int(grouped.count[g]), int(grouped.retained_size[g]), sorted(graph.ids[members].tolist()))
    return found


@pytest.fixture(scope="module")
def dup_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_duplicate_strings_snapshot(tmp_path_factory.mktemp("dup-strings"))


@pytest.fixture(scope="module", params=["dup_strings.js", "leak.js"])
def compared(request: pytest.FixtureRequest, dup_snapshot: Path, leak_snapshot: Path, tmp_path_factory) -> Any:
    """A snapshot read and analysed, with memlab's string analysis of it."""
    path = dup_snapshot if request.param == "dup_strings.js" else leak_snapshot
    return read_beside_memlab(path, run_memlab_strings, tmp_path_factory.mktemp("memlab-strings") / "strings.json")


def test_every_string_value_is_grouped_as_memlab_groups_it(compared: Any) -> None:
    _path, graph, result, memlab = compared
    theirs = {g["str"]: (g["n"], g["size"], sorted(g["ids"])) for g in memlab["groups"]}
    ours = our_groups(graph, result)
    assert ours.keys() == theirs.keys()
    assert ours == theirs
    grouped = strings.string_groups(graph, result)
    assert grouped is not None
    everything = memlab["patterns"]["All strings"]
    assert (grouped.strings, grouped.duplicated, grouped.string_bytes) == (
        everything["n"],
        everything["dupN"],
        everything["size"],
    )
    assert grouped.wasted()[grouped.count > 1].sum() == pytest.approx(everything["dupSize"], abs=0.5)


def test_the_report_ranks_as_memlabs_top_lists(compared: Any) -> None:
    path, graph, result, memlab = compared
    for sort, top, key in (("retained_size", "topBySize", "size"), ("count", "topByCount", "n")):
        report = strings.duplicate_strings(graph, result, source=str(path), limit=10, sort=sort)
        assert report is not None
        ours = [(r.value, r.count, r.retained_size) for r in report.rows]
        theirs = [(r["str"][: strings.VALUE_CHARS], r["n"], r["size"]) for r in memlab[top]]
        figure = 2 if key == "size" else 1
        assert_ranked_as_memlab(ours, theirs, figure)


def test_the_configuration_copies_lead_with_their_owner_and_waste(dup_snapshot: Path) -> None:
    graph = formats.read_graph(dup_snapshot)
    result = analysis.analyze(graph)
    report = strings.duplicate_strings(graph, result, source=str(dup_snapshot), limit=5)
    assert report is not None
    config = report.rows[0]
    assert config.value.startswith('{"service":"checkout"') and len(config.value) == strings.VALUE_CHARS
    # The text is 1,685 characters; V8 writes a string's first 1,024 (--heap-snapshot-string-limit).
    assert config.count == 3000 and config.length == 1024
    assert config.wasted == round(config.retained_size * 2999 / 3000)
    assert config.owners[0].type == "RequestContext" and config.owners[0].copies >= 2999
    assert report.wasted > 0.9 * report.string_bytes * 0.8
    greetings = [r for r in report.rows if r.value.startswith("Hello, ")]
    assert greetings and all(r.count == 1000 for r in greetings)


def test_analyze_lists_them(dup_snapshot: Path) -> None:
    as_json = CliRunner().invoke(main, ["analyze", str(dup_snapshot), "--strings", "--top", "3", "--json"])
    assert as_json.exit_code == 0, as_json.output
    answer = json.loads(as_json.stdout)["strings"]
    assert len(answer["rows"]) == 3 and answer["rows"][0]["count"] == 3000
    as_text = CliRunner().invoke(main, ["analyze", str(dup_snapshot), "--strings", "--top", "3"])
    assert as_text.exit_code == 0, as_text.output
    assert "Duplicate strings in" in as_text.stdout and "RequestContext" in as_text.stdout


# --- brute force on small graphs ------------------------------------------------------------------

KINDS = ["synthetic", "object", "string", "concatenated string", "sliced string", "code"]
TEXTS = ["", "a", "b", "ab", "ba", "aab", "é", "\ud83d"]  # a lone surrogate, as JSON allows


def small_graph(rng: random.Random, n: int) -> HeapGraph:
    """A root, objects and code holding strings at random; concatenations and slices of earlier
    strings only (no cycles), each part sometimes missing."""
    strings_table = ["", "first", "second", "parent", "p", *TEXTS]
    kind = [0] + [rng.choice([1, 2, 2, 3, 3, 4, 5]) for _ in range(n - 1)]
    name = [0] * n
    src: list[int] = []
    dst: list[int] = []
    edge_kinds: list[int] = []
    edge_names: list[int] = []

    def edge(a: int, b: int, label: str, k: EdgeKind = EdgeKind.PROPERTY) -> None:
        src.append(a)
        dst.append(b)
        edge_kinds.append(int(k))
        edge_names.append(strings_table.index(label))

    for v in range(1, n):
        if KINDS[kind[v]] == "string":
            name[v] = strings_table.index(rng.choice(TEXTS))
        elif KINDS[kind[v]] in ("concatenated string", "sliced string"):
            earlier = [u for u in range(1, v) if KINDS[kind[u]] in ("string", "concatenated string", "sliced string")]
            parts = ("first", "second") if KINDS[kind[v]] == "concatenated string" else ("parent",)
            for part in parts:
                if earlier and rng.random() < 0.9:
                    edge(v, rng.choice(earlier), part, EdgeKind.INTERNAL)
        for _ in range(rng.randint(0, 2)):  # holders: the root, objects, code
            holder = rng.randrange(0, n)
            if holder != v and KINDS[kind[holder]] in ("synthetic", "object", "code"):
                edge(holder, v, "p")
        if rng.random() < 0.8:
            edge(0, v, "p")
    return v8_like_graph(
        kind, name, [rng.randint(1, 50) for _ in range(n)], list(zip(src, dst, edge_kinds, edge_names)), strings_table
    )


def v8_like_graph(
    kind: list[int], name: list[int], self_size: list[int], edges: list[tuple[int, int, int, int]], table: list[str]
) -> HeapGraph:
    """A graph of KINDS nodes, node 0 its root, with ``edges`` as (source, target, kind, name index)."""
    return v8_graph(KINDS, kind, name, self_size, edges, table)


def brute_groups(graph: HeapGraph, result: analysis.Analysis) -> dict[str, tuple[int, int, list[int]]]:
    """memlab's rule, written out: contents built recursively, code dominators climbed one by one."""

    def part(v: int, label: str) -> int | None:
        for e in graph.out_edges(v):
            if graph.edge_label(e) == label:
                return int(graph.edge_to[e])
        return None

    def content(v: int | None) -> str:
        if v is None:
            return ""
        if KINDS[graph.kind[v]] == "concatenated string":
            return content(part(v, "first")) + content(part(v, "second"))
        if KINDS[graph.kind[v]] == "sliced string":
            return content(part(v, "parent"))
        return graph.strings[graph.name[v]]

    def under_code(v: int) -> bool:
        while v >= 0:
            if KINDS[graph.kind[v]] == "code":
                return True
            v = -1 if v == graph.root else int(result.idom[v])
        return False

    found: dict[str, tuple[int, int, list[int]]] = {}
    for v in range(graph.node_count):
        if KINDS[graph.kind[v]] in ("string", "concatenated string") and not under_code(v):
            n, size, ids = found.get(content(v), (0, 0, []))
            found[content(v)] = (n + 1, size + int(result.retained_size[v]), sorted([*ids, int(graph.ids[v])]))
    return found


@pytest.mark.parametrize("seed", range(60))
def test_groups_equal_brute_force_on_small_graphs(seed: int) -> None:
    rng = random.Random(seed)
    graph = small_graph(rng, rng.randint(2, 40))
    result = analysis.analyze(graph)
    assert our_groups(graph, result) == brute_groups(graph, result)


def test_a_cycle_of_concatenations_ends() -> None:
    # a malformed file: two concatenations that are each other's parts
    strings_table = ["", "first", "second", "x"]
    held, first, second = (int(EdgeKind.PROPERTY), 3), (int(EdgeKind.INTERNAL), 1), (int(EdgeKind.INTERNAL), 2)
    edges = [(0, 1, *held), (0, 2, *held), (1, 2, *first), (2, 1, *first), (1, 3, *second)]
    graph = v8_like_graph([0, 3, 3, 2], [0, 0, 0, 3], [1, 1, 1, 1], edges, strings_table)
    grouped = strings.string_groups(graph, analysis.analyze(graph))
    assert grouped is not None and grouped.strings == 3
    assert len(strings.text_of(graph, [1], 100, V8_STRINGS)[0]) <= 100  # it returns


def test_a_format_without_strings_has_no_answer() -> None:
    graph = small_graph(random.Random(1), 10)
    graph.meta["format"] = "unknown"  # a graph no reader wrote: no format declares its strings
    assert formats.named("unknown") is None
    assert strings.string_groups(graph, analysis.analyze(graph)) is None
    assert strings.duplicate_strings(graph, analysis.analyze(graph), source="x", limit=5) is None
    # hprof declares its strings by class, which a graph without java.lang.String instances has not.
    graph.meta["format"] = "hprof"
    grouped = strings.string_groups(graph, analysis.analyze(graph))
    assert grouped is not None and grouped.strings == 0
