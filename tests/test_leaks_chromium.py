"""A detached-DOM leak in a real Chromium page, found by ``heapdb leaks``.

The page is a single-page app in miniature: opening a panel adds a ``<div>`` of ``<span>`` items to
the document; closing it removes the panel but keeps it in ``window.closedPanels`` "for undo", so
every closed panel stays alive as a detached DOM tree. Three snapshots of one renderer process
(V8 ids are stable across them) follow memlab's model:

- before the baseline, one panel is opened and closed (it leaks, but before the action: not a candidate);
- target: the action, ``ACTION_PANELS`` panels opened and closed;
- final: one of the action's panels is released (undo), and one more panel is opened and closed
  (allocated after the target: not a candidate either).

So the leak candidates heapdb must report are the ``ACTION_PANELS - 1`` action panels still held.
Every figure is checked against the same one computed in process from the files, and the detached
flags against memlab's reading of the final snapshot.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader import analysis, formats
from heapdb.loader.graph import Detachedness
from heapdb.queries import params
from heapdb.queries.questions import Questions
from tests.support.chromium import capture_heap_snapshots, find_chromium

pytestmark = [
    pytest.mark.skipif(
        find_chromium() is None, reason="no Chromium on PATH (apt-get install chromium) to take browser snapshots"
    ),
    pytest.mark.slow,  # three browser snapshots loaded into Neo4j: about a minute before the first assertion
]

PANEL_ITEMS = 20
ACTION_PANELS = 3
HOLDER = "closedPanels"
PAGE = f"""<!doctype html>
<html><body><h1>panels</h1>
<script>
// Closing a panel removes it from the page but keeps it for "undo": the leak.
window.{HOLDER} = [];
function openPanel(label) {{
  const panel = document.createElement('div');
  panel.className = 'panel';
  for (let i = 0; i < {PANEL_ITEMS}; i++) {{
    const item = document.createElement('span');
    item.textContent = label + '-' + i;
    panel.appendChild(item);
  }}
  document.body.appendChild(panel);
  return panel;
}}
function closePanel(panel) {{
  panel.remove();
  window.{HOLDER}.push(panel);
}}
function cycle(label, panels) {{
  for (let p = 0; p < panels; p++) closePanel(openPanel(label + p));
  return window.{HOLDER}.length;
}}
cycle('before-baseline', 1);
</script></body></html>
"""
STEPS = (
    ("baseline", None),
    ("target", f"cycle('action', {ACTION_PANELS})"),
    # Undo one of the action's panels (index 0 is the panel from before the baseline), then repeat.
    ("final", f"window.{HOLDER}.splice(1, 1); cycle('after-target', 1)"),
)
# What the page holds as leak candidates in the final snapshot, per element type.
EXPECTED_ELEMENTS = {
    "Detached <div>": ACTION_PANELS - 1,
    "Detached <span>": (ACTION_PANELS - 1) * PANEL_ITEMS,
    "Detached Text": (ACTION_PANELS - 1) * PANEL_ITEMS,
}


@pytest.fixture(scope="module")
def leak(database: Database, tmp_path_factory: pytest.TempPathFactory):
    """The three snapshots loaded under unique tags; the final graph and its leak candidates, in process."""
    directory = tmp_path_factory.mktemp("chromium-leak")
    page = directory / "panels.html"
    page.write_text(PAGE)
    paths = capture_heap_snapshots(page, directory, STEPS)
    run = uuid.uuid4().hex[:8]
    tags = {}
    for label, path in paths.items():
        # The engine-level model these tests state (every candidate in one cluster): no rules.
        tags[label] = f"test-leaks-chromium-{label}-{run}"
        loaded = CliRunner().invoke(main, ["load", str(path), "--tag", tags[label], "--rules", "none"])
        assert loaded.exit_code == 0, loaded.output
    graphs = {label: formats.read_graph(path) for label, path in paths.items()}
    final = graphs["final"]
    result = analysis.analyze(final)
    # memlab's model, as the leaks question states it: reachable in final (not the root or a synthetic
    # node), present in target, absent from baseline.
    in_target = np.isin(final.ids, graphs["target"].ids)
    in_baseline = np.isin(final.ids, graphs["baseline"].ids)
    candidates = result.reachable & (final.kind != final.node_kinds.index("synthetic")) & in_target & ~in_baseline
    candidates[final.root] = False
    yield tags, paths, final, candidates


@pytest.fixture(scope="module")
def default_tags(database: Database, leak) -> Iterator[dict[str, str]]:
    """The same three snapshots loaded with the default rules."""
    _, paths, _, _ = leak
    run = uuid.uuid4().hex[:8]
    tags = {}
    for label, path in paths.items():
        tags[label] = f"test-leaks-chromium-defaults-{label}-{run}"
        loaded = CliRunner().invoke(main, ["load", str(path), "--tag", tags[label]])
        assert loaded.exit_code == 0, loaded.output
    yield tags


def detached_candidates(final, candidates: np.ndarray) -> np.ndarray:
    assert final.detachedness is not None, "a Chromium snapshot records detachedness"
    return candidates & (final.detachedness == Detachedness.DETACHED)


def test_detached_panels_lead_the_leak_candidates(database: Database, leak) -> None:
    tags, _, final, candidates = leak
    detached = detached_candidates(final, candidates)
    expected = Counter(final.type_name(int(i)) for i in np.flatnonzero(detached))
    # The in-process count agrees with what the page did: the two action panels still held.
    assert {t: expected[t] for t in EXPECTED_ELEMENTS} == EXPECTED_ELEMENTS

    answer = Questions(database).leaks(tags["baseline"], tags["target"], tags["final"], params.Leaks(limit=1000))
    assert answer.warnings == []  # one renderer process: its ids are stable, and heapdb sees that
    found: Counter = Counter()
    for cluster in answer.clusters:
        if cluster.type.startswith("Detached "):
            found[cluster.type] += cluster.objects
    assert found == expected
    # Every candidate is in exactly one cluster.
    assert sum(c.objects for c in answer.clusters) == int(candidates.sum())
    # The largest clusters are the detached tree's: the panels first, as they retain their items.
    detached_clusters = [c for c in answer.clusters if c.type.startswith("Detached ")]
    assert answer.clusters[: len(EXPECTED_ELEMENTS)] == detached_clusters[: len(EXPECTED_ELEMENTS)]
    assert {c.type for c in answer.clusters[: len(EXPECTED_ELEMENTS)]} == set(EXPECTED_ELEMENTS)
    assert answer.clusters[0].type == "Detached <div>"
    candidate_ids = set(final.ids[detached].tolist())
    for cluster in detached_clusters:
        assert set(cluster.sample_ids) <= candidate_ids, cluster


def test_default_rules_keep_the_detached_panels_first(database: Database, leak, default_tags) -> None:
    _, _, final, candidates = leak
    defaults = default_tags
    answer = Questions(database).leaks(
        defaults["baseline"], defaults["target"], defaults["final"], params.Leaks(limit=1000)
    )
    assert answer.clusters[0].type == "Detached <div>"
    # What a panel holds is part of the panel's leak, not a cluster of its own: fewer objects are
    # named than the engine-level answer names, none twice.
    named = sum(c.objects for c in answer.clusters)
    assert 0 < named < int(candidates.sum())
    panels = next(c for c in answer.clusters if c.type == "Detached <div>")
    candidate_ids = set(final.ids[detached_candidates(final, candidates)].tolist())
    assert set(panels.sample_ids) <= candidate_ids


def test_cluster_paths_name_the_array_that_holds_the_panels(database: Database, leak) -> None:
    tags, _, _, _ = leak
    questions = Questions(database)
    answer = questions.leaks(tags["baseline"], tags["target"], tags["final"], params.Leaks(limit=1000))
    for cluster in answer.clusters:
        if cluster.type in EXPECTED_ELEMENTS:
            assert f"{HOLDER} → Array" in cluster.path, cluster.path
            assert cluster.hops[-1].endswith(f"→ {cluster.type}"), cluster.hops
    # The why-alive answer for a sample says the same, reference by reference.
    panel = next(c for c in answer.clusters if c.type == "Detached <div>")
    why = questions.why_alive(tags["final"], panel.sample_ids[0])
    names = [(r.name, o.type) for r, o in zip(why.paths[0].references, why.paths[0].objects[1:])]
    assert (HOLDER, "Array") in names
    assert names[-1][1] == "Detached <div>" and why.target.detached


def test_detached_flags_match_memlab_and_are_stored(database: Database, leak, memlab_oracle) -> None:
    tags, paths, final, candidates = leak
    detached = detached_candidates(final, candidates)
    oracle = memlab_oracle(paths["final"])
    assert np.array_equal(oracle.ids, final.ids)
    # memlab flags exactly the same objects as detached, among the candidates and in the whole heap.
    assert np.array_equal(oracle.detached & candidates, detached)
    assert np.array_equal(oracle.detached, final.detachedness == Detachedness.DETACHED)

    questions = Questions(database)
    for object_id in final.ids[detached].tolist():
        assert questions.object(tags["final"], object_id, params.ObjectDetails(limit=0)).object.detached, object_id
    # Attached elements are not flagged: the page's heading and body are still in the document.
    attached = np.flatnonzero(final.detachedness == Detachedness.ATTACHED)
    for type_name in ("<h1>", "<body>"):
        nodes = [int(i) for i in attached if final.type_name(int(i)) == type_name]
        assert len(nodes) == 1, type_name
        assert not questions.object(
            tags["final"], int(final.ids[nodes[0]]), params.ObjectDetails(limit=0)
        ).object.detached
