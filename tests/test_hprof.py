"""The hprof reader: synthetic dumps against a brute-force model, every kind of bad input, and a real
dump of a leaking Java program compiled and run with the machine's JDK."""

from __future__ import annotations

import collections
import json
import os
import random
import re
import shutil
import struct
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.errors import FormatError
from heapdb.loader import analysis, formats, sources
from heapdb.loader.formats import hprof
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.store import LoadInput
from heapgen import hprof_writer as hw
from heapgen.hprof_writer import INT, OBJECT, HprofWriter, standard_classes
from heapgen.java import compile_java, dump_leak
from heapgen.seeds import (
    DEEP_FIRST_OBJECT,
    deep_class_chain,
    random_dump,
    small,
    with_empty_segments,
)


def write(tmp_path: Path, data: bytes, name: str = "dump.hprof") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _dominated(a: analysis.Analysis, v: int) -> set[int]:
    """Every node ``v`` dominates, by walking each node's dominator chain."""
    found = set()
    for x in range(len(a.idom)):
        y = x
        while y >= 0:
            if y == v:
                found.add(x)
                break
            y = int(a.idom[y])
    return found


def node(g: HeapGraph, obj_id: int) -> int:
    return int(np.flatnonzero(g.ids == obj_id)[0])


def out(g: HeapGraph, v: int) -> list[tuple[str, str, int]]:
    return [(EdgeKind(int(g.edge_kind[e])).name, g.edge_label(e), int(g.ids[g.edge_to[e]])) for e in g.out_edges(v)]


# -- semantics on small dumps -------------------------------------------------------------------------


