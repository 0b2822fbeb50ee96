"""Java heap dumps: the HotSpot ``hprof`` binary format and its Android variant.

Read: ``JAVA PROFILE 1.0.1``, ``1.0.2`` (HotSpot's ``jcmd PID GC.heap_dump``, ``jmap``,
``-XX:+HeapDumpOnOutOfMemoryError``) and ``1.0.3`` (Android's ``Debug.dumpHprofData``), with 4- or
8-byte identifiers, ``HEAP_DUMP`` and ``HEAP_DUMP_SEGMENT`` records. The file is a header (the
version text, a NUL, the u4 identifier size, a u8 timestamp) and then records ``u1 tag, u4 time,
u4 length, body``; all numbers are big-endian.

Why this module is long: it is one format's whole reader, its four numba kernels beside the
Python that drives them, sharing the record layouts and error codes; the kernels and the graph
assembly are each only meaningful with the other.

How it is read (never a Python object per heap object):

1. the file is memory-mapped; a numba kernel walks the top-level records and keeps the positions of
   ``STRING`` (0x01), ``LOAD_CLASS`` (0x02), ``STACK_FRAME`` (0x04), ``STACK_TRACE`` (0x05) and
   heap-dump (0x0C, 0x1C) records; other records (thread starts, CPU samples...) are skipped by their
   length. Frames and traces are decoded with numpy into flat arrays (see "Stack traces" below);
2. a numba kernel walks the heap-dump sub-records twice (count, then fill) into flat arrays: one row
   per object (id, kind, class id, data position and length), per GC root, per class dump;
3. class dumps (one per loaded class: thousands, not millions) are decoded in Python into a flat
   field layout per class, the class's own instance fields first, then its super class's, as
   ``INSTANCE_DUMP`` stores them; only the names of classes and fields are decoded from ``STRING``
   records, looked up by binary search over the string ids;
4. a numba kernel reads every instance's object fields and every object array's elements through
   those layouts (count, then fill), resolving each target id through the id hash table snap.bin's
   reader uses (:class:`~heapdb.loader.formats.snapbin.ids.IdIndex`), and writes the edges straight
   into the graph's CSR arrays (objects come in node order, so nothing is sorted).

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
``meta["unknown_class_instances"]``.

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

import numba
import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats.snapbin.ids import _FIBONACCI, IdIndex
from heapdb.loader.formats.text import safe_strings
from heapdb.loader.graph import (
    ROOT_NAME,
    SYNTHETIC_KIND,
    EdgeKind,
    HeapGraph,
    StringTable,
    root_kind_node_name,
)
from heapdb.loader.sources import AllocationTraces, SourceLocations

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress

NAME = "hprof"

VERSIONS = (b"JAVA PROFILE 1.0.1", b"JAVA PROFILE 1.0.2", b"JAVA PROFILE 1.0.3")

# Top-level record tags.
TAG_STRING, TAG_LOAD_CLASS, TAG_HEAP_DUMP, TAG_HEAP_DUMP_SEGMENT, TAG_HEAP_DUMP_END = 0x01, 0x02, 0x0C, 0x1C, 0x2C
TAG_STACK_FRAME, TAG_STACK_TRACE = 0x04, 0x05

# Heap-dump sub-record tags.
SUB_CLASS_DUMP, SUB_INSTANCE_DUMP, SUB_OBJ_ARRAY_DUMP, SUB_PRIM_ARRAY_DUMP = 0x20, 0x21, 0x22, 0x23
SUB_PRIM_ARRAY_NODATA, SUB_HEAP_DUMP_INFO = 0xC3, 0xFE

# Root sub-record tag -> (root kind, bytes after the object id).
ROOT_TAGS: dict[int, tuple[str, int]] = {
    0xFF: ("unknown", 0),
    0x01: ("jni global", -1),  # followed by one more id (the JNI global ref id)
    0x02: ("jni local", 8),
    0x03: ("java frame", 8),
    0x04: ("native stack", 4),
    0x05: ("system class", 0),
    0x06: ("thread block", 4),
    0x07: ("busy monitor", 0),
    0x08: ("thread", 8),
    0x89: ("interned string", 0),
    0x8A: ("finalizing", 0),
    0x8B: ("debugger", 0),
    0x8C: ("reference cleanup", 0),
    0x8D: ("vm internal", 0),
    0x8E: ("jni monitor", 8),
    0x90: ("unreachable", 0),
}
ROOT_KINDS = [kind for kind, _ in ROOT_TAGS.values()]

# hprof basic types: code -> (Java name, size; 0 means the id size).
BASIC_TYPES: dict[int, tuple[str, int]] = {
    2: ("object", 0),
    4: ("boolean", 1),
    5: ("char", 2),
    6: ("float", 4),
    7: ("double", 8),
    8: ("byte", 1),
    9: ("short", 2),
    10: ("int", 4),
    11: ("long", 8),
}
_TYPE_OBJECT = 2
_TYPE_LONG = 11
# Pairs of static fields holding the Unsafe offsets of two adjacent reference fields: their difference
# is the JVM's reference (oop) size, 4 with compressed oops. VisualVM's heap library guesses the same way.
_OOP_PROBES = (
    ("java.lang.Class$Atomic", "annotationDataOffset", "annotationTypeOffset"),
    ("java.util.concurrent.FutureTask", "runnerOffset", "waitersOffset"),
)
_ARRAY_CLASS_BY_TYPE = {4: "[Z", 5: "[C", 6: "[F", 7: "[D", 8: "[B", 9: "[S", 10: "[I", 11: "[J"}
_DESCRIPTORS = {
    "Z": "boolean",
    "C": "char",
    "F": "float",
    "D": "double",
    "B": "byte",
    "S": "short",
    "I": "int",
    "J": "long",
}

# Object kinds in the walk's arrays and node kinds in the graph.
K_INSTANCE, K_OBJ_ARRAY, K_PRIM_ARRAY = 1, 2, 3
NODE_KINDS = [SYNTHETIC_KIND, "instance", "object array", "primitive array", "class"]
_KIND_CLASS = 4

OBJECT_ALIGNMENT = 8
ARRAY_OVERHEAD = 4  # the length word of an array

REFERENCE_KINDS = {
    "java.lang.ref.SoftReference": "soft",
    "java.lang.ref.WeakReference": "weak",
    "java.lang.ref.PhantomReference": "phantom",
    "java.lang.ref.FinalReference": "finalizer",
    "java.lang.ref.FinalizerReference": "finalizer",  # Android's
}
_REFERENCE_CLASS = "java.lang.ref.Reference"

# -- numba kernels --------------------------------------------------------------------------------

# Kernel state (an int64 array): counters, then the first error's code and position.
_ROW_NAMES = (
    "obj_id", "obj_kind", "obj_class", "obj_off", "obj_len", "obj_heap", "obj_rec",
    "root_kind", "root_id", "root_thread", "root_frame", "class_off", "class_len", "heap_type", "heap_name",
)  # fmt: skip
ST_OBJECTS, ST_ROOTS, ST_CLASSES, ST_HEAPS, ST_HEAP, ST_ERROR, ST_ERROR_AT, ST_DANGLING = range(8)
ERRORS = {
    1: "a heap-dump sub-record runs past the end of its record",
    2: "an unknown heap-dump sub-record tag",
    3: "an unknown basic type code (expected 2 or 4-11)",
    4: "an instance's field bytes do not match its class's field descriptors",
    5: "a top-level record runs past the end of the file",
    6: "an array length is negative or too large",
}


@numba.njit(cache=True, nogil=True, inline="always")
def _u4(buf, pos):
    return (
        (np.int64(buf[pos]) << 24)
        | (np.int64(buf[pos + 1]) << 16)
        | (np.int64(buf[pos + 2]) << 8)
        | np.int64(buf[pos + 3])
    )


@numba.njit(cache=True, nogil=True, inline="always")
def _id(buf, pos, id_size):
    value = np.uint64(0)
    for k in range(id_size):
        value = (value << np.uint64(8)) | np.uint64(buf[pos + k])
    return np.int64(value)


@numba.njit(cache=True, nogil=True, inline="always")
def _type_size(code, id_size):
    if code == 2:
        return id_size
    if code == 4 or code == 8:
        return 1
    if code == 5 or code == 9:
        return 2
    if code == 6 or code == 10:
        return 4
    if code == 7 or code == 11:
        return 8
    return -1


@numba.njit(cache=True, nogil=True)
def scan_records(buf, start, fill, tags, offsets, lengths):
    """Walk the top-level records from ``start``; count (``fill`` 0) or store the ones kept.

    Returns ``(count, error_at)``; ``error_at`` is -1, or the offset of a record that runs past the end.
    """
    end = buf.shape[0]
    pos = start
    count = 0
    while pos < end:
        if pos + 9 > end:
            return count, pos
        tag = buf[pos]
        length = _u4(buf, pos + 5)
        body = pos + 9
        if body + length > end:
            return count, pos
        if tag == 0x01 or tag == 0x02 or tag == 0x04 or tag == 0x05 or tag == 0x0C or tag == 0x1C or tag == 0x2C:
            if fill:
                tags[count] = tag
                offsets[count] = body
                lengths[count] = length
            count += 1
        pos = body + length
    return count, -1


@numba.njit(cache=True, nogil=True)
def walk_heap(
    buf, start, end, id_size, fill, st, obj_id, obj_kind, obj_class, obj_off, obj_len, obj_heap, obj_rec,
    root_kind, root_id, root_thread, root_frame, class_off, class_len, heap_type, heap_name, root_codes,
):  # fmt: skip
    """Walk the sub-records of one heap-dump record ``buf[start:end]``, counting or storing rows.

    ``root_thread`` and ``root_frame``: the two u4 after the id of a JNI local, Java frame or thread
    root (thread serial and frame number, or thread serial and stack trace serial), else 0."""
    pos = start
    n_obj = st[ST_OBJECTS]
    n_root = st[ST_ROOTS]
    n_class = st[ST_CLASSES]
    n_heap = st[ST_HEAPS]
    heap = st[ST_HEAP]
    while pos < end:
        rec = pos
        tag = np.int64(buf[pos])
        pos += 1
        code = root_codes[tag]
        if code >= 0:
            extra = 0
            if tag == 0x01:
                extra = id_size
            elif tag == 0x02 or tag == 0x03 or tag == 0x08 or tag == 0x8E:
                extra = 8
            elif tag == 0x04 or tag == 0x06:
                extra = 4
            if pos + id_size + extra > end:
                st[ST_ERROR] = 1
                st[ST_ERROR_AT] = rec
                break
            if fill:
                root_kind[n_root] = code
                root_id[n_root] = _id(buf, pos, id_size)
                if tag == 0x02 or tag == 0x03 or tag == 0x08:
                    root_thread[n_root] = _u4(buf, pos + id_size)
                    root_frame[n_root] = _u4(buf, pos + id_size + 4)
            n_root += 1
            pos += id_size + extra
        elif tag == 0xFE:  # Android HEAP_DUMP_INFO: u4 heap type, id of its name
            if pos + 4 + id_size > end:
                st[ST_ERROR] = 1
                st[ST_ERROR_AT] = rec
                break
            heap = _u4(buf, pos) & 0xFF
            if fill:
                heap_type[n_heap] = heap
                heap_name[n_heap] = _id(buf, pos + 4, id_size)
            n_heap += 1
            pos += 4 + id_size
        elif tag == 0x20:  # CLASS_DUMP
            p = pos + 7 * id_size + 8  # class, stack serial, super, loader, signers, domain, 2 reserved, instance size
            if p + 2 > end:
                st[ST_ERROR] = 1
                st[ST_ERROR_AT] = rec
                break
            bad = False
            entries = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
            p += 2
            for _ in range(entries):  # constant pool: u2 index, u1 type, value
                if p + 3 > end:
                    bad = True
                    break
                size = _type_size(buf[p + 2], id_size)
                if size < 0:
                    st[ST_ERROR] = 3
                    st[ST_ERROR_AT] = p + 2
                    bad = True
                    break
                p += 3 + size
            if not bad:
                for section in range(2):  # statics: id name, u1 type, value; fields: id name, u1 type
                    if p + 2 > end:
                        bad = True
                        break
                    entries = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
                    p += 2
                    for _ in range(entries):
                        if p + id_size + 1 > end:
                            bad = True
                            break
                        size = _type_size(buf[p + id_size], id_size)
                        if size < 0:
                            st[ST_ERROR] = 3
                            st[ST_ERROR_AT] = p + id_size
                            bad = True
                            break
                        p += id_size + 1 + (size if section == 0 else 0)
                    if bad:
                        break
            if bad or p > end:
                if st[ST_ERROR] == 0:
                    st[ST_ERROR] = 1
                    st[ST_ERROR_AT] = rec
                break
            if fill:
                class_off[n_class] = rec
                class_len[n_class] = p - rec
            n_class += 1
            pos = p
        elif tag == 0x21 or tag == 0x22 or tag == 0x23 or tag == 0xC3:
            # instance: id, u4 stack, id class, u4 length; object array: id, u4 stack, u4 length, id
            # class; primitive arrays: id, u4 stack, u4 length, u1 type.
            head = 2 * id_size + 8 if tag == 0x21 or tag == 0x22 else id_size + 9
            if pos + head > end:
                st[ST_ERROR] = 1
                st[ST_ERROR_AT] = rec
                break
            oid = _id(buf, pos, id_size)
            count = _u4(buf, pos + id_size + 4)
            cls = np.int64(0)
            if tag == 0x21:
                cls = _id(buf, pos + id_size + 4, id_size)
                count = _u4(buf, pos + 2 * id_size + 4)
                data = count
                kind = 1
            elif tag == 0x22:
                cls = _id(buf, pos + id_size + 8, id_size)
                data = count * id_size
                kind = 2
            else:
                esize = _type_size(buf[pos + id_size + 8], id_size)
                if esize < 0 or buf[pos + id_size + 8] == 2:
                    st[ST_ERROR] = 3
                    st[ST_ERROR_AT] = pos + id_size + 8
                    break
                cls = np.int64(buf[pos + id_size + 8])  # the element type code
                data = count * esize if tag == 0x23 else 0
                kind = 3
            if pos + head + data > end:
                st[ST_ERROR] = 1
                st[ST_ERROR_AT] = rec
                break
            if fill:
                obj_id[n_obj] = oid
                obj_kind[n_obj] = kind
                obj_class[n_obj] = cls
                obj_off[n_obj] = pos + head
                obj_len[n_obj] = count
                obj_heap[n_obj] = heap
                obj_rec[n_obj] = rec
            n_obj += 1
            pos += head + data
        else:
            st[ST_ERROR] = 2
            st[ST_ERROR_AT] = rec
            break
    st[ST_OBJECTS] = n_obj
    st[ST_ROOTS] = n_root
    st[ST_CLASSES] = n_class
    st[ST_HEAPS] = n_heap
    st[ST_HEAP] = heap


@numba.njit(cache=True, nogil=True, inline="always")
def _probe(keys, slots, bits, key):
    """The node index of ``key`` in an :class:`IdIndex` table (its layout and hash), or -1."""
    mask = (1 << bits) - 1
    j = np.int64((np.uint64(key) * _FIBONACCI) >> np.uint64(64 - bits))
    while True:
        slot = slots[j]
        if slot == -1:
            return -1
        if keys[j] == key:
            return slot
        j = (j + 1) & mask


@numba.njit(cache=True, nogil=True)
def resolve_ids(keys, slots, bits, wanted, out):
    """``out[k]``: the node index of object id ``wanted[k]``, -1 for null or an id no object has."""
    for k in range(wanted.shape[0]):
        out[k] = _probe(keys, slots, bits, wanted[k]) if wanted[k] != 0 else -1


@numba.njit(cache=True, nogil=True)
def object_edges(
    buf, id_size, fill, st, first_node, obj_kind, obj_class_index, obj_off, obj_len, obj_rec,
    lay_start, lay_off, lay_name, lay_weak, field_bytes, keys, slots, bits, first_class, class_label,
    base, edge_to, edge_kind, edge_name, counts,
):  # fmt: skip
    """Every object's references, in node order: ``<class>`` first, then an instance's object fields
    (through its class's layout) or an object array's elements. Counts them (``fill`` false) or
    writes them from ``base`` on, with each object's count in ``counts``.

    Targets are resolved through the id table; null ids have no edge, ids no object has are counted
    in ``st[ST_DANGLING]``. ``lay_weak`` marks a weak ``referent``: its edge is ``EdgeKind.WEAK``.
    """
    m = base
    dangling = 0
    for i in range(obj_kind.shape[0]):
        k = obj_kind[i]
        c = obj_class_index[i]
        first = m
        if c >= 0:
            if fill:
                edge_to[m] = first_class + c
                edge_kind[m] = 3
                edge_name[m] = class_label
            m += 1
        if k == 1 and c >= 0:
            if field_bytes[c] != obj_len[i]:
                st[ST_ERROR] = 4
                st[ST_ERROR_AT] = obj_rec[i]
                return m - base
            at = obj_off[i]
            for f in range(lay_start[c], lay_start[c + 1]):
                target = _id(buf, at + lay_off[f], id_size)
                if target != 0:
                    t = _probe(keys, slots, bits, target)
                    if t < 0:
                        dangling += 1
                    else:
                        if fill:
                            edge_to[m] = t
                            edge_kind[m] = 6 if lay_weak[f] else 2
                            edge_name[m] = lay_name[f]
                        m += 1
        elif k == 2:
            at = obj_off[i]
            for e in range(obj_len[i]):
                target = _id(buf, at + e * id_size, id_size)
                if target != 0:
                    t = _probe(keys, slots, bits, target)
                    if t < 0:
                        dangling += 1
                    else:
                        if fill:
                            edge_to[m] = t
                            edge_kind[m] = 1
                            edge_name[m] = e
                        m += 1
        if fill:
            counts[first_node + i] = m - first
    st[ST_DANGLING] = dangling
    return m - base


@numba.njit(cache=True, nogil=True)
def object_traces(buf, obj_rec, id_size, serials, out):
    """``out[i]``: where object ``i``'s stack trace serial (the u4 after the tag and id of each object
    record) is in the ascending ``serials``, else -1. Returns how many objects name one."""
    found = 0
    k = serials.shape[0]
    for i in range(obj_rec.shape[0]):
        s = _u4(buf, obj_rec[i] + 1 + id_size)
        lo, hi = 0, k
        while lo < hi:
            mid = (lo + hi) >> 1
            if serials[mid] < s:
                lo = mid + 1
            else:
                hi = mid
        if lo < k and serials[lo] == s:
            out[i] = lo
            found += 1
        else:
            out[i] = -1
    return found


# -- the reader -----------------------------------------------------------------------------------


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
    # A plain ndarray view of the mapping (numba takes no memmap subclass); it keeps the mapping alive.
    buf = np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))
    try:
        return _Reader(
            path, buf, id_size, at + 12, version.decode()[len("JAVA PROFILE ") :], timestamp, on_bytes
        ).read()
    finally:
        del buf


class _Reader:
    def __init__(
        self,
        path: str | os.PathLike[str],
        buf: np.ndarray,
        id_size: int,
        start: int,
        version: str,
        timestamp: int,
        on_bytes: ByteProgress | None,
    ) -> None:
        self.path = path
        self.buf = buf
        self.id_size = id_size
        self.start = start
        self.version = version
        self.timestamp = timestamp
        self._on_bytes = on_bytes
        self.reported = 0
        self.strings = StringTable()
        self.dangling = 0

    def _error(self, problem: str, offset: int) -> FormatError:
        return FormatError(self.path, problem, offset=int(offset))

    def read(self) -> HeapGraph:
        buf, id_size = self.buf, self.id_size
        empty = np.zeros(0, dtype=np.int64)
        count, bad = scan_records(buf, self.start, False, np.zeros(0, np.uint8), empty, empty)
        if bad >= 0:
            raise self._error("a record runs past the end of the file (expected tag, time, length and body)", bad)
        tags = np.zeros(count, dtype=np.uint8)
        offsets = np.zeros(count, dtype=np.int64)
        lengths = np.zeros(count, dtype=np.int64)
        scan_records(buf, self.start, True, tags, offsets, lengths)
        self._progress(self.start)

        # Strings: sorted ids -> (offset, length) for binary search; names decoded only when needed.
        is_string = tags == TAG_STRING
        short = is_string & (lengths < id_size)
        if short.any():
            raise self._error(f"a STRING record shorter than its {id_size}-byte id", offsets[short][0] - 9)
        s_off, s_len = offsets[is_string], lengths[is_string]
        s_ids = self._ids_at(s_off)
        order = np.argsort(s_ids, kind="stable")
        self.s_ids, self.s_off, self.s_len = s_ids[order], s_off[order], s_len[order]

        # LOAD_CLASS: class object id -> name string id.
        is_load = tags == TAG_LOAD_CLASS
        bad_load = is_load & (lengths != 8 + 2 * id_size)
        if bad_load.any():
            raise self._error(f"a LOAD_CLASS record must be {8 + 2 * id_size} bytes long", offsets[bad_load][0] - 9)
        l_off = offsets[is_load]
        self.load_class = dict(
            zip(self._ids_at(l_off + 4).tolist(), self._ids_at(l_off + 8 + id_size).tolist(), strict=True)
        )
        self.class_by_serial = dict(zip(self._u4s_at(l_off).tolist(), self._ids_at(l_off + 4).tolist(), strict=True))
        self._stack_records(tags, offsets, lengths)

        heaps = (tags == TAG_HEAP_DUMP) | (tags == TAG_HEAP_DUMP_SEGMENT)
        h_off, h_len = offsets[heaps], lengths[heaps]
        if not len(h_off):
            raise self._error("no HEAP_DUMP or HEAP_DUMP_SEGMENT record: the file holds no heap", self.start)
        segments = np.flatnonzero(tags == TAG_HEAP_DUMP_SEGMENT)
        if len(segments) and not (tags[segments[-1] :] == TAG_HEAP_DUMP_END).any():
            # HotSpot and Android close a segmented dump with HEAP_DUMP_END: without it the file was cut.
            raise self._error(
                "the segmented heap dump has no HEAP_DUMP_END after its last segment: the file is truncated",
                len(self.buf),
            )
        rows = self._walk(h_off, h_len)
        graph = self._assemble(rows)
        self._progress(len(self.buf) - self.reported)  # the records read only in part, or skipped
        return graph

    def _progress(self, n: int) -> None:
        self.reported += n
        if self._on_bytes is not None and n:
            self._on_bytes(n)

    def _ids_at(self, positions: np.ndarray) -> np.ndarray:
        out = np.zeros(len(positions), dtype=np.uint64)
        for k in range(self.id_size):
            out = (out << np.uint64(8)) | self.buf[positions + k].astype(np.uint64)
        return out.view(np.int64)

    def _u4s_at(self, positions: np.ndarray) -> np.ndarray:
        out = np.zeros(len(positions), dtype=np.int64)
        for k in range(4):
            out = (out << 8) | self.buf[positions + k].astype(np.int64)
        return out

    # -- stack frames and traces --------------------------------------------------------------

    def _stack_records(self, tags: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> None:
        """Decode every ``STACK_FRAME`` and ``STACK_TRACE`` into flat arrays (numpy, no object per
        record): frames sorted by id, traces sorted by serial (a serial written twice: the first),
        the traces' frame ids end to end."""
        id_size = self.id_size
        is_frame = tags == TAG_STACK_FRAME
        bad = is_frame & (lengths != 4 * id_size + 8)
        if bad.any():
            raise self._error(f"a STACK_FRAME record must be {4 * id_size + 8} bytes long", offsets[bad][0] - 9)
        f_off = offsets[is_frame]
        f_ids = self._ids_at(f_off)
        order = np.argsort(f_ids, kind="stable")
        self.frame_ids = f_ids[order]
        f_off = f_off[order]
        self.frame_method = self._ids_at(f_off + id_size)
        self.frame_source = self._ids_at(f_off + 3 * id_size)
        self.frame_class = self._u4s_at(f_off + 4 * id_size)
        self.frame_line = self._u4s_at(f_off + 4 * id_size + 4).astype(np.uint32).view(np.int32)

        is_trace = tags == TAG_STACK_TRACE
        short = is_trace & (lengths < 12)
        if short.any():
            raise self._error("a STACK_TRACE record shorter than its 12-byte head", offsets[short][0] - 9)
        t_off, t_len = offsets[is_trace], lengths[is_trace]
        count = self._u4s_at(t_off + 8)
        wrong = t_len != 12 + count * id_size
        if wrong.any():
            raise self._error(
                f"a STACK_TRACE record's length does not match its frame count ({id_size}-byte frame ids)",
                t_off[wrong][0] - 9,
            )
        serial = self._u4s_at(t_off)
        self.trace_serials, first = np.unique(serial, return_index=True)  # sorted; a repeated serial: its first
        self.trace_thread = self._u4s_at(t_off + 4)[first]
        self.trace_count = count[first]
        self.trace_start = np.zeros(len(first), dtype=np.int64)
        if len(first):
            np.cumsum(self.trace_count[:-1], out=self.trace_start[1:])
        total = int(self.trace_count.sum())
        within = np.arange(total, dtype=np.int64) - np.repeat(self.trace_start, self.trace_count)
        self.trace_frames = self._ids_at(np.repeat(t_off[first] + 12, self.trace_count) + within * id_size)

    def _frame_index(self, frame_ids: np.ndarray) -> np.ndarray:
        """Indexes of frame ids into the sorted frame arrays, -1 where no STACK_FRAME has that id."""
        return _lookup(self.frame_ids, frame_ids)

    def _frame_function(self, f: int) -> str:
        """Frame ``f``'s method as Java names it, ``com.example.Cache.put`` (its class when known)."""
        method = self._string(int(self.frame_method[f])) or "(unknown method)"
        class_id = self.class_by_serial.get(int(self.frame_class[f]))
        if class_id is None or class_id not in self.load_class:
            return method
        return f"{self._class_name(class_id)}.{method}"

    def _source_strings(self, frames: np.ndarray) -> np.ndarray:
        """The source file of each frame (indexes, -1: none) as an index into the graph's strings, -1
        when the frame, its source id or its string is unknown or the name is empty."""
        out = np.full(len(frames), -1, dtype=np.int64)
        known = frames >= 0
        source_ids = self.frame_source[frames[known]]
        unique, inverse = np.unique(source_ids, return_inverse=True)
        texts = [self._string(int(sid)) for sid in unique.tolist()]
        interned = np.asarray([self.strings.intern(t) if t else -1 for t in texts], dtype=np.int64)
        out[known] = interned[inverse.reshape(-1)]
        return out

    def _frame_locations(self, rows: dict[str, np.ndarray], rooted: np.ndarray) -> SourceLocations | None:
        """The locations of objects held by Java frame and JNI local roots (see the module docstring)."""
        kinds = rows["root_kind"]
        codes = {kind: i for i, kind in enumerate(ROOT_KINDS)}
        thread_roots = kinds == codes["thread"]
        # Thread serial -> its stack trace: the thread object's root first, else the one trace naming the
        # thread (a thread several traces name, say Android's allocation sites, has no stack here).
        named, once = np.unique(self.trace_thread, return_counts=True)
        alone = np.isin(self.trace_thread, named[once == 1]) & (self.trace_thread != 0)
        t_serial = np.concatenate([rows["root_thread"][thread_roots], self.trace_thread[alone]])
        t_trace = np.concatenate([rows["root_frame"][thread_roots], self.trace_serials[alone]])
        t_serial, first = np.unique(t_serial, return_index=True)
        t_trace = t_trace[first]

        held = ((kinds == codes["java frame"]) | (kinds == codes["jni local"])) & (rooted >= 0)
        which = np.flatnonzero(held)
        if not len(which) or not len(self.trace_serials):
            return None
        thread = rows["root_thread"][which]
        depth = rows["root_frame"][which]
        trace = _lookup(self.trace_serials, _pick(t_trace, _lookup(t_serial, thread), -1))
        ok = (trace >= 0) & (depth < _pick(self.trace_count, trace, 0))  # a frame number -1 is 0xFFFFFFFF here
        frame_id = self.trace_frames[self.trace_start[trace[ok]] + depth[ok]]
        frame = self._frame_index(frame_id)
        script = self._source_strings(frame)
        good = script >= 0
        which, thread, depth = which[ok][good], thread[ok][good], depth[ok][good]
        frame, script = frame[good], script[good]
        if not len(which):
            return None
        node = rooted[which].astype(np.int64)
        # Per object: the thread of its first root in file order, then that thread's innermost frame.
        by_root = np.lexsort((which, node))
        starts = np.ones(len(by_root), dtype=bool)
        starts[1:] = node[by_root][1:] != node[by_root][:-1]
        first_thread = np.repeat(thread[by_root][starts], np.diff(np.flatnonzero(np.append(starts, True))))
        same = np.zeros(len(node), dtype=bool)
        same[by_root] = thread[by_root] == first_thread
        keep = np.flatnonzero(same)
        by_depth = keep[np.lexsort((depth[keep], node[keep]))]
        starts = np.ones(len(by_depth), dtype=bool)
        starts[1:] = node[by_depth][1:] != node[by_depth][:-1]
        chosen = by_depth[starts]
        line = self.frame_line[frame[chosen]]
        return SourceLocations(
            node=node[chosen].astype(np.int32),
            script_id=np.full(len(chosen), -1, dtype=np.int32),
            script=script[chosen].astype(np.int32),
            line=np.where(line > 0, line - 1, -1).astype(np.int32),
            column=np.full(len(chosen), -1, dtype=np.int32),
        )

    def _allocation_traces(self, rows: dict[str, np.ndarray], n: int, first_obj: int) -> AllocationTraces | None:
        """Allocation stacks of the instances and arrays whose stack trace serial names a trace with
        frames (see the module docstring), as a call tree: one chain of nodes per trace used, under a
        synthetic top node 0."""
        if not len(self.trace_serials) or not (self.trace_count > 0).any() or not len(rows["obj_rec"]):
            return None
        with_frames = np.flatnonzero(self.trace_count > 0)
        out = np.full(n, -1, dtype=np.int32)
        part = out[first_obj:]  # a view: the kernel writes each object's trace (index into with_frames)
        if not object_traces(self.buf, rows["obj_rec"], self.id_size, self.trace_serials[with_frames], part):
            return None  # HotSpot: every object names the dummy trace
        hit = part >= 0
        named = part[hit]
        used = np.flatnonzero(np.bincount(named, minlength=len(with_frames)))
        counts = self.trace_count[with_frames[used]]
        tree_start = np.ones(len(used), dtype=np.int64)  # node 0 is the top
        np.cumsum(counts[:-1], out=tree_start[1:])
        tree_start[1:] += 1
        t = 1 + int(counts.sum())
        within = np.arange(t - 1, dtype=np.int64) - np.repeat(tree_start - 1, counts)
        frame = self._frame_index(self.trace_frames[np.repeat(self.trace_start[with_frames[used]], counts) + within])
        # Functions: 0 is "(unknown frame)" (also the top node's), then each frame used, once.
        real = np.unique(frame[frame >= 0])
        intern = self.strings.intern
        names = [intern("(unknown frame)")] + [intern(self._frame_function(int(f))) for f in real.tolist()]
        scripts = np.concatenate([[intern("")], self._source_strings(real)])
        scripts[scripts < 0] = intern("")
        lines = np.concatenate([[-1], self.frame_line[real].astype(np.int64)])
        nodes = np.arange(1, t, dtype=np.int64)
        outermost = np.repeat(tree_start + counts - 1, counts)  # each chain hangs off the top node
        parent = np.concatenate([[-1], np.where(nodes == outermost, 0, nodes + 1)]).astype(np.int32)
        function = np.zeros(t, dtype=np.int32)
        function[1:] = np.where(frame < 0, 0, 1 + np.searchsorted(real, frame))
        chain = np.full(len(with_frames), -1, dtype=np.int64)
        chain[used] = tree_start
        part[hit] = chain[named]
        f = len(names)
        return AllocationTraces(
            trace=out,
            parent=parent,
            function=function,
            function_name=np.asarray(names, dtype=np.int32),
            function_script=scripts.astype(np.int32),
            function_script_id=np.full(f, -1, dtype=np.int32),
            function_line=np.where(lines > 0, lines - 1, -1).astype(np.int32),
            function_column=np.full(f, -1, dtype=np.int32),
        )

    def _string(self, string_id: int) -> str | None:
        i = int(np.searchsorted(self.s_ids, string_id))
        if i >= len(self.s_ids) or self.s_ids[i] != string_id:
            return None
        lo = int(self.s_off[i]) + self.id_size
        hi = int(self.s_off[i] + self.s_len[i])
        return bytes(self.buf[lo:hi]).decode("utf-8", errors="replace")

    def _walk(self, h_off: np.ndarray, h_len: np.ndarray) -> dict[str, np.ndarray]:
        codes = np.full(256, -1, dtype=np.int64)
        for i, tag in enumerate(ROOT_TAGS):
            codes[tag] = i
        st = np.zeros(8, dtype=np.int64)
        z64, z8 = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
        empty = {name: z8 if name in ("root_kind", "obj_kind", "obj_heap") else z64 for name in _ROW_NAMES}
        for off, length in zip(h_off.tolist(), h_len.tolist(), strict=True):
            self._walk_one(off, length, False, st, empty, codes)
            self._check(st)
        n_obj, n_root, n_class, n_heap = (int(st[k]) for k in (ST_OBJECTS, ST_ROOTS, ST_CLASSES, ST_HEAPS))
        rows: dict[str, np.ndarray] = {
            "obj_id": np.zeros(n_obj, np.int64),
            "obj_kind": np.zeros(n_obj, np.uint8),
            "obj_class": np.zeros(n_obj, np.int64),
            "obj_off": np.zeros(n_obj, np.int64),
            "obj_len": np.zeros(n_obj, np.int64),
            "obj_heap": np.zeros(n_obj, np.uint8),
            "obj_rec": np.zeros(n_obj, np.int64),
            "root_kind": np.zeros(n_root, np.uint8),
            "root_id": np.zeros(n_root, np.int64),
            "root_thread": np.zeros(n_root, np.int64),
            "root_frame": np.zeros(n_root, np.int64),
            "class_off": np.zeros(n_class, np.int64),
            "class_len": np.zeros(n_class, np.int64),
            "heap_type": np.zeros(n_heap, np.int64),
            "heap_name": np.zeros(n_heap, np.int64),
        }
        st[:] = 0
        for off, length in zip(h_off.tolist(), h_len.tolist(), strict=True):
            self._walk_one(off, length, True, st, rows, codes)
            self._progress(length + 9)
        return rows

    def _walk_one(
        self, off: int, length: int, fill: bool, st: np.ndarray, r: dict[str, np.ndarray], codes: np.ndarray
    ) -> None:
        walk_heap(
            self.buf, off, off + length, self.id_size, fill, st,
            r["obj_id"], r["obj_kind"], r["obj_class"], r["obj_off"], r["obj_len"], r["obj_heap"], r["obj_rec"],
            r["root_kind"], r["root_id"], r["root_thread"], r["root_frame"], r["class_off"], r["class_len"],
            r["heap_type"], r["heap_name"], codes,
        )  # fmt: skip

    def _check(self, st: np.ndarray) -> None:
        if st[ST_ERROR]:
            code, at = int(st[ST_ERROR]), int(st[ST_ERROR_AT])
            problem = ERRORS.get(code, "malformed heap dump")
            if code == 2:
                problem += f" (0x{int(self.buf[at]):02x})"
            raise self._error(problem, at)

    # -- classes ------------------------------------------------------------------------------

    def _class_name(self, class_id: int) -> str:
        name_id = self.load_class.get(class_id)
        text = self._string(name_id) if name_id is not None else None
        return java_name(text) if text is not None else f"(class 0x{class_id:x})"

    def _parse_classes(self, rows: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        """Each CLASS_DUMP as a dict (the walk has checked its structure)."""
        b, ids = self.id_size, self.id_size
        classes = []
        for off, length in zip(rows["class_off"].tolist(), rows["class_len"].tolist(), strict=True):
            raw = bytes(self.buf[off : off + length])
            cid = _signed(raw[1 : 1 + ids])
            p = 5 + ids
            sup, loader, signers, domain = (_signed(raw[p + k * ids : p + (k + 1) * ids]) for k in range(4))
            p += 6 * ids + 4
            refs: list[tuple[str, int, EdgeKind]] = [
                ("<super>", sup, EdgeKind.INTERNAL),
                ("<classloader>", loader, EdgeKind.INTERNAL),
                ("<signers>", signers, EdgeKind.INTERNAL),
                ("<protection domain>", domain, EdgeKind.INTERNAL),
            ]
            static_bytes = 0
            longs: dict[str, int] = {}  # static long values: _oop_size reads two classes' field offsets
            p += 2
            for _ in range(int.from_bytes(raw[p - 2 : p], "big")):
                t = raw[p + 2]
                size = BASIC_TYPES[t][1] or b
                if t == _TYPE_OBJECT:
                    refs.append(("<constant pool>", _signed(raw[p + 3 : p + 3 + size]), EdgeKind.INTERNAL))
                p += 3 + size
            p += 2
            for _ in range(int.from_bytes(raw[p - 2 : p], "big")):
                name_id = _signed(raw[p : p + ids])
                t = raw[p + ids]
                size = BASIC_TYPES[t][1] or b
                if t == _TYPE_OBJECT:
                    value = _signed(raw[p + ids + 1 : p + ids + 1 + size])
                    refs.append((self._string(name_id) or f"(field 0x{name_id:x})", value, EdgeKind.PROPERTY))
                elif t == _TYPE_LONG:
                    longs[self._string(name_id) or ""] = _signed(raw[p + ids + 1 : p + ids + 9])
                static_bytes += size
                p += ids + 1 + size
            fields = []
            p += 2
            for _ in range(int.from_bytes(raw[p - 2 : p], "big")):
                name_id = _signed(raw[p : p + ids])
                fields.append((self._string(name_id) or f"(field 0x{name_id:x})", raw[p + ids]))
                p += ids + 1
            classes.append(
                {
                    "id": cid,
                    "super": sup,
                    "refs": refs,
                    "fields": fields,
                    "static_bytes": static_bytes,
                    "longs": longs,
                    "offset": off,
                }
            )
        return classes

    def _hierarchy(self, classes: list[dict[str, Any]]) -> None:
        """Each class's field bytes (own and inherited) and reference kind, memoized along the
        super-class chains: linear in the classes, whatever their depth. A cycle of super classes is
        an error."""
        by_id = {c["id"]: i for i, c in enumerate(classes)}
        self.names = [self._class_name(c["id"]) for c in classes]
        self.parent = [by_id.get(c["super"], -1) if c["super"] else -1 for c in classes]
        own_bytes = [sum(BASIC_TYPES[t][1] or self.id_size for _, t in c["fields"]) for c in classes]
        own_refs = [sum(t == _TYPE_OBJECT for _, t in c["fields"]) for c in classes]
        field_bytes = np.full(len(classes), -1, dtype=np.int64)
        ref_fields = np.zeros(len(classes), dtype=np.int64)
        self.reference_kind: list[str | None] = [None] * len(classes)
        for i in range(len(classes)):
            chain = []
            j = i
            while j >= 0 and field_bytes[j] == -1:
                field_bytes[j] = -2  # on the current chain
                chain.append(j)
                j = self.parent[j]
            if j >= 0 and field_bytes[j] == -2:
                raise self._error(
                    f"the super classes of class 0x{classes[j]['id'] & (2**64 - 1):x} form a cycle",
                    int(classes[j]["offset"]),
                )
            done = j >= 0
            base = int(field_bytes[j]) if done else 0
            refs = int(ref_fields[j]) if done else 0
            kind = self.reference_kind[j] if done else None
            for k in reversed(chain):
                base += own_bytes[k]
                field_bytes[k] = base
                refs += own_refs[k]
                ref_fields[k] = refs
                kind = REFERENCE_KINDS.get(self.names[k], kind)
                self.reference_kind[k] = kind
        self.field_bytes_ = field_bytes
        self.ref_fields = ref_fields  # object fields over the hierarchy: they shrink with compressed oops

    def _field_bytes(self, classes: list[dict[str, Any]]) -> np.ndarray:
        self._hierarchy(classes)
        return self.field_bytes_

    def _layouts(self, classes: list[dict[str, Any]], used: np.ndarray) -> tuple[np.ndarray, ...]:
        """The field layouts of the classes ``used`` (indexes): their instances' object fields over
        the hierarchy (byte offset, name, weak). Built only for classes with an instance of the
        right length, so their total is bounded by the file size."""
        names, parent, reference_kind = self.names, self.parent, self.reference_kind
        start = np.zeros(len(classes) + 1, dtype=np.int64)
        lay_off: list[int] = []
        lay_name: list[int] = []
        lay_weak: list[int] = []
        intern = self.strings.intern
        used_set = set(used.tolist())
        for i in range(len(classes)):
            if i in used_set:
                off = 0
                j = i
                while j >= 0:  # no cycles: _hierarchy refused them
                    is_reference = names[j] == _REFERENCE_CLASS
                    for field_name, t in classes[j]["fields"]:
                        if t == _TYPE_OBJECT:
                            weak = is_reference and field_name == "referent"
                            lay_off.append(off)
                            label = f"referent ({reference_kind[i] or 'reference'})" if weak else field_name
                            lay_name.append(intern(label))
                            lay_weak.append(1 if weak else 0)
                        off += BASIC_TYPES[t][1] or self.id_size
                    j = parent[j]
            start[i + 1] = len(lay_off)
        return (
            start,
            np.asarray(lay_off, dtype=np.int64),
            np.asarray(lay_name, dtype=np.int64),
            np.asarray(lay_weak, dtype=np.uint8),
        )

    def _oop_size(self, classes: list[dict[str, Any]], class_names: list[str]) -> int:
        """The JVM's reference size: the id size, unless a 64-bit dump's probe classes show 4-byte
        compressed oops (see ``_OOP_PROBES``)."""
        if self.id_size == 4:
            return 4
        by_name = dict(zip(class_names, classes, strict=True))
        for name, first, second in _OOP_PROBES:
            longs = by_name[name]["longs"] if name in by_name else {}
            if first in longs and second in longs and longs[second] - longs[first] in (4, 8):
                return int(longs[second] - longs[first])
        return self.id_size

    # -- the graph ----------------------------------------------------------------------------

    def _assemble(self, rows: dict[str, np.ndarray]) -> HeapGraph:
        id_size = self.id_size
        intern = self.strings.intern
        classes = self._parse_classes(rows)
        class_ids = np.asarray([c["id"] for c in classes], dtype=np.int64)
        class_names = [self._class_name(c["id"]) for c in classes]

        root_kinds_used = sorted(set(rows["root_kind"].tolist()))
        kind_node = {k: 1 + i for i, k in enumerate(root_kinds_used)}
        first_class = 1 + len(root_kinds_used)
        first_obj = first_class + len(classes)
        n_obj = len(rows["obj_id"])
        n = first_obj + n_obj

        ids = np.zeros(n, dtype=np.int64)
        ids[:first_class] = np.arange(1, first_class + 1)
        ids[first_class:first_obj] = class_ids
        ids[first_obj:] = rows["obj_id"]
        index = IdIndex(ids)
        duplicate = index.duplicate()
        if duplicate is not None:
            later = duplicate[1]
            if later >= first_obj:
                at = int(rows["obj_rec"][later - first_obj])
            elif later >= first_class:
                at = int(classes[later - first_class]["offset"])
            else:
                at = self.start
            raise self._error(f"object id 0x{int(ids[later]) & (2**64 - 1):x} is written twice", at)

        def resolve(targets: np.ndarray) -> np.ndarray:
            """Node indexes of ``targets`` (-1 for null or where no object has that id)."""
            found = np.zeros(len(targets), dtype=np.int32)
            resolve_ids(index.keys, index.slots, index.bits, targets.astype(np.int64, copy=False), found)
            return found

        # Objects' classes.
        obj_kind = rows["obj_kind"]
        obj_class = rows["obj_class"]
        class_order = np.argsort(class_ids)
        sorted_class_ids = class_ids[class_order]

        def class_index(targets: np.ndarray) -> np.ndarray:
            if not len(sorted_class_ids):
                return np.full(len(targets), -1, dtype=np.int64)
            pos = np.searchsorted(sorted_class_ids, targets)
            pos[pos >= len(sorted_class_ids)] = 0
            return np.where(sorted_class_ids[pos] == targets, class_order[pos], -1).astype(np.int64)

        # Primitive arrays: obj_class holds the element type code; their class is the array class by name.
        array_class = {name: i for i, name in enumerate(class_names)}
        prim_class = np.full(256, -1, dtype=np.int64)
        prim_type_name = {}
        for code, descriptor in _ARRAY_CLASS_BY_TYPE.items():
            tname = java_name(descriptor)
            prim_class[code] = array_class.get(tname, -1)
            prim_type_name[code] = intern(tname)
        is_prim = obj_kind == K_PRIM_ARRAY
        cls_index = class_index(obj_class)
        cls_index[is_prim] = prim_class[obj_class[is_prim] & 0xFF]
        instances = (obj_kind == K_INSTANCE) & (cls_index >= 0)
        field_bytes = self._field_bytes(classes)
        # Layouts only for classes with an instance of the right length (a wrong one is an error below).
        fits = instances.copy()
        fits[instances] = field_bytes[cls_index[instances]] == rows["obj_len"][instances]
        lay_start, lay_off, lay_name, lay_weak = self._layouts(classes, np.unique(cls_index[fits]))

        # Types, names, sizes.
        node_kind = np.zeros(n, dtype=np.uint8)
        node_kind[first_class:first_obj] = _KIND_CLASS
        node_kind[first_obj:] = obj_kind
        type_ = np.zeros(n, dtype=np.int32)
        name = np.zeros(n, dtype=np.int32)
        synthetic = intern(SYNTHETIC_KIND)
        type_[:first_class] = synthetic
        name[0] = intern(ROOT_NAME)
        for k, node in kind_node.items():
            name[node] = intern(root_kind_node_name(ROOT_KINDS[k]))
        class_type = np.asarray([intern(t) for t in class_names] + [intern("(unknown class)")], dtype=np.int32)
        type_[first_class:first_obj] = intern("java.lang.Class")
        name[first_class:first_obj] = class_type[:-1]
        obj_type = class_type[cls_index]  # -1 picks "(unknown class)"
        for code, string in prim_type_name.items():
            obj_type[is_prim & (obj_class == code)] = string
        type_[first_obj:] = obj_type

        oop = self._oop_size(classes, class_names)
        header = id_size + oop  # the mark word, then the class pointer (an oop: compressed or not)
        esize = np.zeros(256, dtype=np.int64)
        for code, (_, size) in BASIC_TYPES.items():
            esize[code] = size or oop
        # The dump writes every reference with the id size; the JVM's own are oop-sized.
        shrink = np.where(instances, self.ref_fields[cls_index] * (id_size - oop), 0)
        raw = np.where(
            obj_kind == K_INSTANCE,
            header + rows["obj_len"] - shrink,
            header + ARRAY_OVERHEAD + rows["obj_len"] * np.where(is_prim, esize[obj_class & 0xFF], oop),
        )
        self_size = np.zeros(n, dtype=np.int64)
        self_size[first_obj:] = _align(raw)
        static_refs = [sum(kind == EdgeKind.PROPERTY for _, _, kind in c["refs"]) for c in classes]
        self_size[first_class:first_obj] = _align(
            header
            + np.asarray([c["static_bytes"] for c in classes], dtype=np.int64)
            - np.asarray(static_refs, dtype=np.int64) * (id_size - oop)
        )

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
        z32 = np.zeros(0, dtype=np.int32)
        args = (
            self.buf, id_size, False, st, first_obj, obj_kind, cls_index, rows["obj_off"], rows["obj_len"],
            rows["obj_rec"], lay_start, lay_off, lay_name, lay_weak, field_bytes, index.keys, index.slots,
            index.bits, first_class, intern("<class>"), extras,
        )  # fmt: skip
        m = extras + int(object_edges(*args, z32, np.zeros(0, np.uint8), np.zeros(0, np.uint32), np.zeros(0, np.int64)))
        self._check(st)
        edge_to = np.zeros(m, dtype=np.int32)
        edge_kind = np.zeros(m, dtype=np.uint8)
        edge_name = np.zeros(m, dtype=np.uint32)
        edge_to[:extras] = e_dst[keep][e_order]
        edge_kind[:extras] = e_kind[keep][e_order]
        edge_name[:extras] = e_name[keep][e_order]
        counts = np.bincount(e_src, minlength=n).astype(np.int64)
        object_edges(*args[:2], True, *args[3:], edge_to, edge_kind, edge_name, counts)
        self.dangling += int(st[ST_DANGLING])
        edge_start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=edge_start[1:])
        del counts

        meta: dict[str, Any] = {
            "format": NAME,
            "format_version": self.version,
            "id_size": id_size,
            "oop_size": oop,
            "timestamp_ms": self.timestamp,
            "dangling_references": self.dangling,
            "unknown_class_instances": int(((cls_index < 0) & (obj_kind == K_INSTANCE)).sum()),
        }
        if len(rows["heap_type"]):
            heap = np.zeros(n, dtype=np.uint8)
            heap[first_obj:] = rows["obj_heap"]
            heap_names = {}
            for t, name_id in zip(rows["heap_type"].tolist(), rows["heap_name"].tolist(), strict=True):
                heap_names[int(t)] = self._string(int(name_id)) or f"heap {t}"
            meta["heap"] = heap
            meta["heap_names"] = heap_names
        locations = self._frame_locations(rows, rooted)
        allocations = self._allocation_traces(rows, n, first_obj)
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
            strings=safe_strings(self.strings.strings),
            node_kinds=list(NODE_KINDS),
            root=0,
            meta=meta,
            locations=locations,
            allocations=allocations,
        )
        try:
            graph.validate()
        except ValueError as e:
            raise self._error(f"inconsistent dump: {e}", self.start) from None
        return graph


