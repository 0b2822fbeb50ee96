"""The Luau heap-dump reader: dumps built here, brute-force reachability, and the VM's real dumps."""

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
from heapdb.loader.formats import luau
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapgen.seeds import (
    SAMPLE_ROOTS,
    dump_text,
    luau_string,
    sample_objects,
)
from tests.support.snapshots import LUAU_FIXTURES

FIXTURES = LUAU_FIXTURES
needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"real Luau dumps not present at {FIXTURES} (they are not part of the repository)"
)


def write_dump(tmp_path: Path, objects: dict, roots: dict, name: str = "dump.json") -> Path:
    path = tmp_path / name
    path.write_text(dump_text(objects, roots))
    return path


def node_of(g: HeapGraph, address: str) -> int:
    return int(np.flatnonzero(g.ids == int(address, 16))[0])


def out(g: HeapGraph, node: int) -> list[tuple[str, str, int]]:
    """(kind, label, target node) for each edge of ``node``."""
    return [(EdgeKind(int(g.edge_kind[e])).name, g.edge_label(e), int(g.edge_to[e])) for e in g.out_edges(node)]


def test_sample_dump_nodes(tmp_path: Path) -> None:
    path = write_dump(tmp_path, sample_objects(), SAMPLE_ROOTS)
    assert formats.detect(path) is formats.LUAU
    g = luau.read_graph(path)
    assert g.node_count == 4 + 17  # (root), two listed root kinds, (other roots), the objects (no sentinel)
    assert [g.node_name(i) for i in range(4)] == ["(root)", "(mainthread roots)", "(registry roots)", "(other roots)"]
    assert {g.node_kinds[int(k)] for k in g.kind[:4]} == {"synthetic"} and g.root == 0
    assert sorted(g.ids[4:].tolist()) == sorted(int(a, 16) for a in sample_objects())
    assert g.type_name(node_of(g, "0x1040")) == "Widget"  # userdata named by its metatable's __type
    assert g.node_name(node_of(g, "0x1040")) == "tag 7"
    assert g.node_name(node_of(g, "0x1030")) == "onTick" and g.type_name(node_of(g, "0x1030")) == "function"
    assert g.node_name(node_of(g, "0x1100")) == "cache" and g.type_name(node_of(g, "0x1100")) == "string"
    assert g.node_name(node_of(g, "0x1000")) == "@main.luau:1"
    assert g.self_size[node_of(g, "0x1060")] == 2**32 - 2147483000
    assert g.meta["category"][node_of(g, "0x1020")] == 1 and g.meta["category_names"] == {0: "main"}


def test_sample_dump_edges(tmp_path: Path) -> None:
    g = luau.read_graph(write_dump(tmp_path, sample_objects(), SAMPLE_ROOTS))
    at = {a: node_of(g, a) for a in sample_objects()}
    assert out(g, 0) == [
        ("REFERENCE", "(mainthread roots)", 1),
        ("REFERENCE", "(registry roots)", 2),
        ("REFERENCE", "(other roots)", 3),
    ]
    assert out(g, 1) == [("REFERENCE", "mainthread", at["0x1000"])]
    assert out(g, at["0x1000"]) == [
        ("REFERENCE", "__env", at["0x1010"]),
        ("REFERENCE", "frame:@main.luau:1:", at["0x1020"]),
        ("REFERENCE", "cache", at["0x1030"]),
        ("REFERENCE", "__stack", at["0x1040"]),
    ]
    assert out(g, at["0x1020"]) == [
        ("REFERENCE", "(key)", at["0x1110"]),
        ("REFERENCE", "handler", at["0x1030"]),
        ("REFERENCE", "(value)", at["0x1040"]),
        ("ELEMENT", "1", at["0x1050"]),
        ("ELEMENT", "2", at["0x1060"]),
        ("REFERENCE", "__meta", at["0x1070"]),
    ]
    assert out(g, at["0x1030"]) == [
        ("REFERENCE", "__env", at["0x1010"]),
        ("REFERENCE", "__proto", at["0x1080"]),
        ("REFERENCE", "upvalue 1", at["0x1020"]),
    ]
    assert out(g, at["0x1080"]) == [("REFERENCE", "__constant", at["0x1110"])]
    # Everything is reachable from the listed roots: nothing hangs under (other roots).
    assert out(g, 3) == []