@pytest.mark.parametrize("id_size", [4, 8])
def test_types_edges_and_sizes(tmp_path: Path, id_size: int) -> None:
    w, c = small(id_size)
    path = write(tmp_path, w.to_bytes())
    assert formats.detect(path) is formats.HPROF
    g = hprof.read_graph(path)
    assert g.meta["format"] == "hprof" and g.meta["id_size"] == id_size
    header = 2 * id_size
    assert g.node_name(g.root) == "(root)"
    assert [x[1] for x in out(g, g.root)] == ["(jni global roots)", "(java frame roots)", "(system class roots)"]

    cache = node(g, c["Cache"])
    assert (g.type_name(cache), g.node_name(cache), g.node_kinds[g.kind[cache]]) == (
        "java.lang.Class",
        "com.example.Cache",
        "class",
    )
    assert ("PROPERTY", "ENTRIES", 0x9000) in out(g, cache)
    assert ("INTERNAL", "<super>", c["java.lang.Object"]) in out(g, cache)
    assert g.self_size[cache] == -(-(header + id_size + 8) // 8) * 8  # header + the two statics, aligned

    array = node(g, 0x9000)
    assert g.type_name(array) == "java.lang.Object[]"
    assert out(g, array) == [
        ("INTERNAL", "<class>", c["java.lang.Object[]"]),
        ("ELEMENT", "0", 0x9100),
        ("ELEMENT", "2", 0x9200),
    ]
    assert g.self_size[array] == -(-(header + 4 + 3 * id_size) // 8) * 8

    n1 = node(g, 0x9100)
    assert g.type_name(n1) == "com.example.Node"
    assert out(g, n1) == [("INTERNAL", "<class>", c["Node"]), ("PROPERTY", "next", 0x9200)]
    assert g.self_size[n1] == -(-(header + id_size + 4) // 8) * 8
    assert out(g, node(g, 0x9200)) == [("INTERNAL", "<class>", c["Node"])]  # the dangling 'next' is dropped
    assert g.meta["dangling_references"] == 1

    weak = node(g, 0x9300)
    assert ("WEAK", "referent (weak)", 0x9100) in out(g, weak)
    ints = node(g, 0x9400)
    assert g.type_name(ints) == "int[]" and g.node_kinds[g.kind[ints]] == "primitive array"
    assert g.self_size[ints] == -(-(header + 4 + 12) // 8) * 8
    assert out(g, ints) == [("INTERNAL", "<class>", c["int[]"])]

    a = analysis.analyze(g)
    # The weak reference does not keep node 0x9100: the cache's array does.
    assert a.idom[n1] == array
    assert n1 not in _dominated(a, weak)


def test_segmented_and_single_dumps_read_alike(tmp_path: Path) -> None:
    w, _ = small()
    one = hprof.read_graph(write(tmp_path, w.to_bytes(), "one.hprof"))
    for per in (1, 2, 5):
        seg = hprof.read_graph(write(tmp_path, w.to_bytes(segment_records=per), f"seg{per}.hprof"))
        for field in ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name"):
            assert np.array_equal(getattr(one, field), getattr(seg, field)), field
        assert one.strings == seg.strings


def test_reference_kinds_follow_the_class_ancestry(tmp_path: Path) -> None:
    w = HprofWriter(8)
    c = standard_classes(w)
    mine = w.add_class("com/example/MyWeak", c["java.lang.ref.WeakReference"], [("extra", OBJECT)])
    w.instance(0x5000, c["java.lang.Object"])
    kinds = {
        0x6000: ("java.lang.ref.SoftReference", "soft"),
        0x6010: ("java.lang.ref.WeakReference", "weak"),
        0x6020: ("java.lang.ref.PhantomReference", "phantom"),
        0x6030: ("java.lang.ref.Finalizer", "finalizer"),
    }
    for obj, (cls, _) in kinds.items():
        w.instance(obj, c[cls], {"referent": 0x5000, "queue": 0x5000})
    w.instance(0x6040, mine, {"referent": 0x5000, "extra": 0x5000})
    for obj in [*kinds, 0x6040]:
        w.root(hw.ROOT_THREAD_OBJECT, obj)
    g = hprof.read_graph(write(tmp_path, w.to_bytes(segment_records=3)))
    for obj, (_, label) in kinds.items():
        edges = out(g, node(g, obj))
        assert ("WEAK", f"referent ({label})", 0x5000) in edges
        assert ("PROPERTY", "queue", 0x5000) in edges  # only the referent is weak
    assert ("WEAK", "referent (weak)", 0x5000) in out(g, node(g, 0x6040))
    assert ("PROPERTY", "extra", 0x5000) in out(g, node(g, 0x6040))
    a = analysis.analyze(g)
    target = node(g, 0x5000)
    # Held strongly by several references' 'queue' fields: the thread roots' group dominates it.
    assert g.node_name(int(a.idom[target])) == "(thread roots)"


def test_android_heaps_root_kinds_and_arrays_without_data(tmp_path: Path) -> None:
    w = HprofWriter(4, "1.0.3")
    c = standard_classes(w)
    w.heap_info(ord("Z"), "zygote")
    w.instance(0x7000, c["java.lang.Object"])
    w.heap_info(ord("A"), "app")
    w.instance(0x7010, c["java.lang.Object"])
    w.prim_array(0x7020, INT, 1000, nodata=True)
    android_roots = [0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x90]
    for tag in android_roots:
        w.root(tag, 0x7010)
    w.root(hw.ROOT_UNKNOWN, 0x7020)
    g = hprof.read_graph(write(tmp_path, w.to_bytes(segment_records=4)))
    assert g.meta["format_version"] == "1.0.3"
    names = {g.node_name(int(g.edge_to[e])) for e in g.out_edges(g.root)}
    assert names == {
        "(interned string roots)",
        "(finalizing roots)",
        "(debugger roots)",
        "(reference cleanup roots)",
        "(vm internal roots)",
        "(jni monitor roots)",
        "(unreachable roots)",
        "(unknown roots)",
    }
    heap, heap_names = g.meta["heap"], g.meta["heap_names"]
    assert heap_names[heap[node(g, 0x7000)]] == "zygote"
    assert heap_names[heap[node(g, 0x7010)]] == "app"
    arr = node(g, 0x7020)
    # An 8-byte header (4-byte ids) + the 4-byte length + 4000 bytes of data it did not write, aligned.
    assert g.type_name(arr) == "int[]" and g.self_size[arr] == 4016
    # It has no elements to store (the bytes after it are the next record's), beside one that has.
    assert g.values is not None
    offsets, _ = g.values.stored_of(np.array([arr]))
    assert offsets.size == 0


def test_java_names() -> None:
    assert hprof.java_name("java/util/HashMap$Node") == "java.util.HashMap$Node"
    assert hprof.java_name("[Ljava/lang/Object;") == "java.lang.Object[]"
    assert hprof.java_name("[[I") == "int[][]"
    assert hprof.java_name("[Ljava.lang.String;") == "java.lang.String[]"
    assert hprof.java_name("[B") == "byte[]"


# -- random dumps against brute force -----------------------------------------------------------------


def model_brute_force(model: dict) -> tuple[dict[int, int], dict[int, int]]:
    """Retained size and root distance of every model object, by removing each object in turn."""
    sizes: dict[int, int] = model["sizes"]
    adj: dict[int, list[int]] = collections.defaultdict(list)
    for s, t in model["strong"]:
        if s != t:
            adj[s].append(t)
    rooted = [obj for _, obj in model["roots"]]

    def reach(removed: int | None) -> dict[int, int]:
        dist: dict[int, int] = {}
        queue: deque[int] = deque()
        for r in rooted:
            if r != removed and r not in dist:
                dist[r] = 2  # (root) -> (<kind> roots) -> object
                queue.append(r)
        while queue:
            v = queue.popleft()
            for t in adj[v]:
                if t != removed and t not in dist:
                    dist[t] = dist[v] + 1
                    queue.append(t)
        return dist

    everyone = reach(None)
    retained = {}
    for d in everyone:
        without = reach(d)
        retained[d] = sum(sizes[v] for v in everyone if v not in without)
    return retained, everyone


@pytest.mark.parametrize("seed", range(12))
def test_random_dumps_equal_brute_force(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    for case in range(20):
        id_size = rng.choice([4, 8])
        android = rng.random() < 0.3
        data, model = random_dump(rng, id_size, android)
        g = hprof.read_graph(write(tmp_path, data))
        a = analysis.analyze(g)
        retained, dist = model_brute_force(model)
        for obj, expected_size in model["sizes"].items():
            v = node(g, obj)
            label = f"seed {seed} case {case} object 0x{obj:x}"
            assert g.self_size[v] == expected_size, label
            assert bool(a.reachable[v]) == (obj in retained), label
            assert a.retained_size[v] == retained.get(obj, 0), label
            assert a.distance[v] == dist.get(obj, -1), label
        assert a.retained_size[g.root] == sum(model["sizes"][o] for o in retained)


# -- bad input ------------------------------------------------------------------------------------------


def test_every_truncation_is_a_format_error_with_an_offset(tmp_path: Path) -> None:
    w, _ = small(4)
    data = w.to_bytes(segment_records=2)
    path = tmp_path / "cut.hprof"
    for cut in range(len(data)):
        path.write_bytes(data[:cut])
        with pytest.raises(FormatError) as caught:
            hprof.read_graph(path)
        assert caught.value.offset is not None, cut
        assert str(path) in str(caught.value)


def corrupt(data: bytes, at: int, replacement: bytes) -> bytes:
    return data[:at] + replacement + data[at + len(replacement) :]


def heap_body(w: HprofWriter, data: bytes) -> int:
    """The offset of the first heap-dump record's body."""
    return w.offsets[len(w.top)] + 9


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda w, d: b"JAVA PROFILE 9.9.9\0" + d[19:], "expected 'JAVA PROFILE"),
        (lambda w, d: corrupt(d, 19, struct.pack(">I", 3)), "identifier size is 3"),
        (lambda w, d: d[:31], "no HEAP_DUMP"),
        (lambda w, d: corrupt(d, heap_body(w, d), b"\x42"), "unknown heap-dump sub-record tag (0x42)"),
        (lambda w, d: d[: heap_body(w, d) - 9] + HprofWriter.record(0x0C, b"\x21" + bytes(10)), "runs past the end"),
        (lambda w, d: d[: w.offsets[0]] + HprofWriter.record(0x01, b"\x00"), "shorter than its"),
        (lambda w, d: d[: w.offsets[1]] + HprofWriter.record(0x02, bytes(5)), "LOAD_CLASS record must be"),
    ],
    ids=["version", "id-size", "no-heap", "sub-tag", "sub-record-past-end", "short-string", "load-class"],
)
def test_malformed_dumps_name_the_offset(tmp_path: Path, mutate, message: str) -> None:
    w, _ = small(4)
    data = w.to_bytes()
    with pytest.raises(FormatError, match=re.escape(message)) as caught:
        hprof.read_graph(write(tmp_path, mutate(w, data)))
    assert caught.value.offset is not None


def test_bad_type_code_field_mismatch_and_twice_written_ids(tmp_path: Path) -> None:
    w = HprofWriter(4)
    c = standard_classes(w)
    w.raw_sub(b"\x23" + w.ident(0x8000) + struct.pack(">IIB", 0, 1, 3) + b"\0")
    with pytest.raises(FormatError, match="unknown basic type code"):
        hprof.read_graph(write(tmp_path, w.to_bytes()))

    w = HprofWriter(4)
    c = standard_classes(w)
    w.raw_sub(
        b"\x21"
        + w.ident(0x8000)
        + struct.pack(">I", 0)
        + w.ident(c["java.lang.Object"])
        + struct.pack(">I", 4)
        + bytes(4)
    )
    with pytest.raises(FormatError, match="field bytes do not match") as caught:
        hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert caught.value.offset is not None

    w = HprofWriter(4)
    c = standard_classes(w)
    w.instance(0x8000, c["java.lang.Object"])
    w.instance(0x8000, c["java.lang.Object"])
    with pytest.raises(FormatError, match="0x8000 is written twice"):
        hprof.read_graph(write(tmp_path, w.to_bytes()))


def test_unknown_classes_and_top_level_records_are_tolerated(tmp_path: Path) -> None:
    w = HprofWriter(8)
    standard_classes(w)
    w.instance(0x8000, 0x4242, {})  # a class the dump never wrote: no field layout, no class edge
    w.top.append(HprofWriter.record(0x05, bytes(12)))  # a stack trace record without frames: no source
    g = hprof.read_graph(write(tmp_path, w.to_bytes(segment_records=2)))
    v = node(g, 0x8000)
    assert g.type_name(v) == "(unknown class)" and out(g, v) == []
    assert g.meta["unknown_class_instances"] == 1


# -- stack frames and traces ------------------------------------------------------------------------------


def frames_dump(id_size: int = 8) -> tuple[HprofWriter, dict[str, int]]:
    """Thread 1 in ``Main.main`` -> ``Cache.get`` -> ``Object.wait0`` (native), thread 2 in ``Main.main``;
    objects 0x9000, 0x9100... for the tests to root in their frames, all naming HotSpot's dummy trace."""
    w = HprofWriter(id_size)
    c = standard_classes(w)
    c["Thread"] = w.add_class("java/lang/Thread", c["java.lang.Object"])
    c["Main"] = w.add_class("com/example/Main", c["java.lang.Object"])
    c["Cache"] = w.add_class("com/example/Cache", c["java.lang.Object"])
    c["wait"] = w.stack_frame("wait0", "Object.java", c["java.lang.Object"], -3)
    c["get"] = w.stack_frame("get", "Cache.java", c["Cache"], 30)
    c["main"] = w.stack_frame("main", "Main.java", c["Main"], 12)
    w.stack_trace(1, 0, [])
    w.stack_trace(2, 1, [c["wait"], c["get"], c["main"]])
    w.stack_trace(3, 2, [c["main"]])
    w.instance(0x8000, c["Thread"])
    w.instance(0x8100, c["Thread"])
    for oid in range(0x9000, 0x9800, 0x100):
        w.instance(oid, c["java.lang.Object"], trace=1)
    w.root(hw.ROOT_THREAD_OBJECT, 0x8000, thread=1, frame=2)
    w.root(hw.ROOT_THREAD_OBJECT, 0x8100, thread=2, frame=3)
    return w, c


def location(g: HeapGraph, obj_id: int) -> str | None:
    return g.locations.text(g.strings, node(g, obj_id)) if g.locations is not None else None


def allocated_at(g: HeapGraph, obj_id: int) -> str | None:
    return g.allocations.text(g.strings, node(g, obj_id)) if g.allocations is not None else None


@pytest.mark.parametrize("id_size", [4, 8])
def test_objects_held_by_a_frame_are_located_at_it(tmp_path: Path, id_size: int) -> None:
    w, _ = frames_dump(id_size)
    w.root(hw.ROOT_JAVA_FRAME, 0x9000, thread=1, frame=2)
    w.root(hw.ROOT_JNI_LOCAL, 0x9100, thread=1, frame=0)
    w.root(hw.ROOT_JAVA_FRAME, 0x9200, thread=1, frame=1)
    g = hprof.read_graph(write(tmp_path, w.to_bytes(segment_records=3)))
    assert location(g, 0x9000) == "Main.java:12"
    assert location(g, 0x9100) == "Object.java"  # a native method: no line
    assert location(g, 0x9200) == "Cache.java:30"
    assert g.locations is not None and g.locations.line.tolist() == [11, -1, 29]  # 0-based, as V8's
    # A thread's stack is where it is now, not where anything was allocated: no allocation stacks.
    assert location(g, 0x8000) is None and location(g, 0x9300) is None
    assert g.allocations is None


def test_an_object_held_by_several_frames_takes_its_first_threads_innermost(tmp_path: Path) -> None:
    w, _ = frames_dump()
    w.root(hw.ROOT_JAVA_FRAME, 0x9000, thread=1, frame=2)
    w.root(hw.ROOT_JAVA_FRAME, 0x9000, thread=2, frame=0)  # lower frame number, but a later thread
    w.root(hw.ROOT_JAVA_FRAME, 0x9000, thread=1, frame=1)
    w.root(hw.ROOT_JAVA_FRAME, 0x9100, thread=2, frame=0)
    w.root(hw.ROOT_JNI_LOCAL, 0x9100, thread=1, frame=1)
    g = hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert location(g, 0x9000) == "Cache.java:30"
    assert location(g, 0x9100) == "Main.java:12"


@pytest.mark.parametrize("line, text", [(7, "Foo.java:7"), (0, "Foo.java"), (-1, "Foo.java"), (-2, "Foo.java")])
def test_a_frame_without_line_information_locates_at_its_file(tmp_path: Path, line: int, text: str) -> None:
    w, c = frames_dump()
    frame = w.stack_frame("run", "Foo.java", c["Main"], line)
    w.stack_trace(9, 5, [frame])
    w.root(hw.ROOT_JAVA_FRAME, 0x9000, thread=5, frame=0)
    g = hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert location(g, 0x9000) == text


def test_unknown_threads_traces_frames_and_strings_locate_nothing(tmp_path: Path) -> None:
    w, c = frames_dump()
    nameless = w.stack_frame(0x7770, 0x7780, c["Main"], 3)  # string ids no STRING record has
    w.stack_trace(4, 3, [0x7790, nameless])  # a frame id no STACK_FRAME has
    w.root(hw.ROOT_THREAD_OBJECT, 0x9600, thread=6, frame=77)  # a trace serial no STACK_TRACE has
    w.root(hw.ROOT_JAVA_FRAME, 0x9000, thread=99, frame=0)  # no such thread
    w.root(hw.ROOT_JAVA_FRAME, 0x9100, thread=1, frame=3)  # past the thread's 3 frames
    w.root(hw.ROOT_JAVA_FRAME, 0x9200, thread=1, frame=-1)  # "empty"
    w.root(hw.ROOT_JAVA_FRAME, 0x9300, thread=3, frame=0)
    w.root(hw.ROOT_JAVA_FRAME, 0x9400, thread=3, frame=1)
    w.root(hw.ROOT_JAVA_FRAME, 0x9500, thread=6, frame=0)
    w.root(hw.ROOT_JAVA_FRAME, 0xDEAD0, thread=1, frame=0)  # no such object
    w.root(hw.ROOT_JAVA_FRAME, 0x9700, thread=1, frame=1)  # the only one that resolves
    g = hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert [location(g, oid) for oid in range(0x9000, 0x9700, 0x100)] == [None] * 7
    assert location(g, 0x9700) == "Cache.java:30"
    assert g.meta["dangling_references"] == 1


def test_allocation_sites_give_allocation_stacks(tmp_path: Path) -> None:
    w, c = frames_dump(4)
    anonymous = w.stack_frame(0x7770, "Anon.java", None, 5)  # an unknown method name and class
    w.stack_trace(5, 0, [c["get"], c["main"]])
    w.stack_trace(6, 0, [0x7790, anonymous, c["main"]])  # a frame id no STACK_FRAME has
    w.instance(0xA000, c["java.lang.Object"], trace=5)
    w.obj_array(0xA100, c["java.lang.Object[]"], [0xA000], trace=6)
    w.instance(0xA200, c["java.lang.Object"], trace=5)
    w.instance(0xA300, c["java.lang.Object"], trace=99)  # no such trace
    w.root(hw.ROOT_JAVA_FRAME, 0xA200, thread=1, frame=1)
    g = hprof.read_graph(write(tmp_path, w.to_bytes(segment_records=2)))
    sep = sources.FRAME_SEPARATOR
    assert allocated_at(g, 0xA000) == f"com.example.Cache.get (Cache.java:30){sep}com.example.Main.main (Main.java:12)"
    assert (
        allocated_at(g, 0xA100)
        == f"(unknown frame){sep}(unknown method) (Anon.java:5){sep}com.example.Main.main (Main.java:12)"
    )
    assert allocated_at(g, 0xA200) == allocated_at(g, 0xA000) and location(g, 0xA200) == "Cache.java:30"
    for oid in (0xA300, 0x9000, 0x8000):  # no trace, HotSpot's dummy trace, a thread's stack
        assert allocated_at(g, oid) is None
    assert location(g, 0xA000) is None


def test_without_a_thread_root_the_one_trace_naming_the_thread_is_its_stack(tmp_path: Path) -> None:
    w, c = small(8)
    g = hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert location(g, 0x9300) == "Main.java:45"
    sep = sources.FRAME_SEPARATOR
    assert allocated_at(g, 0x9200) == f"com.example.Cache.put (Cache.java:12){sep}com.example.Node.main (Main.java:45)"
    w.stack_trace(4, 1, [])  # a second trace naming thread 1: which one is its stack is unknown
    g = hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert location(g, 0x9300) is None


@pytest.mark.parametrize(
    "body, message",
    [
        (lambda w: w.ident(1) * 4 + bytes(7), "a STACK_FRAME record must be"),
        (lambda w: bytes(11), "a STACK_TRACE record shorter than its 12-byte head"),
        (lambda w: struct.pack(">III", 7, 1, 2) + w.ident(1), "does not match its frame count"),
        (lambda w: struct.pack(">III", 7, 1, 0xFFFFFFFF) + w.ident(1), "does not match its frame count"),
    ],
    ids=["frame-length", "trace-head", "trace-frames", "trace-count-huge"],
)
def test_malformed_frames_and_traces_name_their_record(tmp_path: Path, body, message: str) -> None:
    w, _ = frames_dump(4)
    w.top.append(HprofWriter.record(0x04 if "FRAME" in message else 0x05, body(w)))
    data = w.to_bytes()
    with pytest.raises(FormatError, match=re.escape(message)) as caught:
        hprof.read_graph(write(tmp_path, data))
    assert caught.value.offset == w.offsets[len(w.top) - 1]


def test_every_truncation_of_a_dump_with_frames_is_a_format_error(tmp_path: Path) -> None:
    w, _ = frames_dump(4)
    w.root(hw.ROOT_JAVA_FRAME, 0x9000, thread=1, frame=2)
    data = w.to_bytes(segment_records=4)
    path = tmp_path / "cut.hprof"
    for cut in range(len(data) - 1, 0, -7):
        path.write_bytes(data[:cut])
        with pytest.raises(FormatError) as caught:
            hprof.read_graph(path)
        assert caught.value.offset is not None, cut


# -- a real dump ------------------------------------------------------------------------------------------

needs_jdk = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("javac", "java", "jcmd")), reason="needs a JDK (javac, java, jcmd)"
)
SESSIONS = 400


