"""The V8 .heapsnapshot reader against Python's json module, memlab, and broken input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heapdb.errors import FormatError
from heapdb.loader import formats
from heapdb.loader.formats import v8
from heapdb.loader.formats.v8 import parts
from heapdb.loader.graph import Detachedness, EdgeKind
from heapgen.seeds import (
    EDGE_TYPES,
    NODE_TYPES,
    NodeRow,
    small_snapshot,
    snapshot_dict,
)
from tests.support.v8_fixtures import leak_snapshot, leak_snapshots, memlab_oracle, node_tools  # noqa: F401


def write(tmp_path: Path, doc: dict | str | bytes, name: str = "s.heapsnapshot") -> Path:
    path = tmp_path / name
    if isinstance(doc, dict):
        doc = json.dumps(doc)
    path.write_bytes(doc if isinstance(doc, bytes) else doc.encode())
    return path


# -- a synthetic snapshot, checked field by field ------------------------------------------------


def test_small_snapshot_fields(tmp_path: Path) -> None:
    doc = small_snapshot()
    g = v8.read_graph(write(tmp_path, doc))
    assert g.node_count == 7 and g.edge_count == 9 and g.root == 0
    assert g.ids.tolist() == [1, 3, 5, 7, 9, 10, 11]
    assert g.self_size.tolist() == [0, 0, 40, 24, 32, 100, 16]
    assert g.node_kinds == NODE_TYPES
    assert [g.node_kinds[k] for k in g.kind] == [
        "synthetic",
        "synthetic",
        "object",
        "string",
        "closure",
        "native",
        "hidden",
    ]
    assert [g.node_name(i) for i in range(7)] == [
        "",
        "(GC roots)",
        "Leaky",
        "hello",
        "f",
        '<div id="x" class="y">',
        "system / Context",
    ]
    # DevTools class names.
    assert [g.type_name(i) for i in range(7)] == [
        "(synthetic)",
        "(synthetic)",
        "Leaky",
        "(string)",
        "(closure)",
        "<div>",
        "(system)",
    ]
    assert g.edge_start.tolist() == [0, 2, 3, 6, 6, 7, 7, 9]


def test_small_snapshot_edges(tmp_path: Path) -> None:
    g = v8.read_graph(write(tmp_path, small_snapshot()))
    sources = g.edge_sources()
    triples = [
        (int(sources[e]), EdgeKind(int(g.edge_kind[e])).name, g.edge_label(e), int(g.edge_to[e]))
        for e in range(g.edge_count)
    ]
    assert triples == [
        (0, "ELEMENT", "1", 1),
        (0, "SHORTCUT", "global", 2),
        (1, "ELEMENT", "0", 2),
        (2, "PROPERTY", "greeting", 3),
        (2, "PROPERTY", "fn", 4),
        (2, "WEAK", "w", 5),
        (4, "CONTEXT", "ctx", 6),
        (6, "INTERNAL", "previous", 2),
        (6, "HIDDEN", "7", 3),
    ]


def test_detect_picks_v8(tmp_path: Path) -> None:
    path = write(tmp_path, small_snapshot())
    assert formats.detect(path) is formats.V8
    assert not v8.sniff(b'{"objects": {}, "roots": {}}')
    assert not v8.sniff(b"HEAPSNAP")


def test_chunk_boundaries_do_not_matter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny read chunks split every number, key and string; the result must not change."""
    doc = json.dumps(small_snapshot(), indent=1)  # whitespace and newlines everywhere
    path = write(tmp_path, doc)
    whole = v8.read_graph(path)
    for chunk in (1, 2, 3, 7, 64):
        monkeypatch.setattr(v8, "CHUNK_BYTES", chunk)
        split = v8.read_graph(path)
        assert_same_graph(whole, split)


def chain_snapshot(length: int) -> dict:
    """A root and ``length`` objects, each holding the next and the one after by property."""
    rows: list[NodeRow] = [("synthetic", 0, 1, 0, [("element", 1, 1)])]
    for k in range(1, length + 1):
        edges = [("property", f"p{k % 7}", t) for t in (k + 1, k + 2) if t <= length]
        rows.append(("object", 2, 2 * k + 1, 10 + k % 13, edges))
    return snapshot_dict(rows, ["", "(GC roots)", "Node"])


