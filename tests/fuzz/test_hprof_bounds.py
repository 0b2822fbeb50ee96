"""The hprof reader on the files a careful attacker would write: huge declared counts in tiny files,
deep class chains, records that all name one huge string, lost, moved, doubled and split segments.

Each either reads or is a FormatError naming the file and an offset, in traced memory bounded by the
file's size (docs/reliability.md states the bounds).
"""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from heapdb.errors import FormatError
from heapdb.loader.formats import hprof
from heapdb.loader.formats.hprof.layout import ROOT_TAGS
from heapdb.loader.formats.hprof.traces import FUNCTION_PART_LIMIT
from heapgen.fuzz import _parse_hprof
from heapgen.hprof_writer import INT, OBJECT, HprofWriter, standard_classes
from heapgen.seeds import DEEP_FIRST_OBJECT, SHARED_NAME_RECORDS, field_chain, shared_name, small


def write(tmp_path: Path, data: bytes, name: str = "dump.hprof") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def traced(tmp_path: Path, read: Callable[[], Any]) -> tuple[Any, int]:
    """``read()``'s result (or the FormatError it raised) and its peak of traced memory, after an
    untraced read of a small dump (the first call of each numba kernel loads it)."""
    hprof.read_graph(write(tmp_path, small()[0].to_bytes(segment_records=2), "warm.hprof"))
    tracemalloc.start()
    try:
        try:
            result: Any = read()
        except FormatError as e:
            result = e
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def dump_with(*subs: bytes, id_size: int = 4) -> tuple[HprofWriter, bytes]:
    """A small dump of the standard classes, then ``subs`` (raw sub-records) in its one HEAP_DUMP."""
    w = HprofWriter(id_size)
    standard_classes(w)
    for sub in subs:
        w.raw_sub(sub)
    return w, w.to_bytes()


def ident(value: int, id_size: int = 4) -> bytes:
    return value.to_bytes(id_size, "big")


# -- huge declared counts --------------------------------------------------------------------------------

OBJ = ident(0x8000)
CLASS_HEAD = b"\x20" + ident(0x8000) + bytes(4 + 6 * 4 + 4)  # stack serial, super ... reserved, instance size
HUGE = {
    "int array of 2^31 elements": b"\x23" + OBJ + struct.pack(">IIB", 0, 2**31, INT) + bytes(8),
    "byte array of 2^32-1 elements": b"\x23" + OBJ + struct.pack(">IIB", 0, 2**32 - 1, 8) + bytes(8),
    "object array of 2^32-1 elements": b"\x22" + OBJ + struct.pack(">II", 0, 2**32 - 1) + ident(0x10) + bytes(8),
    "instance of 4 GB of fields": b"\x21" + OBJ + struct.pack(">I", 0) + ident(0x10) + struct.pack(">I", 2**32 - 1),
    "class of 65535 fields": CLASS_HEAD + struct.pack(">HHH", 0, 0, 0xFFFF) + ident(1) + bytes([INT]),
    "class of 65535 constants": CLASS_HEAD + struct.pack(">HHB", 0xFFFF, 0, INT) + bytes(4),
    "class of 65535 statics": CLASS_HEAD + struct.pack(">HH", 0, 0xFFFF) + ident(1) + bytes([INT]) + bytes(4),
}


@pytest.mark.parametrize("sub", HUGE.values(), ids=HUGE.keys())
def test_huge_declared_counts_are_format_errors_in_bounded_memory(tmp_path: Path, sub: bytes) -> None:
    """Counts are checked against the bytes their record holds before anything is allocated for them."""
    w, data = dump_with(sub)
    path = write(tmp_path, data)
    result, peak = traced(tmp_path, lambda: hprof.read_graph(path))
    assert isinstance(result, FormatError), result
    assert str(path) in str(result) and "runs past the end of its record" in str(result)
    assert result.offset == len(data) - len(sub)  # the sub-record's first byte
    assert peak < 1 << 20


def test_an_array_without_data_may_declare_four_billion_elements(tmp_path: Path) -> None:
    """Android's PRIMITIVE_ARRAY_NODATA has a length and no elements: a huge one is a huge array."""
    _, data = dump_with(b"\xc3" + OBJ + struct.pack(">IIB", 0, 2**32 - 1, INT))
    graph, peak = traced(tmp_path, lambda: hprof.read_graph(write(tmp_path, data)))
    array = int(np.flatnonzero(graph.ids == 0x8000)[0])
    assert graph.self_size[array] == 8 + 4 + 4 * (2**32 - 1)  # header, length, elements (a multiple of 8)
    assert peak < 1 << 20


