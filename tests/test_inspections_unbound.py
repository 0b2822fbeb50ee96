"""Unbound growth (`heapdb unbound`, `heapdb analyze FILE --unbound LATER`) against memlab's own
``unbound-collection``, ``unbound-object`` and ``unbound-shape`` analyses on real V8 snapshots.

tests/js/unbound.js writes four snapshots of one process whose Map, Set, dictionary object and
array of 1,500 more plain objects a step grow at every step, while one Map stays flat, one grows
once and one shrinks at the last step; tests/js/memlab_unbound.js runs memlab's three analyses
over them and writes their exact figures. By memlab's rule heapdb must list what memlab lists,
series for series; at every step, what memlab lists that grew at each step. The Neo4j question
over the leak program's loaded series must answer what the files answer, and memlab again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotComputed, ParameterError
from heapdb.loader import analysis, formats
from heapdb.loader.inspections import unbound
from heapdb.queries import params
from heapdb.queries.questions import Questions
from tests.support.snapshots import Loaded
from tests.support.tiers import needs
from tests.support.v8 import JS_DIR, ensure_node_tools

STEPS = 4


@needs("node")
def _node(args: list[str]) -> str:
    from heapgen.node import run_node

    ensure_node_tools()
    return run_node(args, args[0], 600)


def memlab_unbound(directory: Path, work: Path) -> dict[str, Any]:
    out = work / "memlab-unbound.json"
    _node([str(JS_DIR / "memlab_unbound.js"), str(directory), str(work / "memlab"), str(out)])
    answer: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return answer


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], dict[str, Any]]:
    directory = tmp_path_factory.mktemp("unbound")
    lines = _node([str(JS_DIR / "unbound.js"), str(directory / "snapshots"), str(STEPS)]).splitlines()
    files = [Path(json.loads(line)["path"]) for line in lines]
    return files, memlab_unbound(directory / "snapshots", directory)


def points_of(files: list[Path]) -> list[unbound.SeriesPoint]:
    found = []
    for path in files:
        graph = formats.detect(path).read_graph(path)
        found.append(unbound.series_point(path.stem, graph, analysis.analyze(graph)))
    return found


def present(series: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(v for v in series if v != unbound.ABSENT)


def ours(answer: unbound.UnboundGrowth) -> dict[str, list[tuple[Any, ...]]]:
    """An answer as memlab's lists hold it: collections of memlab's kinds only, absent steps left out."""
    return {
        "collections": [
            (r.id, r.type, present(r.series)) for r in answer.collection_rows if r.type in unbound.BY_TABLE
        ],
        # heapdb's type of a closure is "(closure)", memlab names it by its function: kinds compared.
        "objects": [(r.id, r.type if r.kind == "object" else r.kind, present(r.series)) for r in answer.object_rows],
        "shapes": [(s.shape, present(s.counts), present(s.sizes), present(s.examples)) for s in answer.shape_rows],
    }


def theirs(memlab: dict[str, Any], every_step: bool = False, steps: int = STEPS) -> dict[str, list[tuple[Any, ...]]]:
    def grew(figures: list[int]) -> bool:
        return not every_step or (len(figures) == steps and all(b > a for a, b in zip(figures, figures[1:])))

    return {
        "collections": [(r["id"], r["name"], tuple(r["history"])) for r in memlab["collections"] if grew(r["history"])],
        "objects": [
            (r["id"], r["name"] if r["type"] == "object" else r["type"], tuple(r["history"]))
            for r in memlab["objects"]
            if grew(r["history"])
        ],
        "shapes": [
            (s["shape"], tuple(s["counts"]), tuple(s["sizes"]), tuple(s["examples"]))
            for s in memlab["shapes"]
            if grew(s["counts"])
        ],
    }


def test_memlab_rule_lists_what_memlab_lists(series: tuple[list[Path], dict[str, Any]]) -> None:
    files, memlab = series
    answer = unbound.unbound(points_of(files), rule="memlab", limit=len(memlab["objects"]))
    assert ours(answer) == theirs(memlab)
    # The program's flat Map is in neither; the one that grew once and the shrinking one are memlab's.
    assert {t for _, t, _ in ours(answer)["collections"]} == {"Map", "Set"}
    assert len(ours(answer)["collections"]) == 4
    assert any(s.shape == "Object { label, owner }" for s in answer.shape_rows)


def test_every_step_keeps_what_grew_at_each_step(series: tuple[list[Path], dict[str, Any]]) -> None:
    files, memlab = series
    answer = unbound.unbound(points_of(files))
    assert ours(answer) == theirs(memlab, every_step=True)
    assert [r.series for r in answer.collection_rows if r.type == "Map"] == [(401, 801, 1201, 1601)]
    # Arrays and plain Objects count too: the array of rows and the dictionary object.
    assert {r.type for r in answer.collection_rows} == {"Map", "Set", "Array", "Object"}
    assert all(len(r.series) == STEPS for r in answer.object_rows)


def test_analyze_prints_the_same(series: tuple[list[Path], dict[str, Any]]) -> None:
    files, _ = series
    later = [arg for f in files[1:] for arg in ("--unbound", str(f))]
    done = CliRunner().invoke(main, ["analyze", str(files[0]), "--rules", "none", "--json", *later])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output[done.output.index("{") :])["unbound"]
    expected = unbound.unbound(points_of(files))
    assert [r["id"] for r in data["collection_rows"]] == [r.id for r in expected.collection_rows]
    assert data["shapes"] == expected.shapes
    short = CliRunner().invoke(main, ["analyze", str(files[0]), "--unbound", str(files[1])])
    assert short.exit_code == 2 and "at least two later snapshots" in short.output


def test_the_loaded_series_answers_as_its_files_and_memlab(
    database: Database, leak_series_loaded: dict[str, Loaded], leak_snapshots: dict[str, Path], tmp_path: Path
) -> None:
    loaded = list(leak_series_loaded.values())
    tags = [item.tag for item in loaded]
    questions = Questions(database, timeout=120)
    from_files = [unbound.series_point(item.tag, item.graph, item.result) for item in loaded]
    for rule in ("memlab", "every-step"):
        p = params.Unbound(rule=rule)
        stored = questions.unbound(tags, p)
        assert stored == unbound.unbound(from_files, rule=rule)
    directory = tmp_path / "series"
    directory.mkdir()
    for i, label in enumerate(leak_series_loaded, start=1):
        (directory / f"s{i}.heapsnapshot").symlink_to(leak_snapshots[label])
    memlab = memlab_unbound(directory, tmp_path)
    answer = questions.unbound(tags, params.Unbound(rule="memlab"))
    assert ours(answer) == theirs(memlab, steps=len(tags))
    assert answer.collections >= 2 and answer.shapes >= 1
    with pytest.raises(ParameterError):
        questions.unbound(tags[:2])


def test_a_snapshot_stored_before_says_so(database: Database, leak_series_loaded: dict[str, Loaded]) -> None:
    tags = [item.tag for item in leak_series_loaded.values()]
    stored = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.shapes AS shapes", {"tag": tags[1]})[0]["shapes"]
    database.write("MATCH (s:Snapshot {tag: $tag}) REMOVE s.shapes", {"tag": tags[1]})
    try:
        with pytest.raises(NotComputed, match=f"heapdb reanalyze {tags[1]}"):
            Questions(database).unbound(tags)
    finally:
        database.write("MATCH (s:Snapshot {tag: $tag}) SET s.shapes = $shapes", {"tag": tags[1], "shapes": stored})
    assert Questions(database).unbound(tags).shapes >= 1
