"""The hprof reader's numba kernels: walking the top-level records and the heap-dump sub-records into
flat arrays (count, then fill), resolving object ids through snap.bin's id table, writing every
object's references straight into the graph's CSR arrays, and finding each object's stack trace.

The reader (:mod:`heapdb.loader.formats.hprof`) drives them and turns the error codes they record
(:data:`~heapdb.loader.formats.hprof.layout.ERRORS`) into messages.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from heapdb.loader.formats.hprof.layout import (
    NODATA,
    OBJECT_ROWS,
    OTHER_ROWS,
    ROOT_TAGS,
    ST_CLASSES,
    ST_DANGLING,
    ST_ERROR,
    ST_ERROR_AT,
    ST_HEAP,
    ST_HEAPS,
    ST_OBJECTS,
    ST_ROOTS,
)
from heapdb.loader.formats.snapbin.ids import _FIBONACCI


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
    buf, start, end, id_size, fill, st, obj_id, obj_kind, obj_class, obj_elem, obj_off, obj_len, obj_heap,
    root_kind, root_id, root_thread, root_frame, class_off, class_len, heap_type, heap_name, root_codes, root_seen,
):  # fmt: skip
    """Walk the sub-records of one heap-dump record ``buf[start:end]``, counting or storing rows.

    ``root_thread`` and ``root_frame``: the two u4 after the id of a JNI local, Java frame or thread
    root (thread serial and frame number, or thread serial and stack trace serial), else 0.
    ``root_seen[code]``: set when a root of that kind is walked (counting too). The object rows are
    the graph's own columns where they can be (ids, kinds); ``obj_class`` holds the class id of an
    instance or object array, ``obj_elem`` a primitive array's element type (``| 0x80`` for an
    Android array without data); ``obj_heap`` is empty when the dump names no heaps."""
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
            root_seen[code] = 1
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
            elem = 0
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
                elem = buf[pos + id_size + 8] | (0 if tag == 0x23 else NODATA)
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
                obj_elem[n_obj] = elem
                obj_off[n_obj] = pos + head
                obj_len[n_obj] = count
                if obj_heap.shape[0]:
                    obj_heap[n_obj] = heap
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


@numba.njit(cache=True, nogil=True)
def walk_heaps(
    buf, starts, lengths, id_size, fill, st, obj_id, obj_kind, obj_class, obj_elem, obj_off, obj_len, obj_heap,
    root_kind, root_id, root_thread, root_frame, class_off, class_len, heap_type, heap_name, root_codes, root_seen,
):  # fmt: skip
    """:func:`walk_heap` over several heap-dump records in turn, up to the first error: a dump of a
    million tiny segments costs what their bytes do, not a call from Python each."""
    for k in range(starts.shape[0]):
        walk_heap(
            buf, starts[k], starts[k] + lengths[k], id_size, fill, st, obj_id, obj_kind, obj_class, obj_elem,
            obj_off, obj_len, obj_heap, root_kind, root_id, root_thread, root_frame, class_off, class_len,
            heap_type, heap_name, root_codes, root_seen,
        )  # fmt: skip
        if st[ST_ERROR]:
            return


@numba.njit(cache=True, nogil=True, inline="always")
def _probe(ids, slots, bits, key):
    """The node index of ``key`` in a table of ``ids``' node indexes (:func:`index_ids`, or the
    ``slots`` of an :class:`IdIndex` of ``ids``: the same layout and hash), or -1."""
    mask = (1 << bits) - 1
    j = np.int64((np.uint64(key) * _FIBONACCI) >> np.uint64(64 - bits))
    while True:
        slot = slots[j]
        if slot == -1:
            return -1
        if ids[slot] == key:
            return slot
        j = (j + 1) & mask


@numba.njit(cache=True, nogil=True)
def resolve_ids(ids, slots, bits, wanted, out):
    """``out[k]``: the node index of object id ``wanted[k]``, -1 for null or an id no object has."""
    for k in range(wanted.shape[0]):
        out[k] = _probe(ids, slots, bits, wanted[k]) if wanted[k] != 0 else -1


@numba.njit(cache=True, nogil=True)
def index_ids(ids, slots, bits):
    """Fill ``slots`` (int32[2**bits], all -1) with the node index of every id, hashed as
    :class:`IdIndex` does but without a copy of the keys (the probe reads ``ids``): 4 bytes a slot
    instead of 12. Returns the first id found twice (earlier, later), or (-1, -1)."""
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    for i in range(ids.shape[0]):
        key = ids[i]
        j = np.int64((np.uint64(key) * _FIBONACCI) >> shift)
        while slots[j] != -1:
            if ids[slots[j]] == key:
                return np.int64(slots[j]), np.int64(i)
            j = (j + 1) & mask
        slots[j] = i
    return np.int64(-1), np.int64(-1)


@numba.njit(cache=True, nogil=True, inline="always")
def record_start(kind, off, id_size):
    """Where the record of an object (``kind``, its data at ``off``) starts: at its tag."""
    return off - (2 * id_size + 9 if kind == 1 or kind == 2 else id_size + 10)


@numba.njit(cache=True, nogil=True)
def object_edges(
    buf, id_size, fill, st, first_node, obj_kind, obj_class_index, obj_off, obj_len,
    own_start, own_off, own_name, own_weak, parent, declaring, weak_label, field_bytes, complete, ids, slots,
    bits, first_class, class_label, base, edge_to, edge_kind, edge_name, counts,
):  # fmt: skip
    """Every object's references, in node order: ``<class>`` first, then an instance's object fields
    or an object array's elements. Counts them (``fill`` false) or writes them from ``base`` on, with
    each object's count in ``counts``.

    An instance holds its class's own fields first, then each super class's in turn: its object
    fields are found by walking its class's hierarchy through ``declaring`` (the class itself or its
    nearest super class declaring an object field), so each step reads a field, however deep the
    hierarchy (``own_*``: each class's own object fields, offsets among its own fields). An instance
    holds its class's ``field_bytes``; where a super class is missing (not ``complete``), at least
    that: the fields of the missing classes come after, unread.

    Targets are resolved through the id table; null ids have no edge, ids no object has are counted
    in ``st[ST_DANGLING]``. ``own_weak`` marks ``Reference.referent``: its edge is ``EdgeKind.WEAK``,
    named by the instance's class (``weak_label``).
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
            n = np.int64(obj_len[i])  # uint32: no unsigned arithmetic
            if n < field_bytes[c] or (complete[c] and n != field_bytes[c]):
                st[ST_ERROR] = 4 if complete[c] else 7
                st[ST_ERROR_AT] = record_start(k, obj_off[i], id_size)
                return m - base
            j = declaring[c]
            while j >= 0:
                at = obj_off[i] + field_bytes[c] - field_bytes[j]
                for f in range(own_start[j], own_start[j + 1]):
                    target = _id(buf, at + own_off[f], id_size)
                    if target != 0:
                        t = _probe(ids, slots, bits, target)
                        if t < 0:
                            dangling += 1
                        else:
                            if fill:
                                edge_to[m] = t
                                edge_kind[m] = 6 if own_weak[f] else 2
                                edge_name[m] = weak_label[c] if own_weak[f] else own_name[f]
                            m += 1
                j = declaring[parent[j]] if parent[j] >= 0 else -1
        elif k == 2:
            at = obj_off[i]
            for e in range(np.int64(obj_len[i])):
                target = _id(buf, at + e * id_size, id_size)
                if target != 0:
                    t = _probe(ids, slots, bits, target)
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


@numba.njit(cache=True, nogil=True, inline="always")
def lower_bound(ascending, key):
    """The first position in ``ascending`` whose value is not below ``key`` (its length if none)."""
    lo, hi = 0, ascending.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if ascending[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def object_traces(buf, obj_kind, obj_off, id_size, serials, out):
    """``out[i]``: where object ``i``'s stack trace serial (the u4 after the tag and id of each object
    record) is in the ascending ``serials``, else -1. Returns how many objects name one."""
    found = 0
    k = serials.shape[0]
    for i in range(obj_off.shape[0]):
        s = _u4(buf, record_start(obj_kind[i], obj_off[i], id_size) + 1 + id_size)
        lo = lower_bound(serials, s)
        if lo < k and serials[lo] == s:
            out[i] = lo
            found += 1
        else:
            out[i] = -1
    return found


WALK_BATCH_BYTES = 64 << 20  # heap-dump records walked in one call, between two progress reports
EDGE_RUN = 1 << 18  # objects whose edges are read in one call, before their part of the file is released


def walk_batches(lengths: np.ndarray) -> list[tuple[int, int]]:
    """Runs of consecutive heap-dump records (first, end) of about WALK_BATCH_BYTES together: one
    call each to the walking kernel, so that neither a million empty segments (a call each) nor a
    few huge ones (no progress for minutes) cost more than their bytes."""
    if not len(lengths):
        return []
    window = np.cumsum(lengths + 9) // WALK_BATCH_BYTES
    bounds = [0, *(np.flatnonzero(np.diff(window)) + 1).tolist(), len(lengths)]
    return list(zip(bounds[:-1], bounds[1:]))


def walk_heap_records(
    buf: np.ndarray,
    id_size: int,
    h_off: np.ndarray,
    h_len: np.ndarray,
    check: Callable[[np.ndarray], None],
    progress: Callable[[int], None],
    release: Callable[[int, int], None],
    objects: Callable[[int, int, np.ndarray, bool], dict[str, np.ndarray]],
) -> dict[str, np.ndarray]:
    """Every heap-dump record's sub-records as flat rows (:data:`OBJECT_ROWS`, :data:`OTHER_ROWS`):
    counted in a first pass (``check`` raises on the error the kernel recorded), then stored. The
    object rows go where ``objects(objects, classes, root kinds seen, heaps named)`` says (the graph's
    own columns, once their place is known), the others into arrays of their size. ``progress`` is
    told the bytes of each run of records walked, ``release`` the file range it no longer needs."""
    codes = np.full(256, -1, dtype=np.int64)
    for i, tag in enumerate(ROOT_TAGS):
        codes[tag] = i
    st = np.zeros(8, dtype=np.int64)
    seen = np.zeros(len(ROOT_TAGS), dtype=np.uint8)
    z64, z8 = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    small = ("root_kind", "obj_kind", "obj_elem", "obj_heap")
    empty = {name: z8 if name in small else z64 for name in OBJECT_ROWS + OTHER_ROWS}
    batches = walk_batches(h_len)

    def walked(first: int, last: int) -> tuple[int, int]:
        return int(h_off[first]) - 9, int(h_off[last - 1] + h_len[last - 1])

    for first, last in batches:
        _walk_some(buf, id_size, h_off[first:last], h_len[first:last], False, st, empty, codes, seen)
        check(st)
        release(*walked(first, last))
    counts = {"root": int(st[ST_ROOTS]), "class": int(st[ST_CLASSES]), "heap": int(st[ST_HEAPS])}
    rows = objects(int(st[ST_OBJECTS]), counts["class"], seen, counts["heap"] > 0)
    for name in OTHER_ROWS:
        rows[name] = np.zeros(counts[name.partition("_")[0]], np.uint8 if name in small else np.int64)
    st[:] = 0
    for first, last in batches:
        _walk_some(buf, id_size, h_off[first:last], h_len[first:last], True, st, rows, codes, seen)
        progress(int(h_len[first:last].sum()) + 9 * (last - first))
        release(*walked(first, last))
    return rows


def _walk_some(
    buf: np.ndarray,
    id_size: int,
    offs: np.ndarray,
    lens: np.ndarray,
    fill: bool,
    st: np.ndarray,
    r: dict[str, np.ndarray],
    codes: np.ndarray,
    seen: np.ndarray,
) -> None:
    walk_heaps(
        buf, offs, lens, id_size, fill, st,
        r["obj_id"], r["obj_kind"], r["obj_class"], r["obj_elem"], r["obj_off"], r["obj_len"], r["obj_heap"],
        r["root_kind"], r["root_id"], r["root_thread"], r["root_frame"], r["class_off"], r["class_len"],
        r["heap_type"], r["heap_name"], codes, seen,
    )  # fmt: skip
