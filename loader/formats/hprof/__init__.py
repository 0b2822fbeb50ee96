"""Java heap dumps: the HotSpot ``hprof`` binary format and its Android variant.

Read: ``JAVA PROFILE 1.0.1``, ``1.0.2`` (HotSpot's ``jcmd PID GC.heap_dump``, ``jmap``,
``-XX:+HeapDumpOnOutOfMemoryError``) and ``1.0.3`` (Android's ``Debug.dumpHprofData``), with 4- or
8-byte identifiers, ``HEAP_DUMP`` and ``HEAP_DUMP_SEGMENT`` records. The file is a header (the
version text, a NUL, the u4 identifier size, a u8 timestamp) and then records ``u1 tag, u4 time,
u4 length, body``; all numbers are big-endian.

Why this module is long: this docstring is the format's whole description as heapdb reads it (about
150 lines), and the reader's code below follows it step by step.

How it is read (never a Python object per heap object):

1. the file is memory-mapped; a numba kernel walks the top-level records and keeps the positions of
   ``STRING`` (0x01), ``LOAD_CLASS`` (0x02), ``STACK_FRAME`` (0x04), ``STACK_TRACE`` (0x05) and
   heap-dump (0x0C, 0x1C) records; other records (thread starts, CPU samples...) are skipped by their
   length. Frames and traces are decoded with numpy into flat arrays (see "Stack traces" below);
2. a numba kernel walks the heap-dump sub-records twice (count, then fill) into flat arrays: one row
   per object (id, kind, class id, element type, data position and length), per GC root, per class
   dump. The ids and kinds go straight into the graph's columns (the count says where the objects'
   nodes start); the data positions and lengths are the values' (:class:`FieldValues`);
3. class dumps (one per loaded class: thousands, not millions) are decoded in Python into a flat
   field layout per class, the class's own instance fields first, then its super class's, as
   ``INSTANCE_DUMP`` stores them; only the names of classes and fields are decoded from ``STRING``
   records, looked up by binary search over the string ids;
4. a numba kernel reads every instance's object fields and every object array's elements through
   those layouts (count, then fill), resolving each target id through a hash table of node indexes
   hashed as snap.bin's :class:`~heapdb.loader.formats.snapbin.ids.IdIndex` (4 bytes a slot: the
   keys are read from the ids column), and writes the edges straight into the graph's CSR arrays
   (objects come in node order, so nothing is sorted);
5. the types, shallow sizes and field layouts are written by one more kernel (:mod:`.objects`).

Memory (docs/analysis.md, "The hprof reader's memory"): every big array is made once, in its final
place where it can be (through :class:`~heapdb.loader.formats.spill.Arrays`, which puts them in
memory-mapped files past ``HEAPDB_READ_MEMORY``), and each temporary one is freed before the next is
made; the file's pages are released from the process as each pass leaves them behind
(:meth:`.dump.Dump.release`). So the reader's peak is the graph and its values and little more.

The package: this module is the reader (it walks the file and assembles the graph; the format's
interface, ``sniff``/``read_graph``, lives here), the record layouts and error codes are in
:mod:`.layout`, the numba kernels it drives in :mod:`.scan`, what every part reads from the file
(its strings and class names) in :mod:`.dump`, the class dumps and field layouts in :mod:`.classes`,
the stack traces in :mod:`.traces`.

Graph layout (the synthetic root layout of :mod:`heapdb.loader.graph`):

- node 0 ``(root)``, then one ``(<kind> roots)`` node per root kind the dump uses, ids 1, 2...
  (addresses are never that small): ``(jni global roots)``, ``(jni local roots)``, ``(java frame
  roots)``, ``(native stack roots)``, ``(system class roots)`` (``ROOT_STICKY_CLASS``), ``(thread
  block roots)``, ``(busy monitor roots)`` (``ROOT_MONITOR_USED``), ``(thread roots)``, ``(unknown
  roots)``, and Android's ``(interned string roots)``, ``(finalizing roots)``, ``(debugger roots)``,
  ``(reference cleanup roots)``, ``(vm internal roots)``, ``(jni monitor roots)``, ``(unreachable
  roots)`` (Android lists objects it found unreachable; they stay visible under that kind);
- then the class objects (kind ``class``, type ``java.lang.Class``, name the class name), then every
  instance and array in file order (kinds ``instance``, ``object array``, ``primitive array``).
  ``ids`` are the dump's object ids, which are addresses: not stable from one dump to the next.

Types: class names with dots (``com.example.Cache``, ``java.util.HashMap$Node``), arrays as
``java.lang.Object[]``, ``int[]``, ``byte[][]``. Edges:

- an instance's object fields: :attr:`EdgeKind.PROPERTY` named by the field name (a field hidden by
  a subclass's field of the same name appears once per declaring class, as in the dump);
  ``java.lang.ref.Reference.referent``: :attr:`EdgeKind.WEAK` (never retains) named ``referent
  (soft)``, ``referent (weak)``, ``referent (phantom)`` or ``referent (finalizer)`` by the
  reference's class ancestry (SoftReference, WeakReference, PhantomReference, FinalReference or
  Android's FinalizerReference);
- every object -> its class: :attr:`EdgeKind.INTERNAL` ``<class>`` (V8's map edge; primitive arrays
  point at their array class, ``[I`` and so on, when the dump has it);
- object array elements: :attr:`EdgeKind.ELEMENT` by index (null elements have no edge);
- class objects: static object fields as :attr:`EdgeKind.PROPERTY` by name, and
  :attr:`EdgeKind.INTERNAL` ``<super>``, ``<classloader>``, ``<signers>``, ``<protection domain>``,
  ``<constant pool>``;
- ``(root)`` -> ``(<kind> roots)`` and ``(<kind> roots)`` -> each rooted object:
  :attr:`EdgeKind.REFERENCE` named by the root kind.

``meta`` also holds ``format_version`` (``1.0.2``), ``id_size``, ``oop_size`` and ``timestamp_ms``.

A reference to an id the dump did not write (a real dump can name objects it skipped) is dropped
and counted in ``meta["dangling_references"]``; so are roots naming no object. Instances of a class
with no ``CLASS_DUMP`` keep their node (type ``(unknown class)``) without field edges, counted in
``meta["unknown_class_instances"]``. Instances of a class whose chain of super classes reaches one
with no ``CLASS_DUMP`` (a lost segment held it) keep the fields of the classes known, which an
instance holds first; the missing classes' fields after them are not read. They are counted in
``meta["incomplete_class_instances"]``.

Shallow sizes are the JVM's, computed as VisualVM's heap library does (``org.graalvm.visualvm.lib.
jfluid.heap``, ``ObjectSizeSettings`` and ``ClassDump``), which matches ``jcmd GC.class_histogram``
byte for byte except for classes the JVM extends beyond their declared fields (see docs/analysis.md).
The dump writes every reference with the id size, but a 64-bit JVM with compressed oops (the default
below 32 GB of heap) keeps 4-byte references and a 4-byte class pointer. The reference ("oop") size
is read from the dump as VisualVM reads it: the difference of two Unsafe field offsets the JDK keeps
in static longs (``java.lang.Class$Atomic``'s ``annotationDataOffset`` and ``annotationTypeOffset``,
else ``java.util.concurrent.FutureTask``'s ``runnerOffset`` and ``waitersOffset``), when it is 4 or
8; otherwise the id size (always with 4-byte ids). ``meta["oop_size"]`` records it. A header is
id size + oop size (the mark word and the class pointer: 12 bytes with compressed oops, 16 without,
8 with 4-byte ids); an instance is header + its fields over the class hierarchy, references at the
oop size; an array is header + 4 (the length) + length x element size (references at the oop size);
each rounded up to a multiple of 8. A class object is header + its static values (references at the
oop size), rounded up the same way (the JVM's mirror is larger; VisualVM lists no class objects).

Android (``1.0.3``): ``HEAP_DUMP_INFO`` (0xFE) switches the current heap (``app``, ``image``,
``zygote``...); ``meta["heap"]`` holds each node's heap, the type code of the ``HEAP_DUMP_INFO``
before it (uint8: ``ord("A")`` for app, ``ord("Z")`` for zygote...; 0 before any), and
``meta["heap_names"]`` maps each code to its name. ``PRIMITIVE_ARRAY_NODATA`` (0xC3) is an array without contents.

Stack traces (:mod:`heapdb.loader.sources`): ``STACK_FRAME`` records (frame id, method name,
signature and source file name as string ids, the class's ``LOAD_CLASS`` serial, a line: > 0 a line,
0 none, -1 unknown, -2 compiled, -3 native) and ``STACK_TRACE`` records (serial, thread serial, frame
ids innermost first) give

- ``graph.locations``: an object a ``ROOT_JAVA_FRAME`` or ``ROOT_JNI_LOCAL`` root holds (thread
  serial, frame number) is located at that frame of its thread's stack (the trace its
  ``ROOT_THREAD_OBJECT`` names, else the trace that names the thread): ``Leak.java:45``, the frame's
  source file and line as a Java stack trace shows them (no column; a frame without a line, native or
  compiled, is just ``Thread.java``). An object several frames hold takes the innermost frame (the
  lowest frame number) of the thread of its first such root in the file. Roots whose thread, trace,
  frame or source file the dump does not have locate nothing. A thread's current stack is not where
  its objects were allocated: it never fills ``allocated_at``;
- ``graph.allocations``: an instance or array whose record names (its stack trace serial) a trace
  with frames was allocated there (Android with allocation tracking; HotSpot names a dummy trace with
  no frames: nothing). Functions are ``com.example.Cache.put`` with the source file and line; a frame
  id no ``STACK_FRAME`` has is the function ``(unknown frame)``.

Every malformed input raises :class:`FormatError` with the file, the byte offset and what was
expected there (a ``STACK_FRAME`` of the wrong length or a ``STACK_TRACE`` whose length does not fit
its frame count included).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats import HPROF
from heapdb.loader.formats.hprof.classes import ClassDumps
from heapdb.loader.formats.hprof.dump import Dump
from heapdb.loader.formats.hprof.layout import (
    ARRAY_CLASS_BY_TYPE,
    BASIC_TYPES,
    ERRORS,
    KIND_CLASS,
    NODATA,
    NODE_KINDS,
    ROOT_KINDS,
    ST_DANGLING,
    ST_ERROR,
    ST_ERROR_AT,
    TAG_HEAP_DUMP,
    TAG_HEAP_DUMP_END,
    TAG_HEAP_DUMP_SEGMENT,
    VERSIONS,
    align,
    java_name,
)
from heapdb.loader.formats.hprof.objects import class_indexes, instance_fits, object_nodes
from heapdb.loader.formats.hprof.scan import (
    EDGE_RUN,
    index_ids,
    object_edges,
    record_start,
    resolve_ids,
    scan_records,
    walk_heap_records,
)
from heapdb.loader.formats.hprof.traces import StackTraces
from heapdb.loader.formats.snapbin.ids import table_bits
from heapdb.loader.formats.spill import Arrays
from heapdb.loader.formats.text import safe_strings
from heapdb.loader.graph import ROOT_NAME, SYNTHETIC_KIND, EdgeKind, HeapGraph, root_kind_node_name
from heapdb.loader.values import FieldValues

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress

__all__ = ["java_name", "read_graph", "sniff"]


def sniff(head: bytes) -> bool:
    """An hprof file starts with ``JAVA PROFILE 1.0.x`` and a NUL."""
    return any(head.startswith(v + b"\0") for v in VERSIONS)


def read_graph(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
    """Read an hprof heap dump into a :class:`HeapGraph` (see the module docstring)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    version = next((v for v in VERSIONS if head.startswith(v + b"\0")), None)
    if version is None:
        raise FormatError(path, "expected 'JAVA PROFILE 1.0.1', '1.0.2' or '1.0.3' and a NUL", offset=0)
    at = len(version) + 1
    if size < at + 12:
        raise FormatError(path, "the file ends inside the header (expected the id size and a timestamp)", offset=at)
    id_size = int.from_bytes(head[at : at + 4], "big")
    if id_size not in (4, 8):
        raise FormatError(path, f"the identifier size is {id_size}, expected 4 or 8", offset=at)
    timestamp = int.from_bytes(head[at + 4 : at + 12], "big")
    with Arrays() as arrays:
        dump = Dump(path, id_size, at + 12)
        return _Reader(dump, version.decode()[len("JAVA PROFILE ") :], timestamp, on_bytes, arrays).read()