def test_a_class_of_65535_fields_reads_with_every_field(tmp_path: Path) -> None:
    w = HprofWriter(4)
    c = standard_classes(w)
    # Two fields with names of their own, the others sharing two (a STRING record each would triple the file).
    fields = [("r", OBJECT) if i % 2 else ("v", INT) for i in range(65535)]
    fields[1], fields[65533] = ("r1", OBJECT), ("r65533", OBJECT)
    wide = w.add_class("Wide", c["java.lang.Object"], fields)
    w.instance(0x8000, wide, {"r1": 0x8100, "r65533": 0x8100})
    w.instance(0x8100, c["java.lang.Object"])
    path = write(tmp_path, w.to_bytes())
    graph, peak = traced(tmp_path, lambda: hprof.read_graph(path))
    v = int(np.flatnonzero(graph.ids == 0x8000)[0])
    names = [graph.edge_label(e) for e in graph.out_edges(v)]
    assert names == ["<class>", "r1", "r65533"]
    assert peak < 40 * path.stat().st_size  # 32,768 primitive fields in its value layout


# -- deep class chains and shared names -------------------------------------------------------------------


def test_a_deep_chain_of_classes_each_declaring_an_object_field_reads_in_linear_memory(tmp_path: Path) -> None:
    """700 classes each the super class of the next, each declaring an object field, an instance of
    each: 245,000 object fields over the instances, read where they are (they were laid out per
    class in Python lists first: 18 bytes of traced memory per byte of the file, and 0.3 s per MB)."""
    path = write(tmp_path, field_chain(700, OBJECT))
    graph, peak = traced(tmp_path, lambda: hprof.read_graph(path))
    assert peak < 2 * path.stat().st_size
    ids = graph.ids.tolist()
    edges = {(ids[s], ids[int(graph.edge_to[e])]) for s in range(graph.node_count) for e in graph.out_edges(s)}
    assert all((DEEP_FIRST_OBJECT + k, DEEP_FIRST_OBJECT + k - 1) in edges for k in range(1, 700))
    assert graph.meta["dangling_references"] == 0


@pytest.mark.parametrize("what", SHARED_NAME_RECORDS)
def test_records_naming_one_huge_string_decode_it_once(tmp_path: Path, what: str) -> None:
    """300 records (classes, a class's fields, heaps, frames) naming one 1 MB string: each decoded,
    and each class named, once (it was once per record: 600 MB of traced memory for this file)."""
    path = write(tmp_path, shared_name(what, 300, 1 << 20))
    graph, peak = traced(tmp_path, lambda: hprof.read_graph(path))
    assert peak < 16 * path.stat().st_size  # the strings, encoded and checked a few times over
    if what == "frames":
        functions = {s for s in graph.strings if s.endswith(".m7")}
        assert functions == {"x" * (FUNCTION_PART_LIMIT - 1) + "….m7"}


# -- lost, moved, doubled and split segments --------------------------------------------------------------


def segmented_seed() -> tuple[Any, list[bytes]]:
    """small(8) in segments of three sub-records, parsed, and its records' bytes."""
    seed = _parse_hprof(small(8)[0].to_bytes(segment_records=3))
    return seed, [seed.record_bytes(i) for i in range(len(seed.records))]


def test_every_lost_segment_loads_with_what_it_held_counted(tmp_path: Path) -> None:
    """A dump missing any one of its segments reads: references to what the segment held dangle and
    are counted, instances of its classes are of an unknown class, those of their subclasses keep the
    fields of the classes known."""
    seed, order = segmented_seed()
    whole = hprof.read_graph(write(tmp_path, seed.data, "whole.hprof"))
    for lost in seed.heap_records():
        held = sum(1 for r, sub in seed.subs if r == lost and sub.tag in (0x20, 0x21, 0x22, 0x23))
        # A root kind's node goes with the last root of that kind.
        kinds = {sub.tag for r, sub in seed.subs if r == lost and sub.tag in ROOT_TAGS}
        held += len(kinds - {sub.tag for r, sub in seed.subs if r != lost})
        path = write(tmp_path, seed.with_records(order[:lost] + order[lost + 1 :]), f"lost{lost}.hprof")
        graph = hprof.read_graph(path)
        assert graph.node_count == whole.node_count - held, lost
        counted = ("dangling_references", "unknown_class_instances", "incomplete_class_instances")
        assert sum(graph.meta[k] for k in counted) >= sum(whole.meta[k] for k in counted), lost


