"""Export to Chrome .heapsnapshot: round trips through heapdb's V8 reader, and memlab reading the result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from heapdb.loader.formats import heapsnapshot_export, luau, v8
from heapdb.loader.formats.heapsnapshot_export import write_heapsnapshot
from heapdb.loader.formats.text import safe_text
from heapdb.loader.graph import EdgeKind, HeapGraph, StringTable, csr_from_coo
from tests.support.snapshots import LUAU_FIXTURES
from tests.support.v8_fixtures import leak_snapshot, leak_snapshots, memlab_oracle, node_tools  # noqa: F401

FIXTURES = LUAU_FIXTURES

ARRAYS = ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name")


def assert_identical(a: HeapGraph, b: HeapGraph) -> None:
    for field in ARRAYS:
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.strings == b.strings and a.node_kinds == b.node_kinds and a.root == b.root
    assert (a.detachedness is None) == (b.detachedness is None)
    if a.detachedness is not None and b.detachedness is not None:
        assert np.array_equal(a.detachedness, b.detachedness)


def foreign_graph(root: int = 0, ids: list[int] | None = None) -> HeapGraph:
    """A small non-V8 graph (Luau-like kinds, REFERENCE and WEAK edges), root anywhere."""
    table = StringTable()
    kinds = ["synthetic", "table", "function", "string", "userdata"]
    nodes = [  # (kind, type, name, size)
        ("table", "table", "", 40),
        ("function", "function", "onTick", 32),
        ("synthetic", "synthetic", "(root)", 0),
        ("string", "string", 'quote " and \\ and \u00e9 \ud800', 20),
        ("userdata", "Widget", "tag 3", 16),
    ]
    edges: list[tuple[int, int, EdgeKind, int | str]] = [  # (source, target, kind, name)
        (2, 0, EdgeKind.REFERENCE, "(mainthread roots)"),
        (0, 1, EdgeKind.REFERENCE, "handler"),
        (0, 3, EdgeKind.WEAK, "(key)"),
        (0, 4, EdgeKind.ELEMENT, 1),
        (1, 0, EdgeKind.REFERENCE, "upvalue 1"),
        (2, 3, EdgeKind.REFERENCE, "(other root)"),
    ]
    n = len(nodes)
    start, to, kind, name = csr_from_coo(
        n,
        np.array([e[0] for e in edges]),
        np.array([e[1] for e in edges]),
        np.array([int(e[2]) for e in edges]),
        np.array([e[3] if isinstance(e[3], int) else table.intern(e[3]) for e in edges]),
    )
    graph = HeapGraph(
        ids=np.array(ids or [0x1000 + 16 * i for i in range(n)], dtype=np.int64),
        kind=np.array([kinds.index(k) for k, *_ in nodes], dtype=np.uint8),
        type=np.array([table.intern(t) for _, t, _, _ in nodes], dtype=np.int32),
        name=np.array([table.intern(nm) for _, _, nm, _ in nodes], dtype=np.int32),
        self_size=np.array([s for *_, s in nodes], dtype=np.int64),
        edge_start=start,
        edge_to=to,
        edge_kind=kind,
        edge_name=name,
        strings=table.strings,
        node_kinds=kinds,
        root=root,
    )
    graph.validate()
    return graph


def edge_triples(g: HeapGraph) -> set[tuple[int, str, str, int]]:
    """(source id, kind, label, target id) for every edge."""
    sources = g.edge_sources()
    return {
        (int(g.ids[sources[e]]), EdgeKind(int(g.edge_kind[e])).name, g.edge_label(e), int(g.ids[g.edge_to[e]]))
        for e in range(g.edge_count)
    }


def test_v8_round_trip_is_identical(leak_snapshot: Path, tmp_path: Path) -> None:  # noqa: F811
    original = v8.read_graph(leak_snapshot)
    out = tmp_path / "again.heapsnapshot"
    write_heapsnapshot(original, out)
    assert_identical(original, v8.read_graph(out))
    json.loads(out.read_text())  # valid JSON, not only to our own reader


def test_memlab_reads_the_v8_export_alike(leak_snapshot: Path, tmp_path: Path, memlab_oracle) -> None:  # noqa: F811
    out = tmp_path / "export.heapsnapshot"
    graph = v8.read_graph(leak_snapshot)
    write_heapsnapshot(graph, out)
    exported, original = memlab_oracle(out), memlab_oracle(leak_snapshot)
    assert (exported.node_count, exported.edge_count) == (graph.node_count, graph.edge_count)
    assert np.array_equal(exported.ids, original.ids)
    assert np.array_equal(exported.retained_size, original.retained_size)
    assert np.array_equal(exported.dominator_id, original.dominator_id)


def test_foreign_graph_export(tmp_path: Path, memlab_oracle) -> None:  # noqa: F811
    graph = foreign_graph(root=2)
    out = tmp_path / "foreign.heapsnapshot"
    write_heapsnapshot(graph, out)
    back = v8.read_graph(out)
    assert back.root == 0 and back.ids[0] == graph.ids[2], "the root must be node 0 of the export"
    assert sorted(back.ids.tolist()) == sorted(graph.ids.tolist())
    expected = {(s, "PROPERTY" if k == "REFERENCE" else k, label, t) for s, k, label, t in edge_triples(graph)}
    assert edge_triples(back) == expected  # weak stays weak, strong references become properties
    by_id = {int(i): n for n, i in enumerate(back.ids)}
    kinds = {
        k: back.node_kinds[back.kind[by_id[int(graph.ids[n])]]]
        for n, k in enumerate(graph.node_kinds[k] for k in graph.kind)
    }
    assert kinds == {
        "table": "object",
        "function": "closure",
        "synthetic": "synthetic",
        "string": "string",
        "userdata": "object",
    }
    assert back.type_name(by_id[int(graph.ids[4])]) == "Widget"  # objects keep their class for DevTools
    assert back.type_name(by_id[int(graph.ids[1])]) == "(closure)"
    assert back.node_name(by_id[int(graph.ids[1])]) == "onTick"
    # Names survive the trip; a lone surrogate comes back as its escape, as every reader gives it.
    assert back.node_name(by_id[int(graph.ids[3])]) == safe_text(graph.node_name(3))
    assert back.node_name(by_id[int(graph.ids[3])]).endswith("\\ud800")
    oracle = memlab_oracle(out)
    assert (oracle.node_count, oracle.edge_count) == (graph.node_count, graph.edge_count)


def test_ids_beyond_safe_integers_are_renumbered(tmp_path: Path, memlab_oracle) -> None:  # noqa: F811
    graph = foreign_graph(root=2, ids=[2**60 + i for i in range(5)])  # also beyond 2^53
    out = tmp_path / "big-ids.heapsnapshot"
    write_heapsnapshot(graph, out)
    back = v8.read_graph(out)
    assert back.ids.tolist() == [1, 3, 5, 7, 9]
    # The renumbering follows the written order (root first), and edges follow their nodes.
    old_to_new = {2: 1, 0: 3, 1: 5, 3: 7, 4: 9}
    expected = {
        (old_to_new[int(s - 2**60)], "PROPERTY" if k == "REFERENCE" else k, label, old_to_new[int(t - 2**60)])
        for s, k, label, t in edge_triples(graph)
    }
    assert edge_triples(back) == expected
    assert memlab_oracle(out).ids.tolist() == [1, 3, 5, 7, 9]


def test_block_size_does_not_change_the_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    leak_snapshot: Path,  # noqa: F811
) -> None:
    graph = v8.read_graph(leak_snapshot)
    write_heapsnapshot(graph, tmp_path / "default.heapsnapshot")
    monkeypatch.setattr(heapsnapshot_export, "BLOCK_ROWS", 7)
    write_heapsnapshot(graph, tmp_path / "small-blocks.heapsnapshot")
    assert (tmp_path / "default.heapsnapshot").read_bytes() == (tmp_path / "small-blocks.heapsnapshot").read_bytes()


def test_failed_write_leaves_no_file(tmp_path: Path) -> None:
    graph = foreign_graph()
    graph.edge_to[0] = 99  # invalid: validate() refuses before anything is written
    with pytest.raises(ValueError):
        write_heapsnapshot(graph, tmp_path / "bad.heapsnapshot")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"real Luau dumps not present at {FIXTURES}")
def test_luau_dump_export(tmp_path: Path, memlab_oracle) -> None:  # noqa: F811
    graph = luau.read_graph(FIXTURES / "luau-3-final.json")
    out = tmp_path / "luau.heapsnapshot"
    write_heapsnapshot(graph, out)
    back = v8.read_graph(out)
    assert np.array_equal(back.edge_to, graph.edge_to) and np.array_equal(back.self_size, graph.self_size)
    weak = graph.edge_kind == EdgeKind.WEAK
    assert weak.sum() == 410 and np.array_equal(back.edge_kind == EdgeKind.WEAK, weak)
    oracle = memlab_oracle(out)
    assert (oracle.node_count, oracle.edge_count) == (graph.node_count, graph.edge_count)
    # Luau addresses do not fit the 32 bits memlab keeps: the export renumbers every node.
    assert np.array_equal(oracle.ids, 2 * np.arange(graph.node_count) + 1)
    assert np.array_equal(back.ids, oracle.ids)
