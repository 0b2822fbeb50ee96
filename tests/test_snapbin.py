"""snap.bin: the writer and reader agree with each other and with docs/format.md, and bad input fails cleanly.

Chunks for the error cases are assembled here by hand from the specification (struct + zlib), not
with the writer, so the reader is checked against the spec rather than against itself.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from heapdb.errors import FormatError
from heapdb.loader import formats
from heapdb.loader.formats import snapbin
from heapdb.loader.formats.snapbin import SnapbinWriter, iter_records, read_graph, write_graph
from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo

# --- hand-made files, straight from docs/format.md ------------------------------------------------


def file_header(major: int = 1, minor: int = 0, magic: bytes = b"\x89SNAPBIN") -> bytes:
    head = magic + struct.pack("<HH", major, minor)
    return head + struct.pack("<I", zlib.crc32(head))


def chunk(kind: int, count: int, payload: bytes, *, codec: int = 0, flags: int = 1, raw: int | None = None) -> bytes:
    raw = len(payload) if raw is None else raw
    head = struct.pack("<HBBIQQI", kind, codec, flags, count, len(payload), raw, zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


def strings_chunk(first: int, values: list[str]) -> bytes:
    data = [v.encode() for v in values]
    return chunk(
        2, len(values), struct.pack("<Q", first) + struct.pack(f"<{len(data)}I", *map(len, data)) + b"".join(data)
    )


def types_chunk(first: int, pairs: list[tuple[int, int]]) -> bytes:
    names = [p[0] for p in pairs]
    kinds = [p[1] for p in pairs]
    n = len(pairs)
    return chunk(3, n, struct.pack(f"<Q{n}I{n}I", first, *names, *kinds))


def objects_chunk(objs: list[tuple[int, int, int, list[tuple[int, int, int]]]]) -> bytes:
    """objs: (id, type, self size, [(target id, edge kind, name)])."""
    refs = [r for o in objs for r in o[3]]
    n, r = len(objs), len(refs)
    payload = struct.pack("<IIQ", 0, 0, r)
    payload += struct.pack(f"<{n}q", *(o[0] for o in objs))
    payload += struct.pack(f"<{n}Q", *(o[2] for o in objs))
    payload += struct.pack(f"<{r}q", *(x[0] for x in refs))
    payload += struct.pack(f"<{n}I", *(o[1] for o in objs))
    payload += struct.pack(f"<{n}I", *(len(o[3]) for o in objs))
    payload += struct.pack(f"<{r}I", *(x[2] for x in refs))
    payload += struct.pack(f"<{r}B", *(x[1] for x in refs))
    return chunk(4, n, payload)


def roots_chunk(roots: list[tuple[int, int, int]]) -> bytes:
    """roots: (target id, kind string, name string)."""
    n = len(roots)
    return chunk(
        5, n, struct.pack(f"<{n}q{n}I{n}I", *(r[0] for r in roots), *(r[1] for r in roots), *(r[2] for r in roots))
    )


def trailer(chunks: int, strings: int, types: int, objects: int, refs: int, roots: int, names: int = 0) -> bytes:
    return chunk(15, 0, struct.pack("<7Q", chunks, strings, types, objects, refs, roots, names))


# strings: 1 "Node", 2 "object", 3 "next", 4 "global", 5 "head"
BASE = [strings_chunk(1, ["Node", "object", "next", "global", "head"]), types_chunk(0, [(1, 2)])]


def hand_file(
    tmp_path: Path, body: list[bytes], *, counts: tuple[int, ...] | None = None, name: str = "f.snapbin"
) -> Path:
    chunks = BASE + body
    path = tmp_path / name
    if counts is None:
        path.write_bytes(file_header() + b"".join(chunks))
    else:
        path.write_bytes(file_header() + b"".join(chunks) + trailer(len(chunks), *counts))
    return path


def good_body() -> list[bytes]:
    prop = int(EdgeKind.PROPERTY)
    return [
        objects_chunk([(100, 0, 32, [(200, prop, 3)])]),
        objects_chunk([(200, 0, 16, [(100, int(EdgeKind.WEAK), 3)])]),
        roots_chunk([(100, 4, 5)]),
    ]


# --- reading what the spec describes -------------------------------------------------------------


def test_a_hand_made_file_reads_with_forward_references_and_the_root_layout(tmp_path: Path) -> None:
    path = hand_file(tmp_path, good_body(), counts=(5, 1, 2, 2, 1))
    assert formats.detect(path) is formats.SNAPBIN
    g = read_graph(path)
    by_id = {int(i): n for n, i in enumerate(g.ids)}
    a, b = by_id[100], by_id[200]
    assert g.type_name(a) == "Node" and g.node_kinds[g.kind[a]] == "object" and g.self_size[a] == 32
    (e,) = g.out_edges(a)
    assert g.edge_to[e] == b and g.edge_kind[e] == EdgeKind.PROPERTY and g.edge_label(e) == "next"
    (e,) = g.out_edges(b)
    assert g.edge_to[e] == a and g.edge_kind[e] == EdgeKind.WEAK
    # (root) -> (global roots) -head-> object 100
    assert g.node_name(g.root) == "(root)" and g.node_kinds[g.kind[g.root]] == "synthetic"
    (e,) = g.out_edges(g.root)
    group = int(g.edge_to[e])
    assert g.node_name(group) == "(global roots)"
    (e,) = g.out_edges(group)
    assert g.edge_to[e] == a and g.edge_label(e) == "head"
    assert g.meta["format"] == "snapbin" and g.meta["format_version"] == "1.0"


def test_unknown_chunk_kinds_are_skipped_unless_critical(tmp_path: Path) -> None:
    future = chunk(0x4001, 3, b"something a newer writer knows about", flags=0)
    path = hand_file(tmp_path, [future, *good_body()], counts=(5, 1, 2, 2, 1))
    kinds = [type(r).__name__ for r in iter_records(path)]
    assert "Unknown" in kinds and kinds[-1] == "Trailer"
    assert read_graph(path).node_count == 2 + 2

    critical = chunk(0x4001, 3, b"must be understood", flags=1)
    path = hand_file(tmp_path, [critical, *good_body()], counts=(5, 1, 2, 2, 1), name="c.snapbin")
    with pytest.raises(FormatError, match="critical"):
        read_graph(path)


def test_a_newer_minor_version_reads_and_an_unknown_major_is_refused(tmp_path: Path) -> None:
    body = b"".join(BASE + good_body()) + trailer(5, 5, 1, 2, 2, 1)
    newer = tmp_path / "newer.snapbin"
    newer.write_bytes(file_header(minor=7) + body)
    assert read_graph(newer).meta["format_version"] == "1.7"
    future = tmp_path / "future.snapbin"
    future.write_bytes(file_header(major=2) + body)
    with pytest.raises(FormatError, match="major version 2") as e:
        read_graph(future)
    assert str(future) in str(e.value)


# --- the writer's API -----------------------------------------------------------------------------


def test_writer_api_round_trip_with_small_chunks(tmp_path: Path) -> None:
    path = tmp_path / "w.snapbin"
    with SnapbinWriter(path, compress=True, chunk_objects=2, chunk_refs=3) as w:
        w.set_metadata(
            runtime="dotnet",
            runtime_version="8.0.1",
            gc_count=12,
            total_heap_bytes=1 << 33,
            capture_time="2026-01-01T00:00:00Z",
            fragmented=True,
            load=0.5,
        )
        node = w.add_type("Node", "object")
        arr = w.add_type("Node[]", "array")
        # Object 1 refers forward to objects defined in later chunks.
        w.add_object(1, arr, 40, [(5, EdgeKind.ELEMENT, 0), (7, EdgeKind.ELEMENT, 1), (5, EdgeKind.ELEMENT, 2)])
        w.add_object(-9_000_000_000_000, "Lonely", 8)
        w.add_object(5, node, 24, [(7, EdgeKind.PROPERTY, "next"), 1], name="five")
        w.add_object(7, node, 24, [(5, EdgeKind.WEAK, "prev")], detachedness=2)
        w.add_root("static", "Program.cache", 1)
        w.add_root("stack", "thread 1", 7)
        w.add_root("static", "Program.other", 7)
    g = read_graph(path)
    ix = {int(i): n for n, i in enumerate(g.ids)}
    assert set(ix) >= {1, -9_000_000_000_000, 5, 7}
    assert g.type_name(ix[1]) == "Node[]" and g.node_kinds[g.kind[ix[1]]] == "array"
    assert g.type_name(ix[-9_000_000_000_000]) == "Lonely" and g.node_kinds[g.kind[ix[-9_000_000_000_000]]] == "object"
    assert [(int(g.edge_to[e]), g.edge_label(e)) for e in g.out_edges(ix[1])] == [
        (ix[5], "0"),
        (ix[7], "1"),
        (ix[5], "2"),
    ]
    assert [(int(g.edge_to[e]), int(g.edge_kind[e]), g.edge_label(e)) for e in g.out_edges(ix[5])] == [
        (ix[7], EdgeKind.PROPERTY, "next"),
        (ix[1], EdgeKind.REFERENCE, ""),
    ]
    assert g.node_name(ix[5]) == "five" and g.node_name(ix[7]) == ""
    assert g.detachedness is not None and g.detachedness[ix[7]] == 2 and g.detachedness[ix[5]] == 0
    groups = {g.node_name(int(g.edge_to[e])): int(g.edge_to[e]) for e in g.out_edges(g.root)}
    assert list(groups) == ["(static roots)", "(stack roots)"]
    assert [(g.edge_label(e), int(g.edge_to[e])) for e in g.out_edges(groups["(static roots)"])] == [
        ("Program.cache", ix[1]),
        ("Program.other", ix[7]),
    ]
    assert g.meta["runtime"] == "dotnet" and g.meta["gc_count"] == 12 and g.meta["total_heap_bytes"] == 1 << 33
    assert g.meta["fragmented"] is True and g.meta["load"] == 0.5
    assert sum(1 for r in iter_records(path) if isinstance(r, snapbin.Objects)) >= 2


def test_an_exception_inside_the_writer_leaves_a_file_readers_reject(tmp_path: Path) -> None:
    path = tmp_path / "broken.snapbin"
    with pytest.raises(RuntimeError), SnapbinWriter(path) as w:
        w.add_object(1, "T", 8)
        raise RuntimeError("producer crashed")
    with pytest.raises(FormatError, match="truncated"):
        read_graph(path)


def graph_from_edges(
    n: int, edges: list[tuple[int, int, EdgeKind, str | int]], strings: list[str], root: int
) -> HeapGraph:
    table = {s: i for i, s in enumerate(strings)}
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    kind = [int(e[2]) for e in edges]
    name = [e[3] if isinstance(e[3], int) else table[e[3]] for e in edges]
    es, et, ek, en = csr_from_coo(n, np.array(src, dtype=np.int64), np.array(dst), np.array(kind), np.array(name))
    return HeapGraph(
        ids=np.arange(n, dtype=np.int64) * 2 + 1,
        kind=np.array([0] + [1] * (n - 1), np.uint8),
        type=np.array([table["(root)"]] + [table["Thing"]] * (n - 1), np.int32),
        name=np.zeros(n, np.int32),
        self_size=np.arange(n, dtype=np.int64) * 8,
        edge_start=es,
        edge_to=et,
        edge_kind=ek,
        edge_name=en,
        strings=strings,
        node_kinds=["synthetic", "object", "unused kind"],
        root=root,
        meta={"format": "v8", "title": "t"},
    )


def test_a_graph_without_the_root_layout_keeps_its_own_root_below_a_snapshot_root(tmp_path: Path) -> None:
    strings = ["", "(root)x", "Thing", "a", "(root)"]
    g = graph_from_edges(
        4,
        [
            (0, 1, EdgeKind.SHORTCUT, "a"),
            (1, 2, EdgeKind.ELEMENT, 7),
            (2, 3, EdgeKind.HIDDEN, 1),
            (3, 1, EdgeKind.CONTEXT, "a"),
        ],
        strings,
        root=0,
    )
    path = tmp_path / "v8.snapbin"
    write_graph(g, path)
    h = read_graph(path)
    ix = {int(i): n for n, i in enumerate(h.ids)}
    for node in range(4):
        mine = ix[int(g.ids[node])]
        assert h.type_name(mine) == g.type_name(node) and h.self_size[mine] == g.self_size[node]
        assert h.node_kinds[h.kind[mine]] == g.node_kinds[g.kind[node]]
        assert [(int(h.ids[h.edge_to[e]]), int(h.edge_kind[e]), h.edge_label(e)) for e in h.out_edges(mine)] == [
            (int(g.ids[g.edge_to[e]]), int(g.edge_kind[e]), g.edge_label(e)) for e in g.out_edges(node)
        ]
    (e,) = h.out_edges(h.root)
    group = int(h.edge_to[e])
    assert h.node_name(group) == "(snapshot roots)"
    (e,) = h.out_edges(group)
    assert h.ids[h.edge_to[e]] == g.ids[0]
    assert h.meta["source_format"] == "v8" and h.meta["title"] == "t" and h.meta["format"] == "snapbin"


@pytest.mark.parametrize("compress", [False, True])
def test_a_graph_read_from_snapbin_round_trips_exactly(tmp_path: Path, compress: bool) -> None:
    rng = np.random.default_rng(7)
    path = tmp_path / "a.snapbin"
    with SnapbinWriter(path, chunk_objects=50, chunk_refs=120) as w:
        w.set_metadata(runtime="test", gc_count=1)
        ids = rng.choice(1 << 40, size=500, replace=False)
        for i in ids.tolist():
            refs = [
                (int(t), int(k), int(rng.integers(0, 5)) if k in (1, 4) else f"f{rng.integers(0, 9)}")
                for t, k in zip(rng.choice(ids, size=int(rng.integers(0, 6))), rng.integers(0, 8, size=6))
            ]
            w.add_object(
                i,
                w.add_type(f"T{i % 7}", ["object", "array", "string"][i % 3]),
                i % 100,
                refs,
                name=f"n{i}" if i % 4 == 0 else None,
                detachedness=i % 3 if i % 5 == 0 else None,
            )
        for i in ids[:40].tolist():
            w.add_root(["stack", "module", "handle"][i % 3], f"r{i}", i)
    g1 = read_graph(path)
    write_graph(g1, tmp_path / "b.snapbin", compress=compress, chunk_objects=64, chunk_refs=100)
    g2 = read_graph(tmp_path / "b.snapbin")
    assert_graphs_equal(g1, g2)
    chunks = [r for r in iter_records(tmp_path / "b.snapbin") if isinstance(r, snapbin.Objects)]
    assert len(chunks) > 500 / 64
    assert all(r.id.shape[0] <= 64 and (r.ref_target.shape[0] <= 100 or r.id.shape[0] == 1) for r in chunks)
    assert sum(r.id.shape[0] for r in chunks) == 500


def assert_graphs_equal(a: HeapGraph, b: HeapGraph) -> None:
    for field in ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert (a.detachedness is None) == (b.detachedness is None)
    if a.detachedness is not None and b.detachedness is not None:
        assert np.array_equal(a.detachedness, b.detachedness)
    assert a.strings == b.strings and a.node_kinds == b.node_kinds and a.root == b.root and a.meta == b.meta


# --- bad input ------------------------------------------------------------------------------------


def test_empty_short_and_foreign_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.snapbin"
    empty.write_bytes(b"")
    with pytest.raises(FormatError, match="empty"):
        read_graph(empty)
    short = tmp_path / "short.snapbin"
    short.write_bytes(b"\x89SNAPB")
    with pytest.raises(FormatError, match="cut short"):
        read_graph(short)
    foreign = tmp_path / "foreign.snapbin"
    foreign.write_bytes(b'{"snapshot": {}}' + b"\0" * 40)
    with pytest.raises(FormatError, match="not a snap.bin file") as e:
        read_graph(foreign)
    assert e.value.offset == 0 and e.value.path == str(foreign)
    header_only = tmp_path / "header.snapbin"
    header_only.write_bytes(file_header())
    with pytest.raises(FormatError, match="before the trailer") as e:
        read_graph(header_only)
    assert e.value.offset == 16


def test_every_truncation_and_every_flipped_byte_is_detected(tmp_path: Path) -> None:
    path = hand_file(tmp_path, good_body(), counts=(5, 1, 2, 2, 1))
    data = path.read_bytes()
    bad = tmp_path / "bad.snapbin"
    for cut in range(len(data)):
        bad.write_bytes(data[:cut])
        with pytest.raises(FormatError):
            read_graph(bad)
    for at in range(len(data)):
        flipped = bytearray(data)
        flipped[at] ^= 0x10
        bad.write_bytes(bytes(flipped))
        with pytest.raises(FormatError) as e:
            read_graph(bad)
        assert e.value.offset is not None and e.value.offset <= at
    bad.write_bytes(data + b"\0")
    with pytest.raises(FormatError, match="after the trailer"):
        read_graph(bad)


def test_a_corrupted_payload_names_its_chunk_and_offset(tmp_path: Path) -> None:
    path = hand_file(tmp_path, good_body(), counts=(5, 1, 2, 2, 1))
    data = bytearray(path.read_bytes())
    objects_at = 16 + len(BASE[0]) + len(BASE[1])
    data[objects_at + 32 + 20] ^= 1  # inside the first objects chunk's payload
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="payload checksum") as e:
        read_graph(path)
    assert e.value.offset == objects_at + 32 and "chunk #2 (objects)" in str(e.value)


def test_dangling_references_and_duplicate_ids_name_the_object(tmp_path: Path) -> None:
    prop = int(EdgeKind.PROPERTY)
    dangling = hand_file(
        tmp_path,
        [objects_chunk([(100, 0, 8, [(999, prop, 3)])]), roots_chunk([(100, 4, 5)])],
        counts=(5, 1, 1, 1, 1),
        name="d.snapbin",
    )
    with pytest.raises(FormatError, match=r"object id 100 .*refers to id 999.*dangling"):
        read_graph(dangling)
    bad_root = hand_file(
        tmp_path,
        [objects_chunk([(100, 0, 8, [])]), roots_chunk([(555, 4, 5)])],
        counts=(5, 1, 1, 0, 1),
        name="r.snapbin",
    )
    with pytest.raises(FormatError, match=r"root #0 .*targets id 555"):
        read_graph(bad_root)
    dup = hand_file(
        tmp_path,
        [objects_chunk([(100, 0, 8, [])]), objects_chunk([(7, 0, 8, []), (100, 0, 8, [])]), roots_chunk([(100, 4, 5)])],
        counts=(5, 1, 3, 0, 1),
        name="dup.snapbin",
    )
    with pytest.raises(FormatError, match="object id 100 is defined twice") as e:
        read_graph(dup)
    assert "chunk #3" in str(e.value)


def test_absurd_counts_and_lengths_fail_before_allocating(tmp_path: Path) -> None:
    huge_count = chunk(4, 0xFFFFFFFF, struct.pack("<IIQ", 0, 0, 0))
    path = hand_file(tmp_path, [huge_count], name="count.snapbin")
    with pytest.raises(FormatError, match="values of 8 bytes are declared"):
        read_graph(path)
    huge_refs = chunk(4, 1, struct.pack("<IIQ", 0, 0, 1 << 60) + b"\0" * 24)
    path = hand_file(tmp_path, [huge_refs], name="refs.snapbin")
    with pytest.raises(FormatError, match="declared"):
        read_graph(path)
    long_chunk = bytearray(chunk(2, 1, struct.pack("<QI", 6, 1) + b"x"))
    long_chunk[8:16] = struct.pack("<Q", 1 << 62)
    long_chunk[28:32] = struct.pack("<I", zlib.crc32(bytes(long_chunk[:28])))
    path = hand_file(tmp_path, [bytes(long_chunk)], name="len.snapbin")
    with pytest.raises(FormatError, match=r"declares \d+ payload bytes but only"):
        read_graph(path)
    bomb = chunk(2, 1, b"\x28\xb5\x2f\xfd" + b"\0" * 8, codec=1, raw=1 << 40)
    path = hand_file(tmp_path, [bomb], name="bomb.snapbin")
    with pytest.raises(FormatError, match="limit"):
        read_graph(path)
    many_strings = chunk(2, 1 << 30, struct.pack("<Q", 6))
    path = hand_file(tmp_path, [many_strings], name="strings.snapbin")
    with pytest.raises(FormatError, match="declared"):
        read_graph(path)


def test_indexes_must_refer_to_strings_and_types_defined_earlier(tmp_path: Path) -> None:
    path = hand_file(tmp_path, [objects_chunk([(1, 3, 8, [])])], name="t.snapbin")
    with pytest.raises(FormatError, match="type 3"):
        read_graph(path)
    path = hand_file(tmp_path, [objects_chunk([(1, 0, 8, [(1, int(EdgeKind.PROPERTY), 77)])])], name="s.snapbin")
    with pytest.raises(FormatError, match="string 77"):
        read_graph(path)
    path = hand_file(tmp_path, [objects_chunk([(1, 0, 8, [(1, 9, 0)])])], name="k.snapbin")
    with pytest.raises(FormatError, match="unknown kind 9"):
        read_graph(path)


def test_trailer_counts_must_match(tmp_path: Path) -> None:
    path = hand_file(tmp_path, good_body(), counts=(5, 1, 3, 2, 1))
    with pytest.raises(FormatError, match="trailer counts 3 objects but the file holds 2"):
        read_graph(path)


def test_long_and_unusual_strings_survive_across_several_string_chunks(tmp_path: Path) -> None:
    path = tmp_path / "strings.snapbin"
    big = ["a" * (9 << 20), "b" * (9 << 20), "é" * (5 << 20)]
    odd = ["", "ünïcødé", "emoji 🧵", "lone \ud800 surrogate", "nul\0inside"]
    with SnapbinWriter(path, compress=True) as w:
        for i, s in enumerate(big + odd):
            w.add_object(i, "S", len(s), name=s or None)
            w.add_object(100 + i, "Holder", 8, [(i, EdgeKind.PROPERTY, s)])
    string_chunks = [r for r in iter_records(path) if isinstance(r, snapbin.Strings)]
    assert len(string_chunks) >= 2
    g = read_graph(path)
    ix = {int(i): n for n, i in enumerate(g.ids)}
    for i, s in enumerate(big + odd):
        # A lone surrogate cannot be stored or printed as UTF-8: the reader writes its escape instead.
        shown = s.replace("\ud800", "\\ud800")
        assert g.node_name(ix[i]) == shown
        (e,) = g.out_edges(ix[100 + i])
        assert g.edge_label(e) == shown


def test_streaming_reader_memory_is_bounded_by_a_chunk_and_progress_covers_the_file(tmp_path: Path) -> None:
    import tracemalloc

    rng = np.random.default_rng(3)
    n, per = 100_000, 4
    targets = rng.integers(0, n, n * per)
    g = HeapGraph(
        ids=np.arange(n, dtype=np.int64),
        kind=np.zeros(n, np.uint8),
        type=np.ones(n, np.int32),
        name=np.zeros(n, np.int32),
        self_size=np.full(n, 32, np.int64),
        edge_start=np.arange(n + 1, dtype=np.int64) * per,
        edge_to=targets.astype(np.int32),
        edge_kind=np.full(n * per, int(EdgeKind.PROPERTY), np.uint8),
        edge_name=np.ones(n * per, np.uint32),
        strings=["", "T"],
        node_kinds=["object"],
        root=0,
    )
    path = tmp_path / "big.snapbin"
    write_graph(g, path, chunk_objects=2000)
    size = path.stat().st_size
    assert size > 5_000_000
    seen: list[int] = []
    tracemalloc.start()
    try:
        objects = sum(r.id.shape[0] for r in iter_records(path, seen.append) if isinstance(r, snapbin.Objects))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert objects == n
    assert peak < size / 8  # a few chunks of about 150 kB each, not the 7.6 MB file
    assert sum(seen) == size


FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"


def describe(g: HeapGraph) -> tuple[dict[int, tuple], list[tuple]]:
    """A graph as plain data keyed by id: every node below the synthetic root layout, and the roots."""
    layout = {g.root, *(int(g.edge_to[e]) for e in g.out_edges(g.root))}
    nodes = {}
    for i in range(g.node_count):
        if i in layout:
            continue
        edges = [(int(g.ids[g.edge_to[e]]), int(g.edge_kind[e]), g.edge_label(e)) for e in g.out_edges(i)]
        nodes[int(g.ids[i])] = (g.type_name(i), g.node_kinds[g.kind[i]], int(g.self_size[i]), g.node_name(i), edges)
    roots = []
    for e in g.out_edges(g.root):
        group = int(g.edge_to[e])
        roots.append((g.node_name(group), [(g.edge_label(x), int(g.ids[g.edge_to[x]])) for x in g.out_edges(group)]))
    return nodes, roots


@pytest.mark.skipif(not (FIXTURES / "luau").is_dir(), reason="../shared/fixtures/luau is not present")
def test_luau_snapshots_survive_conversion_to_snapbin(tmp_path: Path) -> None:
    files = sorted((FIXTURES / "luau").glob("luau-[0-9]-*.json"))  # the numbered leak-session dumps
    assert files
    for f in files:
        g = formats.read_graph(f)
        out = tmp_path / (f.stem + ".snapbin")
        write_graph(g, out, compress=True)
        h = read_graph(out)
        assert describe(h) == describe(g), f.name
        assert h.meta["source_format"] == g.meta["format"] == "luau"