def read_outcome(path: Path) -> object:
    """The graph's arrays, or the error's message and offset."""
    try:
        g = v8.read_graph(path)
    except FormatError as e:
        return (str(e), e.offset)
    return [getattr(g, f).tolist() for f in ("ids", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name")]


def test_count_commas_counts_every_comma() -> None:
    """Eight bytes at a time, from any start to any end: bytes one bit away from a comma included."""
    rng = np.random.default_rng(7)
    alphabet = np.array([44, 45, 46, 60, 108, 172, 0, 255, 48, 32], dtype=np.uint8)
    for _ in range(2000):
        buf = rng.choice(alphabet, int(rng.integers(0, 80)))
        lo = int(rng.integers(0, buf.shape[0] + 1))
        hi = int(rng.integers(lo, buf.shape[0] + 1))
        assert parts.count_commas(buf, lo, hi) == int(np.count_nonzero(buf[lo:hi] == 44))


@pytest.mark.parametrize("cores", [2, 3])
def test_arrays_scanned_in_parts_read_as_in_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int) -> None:
    """Scanning the integer arrays in parts at once gives the same graph, and the same first error
    at the same offset, as one scan, wherever the parts are cut and the chunks end."""
    doc = chain_snapshot(400)
    text = json.dumps(doc, indent=1)
    nodes_at, edges_at, strings_at = (text.index(f'"{key}"') for key in ("nodes", "edges", "strings"))
    late_digit = text.index("1", edges_at + (strings_at - edges_at) * 3 // 4)
    late_comma = text.index(",", nodes_at + (edges_at - nodes_at) * 3 // 4)
    short, off_grid = chain_snapshot(400), chain_snapshot(400)
    short["edges"] = short["edges"][:-3]
    off_grid["edges"][-4] += 1  # a to_node that is not a multiple of the node field count
    broken = {
        "clean": text,
        "a letter late in edges": text[:late_digit] + "x" + text[late_digit + 1 :],
        "two commas late in nodes": text[:late_comma] + "," + text[late_comma:],
        "edges shorter than declared": json.dumps(short, indent=1),
        "a to_node off the node grid": json.dumps(off_grid, indent=1),
    }
    cuts: list[int] = []
    count_commas = parts.count_commas

    def counting(buf: np.ndarray, pos: int, end: int) -> int:
        cuts.append(end)
        return count_commas(buf, pos, end)

    for name, variant in broken.items():
        path = write(tmp_path, variant, f"{len(name)}.heapsnapshot")
        monkeypatch.setattr(parts, "PART_MIN_BYTES", 1 << 40)
        whole = read_outcome(path)
        monkeypatch.setattr(v8, "cores", lambda: cores)
        monkeypatch.setattr(parts, "PART_MIN_BYTES", 8)
        cuts.clear()
        monkeypatch.setattr(parts, "count_commas", counting)
        for chunk in (97, 1000, 1 << 20):
            monkeypatch.setattr(v8, "CHUNK_BYTES", chunk)
            assert read_outcome(path) == whole, (name, chunk)
        assert len(cuts) > 10, name  # the arrays were read in parts
        monkeypatch.undo()
        if name != "clean":
            assert isinstance(whole, tuple), name  # each variant is refused


def assert_same_graph(a, b) -> None:
    for field in ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.strings == b.strings and a.node_kinds == b.node_kinds and a.root == b.root
    assert (a.detachedness is None) == (b.detachedness is None)
    if a.detachedness is not None:
        assert np.array_equal(a.detachedness, b.detachedness)


@st.composite
def random_snapshots(draw: st.DrawFn) -> tuple[dict, list]:
    n = draw(st.integers(1, 30))
    strings = ["", *draw(st.lists(st.text(max_size=8), min_size=1, max_size=10))]
    rows = []
    for i in range(n):
        edges = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(EDGE_TYPES),
                    st.integers(0, len(strings) - 1),
                    st.integers(0, n - 1),
                ),
                max_size=5,
            )
        )
        rows.append(
            (
                draw(st.sampled_from(NODE_TYPES)),
                draw(st.integers(0, len(strings) - 1)),
                2 * i + 1,
                draw(st.integers(0, 2**40)),
                edges,
            )
        )
    return snapshot_dict(rows, strings), rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(random_snapshots(), st.sampled_from([None, 1, 2]))
def test_random_snapshots_round_trip_through_json(tmp_path: Path, generated, indent) -> None:
    doc, rows = generated
    path = write(tmp_path, json.dumps(doc, indent=indent))
    g = v8.read_graph(path)
    assert g.ids.tolist() == [r[2] for r in rows]
    assert g.self_size.tolist() == [r[3] for r in rows]
    assert [g.node_kinds[k] for k in g.kind] == [r[0] for r in rows]
    assert g.name.tolist() == [r[1] for r in rows]
    expected = [(i, EdgeKind[t.upper()], name, to) for i, r in enumerate(rows) for (t, name, to) in r[4]]
    sources = g.edge_sources()
    got = [
        (int(sources[e]), EdgeKind(int(g.edge_kind[e])), int(g.edge_name[e]), int(g.edge_to[e]))
        for e in range(g.edge_count)
    ]
    assert got == expected