@pytest.mark.parametrize(
    ("mode", "weak_keys", "weak_values"),
    [("k", True, False), ("v", False, True), ("kv", True, True), ("", False, False)],
)
def test_weak_tables(tmp_path: Path, mode: str, weak_keys: bool, weak_values: bool) -> None:
    objects = {
        "0x10": {"type": "table", "cat": 0, "size": 8, "pairs": ["0x20", "0x30", "0x40", "0x50"], "array": ["0x60"]},
        "0x18": {"type": "table", "cat": 0, "size": 8, "pairs": ["0x70", "0x80"] if mode else []},
        "0x20": {"type": "table", "cat": 0, "size": 8},
        "0x30": {"type": "table", "cat": 0, "size": 8},
        "0x40": luau_string("name"),
        "0x50": {"type": "table", "cat": 0, "size": 8},
        "0x60": {"type": "table", "cat": 0, "size": 8},
        "0x70": luau_string("__mode"),
        "0x80": luau_string(mode),
        "0x90": {"type": "table", "cat": 0, "size": 8, "pairs": ["0x10", "0x18"]},
    }
    objects["0x10"]["metatable"] = "0x18"
    if not mode:
        del objects["0x70"], objects["0x80"]
    g = luau.read_graph(write_dump(tmp_path, objects, {"mainthread": "0x90", "registry": "0x18"}))
    edges = out(g, node_of(g, "0x10"))
    key_kind = "WEAK" if weak_keys else "REFERENCE"
    value_kind = "WEAK" if weak_values else "REFERENCE"
    assert [(k, label) for k, label, _ in edges] == [
        (key_kind, "(key)"),
        (value_kind, "(value)"),
        ("REFERENCE", "(key)"),  # a string key: never cleared, so strong
        (value_kind, "name"),
        ("WEAK", "[1]") if weak_values else ("ELEMENT", "1"),
        ("REFERENCE", "__meta"),
    ]
    # Objects held only through weak edges are still alive (the dump follows a full GC): other roots hold them.
    other = {t for _, _, t in out(g, 3)}
    expected = set()
    if weak_keys:
        expected |= {node_of(g, "0x20")}
    if weak_values:
        expected |= {node_of(g, "0x30"), node_of(g, "0x50"), node_of(g, "0x60")}
    assert other == expected


def test_minimal_other_roots(tmp_path: Path) -> None:
    objects = sample_objects()
    objects.update(
        {
            # A -> B, B -> string: only A needs an other-roots edge.
            "0x2000": {"type": "table", "cat": 0, "size": 8, "pairs": ["0x2010", "0x2010"]},
            "0x2010": {"type": "table", "cat": 0, "size": 8, "array": ["0x2020"]},
            "0x2020": luau_string("held by B"),
            # A cycle C <-> D with E below: one of C, D is enough.
            "0x3000": {"type": "table", "cat": 0, "size": 8, "array": ["0x3010"]},
            "0x3010": {"type": "table", "cat": 0, "size": 8, "array": ["0x3000", "0x3020"]},
            "0x3020": luau_string("below the cycle"),
        }
    )
    g = luau.read_graph(write_dump(tmp_path, objects, SAMPLE_ROOTS))
    attached = [t for _, _, t in out(g, 3)]
    assert len(attached) == 2
    assert node_of(g, "0x2000") in attached
    assert {node_of(g, "0x3000"), node_of(g, "0x3010")} & set(attached)
    assert g.meta["other_roots"] == 2


def strong_reach(g: HeapGraph, starts: list[int], skip_source: int | None = None) -> np.ndarray:
    reached = np.zeros(g.node_count, dtype=bool)
    stack = list(starts)
    reached[stack] = True
    while stack:
        v = stack.pop()
        if v == skip_source:
            continue
        for e in g.out_edges(v):
            w = int(g.edge_to[e])
            if g.edge_kind[e] != EdgeKind.WEAK and not reached[w]:
                reached[w] = True
                stack.append(w)
    return reached


@st.composite
def random_dumps(draw: st.DrawFn) -> dict[str, dict]:
    n = draw(st.integers(2, 25))
    addresses = [f"0x{(i + 1) * 16:x}" for i in range(n)]
    objects: dict[str, dict] = {}
    for a in addresses:
        refs = draw(st.lists(st.sampled_from(addresses), max_size=4))
        objects[a] = {"type": "table", "cat": 0, "size": draw(st.integers(0, 100)), "array": refs}
    return objects


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(random_dumps())
def test_other_roots_are_needed_and_sufficient(tmp_path: Path, objects: dict[str, dict]) -> None:
    addresses = list(objects)
    roots = {"mainthread": addresses[0], "registry": addresses[1]}
    path = write_dump(tmp_path, objects, roots)
    g = luau.read_graph(path)
    # Brute force from the JSON: what the listed roots reach.
    listed = {addresses[0], addresses[1]}
    stack = list(listed)
    while stack:
        for b in objects[stack.pop()]["array"]:
            if b not in listed:
                listed.add(b)
                stack.append(b)
    without_other = strong_reach(g, [0], skip_source=3)
    assert {a for a in addresses if without_other[node_of(g, a)]} == listed
    assert strong_reach(g, [0]).all(), "every object must hang below the root"
    attached = [t for _, _, t in out(g, 3)]
    for t in attached:  # minimal: no attached object is reachable from the others
        others = [x for x in attached if x != t]
        assert not strong_reach(g, [0, *others], skip_source=3)[t]