class _Reader:
    """Drives one read: the records, the heap-dump walk, then the graph (see the module docstring)."""

    def __init__(self, dump: Dump, version: str, timestamp: int, on_bytes: ByteProgress | None, arrays: Arrays) -> None:
        self.dump = dump
        self.version = version
        self.timestamp = timestamp
        self._on_bytes = on_bytes
        self.arrays = arrays
        self.reported = 0
        self.dangling = 0

    def read(self) -> HeapGraph:
        buf = self.dump.buf
        empty = np.zeros(0, dtype=np.int64)
        count, bad = scan_records(buf, self.dump.start, False, np.zeros(0, np.uint8), empty, empty)
        if bad >= 0:
            raise self.dump.error("a record runs past the end of the file (expected tag, time, length and body)", bad)
        tags = np.zeros(count, dtype=np.uint8)
        offsets = np.zeros(count, dtype=np.int64)
        lengths = np.zeros(count, dtype=np.int64)
        scan_records(buf, self.dump.start, True, tags, offsets, lengths)
        self._progress(self.dump.start)

        self.dump.index_names(tags, offsets, lengths)
        self.traces = StackTraces(self.dump, tags, offsets, lengths)

        heaps = (tags == TAG_HEAP_DUMP) | (tags == TAG_HEAP_DUMP_SEGMENT)
        h_off, h_len = offsets[heaps], lengths[heaps]
        if not len(h_off):
            raise self.dump.error("no HEAP_DUMP or HEAP_DUMP_SEGMENT record: the file holds no heap", self.dump.start)
        segments = np.flatnonzero(tags == TAG_HEAP_DUMP_SEGMENT)
        if len(segments) and not (tags[segments[-1] :] == TAG_HEAP_DUMP_END).any():
            # HotSpot and Android close a segmented dump with HEAP_DUMP_END: without it the file was cut.
            raise self.dump.error(
                "the segmented heap dump has no HEAP_DUMP_END after its last segment: the file is truncated",
                len(self.dump.buf),
            )
        rows = walk_heap_records(
            buf, self.dump.id_size, h_off, h_len, self._check, self._progress, self.dump.release, self._columns
        )
        graph = self._assemble(rows)
        self._progress(len(self.dump.buf) - self.reported)  # the records read only in part, or skipped
        self.dump.release(0, len(buf))  # the names and class dumps read last; values read back what they show
        return graph

    def _columns(self, n_obj: int, n_class: int, seen: np.ndarray, heaps: bool) -> dict[str, np.ndarray]:
        """The walk's object rows, once it has counted them: the graph's own id, kind (and heap)
        columns from the first object's node on, which the class dumps and the root kinds seen
        decide (see the module docstring); the rest in arrays of their own."""
        self.root_kinds_used = np.flatnonzero(seen).tolist()
        self.first_class = 1 + len(self.root_kinds_used)
        self.first_obj = self.first_class + n_class
        n = self.n = self.first_obj + n_obj
        a = self.arrays
        self.ids, self.node_kind = a.zeros(n, np.int64), a.zeros(n, np.uint8)
        self.heap = a.zeros(n if heaps else 0, np.uint8)
        first = self.first_obj
        return {
            "obj_id": self.ids[first:],
            "obj_kind": self.node_kind[first:],
            "obj_class": a.zeros(n_obj, np.int64),  # class ids, until they are class indexes (_assemble)
            "obj_elem": a.zeros(n_obj, np.uint8),
            "obj_off": a.zeros(n_obj, np.int64),
            # A u4 in the file (an instance's field bytes, an array's element count): 4 bytes a
            # value keep the reader's peak within 1.5 times the dump (docs/analysis.md).
            "obj_len": a.zeros(n_obj, np.uint32),
            "obj_heap": self.heap[first:],
        }

    def _progress(self, n: int) -> None:
        self.reported += n
        if self._on_bytes is not None and n:
            self._on_bytes(n)

    def _check(self, st: np.ndarray) -> None:
        if st[ST_ERROR]:
            code, at = int(st[ST_ERROR]), int(st[ST_ERROR_AT])
            problem = ERRORS.get(code, "malformed heap dump")
            if code == 2:
                problem += f" (0x{int(self.dump.buf[at]):02x})"
            raise self.dump.error(problem, at)

    def _assemble(self, rows: dict[str, np.ndarray]) -> HeapGraph:
        """The graph from the walk's rows. Each big array is made once, in its final place where it
        can be, and each temporary one is freed before the next is made: the reader's peak is the
        graph's own arrays and a few columns more (docs/analysis.md, Memory)."""
        id_size, arrays = self.dump.id_size, self.arrays
        intern = self.dump.strings.intern
        dumps = ClassDumps(self.dump, rows)
        classes = dumps.classes
        class_ids = np.asarray([c["id"] for c in classes], dtype=np.int64)
        class_names = [self.dump.class_name(c["id"]) for c in classes]
        kind_node = {k: 1 + i for i, k in enumerate(self.root_kinds_used)}
        first_class, first_obj, n = self.first_class, self.first_obj, self.n
        ids, node_kind = self.ids, self.node_kind
        obj_kind, obj_elem, obj_off, obj_len = rows["obj_kind"], rows["obj_elem"], rows["obj_off"], rows["obj_len"]
        n_obj = len(obj_kind)
        ids[:first_class] = np.arange(1, first_class + 1)
        ids[first_class:first_obj] = class_ids
        node_kind[first_class:first_obj] = KIND_CLASS

        # Objects' classes: class ids -> indexes; primitive arrays by their element type's array class.
        array_class = {name: i for i, name in enumerate(class_names)}
        prim_class = np.full(128, -1, dtype=np.int32)
        prim_type = np.zeros(128, dtype=np.int32)
        for code, descriptor in ARRAY_CLASS_BY_TYPE.items():
            tname = java_name(descriptor)
            prim_class[code] = array_class.get(tname, -1)
            prim_type[code] = intern(tname)
        class_order = np.argsort(class_ids).astype(np.int32)
        # Each object's class index lives in its type's place until object_nodes turns it into the
        # type (element by element): a column fewer at the reader's peak, the edges' pass.
        type_ = arrays.zeros(n, np.int32)
        cls_index = type_[first_obj:]
        class_indexes(
            obj_kind, rows.pop("obj_class"), obj_elem, class_ids[class_order], class_order, prim_class, cls_index
        )

        field_bytes = dumps.field_bytes()
        # Layouts only for classes with an instance of the right length (a wrong one is an error below):
        # its class's field bytes, or more where a super class is missing (its fields come last).
        fits = arrays.zeros(n_obj, np.uint8)
        used_mask = np.zeros(len(classes), dtype=np.bool_)
        unknown, incomplete = instance_fits(obj_kind, cls_index, obj_len, field_bytes, dumps.complete, fits, used_mask)
        used = np.flatnonzero(used_mask)
        own_start, own_off, own_name, own_weak, parent, declaring, weak_label = dumps.reference_fields(used)
        value_index, value_layouts = dumps.value_layouts(used)
        # The nodes' names, interned before the edges' as the graph's strings have always had them.
        synthetic, root_name = intern(SYNTHETIC_KIND), intern(ROOT_NAME)
        kind_names = {node: intern(root_kind_node_name(ROOT_KINDS[k])) for k, node in kind_node.items()}
        class_type = np.asarray([intern(t) for t in class_names] + [intern("(unknown class)")], dtype=np.int32)
        class_class = intern("java.lang.Class")

        # The id table, in a dict so that it can be dropped as soon as the edges are read.
        table = {"slots": arrays.full(1 << (bits := table_bits(n)), -1, np.int32)}
        duplicate = index_ids(ids, table["slots"], bits)
        if duplicate[1] >= 0:
            later = int(duplicate[1])
            if later >= first_obj:
                k = later - first_obj
                at = int(record_start(int(obj_kind[k]), int(obj_off[k]), id_size))
            elif later >= first_class:
                at = int(classes[later - first_class]["offset"])
            else:
                at = self.dump.start
            raise self.dump.error(f"object id 0x{int(ids[later]) & (2**64 - 1):x} is written twice", at)

        def resolve(targets: np.ndarray) -> np.ndarray:
            """Node indexes of ``targets`` (-1 for null or where no object has that id)."""
            found = np.zeros(len(targets), dtype=np.int32)
            resolve_ids(ids, table["slots"], bits, targets.astype(np.int64, copy=False), found)
            return found

        # Edges. First the synthetic nodes' and the classes' (few; their sources come before every
        # object's), then every object's in node order, written by numba straight into the arrays.
        extra_src: list[int] = []
        extra_dst: list[int] = []
        extra_kind: list[int] = []
        extra_name: list[int] = []
        for k, node in kind_node.items():
            extra_src.append(0)
            extra_dst.append(node)
            extra_kind.append(int(EdgeKind.REFERENCE))
            extra_name.append(intern(root_kind_node_name(ROOT_KINDS[k])))
        rooted = resolve(rows["root_id"])
        root_node = np.asarray([kind_node.get(k, 0) for k in range(len(ROOT_KINDS))], dtype=np.int64)
        root_label = np.asarray([intern(k) for k in ROOT_KINDS], dtype=np.int64)
        class_refs = [(first_class + i, ref) for i, c in enumerate(classes) for ref in c["refs"] if ref[1]]
        targets = resolve(np.asarray([ref[1] for _, ref in class_refs], dtype=np.int64)).tolist()
        for (source, (label, _, k)), t in zip(class_refs, targets, strict=True):
            extra_src.append(source)
            extra_dst.append(t)
            extra_kind.append(int(k))
            extra_name.append(intern(label))
        e_src = np.concatenate([np.asarray(extra_src, dtype=np.int64), root_node[rows["root_kind"]]])
        e_dst = np.concatenate([np.asarray(extra_dst, dtype=np.int64), rooted])
        e_kind = np.concatenate(
            [np.asarray(extra_kind, dtype=np.uint8), np.full(len(rooted), int(EdgeKind.REFERENCE), np.uint8)]
        )
        e_name = np.concatenate([np.asarray(extra_name, dtype=np.int64), root_label[rows["root_kind"]]])
        keep = e_dst >= 0
        self.dangling += int((~keep).sum())
        e_order = np.argsort(e_src[keep], kind="stable")
        e_src = e_src[keep][e_order]
        extras = len(e_src)

        st = np.zeros(8, dtype=np.int64)
        edge_start = arrays.zeros(n + 1, np.int64)  # each node's edge count first, then their sums
        edge_start[1 : first_obj + 1] = np.bincount(e_src, minlength=first_obj)
        args = (
            self.dump.buf, id_size, False, st, first_obj, obj_kind, cls_index, obj_off, obj_len, own_start,
            own_off, own_name, own_weak, parent, declaring, weak_label, field_bytes, dumps.complete, ids,
            table["slots"], bits, first_class, intern("<class>"),
        )  # fmt: skip
        z32 = np.zeros(0, dtype=np.int32)
        m = extras + self._object_edges(args, z32, np.zeros(0, np.uint8), np.zeros(0, np.uint32), edge_start[1:])
        edge_to = arrays.zeros(m, np.int32)
        edge_kind = arrays.zeros(m, np.uint8)
        edge_name = arrays.zeros(m, np.uint32)
        edge_to[:extras] = e_dst[keep][e_order]
        edge_kind[:extras] = e_kind[keep][e_order]
        edge_name[:extras] = e_name[keep][e_order]
        self._object_edges(args, edge_to, edge_kind, edge_name, edge_start[1:], base=extras)
        del table["slots"], args
        np.cumsum(edge_start, out=edge_start)

        # Types, names, sizes and field layouts, now that the id table is gone.
        name = arrays.zeros(n, np.int32)
        type_[:first_class] = synthetic
        name[0] = root_name
        for node, kind_name in kind_names.items():
            name[node] = kind_name
        type_[first_class:first_obj] = class_class
        name[first_class:first_obj] = class_type[:-1]

        oop = dumps.oop_size(class_names)
        header = id_size + oop  # the mark word, then the class pointer (an oop: compressed or not)
        esize = np.zeros(128, dtype=np.int64)
        for code, (_, size) in BASIC_TYPES.items():
            esize[code] = size or oop
        self_size = arrays.zeros(n, np.int64)
        layout = arrays.zeros(n_obj, np.int32)
        # The dump writes every reference with the id size; the JVM's own are oop-sized.
        object_nodes(
            obj_kind, cls_index, obj_elem, obj_len, fits, dumps.ref_fields, esize, class_type, prim_type,
            value_index.astype(np.int32), header, id_size - oop, oop, type_[first_obj:], self_size[first_obj:],
            layout,
        )  # fmt: skip
        del cls_index, fits
        static_refs = [sum(kind == EdgeKind.PROPERTY for _, _, kind in c["refs"]) for c in classes]
        self_size[first_class:first_obj] = align(
            header
            + np.asarray([c["static_bytes"] for c in classes], dtype=np.int64)
            - np.asarray(static_refs, dtype=np.int64) * (id_size - oop)
        )

        meta: dict[str, Any] = {
            "format": HPROF.name,
            "format_version": self.version,
            "id_size": id_size,
            "oop_size": oop,
            "timestamp_ms": self.timestamp,
            "dangling_references": self.dangling,
            "unknown_class_instances": int(unknown),
            "incomplete_class_instances": int(incomplete),
        }
        if len(rows["heap_type"]):
            heap_names = {}
            for t, name_id in zip(rows["heap_type"].tolist(), rows["heap_name"].tolist(), strict=True):
                heap_names[int(t)] = self.dump.string(int(name_id)) or f"heap {t}"
            meta["heap"] = self.heap
            meta["heap_names"] = heap_names
        locations = self.traces.frame_locations(rows, rooted)
        allocations = self.traces.allocation_traces(rows, n, first_obj)
        # An Android array without data (0xC3) has no elements to show: the bytes after its header
        # are the next record's.
        obj_elem[obj_elem >= NODATA] = 0
        values = FieldValues(
            self.dump.buf, first_obj, obj_off, obj_len, layout, obj_elem, value_layouts, first_class,
            value_index.astype(np.int32),
        )  # fmt: skip
        graph = HeapGraph(
            ids=ids,
            kind=node_kind,
            type=type_,
            name=name,
            self_size=self_size,
            edge_start=edge_start,
            edge_to=edge_to,
            edge_kind=edge_kind,
            edge_name=edge_name,
            strings=safe_strings(self.dump.strings.strings),
            node_kinds=list(NODE_KINDS),
            root=0,
            meta=meta,
            locations=locations,
            allocations=allocations,
            values=values,
        )
        try:
            graph.validate(ids_checked=True)  # index_ids refused any id written twice
        except ValueError as e:
            raise self.dump.error(f"inconsistent dump: {e}", self.dump.start) from None
        return graph

    def _object_edges(
        self,
        args: tuple[Any, ...],
        edge_to: np.ndarray,
        edge_kind: np.ndarray,
        edge_name: np.ndarray,
        counts: np.ndarray,
        base: int | None = None,
    ) -> int:
        """:func:`object_edges` over the objects a run at a time: counts them (``base`` None) or
        writes them from ``base`` on; each run's part of the file is released once read, so that the
        dump's pages do not stay in the process's memory beside the arrays. Returns the edges."""
        fill = base is not None
        at = base or 0
        n_obj = len(args[5])
        first_obj = args[4]
        st = args[3]
        for a in range(0, n_obj, EDGE_RUN):
            b = min(a + EDGE_RUN, n_obj)
            run: tuple[Any, ...] = (
                args[0],
                args[1],
                fill,
                st,
                first_obj + a,
                *(x[a:b] for x in args[5:9]),
                *args[9:],
                at,
                edge_to,
                edge_kind,
                edge_name,
                counts,
            )
            at += int(object_edges(*run))
            self._check(st)
            if fill:
                self.dangling += int(st[ST_DANGLING])
            self.dump.release(int(args[7][a]), int(args[7][b - 1]))
        return at - (base or 0)
