"""Source locations and allocation stacks: read from a real Node snapshot taken while V8 tracked
allocations (``tests/js/alloc_sites.js``), stored on the objects, and shown by why-alive in text,
JSON, dot and over REST; malformed source sections are FormatErrors with an offset."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import FormatError
from heapdb.loader import analysis, store
from heapdb.loader.formats import heapsnapshot_export, luau, v8
from heapdb.loader.graph import HeapGraph
from heapdb.service.app import create_app
from heapgen.seeds import (
    NODE_FIELDS,
    SAMPLE_ROOTS,
    dump_text,
    sample_objects,
    traced_snapshot,
)
from tests.support.tiers import needs
from tests.support.v8 import JS_DIR, node_environment

PROGRAM = JS_DIR / "alloc_sites.js"
ENTRIES = 40


def source_position(pattern: str) -> tuple[int, int]:
    """The 1-based line and column of the '(' after ``pattern`` in the program: where V8 places a
    function's location (its parameter list)."""
    for number, line in enumerate(PROGRAM.read_text().splitlines(), 1):
        at = line.find(pattern)
        if at >= 0:
            return number, line.index("(", at) + 1
    raise AssertionError(f"{pattern!r} is not in {PROGRAM}")


@pytest.fixture(scope="module")
@needs("node")
def alloc_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("alloc") / "alloc.heapsnapshot"
    done = subprocess.run(
        ["node", "--track-heap-objects", str(PROGRAM), str(out), str(ENTRIES)],
        cwd=JS_DIR,
        env=node_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["entries"] == ENTRIES
    return out


@pytest.fixture(scope="module")
def graph(alloc_snapshot: Path) -> HeapGraph:
    return v8.read_graph(alloc_snapshot)


def nodes_of(g: HeapGraph, type_: str, name: str | None = None) -> list[int]:
    return [i for i in range(g.node_count) if g.type_name(i) == type_ and (name is None or g.node_name(i) == name)]


def location_of(g: HeapGraph, node: int) -> str | None:
    assert g.locations is not None
    offsets, texts = g.locations.texts(g.strings, node, node + 1)
    return texts[0] if len(offsets) else None


def test_closure_locations_match_the_program(graph: HeapGraph) -> None:
    counters = nodes_of(graph, "(closure)", "locatedCounter")
    assert len(counters) >= ENTRIES
    line, column = source_position("function locatedCounter")
    expected = f"{PROGRAM}:{line}:{column}"
    assert {location_of(graph, i) for i in counters} == {expected}
    line, column = source_position("function makeLeakyEntry")
    assert {location_of(graph, i) for i in nodes_of(graph, "(closure)", "makeLeakyEntry")} == {
        f"{PROGRAM}:{line}:{column}"
    }
    # Objects a constructor made are located at it (LeakyEntry's constructor is the program's only one).
    line, column = source_position("constructor(")
    entries = nodes_of(graph, "LeakyEntry")
    assert len(entries) == ENTRIES
    assert {location_of(graph, i) for i in entries} == {f"{PROGRAM}:{line}:{column}"}


def test_leaked_objects_allocation_stack_names_the_allocating_function(graph: HeapGraph) -> None:
    assert graph.allocations is not None
    line, column = source_position("function makeLeakyEntry")
    for entry in nodes_of(graph, "LeakyEntry"):
        frames = graph.allocations.stack(graph.strings, entry)
        assert frames, "no allocation stack recorded"
        assert frames[0].function == "makeLeakyEntry" and frames[0].script == str(PROGRAM)
        assert (frames[0].line + 1, frames[0].column + 1) == (line, column)
        assert "main" in [f.function for f in frames[1:]]
    # An object made before tracking started has no stack.
    assert (graph.allocations.trace == -1).any()


def test_export_keeps_locations(graph: HeapGraph, tmp_path: Path) -> None:
    out = tmp_path / "again.heapsnapshot"
    heapsnapshot_export.write_heapsnapshot(graph, out)
    again = v8.read_graph(out)
    assert again.locations is not None
    counter = nodes_of(again, "(closure)", "locatedCounter")[0]
    line, column = source_position("function locatedCounter")
    assert location_of(again, counter) == f"{PROGRAM}:{line}:{column}"


@pytest.fixture(scope="module")
def loaded(database: Database, graph: HeapGraph):
    result = analysis.analyze(graph)
    tag = f"test-locations-{uuid.uuid4().hex[:8]}"
    store.load(database, store.LoadInput.from_analysis(graph, result), tag)
    return tag


def invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_why_shows_locations_and_stacks_everywhere(loaded: str, graph: HeapGraph, database: Database) -> None:
    tag = loaded
    entry = int(graph.ids[nodes_of(graph, "LeakyEntry")[0]])
    counter = int(graph.ids[nodes_of(graph, "(closure)", "locatedCounter")[0]])
    line, column = source_position("function locatedCounter")
    counter_at = f"alloc_sites.js:{line}:{column}"
    make_line, make_column = source_position("function makeLeakyEntry")

    text = invoke("why", tag, str(entry))
    allocated = [row for row in text.splitlines() if "allocated at" in row]
    assert allocated and re.search(
        rf"allocated at makeLeakyEntry \(\S*alloc_sites\.js:{make_line}:{make_column}\)", allocated[0]
    )
    assert counter_at in invoke("why", tag, str(counter)).splitlines()[1]

    answer = json.loads(invoke("why", tag, str(entry), "--format", "json"))
    assert answer["target"]["allocated_at"].startswith("makeLeakyEntry (")
    assert answer["target"]["location"].startswith(str(PROGRAM))
    assert json.loads(invoke("why", tag, str(counter), "--format", "json"))["target"]["location"].endswith(counter_at)

    assert counter_at in invoke("why", tag, str(counter), "--format", "dot")

    client = TestClient(create_app(token=""))
    response = client.get(f"/api/snapshots/{tag}/objects/{entry}/why")
    assert response.status_code == 200, response.text
    assert response.json()["target"]["allocated_at"] == answer["target"]["allocated_at"]
    # An object without either has neither property.
    root = client.get(f"/api/snapshots/{tag}/objects/{int(graph.ids[graph.root])}/why").json()["target"]
    assert root["location"] is None and root["allocated_at"] is None


# -- malformed source sections -------------------------------------------------------------------


def write(tmp_path: Path, doc: dict | str, name: str = "s.heapsnapshot") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
    return path


def test_synthetic_sections_are_read(tmp_path: Path) -> None:
    g = v8.read_graph(write(tmp_path, traced_snapshot()))
    assert g.locations is not None and g.allocations is not None
    assert location_of(g, 4) == "hello:10:3"  # script 7 is named by function f's info
    assert location_of(g, 2) == "<script 8>:1:1"  # nothing names script 8
    assert location_of(g, 3) is None
    frames = g.allocations.stack(g.strings, 2)
    assert [(f.function, f.script, f.line, f.column) for f in frames] == [("f", "hello", 9, 2)]
    assert g.allocations.stack(g.strings, 3) == []


@pytest.mark.parametrize("script_base", [0, 1 << 21, (1 << 31) - 100])
@pytest.mark.parametrize("layout", ["in order", "out of order, node 4 twice"])
def test_locations_in_any_order_and_any_script_ids(tmp_path: Path, layout: str, script_base: int) -> None:
    """Locations out of node order or repeated (the first kept), and script ids beyond the table the
    reader groups small ids by, read as the plain case does."""
    doc = traced_snapshot()
    nf = len(NODE_FIELDS)
    first, second = 8 + script_base, 7 + script_base
    if layout == "in order":
        doc["locations"] = [2 * nf, first, 0, 0, 4 * nf, second, 9, 2]
    else:
        doc["locations"] = [4 * nf, second, 9, 2, 2 * nf, first, 0, 0, 4 * nf, first, 5, 5]
    doc["trace_function_infos"][9] = second  # function f's script id: names that script "hello"
    g = v8.read_graph(write(tmp_path, doc))
    assert location_of(g, 4) == "hello:10:3"
    assert location_of(g, 2) == f"<script {first}>:1:1"
    assert location_of(g, 3) is None
    assert g.locations is not None and g.locations.node.tolist() == [2, 4]


@pytest.mark.parametrize(
    "section,value,message",
    [
        ("locations", [3, 7, 9, 2], "object_index 3 is not a node position"),
        ("locations", [4 * 7, 7, 9], "not a multiple of its 4 fields"),
        ("locations", "[28, 7, -9, 2]", "only non-negative integers"),
        ("locations", [700, 7, 9, 2], "is not a node position"),
        ("trace_tree", [1, 0, 0, 0, [2, 5, 1, 40, []]], "function_info_index is not one of"),
        ("trace_tree", [1, 0, 0, 0, [3, 1, 1, 40, []]], "trace_node_id 2 is not a node of 'trace_tree'"),
        ("trace_tree", [], "trace_node_id 2 is not a node of 'trace_tree'"),  # no node at all
        ("trace_tree", [1, 0, 0, 0, [2, 1, 1, 40]], "ends in the middle of a node"),
        ("trace_tree", [1, 0, 0, 0, 5], "children must be an array"),
        ("trace_tree", "[1, 0, 0, 0, [2, 1, 1, 40, [], ]]", "expected a number"),
        ("trace_function_infos", [0, 0, 0, 0, 0, 0, 1, 99, 3, 7, 10, 3], "name is not an index into 'strings'"),
        ("trace_function_infos", '[0, 0, "x"]', "only non-negative integers"),
    ],
)
def test_malformed_source_sections_are_format_errors(tmp_path: Path, section: str, value, message: str) -> None:
    doc = traced_snapshot()
    placeholder = "__SECTION__"
    doc[section] = placeholder
    text = json.dumps(doc).replace(json.dumps(placeholder), value if isinstance(value, str) else json.dumps(value))
    with pytest.raises(FormatError, match=re.escape(message)) as caught:
        v8.read_graph(write(tmp_path, text))
    assert caught.value.offset is not None or caught.value.record is not None
    if isinstance(value, str):  # a token error names the byte it is at
        assert caught.value.offset is not None and text.index(value) <= caught.value.offset < text.index(value) + len(
            value
        )


def test_a_deep_allocation_tree_is_read_without_recursion(tmp_path: Path) -> None:
    doc = traced_snapshot()
    depth = 5000
    doc["trace_tree"] = "__TREE__"
    # Each level is a list of one node "id, fn, count, size, [children]", the next level its children.
    tree = "".join(f"[{k + 1}, {min(k, 1)}, 0, 0, " for k in range(depth)) + "[]" + "]" * depth
    g = v8.read_graph(write(tmp_path, json.dumps(doc).replace('"__TREE__"', tree)))
    assert g.allocations is not None and g.allocations.parent.shape[0] == depth
    assert g.allocations.stack(g.strings, 2, limit=3)[0].function == "f"


def test_luau_functions_are_located_at_their_proto_threads_where_they_run(tmp_path: Path) -> None:
    objects = sample_objects()
    path = tmp_path / "dump.json"
    path.write_text(dump_text(objects, SAMPLE_ROOTS))
    g = luau.read_graph(path)
    assert g.locations is not None
    by_address = {f"0x{int(i):x}": node for node, i in enumerate(g.ids.tolist())}
    for address, obj in objects.items():
        node = by_address[address]
        proto = objects.get(obj.get("proto", "")) if obj["type"] == "function" else obj
        # A thread is located where it runs: its own source and line.
        if obj["type"] in ("function", "proto", "thread") and proto is not None and "source" in proto:
            assert location_of(g, node) == f"{proto['source'].lstrip('@')}:{proto['line']}"
        else:
            assert location_of(g, node) is None
    assert any(obj["type"] == "function" and "proto" in obj for obj in objects.values())


def test_a_location_is_found_without_copying_the_table(graph: HeapGraph) -> None:
    """Looking one object's location up allocates about nothing: the node indexes are searched in
    the table's own type (a search in int64 would copy the whole table for every row shown)."""
    import tracemalloc

    locations = graph.locations
    assert locations is not None and locations.node.shape[0] > 1000
    located = int(locations.node[locations.node.shape[0] // 2])
    tracemalloc.start()
    try:
        text = locations.text(graph.strings, located)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text is not None and text == location_of(graph, located)
    assert peak < locations.node.nbytes // 2