def test_invalid_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    text = dump_text(sample_objects(), SAMPLE_ROOTS)
    broken = text.replace('"name":"onTick"', '"name":onTick')
    bad.write_text(broken)
    with pytest.raises(FormatError) as caught:
        luau.read_graph(bad)
    assert caught.value.offset == broken.index(":onTick") + 1 and str(bad) in str(caught.value)

    bad.write_text(dump_text(sample_objects(), {"mainthread": "0x9999", "registry": "0x1160"}))
    with pytest.raises(FormatError, match="root 'mainthread'"):
        luau.read_graph(bad)

    objects = sample_objects()
    objects["zz"] = luau_string("x")
    bad.write_text(dump_text(objects, SAMPLE_ROOTS))
    with pytest.raises(FormatError, match="hexadecimal"):
        luau.read_graph(bad)

    bad.write_text('{"objects": [], "roots": {}}')
    with pytest.raises(FormatError, match="'objects' and 'roots'"):
        luau.read_graph(bad)

    for cut in range(0, len(text), 97):  # truncated files
        bad.write_text(text[:cut])
        with pytest.raises(FormatError):
            luau.read_graph(bad)


def test_sniff() -> None:
    assert luau.sniff(b'{"objects":{\n"0x1":{"type":"table"')
    assert luau.sniff(b' { "objects" : { ')
    assert not luau.sniff(b'{"snapshot":{"meta":{}}}')


# -- the VM's own dumps --------------------------------------------------------------------------


@needs_fixtures
@pytest.mark.parametrize("name", ["luau-1-baseline.json", "luau-2-target.json", "luau-3-final.json"])
def test_real_dumps(name: str) -> None:
    path = FIXTURES / name
    doc = json.loads(path.read_text())
    objects = {a: o for a, o in doc["objects"].items() if a != "0"}
    g = luau.read_graph(path)
    assert g.node_count == len(objects) + 4
    assert sorted(g.ids[4:].tolist()) == sorted(int(a, 16) for a in objects)
    assert Counter(g.node_kinds[k] for k in g.kind[4:]) == Counter(o["type"] for o in objects.values())
    assert int(g.self_size.sum()) == sum(o["size"] for o in objects.values())
    assert strong_reach(g, [0]).all()
    # Alive but not reachable from mainthread/registry (README: 49 of them), all under (other roots).
    assert int((~strong_reach(g, [0], skip_source=3)).sum()) == 49
    assert 1 <= g.meta["other_roots"] <= 49


@needs_fixtures
def test_real_dump_leak_structure() -> None:
    """leak.luau: 410 sessions, each held by a listener closure, weakly keyed in weakIndex."""
    g = luau.read_graph(FIXTURES / "luau-3-final.json")
    sessions = 10 + 200 + 200
    # The weak-keyed table: its keys are weak, 410 of them.
    weak_sources = Counter(g.edge_sources()[g.edge_kind == EdgeKind.WEAK].tolist())
    assert list(weak_sources.values()) == [sessions]
    weak_table = next(iter(weak_sources))
    edges = out(g, weak_table)
    assert [kind for kind, label, _ in edges if label == "(key)"] == ["WEAK"] * sessions
    assert [label for kind, label, _ in edges if kind != "WEAK"] == ["__meta"]
    # The signal's listeners array holds one closure per session, each capturing its session.
    element_sources = Counter(g.edge_sources()[g.edge_kind == EdgeKind.ELEMENT].tolist())
    listeners = next(src for src, count in element_sources.items() if count == sessions)
    closures = [t for kind, _, t in out(g, listeners)]
    assert {g.type_name(c) for c in closures} == {"function"}
    captured = {t for c in closures for _, label, t in out(g, c) if label == "upvalue 1"}
    assert captured == {t for kind, _, t in edges if kind == "WEAK"}
    # The suspended coroutine pins a table through its stack slot named after the local.
    pinned = [
        t
        for thread in np.flatnonzero(np.array(g.node_kinds)[g.kind] == "thread")
        for _, label, t in out(g, int(thread))
        if label == "pinned"
    ]
    assert len(pinned) == 1 and "tag" in [label for _, label, _ in out(g, pinned[0])]
    assert Counter(g.type_name(i) for i in range(g.node_count))["MyProxy"] == 1
    assert g.meta["category_names"] == {0: "main", 1: "cache"}


@needs_fixtures
def test_class_dump_is_a_clear_error() -> None:
    path = FIXTURES / "luau-classes.json"
    data = path.read_bytes()
    with pytest.raises(FormatError) as caught:
        formats.read_graph(path)
    assert caught.value.offset == data.index(b'"name":Point') + len(b'"name":')
    assert str(path) in str(caught.value) and "invalid JSON" in str(caught.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_corrupted_bytes_never_crash(tmp_path: Path, data: st.DataObject) -> None:
    """Any single-byte corruption either still reads as a valid graph or is a FormatError."""
    original = bytearray(dump_text(sample_objects(), SAMPLE_ROOTS).encode())
    position = data.draw(st.integers(0, len(original) - 1))
    original[position] = data.draw(st.sampled_from(b'0123456789abcdefx,[]{}":n \\\xff'))
    path = tmp_path / "corrupt.json"
    path.write_bytes(bytes(original))
    try:
        graph = luau.read_graph(path)
    except FormatError as e:
        assert e.offset is not None or e.record is not None
    else:
        graph.validate()
