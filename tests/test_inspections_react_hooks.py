"""Memory by React component and hook from a file (heapdb.loader.inspections.react_hooks), against
memlab's ``react-hooks`` analysis.

The React app of tests/test_inspections_react.py (tests/js/react_leak.jsx, a development build in
headless Chromium) keeps a Catalog mounted, whose hooks hold a large state, a memo over it and a ref.
memlab's analysis (tests/js/memlab_react_hooks.js runs its own steps and writes every figure, where
its printout rounds them) finds no component at all on a Chromium page: it reads only the fibers its
own marking left without a "Detached" prefix, and it marks them all. Run over every fiber, with a
function component named by its function where it has no displayName, its figures are heapdb's,
component for component and hook for hook. heapdb lists the hooks of the fiber whose list retains
most, where memlab prints the last it walked; and the hooks memlab lists for V8's null value are not
hooks (docs/analysis.md, "Memory by React component and hook").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats
from heapdb.loader.inspections import react_hooks
from tests.support.v8 import run_memlab_react_hooks
from tests.support.v8_fixtures import node_tools  # noqa: F401

LABELS = ("mounted", "unmounted")


@pytest.fixture(scope="module")
def memlab(
    react_snapshots: dict[str, Path],
    node_tools: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("memlab-react-hooks")
    return {label: run_memlab_react_hooks(react_snapshots[label], out / f"{label}.json") for label in LABELS}


@pytest.fixture(scope="module")
def ours(react_snapshots: dict[str, Path]) -> dict[str, react_hooks.ComponentHooks]:
    found = {}
    for label in LABELS:
        graph = formats.read_graph(react_snapshots[label])
        answer = react_hooks.component_hooks(graph, analysis.analyze(graph), source=label)
        assert answer is not None
        found[label] = answer
    return found


def as_rows(answer: react_hooks.ComponentHooks) -> list[tuple]:
    return [
        (
            r.component,
            r.instances,
            r.retained_size,
            r.self_size,
            r.children_size,
            r.sibling_size,
            r.props_size,
            r.state_size,
        )
        for r in answer.rows
    ]


def memlab_rows(components: list[dict]) -> list[tuple]:
    return [
        (
            c["name"],
            c["instances"],
            c["retained"],
            c["shallow"],
            c["children"],
            c["sibling"],
            c["props"],
            c["state"],
        )
        for c in components
    ]


def hooks(walked: list[dict]) -> list[tuple[str, int]]:
    """A hook list memlab walked, without its walks into V8's null value (no hooks: heapdb lists none)."""
    return [(h["type"], h["size"]) for h in walked if h["value"] not in ("null", "undefined")]


@pytest.mark.parametrize("label", LABELS)
def test_every_component_and_hook_as_memlab_figures_them(
    label: str, ours: dict[str, react_hooks.ComponentHooks], memlab: dict[str, dict]
) -> None:
    answer, theirs = ours[label], memlab[label]
    assert theirs["memlab_rows"] == []  # memlab as it runs: no component on a Chromium page
    assert as_rows(answer) == memlab_rows(theirs["every"])
    # Each component's hooks: of the lists memlab walked for it (those from an object, not from V8's
    # null), one that retains most (heapdb's choice; memlab prints the last it walked).
    for row, component in zip(answer.rows, theirs["every"], strict=True):
        walked = [w for w in component["lists"] if w["hooks"][0]["value"] is None]
        most = max((w["retained"] for w in walked), default=None)
        candidates = [hooks(w["hooks"]) for w in walked if w["retained"] == most]
        assert [(h.type, h.size) for h in row.hooks] in (candidates or [[]]), row.component
    assert answer.components == len(theirs["every"]) and answer.fibers == sum(c["instances"] for c in theirs["every"])
    # What heapdb leaves out: hooks of 0 bytes, each a walk into V8's null value.
    dropped = [h for c in theirs["every"] for h in c["hooks"] if h["value"] in ("null", "undefined")]
    assert dropped and all(h["size"] == 0 for h in dropped)
    assert all(r.hooks_size == sum(h.size for h in r.hooks) for r in answer.rows)


def test_the_catalogs_hooks_hold_its_state(ours: dict[str, react_hooks.ComponentHooks]) -> None:
    rows = {r.component: r for r in ours["mounted"].rows}
    catalog = rows["Catalog"]  # named by its displayName, as memlab names it
    assert [h.type for h in catalog.hooks] == ["useState", "useMemo", "useRef"]
    state, memo, ref = (h.size for h in catalog.hooks)
    assert state > memo > ref > 0  # 200 items, a Map over them, an array of 200 numbers
    assert catalog.hooks_size <= catalog.state_size <= catalog.retained_size
    assert [h.type for h in rows["LeakyPanel"].hooks] == ["useState", "useEffect"]  # named by its function
    assert rows["li"].instances == rows["Row"].instances and rows["li"].hooks == ()  # a host component: no hooks
    sizes = [r.retained_size for r in ours["mounted"].rows]
    assert sizes == sorted(sizes, reverse=True)


def test_heapdb_analyze_react_hooks_prints_and_writes_the_same(
    react_snapshots: dict[str, Path], ours: dict[str, react_hooks.ComponentHooks]
) -> None:
    path, answer = react_snapshots["mounted"], ours["mounted"]
    as_json = CliRunner().invoke(main, ["analyze", str(path), "--rules", "none", "--react-hooks", "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)["react_hooks"]
    assert [(r["component"], r["retained_size"], len(r["hooks"])) for r in data["rows"]] == [
        (r.component, r.retained_size, len(r.hooks)) for r in answer.rows[:20]
    ]
    as_text = CliRunner().invoke(main, ["analyze", str(path), "--rules", "none", "--react-hooks", "--top", "2"])
    assert as_text.exit_code == 0, as_text.output
    assert f"{answer.fibers:,} fibers of {answer.components:,} components" in as_text.stdout
    assert "Catalog: useState" in as_text.stdout and f"… {answer.components - 2:,} more components" in as_text.stdout
