"""The benchmark heap generator: exact sizes, the promised shape, and a snap.bin round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from heapdb.loader.analysis import analyze
from heapdb.loader.formats import read_graph
from heapdb.loader.graph import EdgeKind
from heapgen.synth import synth_graph, write_snapbin


@pytest.mark.parametrize("objects,references", [(1, 0), (2, 1), (50, 49), (1000, 5000), (20_000, 100_000)])
def test_sizes_and_shape(objects: int, references: int) -> None:
    graph = synth_graph(objects, references, seed=3)
    root_edges = graph.edge_start[graph.root + 1] - graph.edge_start[graph.root]
    group = int(graph.edge_to[graph.edge_start[graph.root]])
    held = graph.edge_start[group + 1] - graph.edge_start[group]
    assert graph.node_count == objects + 2
    assert root_edges == 1 and graph.node_name(group) == "(global roots)"
    assert graph.edge_count == references + 1 + held
    # The tree keeps every object alive, whatever the weak edges do.
    result = analyze(graph)
    assert result.unreachable_count == 0
    weak = np.count_nonzero(graph.edge_kind == EdgeKind.WEAK)
    assert weak <= references - (objects - 1)
    if references >= 10_000:
        assert 0.02 < weak / (references - objects + 1) < 0.08
        # Power-law out-degrees: the busiest object holds far more than the average.
        out_degree = np.diff(graph.edge_start)[:objects]
        assert out_degree.max() > 20 * out_degree.mean()
        # A long chain makes the dominator tree deep somewhere.
        assert result.distance.max() > 10


def test_same_seed_same_graph() -> None:
    a, b = synth_graph(5000, 20_000, seed=7), synth_graph(5000, 20_000, seed=7)
    c = synth_graph(5000, 20_000, seed=8)
    assert (a.edge_to == b.edge_to).all() and (a.self_size == b.self_size).all()
    assert a.edge_to.shape != c.edge_to.shape or not (a.edge_to == c.edge_to).all()


def test_snapbin_round_trip_keeps_the_analysis(tmp_path: Path) -> None:
    graph = synth_graph(3000, 12_000, seed=1)
    path = tmp_path / "synth.snap.bin"
    write_snapbin(graph, path)
    again = read_graph(path)
    ours, theirs = analyze(graph), analyze(again)
    # The objects keep their ids; the root layout's synthetic nodes are rebuilt by the reader.
    objects = graph.ids[:3000]
    by_id = np.argsort(again.ids)
    where = by_id[np.searchsorted(again.ids, objects, sorter=by_id)]
    assert (again.ids[where] == objects).all()
    assert (theirs.retained_size[where] == ours.retained_size[:3000]).all()
    assert (theirs.distance[where] == ours.distance[:3000]).all()
    assert theirs.retained_size[again.root] == ours.retained_size[graph.root]