def histogram(text: str) -> dict[str, int]:
    counts = {}
    for line in text.splitlines():
        m = re.match(r"\s*\d+:\s+(\d+)\s+\d+\s+(\S+)", line)
        if m:
            counts[hprof.java_name(m.group(2))] = int(m.group(1))
    return counts


@pytest.fixture(scope="module")
def java_dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    if not all(shutil.which(tool) for tool in ("javac", "java", "jcmd")):
        pytest.skip("needs a JDK (javac, java, jcmd)")
    tmp = tmp_path_factory.mktemp("java")
    dump = tmp / "leak.hprof"
    # -all: no GC first, so the weakly held payloads are still in the heap.
    hist = dump_leak(compile_java(tmp), SESSIONS, dump, everything=True)
    return dump, histogram(hist)


@needs_jdk
def test_real_dump_counts_retained_sizes_and_weak_references(java_dump: tuple[Path, dict[str, int]]) -> None:
    dump, hist = java_dump
    assert formats.detect(dump) is formats.HPROF
    g = hprof.read_graph(dump)
    types = collections.Counter(g.strings[t] for t in g.type.tolist())
    assert types["Leak$Session"] == SESSIONS
    for cls in (
        "Leak$Session",
        "Leak$Payload",
        "java.util.HashMap",
        "java.lang.Integer",
        "java.lang.ref.SoftReference",
    ):
        assert types[cls] == hist[cls], cls

    a = analysis.analyze(g)
    sessions = np.flatnonzero(g.type == g.strings.index("Leak$Session"))
    classes = np.flatnonzero(g.type == g.strings.index("java.lang.Class")).tolist()
    leak_class = next(v for v in classes if g.node_name(v) == "Leak")
    cache_map = next(int(g.edge_to[e]) for e in g.out_edges(leak_class) if g.edge_label(e) == "CACHE")
    assert g.type_name(cache_map) == "java.util.HashMap"
    for v in sessions.tolist():
        assert a.retained_size[v] > g.self_size[v] > 0  # its byte[1000] and its String
        chain = []
        x = v
        while x >= 0:
            chain.append(x)
            x = int(a.idom[x])
        assert cache_map in chain and leak_class in chain
    assert a.retained_size[cache_map] > SESSIONS * 1000

    # Payloads only weakly held (WEAK) stay unreached; the one also held by a static is retained
    # through the static, not through its WeakReference.
    payloads = np.flatnonzero(g.type == g.strings.index("Leak$Payload")).tolist()
    src = g.edge_sources()
    weak_kind = int(EdgeKind.WEAK)
    strong_payload = next(int(g.edge_to[e]) for e in g.out_edges(leak_class) if g.edge_label(e) == "strongPayload")
    weakly = [
        p for p in payloads if all(int(g.edge_kind[e]) == weak_kind for e in np.flatnonzero(g.edge_to == p).tolist())
    ]
    assert weakly  # the WEAK list's payloads: no GC ran before the dump
    for p in weakly:
        assert not a.reachable[p]
    assert a.reachable[strong_payload] and a.idom[strong_payload] == leak_class
    holders = [int(src[e]) for e in np.flatnonzero(g.edge_to == strong_payload) if int(g.edge_kind[e]) == weak_kind]
    assert holders and all(g.type_name(h) == "java.lang.ref.WeakReference" for h in holders)
    assert all(a.retained_size[h] < a.retained_size[strong_payload] + g.self_size[h] for h in holders)
    labels = {g.edge_label(int(e)) for e in np.flatnonzero(g.edge_kind == weak_kind)}
    assert {"referent (weak)", "referent (soft)"} <= labels


