"""The analysis engine against memlab on V8 snapshots: every node's retained size and dominator.

Three kinds of snapshot: real ones written by Node running ``tests/js/leak.js``, a real headless
Chromium snapshot of a page with DOM trees, and random graphs written as ``.heapsnapshot`` files
that exercise every corner of memlab's rules (weak-only orphans, cycles nothing reaches, shortcut
edges, self edges, objects only the debugger holds, ``(Document DOM trees)``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from heapdb.loader.analysis import Semantics, analyze
from heapdb.loader.formats import read_graph
from tests.support.chromium import capture_heap_snapshot, find_chromium

NODE_TYPES = ["hidden", "array", "string", "object", "code", "closure", "regexp", "number", "native", "synthetic"]
EDGE_TYPES = ["context", "element", "property", "internal", "hidden", "shortcut", "weak"]


def assert_equals_memlab(path: Path, oracle) -> None:
    graph = read_graph(path)
    result = analyze(graph)
    assert result.semantics is Semantics.V8
    assert oracle.node_count == graph.node_count
    assert (oracle.ids == graph.ids).all()
    memlab_idom = oracle.dominator_index()
    ours = result.idom.astype(np.int64)
    ours[graph.root] = graph.root  # memlab makes the root its own dominator
    differ = np.flatnonzero((ours != memlab_idom) | (result.retained_size != oracle.retained_size))
    assert differ.size == 0, (
        f"{differ.size} of {graph.node_count} nodes differ from memlab, e.g. node {differ[0]}: "
        f"idom {ours[differ[0]]} vs {memlab_idom[differ[0]]}, "
        f"retained {result.retained_size[differ[0]]} vs {oracle.retained_size[differ[0]]}"
    )


def test_leak_snapshot_equals_memlab(leak_snapshot: Path, memlab_oracle) -> None:
    assert_equals_memlab(leak_snapshot, memlab_oracle(leak_snapshot))


# A page with what browser heaps add to Node's: DOM trees (attached and detached), the
# (Document DOM trees) root, weak collections, and objects the DevTools session itself holds.
BROWSER_PAGE = """<!doctype html>
<html><body><p>heapdb analysis test page</p>
<script>
function tree(label, size) {
  const root = document.createElement('div');
  root.id = label;
  for (let i = 0; i < size; i++) {
    const item = document.createElement('span');
    item.textContent = label + '-' + i;
    root.appendChild(item);
  }
  return root;
}
const detached = tree('detached', 40);
document.body.appendChild(detached);
document.body.removeChild(detached);
window.kept = { detached, list: Array.from({ length: 500 }, (_, i) => ({ i, text: 'x' + i })) };
document.body.appendChild(tree('attached', 40));
const weak = new WeakMap();
const keys = Array.from({ length: 50 }, (_, i) => ({ key: i }));
keys.forEach((k) => weak.set(k, { value: k.key }));
window.keys = keys.slice(0, 25);
window.weakRef = new WeakRef({ gone: true });
window.ready = true;
</script></body></html>
"""


@pytest.mark.skipif(
    find_chromium() is None, reason="no Chromium on PATH (apt-get install chromium) for browser snapshots"
)
def test_chromium_snapshot_equals_memlab(tmp_path: Path, memlab_oracle) -> None:
    page = tmp_path / "page.html"
    page.write_text(BROWSER_PAGE)
    path = capture_heap_snapshot(page, tmp_path / "page.heapsnapshot", ready_expression="window.ready === true")
    assert_equals_memlab(path, memlab_oracle(path))


def test_leak_grows_in_retained_size(leak_snapshots: dict[str, Path]) -> None:
    """The leaking cache retains more in each later snapshot, and it is among the top retainers."""
    sizes = []
    for label in ("baseline", "target", "final"):
        graph = read_graph(leak_snapshots[label])
        result = analyze(graph)
        caches = [i for i in range(graph.node_count) if graph.type_name(i) == "LeakyCache"]
        assert len(caches) == 1
        sizes.append(int(result.retained_size[caches[0]]))
        top = result.top_retainers(50)
        assert caches[0] in top or any(graph.type_name(int(i)) == "Map" for i in top)
    assert sizes[0] < sizes[1] < sizes[2]


def random_v8_snapshot(rng: np.random.Generator, n: int, density: float = 3.0) -> dict:
    """A random graph in V8's .heapsnapshot layout, with memlab's special cases mixed in."""
    strings = ["", "(GC roots)", "(Document DOM trees)", "Object", "system / Context", "x"]
    node_type = rng.choice(len(NODE_TYPES) - 1, size=n)
    node_name = rng.choice([3, 4, 5], size=n)
    node_type[0] = NODE_TYPES.index("synthetic")
    node_name[0] = 0
    # A (GC roots) and a (Document DOM trees) synthetic node, held by element edges from the root.
    for i, name in ((1, 1), (2, 2)):
        node_type[i] = NODE_TYPES.index("synthetic")
        node_name[i] = name
    m = int(density * n)
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    # Mostly strong edges; weak, shortcut and self edges; the root's own edges are a mix too.
    kind = rng.choice(len(EDGE_TYPES), size=m, p=[0.1, 0.15, 0.3, 0.15, 0.05, 0.1, 0.15])
    self_edges = rng.random(m) < 0.02
    dst[self_edges] = src[self_edges]
    src = np.concatenate([[0, 0], src])
    dst = np.concatenate([[1, 2], dst])
    kind = np.concatenate([[1, 1], kind])
    order = np.argsort(src, kind="stable")
    src, dst, kind = src[order], dst[order], kind[order]
    edge_count = np.bincount(src, minlength=n)
    nodes = np.zeros((n, 7), dtype=np.int64)
    nodes[:, 0] = node_type
    nodes[:, 1] = node_name
    nodes[:, 2] = 2 * np.arange(n) + 1
    nodes[:, 3] = rng.integers(0, 500, size=n)
    nodes[:, 4] = edge_count
    edges = np.zeros((len(src), 3), dtype=np.int64)
    edges[:, 0] = kind
    edges[:, 1] = np.where(np.isin(kind, [1, 4]), rng.integers(0, 10, size=len(src)), 5)
    edges[:, 2] = dst * 7
    return {
        "snapshot": {
            "meta": {
                "node_fields": ["type", "name", "id", "self_size", "edge_count", "trace_node_id", "detachedness"],
                "node_types": [NODE_TYPES, "string", "number", "number", "number", "number", "number"],
                "edge_fields": ["type", "name_or_index", "to_node"],
                "edge_types": [EDGE_TYPES, "string_or_number", "node"],
                "trace_function_info_fields": [],
                "trace_node_fields": [],
                "sample_fields": [],
                "location_fields": [],
            },
            "node_count": n,
            "edge_count": len(src),
            "trace_function_count": 0,
        },
        "nodes": nodes.ravel().tolist(),
        "edges": edges.ravel().tolist(),
        "trace_function_infos": [],
        "trace_tree": [],
        "samples": [],
        "locations": [],
        "strings": strings,
    }


@pytest.mark.parametrize(
    "seed,n,density", [(0, 40, 3.0), (1, 300, 3.0), (2, 2000, 3.0), (3, 5000, 3.0), (4, 3000, 1.2), (5, 3000, 6.0)]
)
def test_random_snapshots_equal_memlab(tmp_path: Path, memlab_oracle, seed: int, n: int, density: float) -> None:
    path = tmp_path / f"random-{seed}.heapsnapshot"
    path.write_text(json.dumps(random_v8_snapshot(np.random.default_rng(seed), n, density)))
    graph = read_graph(path)
    result = analyze(graph)
    # The point of these graphs: memlab's rules for what the root does not reach all come into play.
    assert result.unreachable_count > 0
    assert_equals_memlab(path, memlab_oracle(path))
