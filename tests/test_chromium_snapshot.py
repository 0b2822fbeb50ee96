"""The V8 reader on a real Chromium heap snapshot of a page that leaks a detached DOM tree."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from heapdb.loader.formats import v8
from heapdb.loader.formats.heapsnapshot_export import write_heapsnapshot
from heapdb.loader.graph import Detachedness
from tests.support.chromium import capture_heap_snapshot, find_chromium
from tests.support.v8_fixtures import memlab_oracle, node_tools  # noqa: F401

pytestmark = pytest.mark.skipif(
    find_chromium() is None, reason="no Chromium on PATH (apt-get install chromium) to take browser snapshots"
)

TREE_SIZE = 50
LEAKY_PAGE = f"""<!doctype html>
<html><body><p>a page that keeps a removed DOM tree alive</p>
<script>
function makeTree(label) {{
  const root = document.createElement('div');
  root.id = label;
  for (let i = 0; i < {TREE_SIZE}; i++) {{
    const item = document.createElement('span');
    item.textContent = label + '-' + i;
    root.appendChild(item);
  }}
  return root;
}}
window.leaked = [];
const removed = makeTree('removed');
document.body.appendChild(removed);
document.body.removeChild(removed);
window.leaked.push(removed);            // the leak: a detached tree held from a global
document.body.appendChild(makeTree('shown'));
window.leakReady = true;
</script></body></html>
"""


@pytest.fixture(scope="module")
def chromium_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("chromium")
    page = directory / "leaky.html"
    page.write_text(LEAKY_PAGE)
    return capture_heap_snapshot(page, directory / "leaky.heapsnapshot", ready_expression="window.leakReady === true")


def header(path: Path) -> dict:
    with open(path) as f:
        text = f.read(1 << 16)
    return json.JSONDecoder().raw_decode(text[text.index("{", 1) :])[0]


def test_chromium_meta_differs_from_node_and_reads(chromium_snapshot: Path, memlab_oracle) -> None:  # noqa: F811
    snapshot = header(chromium_snapshot)
    fields = snapshot["meta"]["node_fields"]
    assert "detachedness" in fields and "trace_node_id" not in fields  # Node writes trace_node_id
    g = v8.read_graph(chromium_snapshot)
    assert (g.node_count, g.edge_count) == (snapshot["node_count"], snapshot["edge_count"])
    assert g.node_kinds == snapshot["meta"]["node_types"][0]
    oracle = memlab_oracle(chromium_snapshot)
    assert (oracle.node_count, oracle.edge_count) == (g.node_count, g.edge_count)
    assert np.array_equal(oracle.ids, g.ids)
    assert np.array_equal(oracle.self_size, g.self_size)


def test_detached_dom_tree_is_found(chromium_snapshot: Path, memlab_oracle) -> None:  # noqa: F811
    g = v8.read_graph(chromium_snapshot)
    assert g.detachedness is not None
    detached = g.detachedness == Detachedness.DETACHED
    classes = Counter(g.type_name(int(i)) for i in np.flatnonzero(detached))
    assert classes["Detached <span>"] == TREE_SIZE
    assert classes["Detached <div>"] == 1
    assert classes["Detached Text"] == TREE_SIZE
    # The tree still on the page is attached, not detached.
    attached = Counter(g.type_name(int(i)) for i in np.flatnonzero(g.detachedness == Detachedness.ATTACHED))
    assert attached["<span>"] == TREE_SIZE and attached["<div>"] >= 1
    # memlab, reading the same file, flags exactly the same nodes.
    assert np.array_equal(memlab_oracle(chromium_snapshot).detached, detached)


def test_chromium_snapshot_round_trips_through_export(chromium_snapshot: Path, tmp_path: Path) -> None:
    original = v8.read_graph(chromium_snapshot)
    out = tmp_path / "again.heapsnapshot"
    write_heapsnapshot(original, out)
    again = v8.read_graph(out)
    for field in ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name"):
        assert np.array_equal(getattr(original, field), getattr(again, field)), field
    assert (original.detachedness is None) == (again.detachedness is None)
    if original.detachedness is not None and again.detachedness is not None:
        assert np.array_equal(original.detachedness, again.detachedness)
    assert again.node_kinds == original.node_kinds and again.strings == original.strings