# -- detachedness --------------------------------------------------------------------------------


def test_detachedness_propagates_through_native_nodes_only(tmp_path: Path) -> None:
    strings = ["", "<div>", "<span>", "Obj", "<p>"]
    rows: list[NodeRow] = [
        ("synthetic", 0, 1, 0, [("element", 1, 1), ("element", 2, 4)]),
        ("native", 1, 2, 10, [("element", 1, 2), ("weak", "w", 7)]),  # attached root of a DOM tree
        ("native", 2, 4, 10, [("element", 1, 3)]),  # attached by propagation
        ("native", 4, 6, 10, []),  # attached by propagation
        ("native", 1, 8, 10, [("element", 1, 5), ("element", 2, 6)]),  # detached root
        ("native", 2, 10, 10, [("element", 1, 3)]),  # detached by propagation; its child stays attached
        ("object", 3, 11, 10, [("property", "el", 8)]),  # JS: propagation stops here
        ("native", 4, 12, 10, []),  # only reached through a weak edge: unknown
        ("native", 4, 14, 10, []),  # reached only through the JS object: unknown
    ]
    det = [0, 1, 0, 0, 2, 0, 0, 0, 0]
    g = v8.read_graph(write(tmp_path, snapshot_dict(rows, strings, detachedness=det)))
    assert g.detachedness is not None
    assert [Detachedness(int(d)).name for d in g.detachedness] == [
        "UNKNOWN",
        "ATTACHED",
        "ATTACHED",
        "ATTACHED",
        "DETACHED",
        "DETACHED",
        "UNKNOWN",
        "UNKNOWN",
        "UNKNOWN",
    ]
    assert g.type_name(4) == "Detached <div>" and g.type_name(5) == "Detached <span>"
    assert g.type_name(1) == "<div>" and g.type_name(6) == "Obj"


def test_no_detachedness_field(tmp_path: Path) -> None:
    doc = small_snapshot()
    fields = doc["snapshot"]["meta"]["node_fields"]
    nf = len(fields)
    keep = [i for i, f in enumerate(fields) if f not in ("detachedness", "trace_node_id")]
    rows = [doc["nodes"][i : i + nf] for i in range(0, len(doc["nodes"]), nf)]
    doc["nodes"] = [row[k] for row in rows for k in keep]
    doc["edges"] = [v // nf * len(keep) if j % 3 == 2 else v for j, v in enumerate(doc["edges"])]
    doc["snapshot"]["meta"]["node_fields"] = [fields[k] for k in keep]
    g = v8.read_graph(write(tmp_path, doc))
    assert g.detachedness is None
    assert_same_graph_except_detachedness(g, v8.read_graph(write(tmp_path, small_snapshot(), "full.heapsnapshot")))


def assert_same_graph_except_detachedness(a, b) -> None:
    for field in ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


# -- bad input -----------------------------------------------------------------------------------


def expect_format_error(path: Path, *fragments: str) -> FormatError:
    with pytest.raises(FormatError) as caught:
        v8.read_graph(path)
    message = str(caught.value)
    assert str(path) in message
    assert caught.value.offset is not None or caught.value.record is not None
    for fragment in fragments:
        assert fragment in message, message
    return caught.value


def test_every_truncation_is_a_format_error(tmp_path: Path) -> None:
    data = json.dumps(small_snapshot()).encode()
    for cut in range(len(data)):
        path = write(tmp_path, data[:cut])
        with pytest.raises(FormatError) as caught:
            v8.read_graph(path)
        assert caught.value.offset is not None or caught.value.record is not None


def test_invalid_json_in_integer_array(tmp_path: Path) -> None:
    text = json.dumps(small_snapshot())
    bad = text.replace('"nodes": [9, 0, 1,', '"nodes": [9, 0 x, 1,', 1)
    assert bad != text
    error = expect_format_error(write(tmp_path, bad), "'nodes'")
    assert error.offset == bad.index(" x,") + 1


def test_negative_and_fractional_numbers_rejected(tmp_path: Path) -> None:
    text = json.dumps(small_snapshot())
    for replacement in ('"nodes": [9, 0, -1,', '"nodes": [9, 0, 1.5,', '"nodes": [9, 0,, 1,'):
        expect_format_error(write(tmp_path, text.replace('"nodes": [9, 0, 1,', replacement, 1)), "'nodes'")


def test_missing_meta(tmp_path: Path) -> None:
    doc = small_snapshot()
    del doc["snapshot"]["meta"]["edge_fields"]
    expect_format_error(write(tmp_path, doc), "meta")
    doc = small_snapshot()
    doc["snapshot"]["meta"]["node_fields"].remove("id")
    expect_format_error(write(tmp_path, doc), "node_fields")


def test_counts_that_do_not_match(tmp_path: Path) -> None:
    doc = small_snapshot()
    doc["snapshot"]["node_count"] = 8
    expect_format_error(write(tmp_path, doc), "'nodes'", "declares")
    doc = small_snapshot()
    doc["snapshot"]["node_count"] = 6
    expect_format_error(write(tmp_path, doc), "more values than the declared count")
    doc = small_snapshot()
    doc["snapshot"]["edge_count"] = 8
    expect_format_error(write(tmp_path, doc), "'edges'")
    doc = small_snapshot()
    doc["nodes"][4] += 1  # the root claims one more edge than there are
    doc["nodes"][4 + 7] -= 1
    doc["nodes"][4 + 7 * 3] += 1
    expect_format_error(write(tmp_path, doc), "edge_count")


def test_absurd_counts_are_refused_before_allocating(tmp_path: Path) -> None:
    doc = small_snapshot()
    doc["snapshot"]["node_count"] = 10**15
    expect_format_error(write(tmp_path, doc), "cannot fit")
    doc = small_snapshot()
    doc["nodes"][4] = 2**52  # one node's edge_count beyond all edges: would overflow the offsets
    expect_format_error(write(tmp_path, doc), "edge_count")


def test_progress_reports_every_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, json.dumps(small_snapshot(), indent=1))
    monkeypatch.setattr(v8, "CHUNK_BYTES", 100)
    seen: list[int] = []
    v8.read_graph(path, on_bytes=seen.append)
    assert sum(seen) == path.stat().st_size and len(seen) > 1