def _lookup(sorted_keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Indexes of ``wanted`` in ``sorted_keys``, -1 where absent."""
    if not len(sorted_keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    pos = np.searchsorted(sorted_keys, wanted)
    pos[pos >= len(sorted_keys)] = 0
    return np.where(sorted_keys[pos] == wanted, pos, -1).astype(np.int64)


def _pick(values: np.ndarray, index: np.ndarray, missing: int) -> np.ndarray:
    """``values[index]``, ``missing`` where ``index`` is -1."""
    if not len(values):
        return np.full(len(index), missing, dtype=np.int64)
    return np.where(index >= 0, values[np.maximum(index, 0)], missing).astype(np.int64)


def _signed(raw: bytes) -> int:
    """A big-endian id as the int64 the arrays hold."""
    return int.from_bytes(raw, "big", signed=len(raw) == 8)


def _align(size: np.ndarray) -> np.ndarray:
    return (size + (OBJECT_ALIGNMENT - 1)) // OBJECT_ALIGNMENT * OBJECT_ALIGNMENT


def java_name(name: str) -> str:
    """A class name as Java source writes it: ``java/util/HashMap$Node`` -> ``java.util.HashMap$Node``,
    ``[Ljava/lang/Object;`` -> ``java.lang.Object[]``, ``[[I`` -> ``int[][]``."""
    dims = len(name) - len(name.lstrip("["))
    base = name[dims:]
    if dims:
        base = base[1:-1] if base.startswith("L") and base.endswith(";") else _DESCRIPTORS.get(base, base)
    return base.replace("/", ".") + "[]" * dims