def test_a_lost_super_class_leaves_the_known_fields(tmp_path: Path) -> None:
    """Class B (own field b) extends A, whose class dump is lost: B's instance holds b, then A's 8
    bytes; b is read, A's fields are not, the instance is counted."""
    w = HprofWriter(4)
    c = standard_classes(w)
    b = w.add_class("B", 0x7777, [("b", OBJECT)])
    w.raw_sub(b"\x21" + ident(0x8000) + bytes(4) + ident(b) + struct.pack(">I", 12) + ident(0x8100) + bytes(8))
    w.instance(0x8100, c["java.lang.Object"])
    graph = hprof.read_graph(write(tmp_path, w.to_bytes()))
    v = int(np.flatnonzero(graph.ids == 0x8000)[0])
    assert [graph.edge_label(e) for e in graph.out_edges(v)] == ["<class>", "b"]
    assert graph.meta["incomplete_class_instances"] == 1
    assert graph.meta["dangling_references"] == 1  # B's <super>

    w.sub[-2] = b"\x21" + ident(0x8000) + bytes(4) + ident(b) + struct.pack(">I", 2) + bytes(2)
    with pytest.raises(
        FormatError, match="fewer bytes than the fields of its class and its super classes known"
    ) as caught:
        hprof.read_graph(write(tmp_path, w.to_bytes()))
    assert caught.value.offset is not None


def test_moved_and_swapped_segments_read_as_the_dump(tmp_path: Path) -> None:
    """Segments before the STRING and LOAD_CLASS records they need, or in another order: the same graph."""
    seed, order = segmented_seed()
    whole = hprof.read_graph(write(tmp_path, seed.data, "whole.hprof"))
    heaps = seed.heap_records()
    first = order[:]
    first.insert(0, first.pop(heaps[1]))
    swapped = order[:]
    swapped[heaps[0]], swapped[heaps[-1]] = swapped[heaps[-1]], swapped[heaps[0]]
    for name, records in (("first", first), ("swapped", swapped)):
        graph = hprof.read_graph(write(tmp_path, seed.with_records(records), f"{name}.hprof"))
        assert sorted(graph.ids.tolist()) == sorted(whole.ids.tolist()), name
        assert graph.edge_count == whole.edge_count, name


def test_a_segment_written_twice_or_split_inside_a_sub_record_is_a_format_error(tmp_path: Path) -> None:
    seed, order = segmented_seed()
    pick = seed.heap_records()[0]
    twice = order[:pick] + [order[pick]] + order[pick:]
    with pytest.raises(FormatError, match="is written twice"):
        hprof.read_graph(write(tmp_path, seed.with_records(twice)))
    body = order[pick][9:]
    split = [HprofWriter.record(0x1C, body[:20]), HprofWriter.record(0x1C, body[20:])]
    with pytest.raises(FormatError, match="runs past the end of its record") as caught:
        hprof.read_graph(write(tmp_path, seed.with_records(order[:pick] + split + order[pick + 1 :])))
    assert caught.value.offset == seed.records[pick][0] + 9  # the cut class dump


@pytest.mark.parametrize("super_of", ["itself", "a missing class"])
def test_a_class_its_own_super_class_is_a_format_error_and_a_missing_one_is_not(tmp_path: Path, super_of: str) -> None:
    w = HprofWriter(8)
    standard_classes(w)
    a = 0x3000
    w.add_class("a/A", a if super_of == "itself" else 0x3010, [("x", INT)], class_id=a)
    w.instance(0x8000, a, {})
    path = write(tmp_path, w.to_bytes())
    if super_of == "itself":
        with pytest.raises(FormatError, match="form a cycle") as caught:
            hprof.read_graph(path)
        assert caught.value.offset is not None
    else:
        assert hprof.read_graph(path).meta["incomplete_class_instances"] == 1