def test_edge_target_out_of_range(tmp_path: Path) -> None:
    doc = small_snapshot()
    doc["edges"][2] = 7 * 7  # node 7 of 7
    expect_format_error(write(tmp_path, doc), "past the last node")
    doc = small_snapshot()
    doc["edges"][2] = 8  # not a multiple of the node field count
    expect_format_error(write(tmp_path, doc), "multiple")


def test_string_index_out_of_range(tmp_path: Path) -> None:
    doc = small_snapshot()
    doc["nodes"][1] = len(doc["strings"]) + 5
    expect_format_error(write(tmp_path, doc), "name", "strings")
    doc = small_snapshot()
    doc["edges"][3 * 1 + 1] = len(doc["strings"])  # the shortcut edge's name
    expect_format_error(write(tmp_path, doc), "edge", "strings")


def test_wrong_types_and_trailing_data(tmp_path: Path) -> None:
    doc = small_snapshot()
    doc["nodes"][0] = len(NODE_TYPES)
    expect_format_error(write(tmp_path, doc), "node type")
    doc = small_snapshot()
    doc["edges"][0] = len(EDGE_TYPES)
    expect_format_error(write(tmp_path, doc), "edge type")
    expect_format_error(write(tmp_path, json.dumps(small_snapshot()) + "x"), "after the snapshot")
    doc = small_snapshot()
    doc["strings"][2] = 5
    expect_format_error(write(tmp_path, doc), "strings")
    doc = small_snapshot()
    nodes = doc.pop("nodes")
    doc = {"nodes": nodes, **doc}
    expect_format_error(write(tmp_path, doc), "before 'snapshot'")


def test_invalid_json_in_strings_and_unterminated_sections(tmp_path: Path) -> None:
    text = json.dumps(small_snapshot())
    bad = text.replace('"hello"', '"hel\\qlo"')
    error = expect_format_error(write(tmp_path, bad), "'strings'")
    assert error.offset == bad.index("\\q")
    bad_bytes = text.encode().replace(b'"hello"', b'"hel\xfflo"')
    error = expect_format_error(write(tmp_path, bad_bytes), "UTF-8")
    assert error.offset == bad_bytes.index(b"\xff")
    expect_format_error(
        write(tmp_path, text.replace('"locations": [2, 1, 10, 4]', '"locations": [2, 1, 10, 4')), "strings"
    )


# -- real Node snapshots -------------------------------------------------------------------------