@needs_jdk
def test_a_real_dump_locates_what_mains_frame_holds(java_dump: tuple[Path, dict[str, int]]) -> None:
    dump, _ = java_dump
    g = hprof.read_graph(dump)
    source = (Path(__file__).parent / "java" / "Leak.java").read_text().splitlines()
    sleeping = 1 + next(i for i, line in enumerate(source) if "Thread.sleep(" in line)
    assert g.locations is not None
    nodes, texts = g.locations.texts(g.strings, 0, len(g.ids))
    located = {(g.type_name(int(v)), text) for v, text in zip(nodes.tolist(), texts, strict=True)}
    # main's locals while it sleeps: its arguments and the list of softly referenced payloads.
    assert {
        ("java.lang.String[]", f"Leak.java:{sleeping}"),
        ("java.util.ArrayList", f"Leak.java:{sleeping}"),
    } <= located
    assert g.allocations is None  # HotSpot records no allocation sites


@needs_jdk
def test_cli_inspect_and_analyze_a_real_dump(java_dump: tuple[Path, dict[str, int]]) -> None:
    from heapdb.cli import main

    dump, _ = java_dump
    result = CliRunner().invoke(main, ["inspect", str(dump), "--top", "40"])
    assert result.exit_code == 0, result.output
    assert "hprof" in result.output and "Leak$Session" in result.output
    result = CliRunner().invoke(main, ["analyze", str(dump), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["format"] == "hprof"
    assert any(r["name"] == "Leak" for r in report["top_retainers"])


def test_cli_rejects_a_truncated_dump_with_the_offset(tmp_path: Path) -> None:
    from heapdb.cli import main

    w, _ = small()
    data = w.to_bytes(segment_records=2)
    path = write(tmp_path, data[: len(data) - 20])
    result = CliRunner().invoke(main, ["inspect", str(path)])
    assert result.exit_code != 0 and "byte" in result.output
    assert os.fspath(path) in result.output


def test_a_cycle_of_super_classes_is_a_format_error(tmp_path: Path) -> None:
    w = HprofWriter(8)
    w.add_class("a/A", 0x3010, [("x", OBJECT)], class_id=0x3000)
    w.add_class("a/B", 0x3000, [("y", OBJECT)], class_id=0x3010)
    w.instance(0x8000, 0x3000, {})
    with pytest.raises(FormatError, match="form a cycle") as caught:
        hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert caught.value.offset is not None


def test_a_deep_class_hierarchy_reads_with_every_inherited_field(tmp_path: Path) -> None:
    """20,000 classes each the super class of the next, one instance of each, the only object field
    declared by the first: each instance's field is found at its offset under every class between.
    (Building the layouts walked each instance's whole chain: this 3.3 MB dump took 37 s.)"""
    depth, first = 20_000, DEEP_FIRST_OBJECT
    dump = deep_class_chain(depth, pad_every=1000)
    graph = hprof.read_graph(write(tmp_path, dump))
    ids = graph.ids.tolist()
    nexts = {
        (ids[s], ids[int(graph.edge_to[e])])
        for s in range(graph.node_count)
        for e in range(graph.edge_start[s], graph.edge_start[s + 1])
        if graph.strings[int(graph.edge_name[e])] == "next"
    }
    assert nexts == {(first + level, first + level - 1) for level in range(1, depth)}
    assert graph.meta["dangling_references"] == 0


def test_a_hundred_thousand_empty_segments_read_as_the_dump_without_them(tmp_path: Path) -> None:
    """Empty HEAP_DUMP_SEGMENT records, 9 bytes each, cost what their bytes do (they were walked with
    a call from Python each): the graph is the dump's without them, and progress still adds up to
    the file size."""
    w, _ = small()
    plain = w.to_bytes(segment_records=1)
    padded = with_empty_segments(plain, 100_000)
    expected = hprof.read_graph(write(tmp_path, plain, "plain.hprof"))
    seen: list[int] = []
    path = write(tmp_path, padded, "padded.hprof")
    graph = hprof.read_graph(path, on_bytes=seen.append)
    assert sum(seen) == path.stat().st_size
    for field in ("ids", "type", "self_size", "edge_start", "edge_to", "edge_kind"):
        assert np.array_equal(getattr(graph, field), getattr(expected, field)), field


def test_a_dump_whose_class_dumps_are_lost_reads_with_them_counted(tmp_path: Path) -> None:
    """A lost heap segment (here: the one that held every class dump) leaves instances of no known
    class: they are read, typed "(unknown class)" and counted, as the other tolerated defects are,
    and the dump analyses and loads."""
    w, _ = small()
    w.sub = [record for record in w.sub if record[0] != 0x20]  # no CLASS DUMP sub-record at all
    graph = hprof.read_graph(write(tmp_path, w.to_bytes()))
    instances = sum(1 for record in small()[0].sub if record[0] == 0x21)
    assert graph.meta["unknown_class_instances"] == instances > 0
    arrays = sum(1 for record in small()[0].sub if record[0] == 0x22)  # of an array class lost too
    unknown = [i for i in range(graph.node_count) if graph.type_name(i) == "(unknown class)"]
    assert len(unknown) == instances + arrays
    result = analysis.analyze(graph)
    assert LoadInput.from_analysis(graph, result).group_rows()["TypeGroup"]


def test_progress_adds_up_to_the_file_size(tmp_path: Path) -> None:
    w, _ = small()
    path = write(tmp_path, w.to_bytes(segment_records=2))
    seen: list[int] = []
    hprof.read_graph(path, on_bytes=seen.append)
    assert len(seen) > 2 and all(n > 0 for n in seen)
    assert sum(seen) == path.stat().st_size