def test_node_snapshot_matches_json_module(leak_snapshot: Path) -> None:  # noqa: F811
    """Every array equals what a plain json.load of the same file says."""
    g = v8.read_graph(leak_snapshot)
    doc = json.loads(leak_snapshot.read_text())
    meta = doc["snapshot"]["meta"]
    nf, ef = len(meta["node_fields"]), len(meta["edge_fields"])
    nodes = np.array(doc["nodes"], dtype=np.int64).reshape(-1, nf)
    edges = np.array(doc["edges"], dtype=np.int64).reshape(-1, ef)
    column = {f: nodes[:, i] for i, f in enumerate(meta["node_fields"])}
    assert g.node_count == doc["snapshot"]["node_count"] == nodes.shape[0]
    assert g.edge_count == doc["snapshot"]["edge_count"] == edges.shape[0]
    assert np.array_equal(g.ids, column["id"])
    assert np.array_equal(g.self_size, column["self_size"])
    assert np.array_equal(g.name, column["name"])
    assert np.array_equal(g.kind, column["type"])
    assert np.array_equal(np.diff(g.edge_start), column["edge_count"])
    assert np.array_equal(g.edge_to, edges[:, meta["edge_fields"].index("to_node")] // nf)
    assert np.array_equal(g.edge_name, edges[:, meta["edge_fields"].index("name_or_index")])
    kinds = [EdgeKind[t.upper()] for t in meta["edge_types"][0]]
    assert [EdgeKind(int(k)) for k in g.edge_kind[:2000]] == [kinds[t] for t in edges[:2000, 0]]
    assert g.strings[: len(doc["strings"])] == doc["strings"]
    assert g.node_kinds == meta["node_types"][0]


def test_node_snapshot_matches_memlab(leak_snapshot: Path, memlab_oracle) -> None:  # noqa: F811
    g = v8.read_graph(leak_snapshot)
    oracle = memlab_oracle(leak_snapshot)
    assert (oracle.node_count, oracle.edge_count) == (g.node_count, g.edge_count)
    assert np.array_equal(oracle.ids, g.ids)
    assert np.array_equal(oracle.self_size, g.self_size)
    # The oracle's own columns are coherent: the root has no path and dominates itself, and every
    # leaked instance has a retainer path and a dominator that is a node of the graph.
    assert oracle.path_length[g.root] == 0 and oracle.dominator_index()[g.root] == g.root
    leaked = np.flatnonzero(g.type == g.strings.index("LeakedItem"))
    assert leaked.size == 600 and (oracle.path_length[leaked] > 0).all()
    assert (oracle.retained_size[leaked] >= oracle.self_size[leaked]).all()


def test_node_snapshot_classes(leak_snapshots: dict[str, Path]) -> None:  # noqa: F811
    """The leak program's objects show up under DevTools' class names, growing as they leak."""
    leaked = {"baseline": 100, "target": 300, "final": 600}
    for label, path in leak_snapshots.items():
        g = v8.read_graph(path)
        kinds = np.array(g.node_kinds)[g.kind]
        classes = Counter(g.strings[t] for t in g.type)
        assert classes["LeakedItem"] == leaked[label]
        assert classes["LeakedBuffer"] == leaked[label]
        assert classes["LeakyCache"] == 1
        on_tick = sum(1 for i in np.flatnonzero(kinds == "closure") if g.node_name(int(i)) == "onTick")
        assert on_tick == leaked[label]
        for node_type, cls in (
            ("closure", "(closure)"),
            ("hidden", "(system)"),
            ("string", "(string)"),
            ("code", "(compiled code)"),
        ):
            assert {g.strings[t] for t in g.type[kinds == node_type]} == {cls}
        objects = kinds == "object"
        assert np.array_equal(g.type[objects], g.name[objects])
        weak = g.edge_kind == EdgeKind.WEAK
        assert weak.any(), "the WeakRef/WeakMap leak must produce weak edges"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_corrupted_bytes_never_crash(tmp_path: Path, data: st.DataObject) -> None:
    """Any single-byte corruption either still reads as a valid graph or is a FormatError."""
    original = bytearray(json.dumps(small_snapshot()).encode())
    position = data.draw(st.integers(0, len(original) - 1))
    original[position] = data.draw(st.sampled_from(b'0123456789,[]{}":x \\-.e\xff'))
    path = write(tmp_path, bytes(original))
    try:
        graph = v8.read_graph(path)
    except FormatError as e:
        assert e.offset is not None or e.record is not None
    else:
        graph.validate()
