"""Mono's log-profiler heapshots: the ``.mlpd`` files ``mono --profile=log:heapshot`` writes.

Read: the log profiler's data versions 16 and 17 (Debian's Mono 6.8 writes 17; 16 lays events out alike), as
``mono/profiler/log.h`` describes them, uncompressed (a file written with the profiler's ``zip``
option is gzip: ``gunzip`` it first). The file is a header (magic ``0x4D505A01``, versions, pointer
size, start times, pid, then the profiler's arguments, architecture and OS as length-prefixed
strings) and then buffers. Each buffer has a 48-byte header (magic ``0x4D504C01``, length, and the
bases its events' times, pointers and object addresses are written against, and the thread that
wrote it) and then events: a byte (type in the low four bits, sub-type in the high four), a time
delta, and a payload of LEB128 numbers (signed for pointer and address deltas), bytes and
NUL-terminated strings. Object addresses are written shifted right by 3 (objects are 8-aligned).

Why this module is long: it is the format's description and the reader's, and turning one
heapshot into the graph (classes by vtable, references by offset, roots by the area around their
address) is one story over the same tables; split, each part would need all of them.

How it is read (never a Python object per heap object):

1. the file is memory-mapped; a numba kernel walks every buffer and event (twice: count, then fill)
   and keeps, as row tables, the buffers' headers, the class and vtable metadata (``TYPE_CLASS``
   names a ``MonoClass*``, ``TYPE_VTABLE`` ties a ``MonoVTable*`` to its class), the root areas
   registered and unregistered (``HEAP_ROOT_REGISTER``: start, size, ``MonoGCRootSource``,
   description), the root events with their times, and each heapshot: the thread that walked the
   heap, its ``HEAP_START`` and ``HEAP_END`` (times and positions), and its objects, bytes and
   references. Every other event (allocations, moves, GC handles, JIT, samples, counters...) is
   decoded only as far as needed to skip it; every number and string is checked against its
   buffer's end;
2. one heapshot is chosen (below); a kernel walks only the buffers of its thread between its
   ``HEAP_START`` and ``HEAP_END`` into flat arrays: per object its address, vtable and size, per
   reference its owner, target address and offset; the root events whose time lies inside the
   heapshot (the runtime reports roots during the collection the heapshot is taken in) give each
   root's address and target;
3. numpy does the rest: vtables to class names, addresses to node indexes (snap.bin's id hash
   table), roots to the area registered around their address at the heapshot's start.

Which heapshot: a file holds one per heapshot the runtime took (every major collection with
``heapshot``, every N collections or milliseconds, or on demand). heapdb reads one, the last
complete one unless ``HEAPDB_MLPD_HEAPSHOT`` (:data:`heapdb.settings.MLPD_HEAPSHOT`) names
another (1 the first); programs call :func:`read_graph` with ``heapshot=``. A heapshot without its
``HEAP_END`` (the program died during the walk) is never chosen. ``meta["heapshot"]`` says which
was read, ``meta["heapshots"]`` how many complete ones the file holds.

Graph layout (the synthetic root layout of :mod:`heapdb.loader.graph`, as snap.bin's reader builds
it): objects in walk order as nodes ``0..n-1`` (ids their addresses), then ``"(root)"`` and one
``"(<kind> roots)"`` node per root kind, in order of first appearance (ids 1, 2...: no object lies
at such an address).

- type: the class name as the runtime writes it (``System.Collections.Generic.List<Demo.Request>``,
  ``Demo.Request[]``), ``(unknown class)`` for a vtable no metadata event names; kind ``string``
  for ``System.String``, ``array`` for a name ending in ``]``, else ``object``; no names (the file
  holds no field values, so no string contents either);
- size: the runtime's object size rounded up to 8 bytes, as the profiler writes it (and
  ``mprof-report`` sums it);
- references: the file gives each reference's byte offset in its object, not its field: an array's
  are :attr:`EdgeKind.ELEMENT` named by the slot ``(offset - 4 pointers) / pointer size`` (the
  element index of an array of references; for an array of structs, the reference's slot); any
  other object's are :attr:`EdgeKind.REFERENCE` named ``+OFFSET`` (``+16``: the offset from the
  object's start, header included, as Mono's field offsets count). Field names would need the
  classes' layouts, which the log profiler does not write;
- roots: each root's kind is the ``MonoGCRootSource`` of the root area its address lies in
  (``static``, ``stack``, ``strong handle``, ``domain``, ``finalizer queue``...; ``unregistered`` for
  an address in no area registered at the heapshot's start), and its edge from ``(<kind> roots)``
  (:attr:`EdgeKind.PROPERTY`) is named by the area's description, or for a class's static fields
  ``CLASS statics`` (``Demo.Holder statics``: the area's key is the class's vtable).

A reference or root to an address the heapshot has no object at is dropped and counted in
``meta["dangling_references"]`` / ``meta["dangling_roots"]``. ``meta`` also holds ``runtime``
(``dotnet``), ``format_version`` (``"3.0 data 17"``), ``pid``, ``pointer_size``, ``capture_time``,
``gc_count`` (collections begun, the heapshot's own included), ``total_heap_bytes`` (the heap size
the last ``GC_RESIZE`` before the heapshot's end gave, when there was one), and ``nursery_bytes`` (its generation-0 objects' bytes).

Every malformed input raises :class:`FormatError` with the file, the byte offset and what was
expected there.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from heapdb import settings
from heapdb.errors import FormatError
from heapdb.loader.formats import MLPD
from heapdb.loader.formats.hprof.scan import resolve_ids
from heapdb.loader.formats.mlpd.layout import (
    B_AT,
    C_NAME_AT,
    C_NAME_END,
    C_PTR,
    DATA_VERSIONS,
    E_TIME,
    ERRORS,
    H_COLS,
    H_END,
    H_END_AT,
    H_END_BUF,
    H_EVENTS,
    H_FIRST_AT,
    H_FIRST_BUF,
    H_GCS,
    H_HEAP_SIZE,
    H_NURSERY,
    H_OBJECTS,
    H_REFS,
    H_START,
    H_THREAD,
    HANDLE_TABLES,
    HEADER_FIXED,
    KIND_ARRAY,
    KIND_OBJECT,
    KIND_STRING,
    KIND_SYNTHETIC,
    LOG_HEADER_ID,
    NODE_KINDS,
    R_COLS,
    ROOT_SOURCES,
    SOURCE_GC_HANDLE,
    SOURCE_STATIC,
    ST_BUFFERS,
    ST_CLASSES,
    ST_ERROR,
    ST_ERROR_AT,
    ST_HEAPSHOTS,
    ST_REGISTERS,
    ST_ROOT_EVENTS,
    ST_SIZE,
    ST_VTABLES,
    STRING_CLASS,
    UNKNOWN_CLASS,
    UNKNOWN_SOURCE,
    UNREGISTERED,
    V_CLASS,
    V_PTR,
)
from heapdb.loader.formats.mlpd.scan import FREE_SLOT, read_objects, read_roots, scan
from heapdb.loader.formats.snapbin.ids import IdIndex
from heapdb.loader.formats.text import safe_strings
from heapdb.loader.graph import ROOT_NAME, EdgeKind, HeapGraph, StringTable, root_kind_node_name

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress

__all__ = ["read_graph", "sniff"]

# Offsets in a name table for non-array references: at most this many distinct offsets are looked
# up through a table indexed by offset; a larger offset (a huge struct) goes through np.unique.
_OFFSET_TABLE = 1 << 20


def sniff(head: bytes) -> bool:
    """An .mlpd file starts with the log header id, ``0x4D505A01`` little-endian."""
    return len(head) >= 4 and int.from_bytes(head[:4], "little") == LOG_HEADER_ID


@dataclass(frozen=True)
class _Header:
    major: int
    minor: int
    data_version: int
    pointer_size: int
    start_ms: int  # the program's start, milliseconds since the epoch
    start_ns: int  # the same moment on the clock the events' times use
    pid: int
    args: str
    end: int  # where the first buffer starts


def read_graph(
    path: str | os.PathLike[str], on_bytes: ByteProgress | None = None, heapshot: int | None = None
) -> HeapGraph:
    """Read one heapshot of an .mlpd file into a :class:`HeapGraph` (see the module docstring).

    ``heapshot`` is 1 for the first complete heapshot, 2 for the second..., 0 for the last; None
    takes ``HEAPDB_MLPD_HEAPSHOT``."""
    if heapshot is None:
        heapshot = settings.MLPD_HEAPSHOT.value()
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    if size == 0:
        raise FormatError(path, "the file is empty", offset=0)
    # A plain ndarray view of the mapping (numba takes no memmap subclass); it keeps the mapping alive.
    buf = np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))
    try:
        return _Reader(path, buf, on_bytes).read(heapshot)
    finally:
        del buf


class _Reader:
    """Drives one read: the header, the walk over every buffer, one heapshot, then the graph."""

    def __init__(self, path: str | os.PathLike[str], buf: np.ndarray, on_bytes: ByteProgress | None) -> None:
        self.path = path
        self.buf = buf
        self.on_bytes = on_bytes

    def error(self, problem: str, offset: int) -> FormatError:
        return FormatError(self.path, problem, offset=offset)

    def read(self, wanted: int) -> HeapGraph:
        header = self._header()
        tables = self._scan(header.end)
        if self.on_bytes is not None:
            self.on_bytes(int(self.buf.shape[0]))
        heapshots = tables["heapshots"]
        complete = np.flatnonzero(heapshots[:, H_END] >= 0)
        if not len(complete):
            found = "no heapshot" if not len(heapshots) else "no complete heapshot (none has its HEAP_END)"
            raise self.error(
                f"{found}: take one with mono --profile=log:heapshot (see docs/format.md)", int(self.buf.shape[0])
            )
        if not 0 <= wanted <= len(complete):
            raise self.error(
                f"the file holds {len(complete)} complete heapshot(s); "
                f"{settings.MLPD_HEAPSHOT.name}={wanted} asks for number {wanted}",
                header.end,
            )
        self._heapshots_complete = len(complete)
        chosen = int(complete[wanted - 1 if wanted else -1])
        return self._graph(header, tables, heapshots[chosen], chosen_number=int(np.searchsorted(complete, chosen)) + 1)

    # --- the header and the walk

    def _header(self) -> _Header:
        buf = self.buf
        if buf.shape[0] < 4 or int.from_bytes(buf[:4].tobytes(), "little") != LOG_HEADER_ID:
            raise self.error("expected the Mono log profiler's header id (0x4D505A01)", 0)
        if buf.shape[0] < HEADER_FIXED:
            raise self.error(f"the file ends inside its header (expected {HEADER_FIXED} bytes)", buf.shape[0])
        raw = buf[:HEADER_FIXED].tobytes()
        major, minor, data_version, pointer_size = raw[4], raw[5], raw[6], raw[7]
        if data_version not in DATA_VERSIONS:
            raise self.error(
                f"log data version {data_version}; heapdb reads versions {' and '.join(map(str, DATA_VERSIONS))} "
                "(Mono 6.8 writes 17)",
                6,
            )
        if pointer_size not in (4, 8):
            raise self.error(f"a pointer size of {pointer_size}, expected 4 or 8", 7)
        start_ms = int.from_bytes(raw[8:16], "little")
        start_ns = int.from_bytes(raw[16:24], "little")
        pid = int.from_bytes(raw[32:36], "little")
        at = HEADER_FIXED
        texts = []
        for what in ("the profiler's arguments", "the architecture", "the operating system"):
            if at + 4 > buf.shape[0]:
                raise self.error(f"the file ends inside its header (expected the length of {what})", at)
            length = int.from_bytes(buf[at : at + 4].tobytes(), "little")
            if at + 4 + length > buf.shape[0]:
                raise self.error(f"the file ends inside its header ({what}: {length} bytes)", at)
            texts.append(buf[at + 4 : at + 4 + length].tobytes().split(b"\0", 1)[0].decode("utf-8", "replace"))
            at += 4 + length
        return _Header(major, minor, data_version, pointer_size, start_ms, start_ns, pid, texts[0], at)

    def _scan(self, start: int) -> dict[str, np.ndarray]:
        """Walk every buffer twice (count, then fill) into the row tables."""
        st = np.zeros(ST_SIZE, dtype=np.int64)
        none, flat = np.zeros((0, H_COLS), dtype=np.int64), np.zeros(0, dtype=np.int64)
        scan(self.buf, start, False, none, none, none, none, none, none, flat, flat, st)
        self._check(st)
        counts = st.copy()
        tables = {
            "buffers": np.zeros((counts[ST_BUFFERS], 6), dtype=np.int64),
            "classes": np.zeros((counts[ST_CLASSES], 3), dtype=np.int64),
            "vtables": np.zeros((counts[ST_VTABLES], 2), dtype=np.int64),
            "registers": np.zeros((counts[ST_REGISTERS], R_COLS), dtype=np.int64),
            "heapshots": np.zeros((counts[ST_HEAPSHOTS], H_COLS), dtype=np.int64),
            "root_events": np.zeros((counts[ST_ROOT_EVENTS], 4), dtype=np.int64),
        }
        slots = 1 << max(1, int(2 * counts[ST_BUFFERS]).bit_length())  # a power of two, over twice the buffers
        threads = np.zeros(slots, dtype=np.int64)
        open_hs = np.full(slots, FREE_SLOT, dtype=np.int64)
        st[:] = 0
        t = tables
        scan(
            self.buf, start, True, t["buffers"], t["classes"], t["vtables"], t["registers"], t["heapshots"],
            t["root_events"], threads, open_hs, st,
        )  # fmt: skip
        self._check(st)
        return tables

    def _check(self, st: np.ndarray) -> None:
        if st[ST_ERROR]:
            code, at = int(st[ST_ERROR]), int(st[ST_ERROR_AT])
            problem = ERRORS.get(code, "malformed event")
            if code in (6, 7):
                problem += f" (event byte 0x{int(self.buf[at]):02x})"
            raise self.error(problem, at)

    # --- one heapshot

    def _graph(self, header: _Header, tables: dict[str, np.ndarray], hs: np.ndarray, chosen_number: int) -> HeapGraph:
        n_obj, n_ref = int(hs[H_OBJECTS]), int(hs[H_REFS])
        n_cont = int(hs[H_EVENTS] - hs[H_OBJECTS])
        addr = np.zeros(n_obj, dtype=np.int64)
        vtable = np.zeros(n_obj, dtype=np.int64)
        self_size = np.zeros(n_obj, dtype=np.int64)
        owner = np.zeros(n_ref, dtype=np.int32)
        target = np.zeros(n_ref, dtype=np.int64)
        offset = np.zeros(n_ref, dtype=np.int64)
        cont = np.zeros(n_cont, dtype=np.int64)
        st = np.zeros(ST_SIZE, dtype=np.int64)
        got = read_objects(
            self.buf, tables["buffers"], hs[H_THREAD], hs[H_FIRST_BUF], hs[H_FIRST_AT], hs[H_END_BUF],
            hs[H_END_AT], addr, vtable, self_size, owner, target, offset, cont, st,
        )  # fmt: skip
        self._check(st)
        if got[:2] != (n_obj, n_ref) or got[2] > n_cont:  # the file changed between the walks
            raise self.error("the heapshot's events changed while the file was read", int(hs[H_FIRST_AT]))
        n_cont = int(got[2])
        cont = cont[:n_cont]

        index = IdIndex(addr)
        duplicate = index.duplicate()
        if duplicate is not None:
            raise self.error(
                f"the heapshot holds object 0x{int(addr[duplicate[1]]):x} twice",
                int(tables["buffers"][hs[H_FIRST_BUF], B_AT]),
            )

        def resolve(wanted: np.ndarray) -> np.ndarray:
            found = np.zeros(len(wanted), dtype=np.int32)
            resolve_ids(addr, index.slots, index.bits, wanted, found)
            return found

        table = StringTable()
        intern = table.intern
        # Types and kinds: vtable -> class -> name, each vtable named once.
        class_names = self._class_names(tables["classes"])
        vt_class = dict(zip(tables["vtables"][:, V_PTR].tolist(), tables["vtables"][:, V_CLASS].tolist(), strict=True))
        vts = np.asarray(sorted(vt_class), dtype=np.int64)  # thousands: a binary search per object
        names = [class_names.get(vt_class[v], UNKNOWN_CLASS) for v in vts.tolist()] + [UNKNOWN_CLASS]
        vt_of_object = np.searchsorted(vts, vtable)
        known = vt_of_object < len(vts)
        known[known] = vts[vt_of_object[known]] == vtable[known]
        vt_of_object[~known] = len(vts)  # the last name: UNKNOWN_CLASS
        vt_type = np.asarray([intern(s) for s in names], dtype=np.int32)
        vt_kind = np.asarray(
            [KIND_STRING if s == STRING_CLASS else KIND_ARRAY if s.endswith("]") else KIND_OBJECT for s in names],
            dtype=np.uint8,
        )

        # References: grouped by owner (the walk reports an object's references together).
        if n_cont:
            late = owner < -1
            owner[late] = resolve(cont[-2 - owner[late]])
        to = resolve(target)
        keep = (to >= 0) & (owner >= 0)
        dangling = int((~keep).sum())
        if dangling:
            owner, to, offset = owner[keep], to[keep], offset[keep]
        if len(owner) and (np.diff(owner) < 0).any():
            order = np.argsort(owner, kind="stable")
            owner, to, offset = owner[order], to[order], offset[order]
        is_array = vt_kind[vt_of_object[owner]] == KIND_ARRAY
        pointer = header.pointer_size
        edge_kind = np.where(is_array, np.uint8(EdgeKind.ELEMENT), np.uint8(EdgeKind.REFERENCE))
        edge_name = np.zeros(len(owner), dtype=np.uint32)
        edge_name[is_array] = np.maximum(offset[is_array] - 4 * pointer, 0) // pointer
        edge_name[~is_array] = self._offset_names(offset[~is_array], intern)

        # Roots: the root events inside the heapshot, each root's kind by the area around its address.
        events = tables["root_events"]
        events = events[(events[:, E_TIME] >= hs[H_START]) & (events[:, E_TIME] <= hs[H_END])]
        n_roots = int(events[:, 3].sum())
        root_address = np.zeros(n_roots, dtype=np.int64)
        root_target = np.zeros(n_roots, dtype=np.int64)
        if read_roots(self.buf, tables["buffers"], events, root_address, root_target) != n_roots:
            raise self.error("the heapshot's root events changed while the file was read", int(hs[H_FIRST_AT]))
        statics = {v: class_names.get(c, UNKNOWN_CLASS) for v, c in vt_class.items()}
        root_kind, root_label = self._root_areas(tables["registers"], int(hs[H_START]), root_address, statics)
        rooted = resolve(root_target)
        dangling_roots = int((rooted < 0).sum())
        root_kind, root_label, rooted = root_kind[rooted >= 0], root_label[rooted >= 0], rooted[rooted >= 0]
        kind_order, group = _in_order_of_appearance(root_kind)
        by_group = np.argsort(group, kind="stable")
        k = len(kind_order)

        # The graph: objects, then (root) and its kind nodes; edges CSR by source.
        n = n_obj + 1 + k
        m_obj = len(owner)
        m = m_obj + k + len(rooted)
        edge_start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=n_obj), out=edge_start[1 : n_obj + 1])
        edge_start[n_obj + 1] = m_obj + k
        edge_start[n_obj + 2 :] = m_obj + k + np.cumsum(np.bincount(group, minlength=k))
        edge_to = np.empty(m, dtype=np.int32)
        edge_to[:m_obj] = to
        edge_to[m_obj : m_obj + k] = np.arange(n_obj + 1, n_obj + 1 + k)
        edge_to[m_obj + k :] = rooted[by_group]
        kinds_all = np.empty(m, dtype=np.uint8)
        kinds_all[:m_obj] = edge_kind
        kinds_all[m_obj : m_obj + k] = int(EdgeKind.ELEMENT)
        kinds_all[m_obj + k :] = int(EdgeKind.PROPERTY)
        names_all = np.empty(m, dtype=np.uint32)
        names_all[:m_obj] = edge_name
        names_all[m_obj : m_obj + k] = np.arange(k)
        labels = np.asarray([intern(s) for s in self._labels], dtype=np.uint32)
        names_all[m_obj + k :] = labels[root_label[by_group]] if len(by_group) else labels[:0]

        ids = np.empty(n, dtype=np.int64)
        ids[:n_obj] = addr
        ids[n_obj:] = np.arange(1, k + 2)
        node_type = np.empty(n, dtype=np.int32)
        node_kind = np.empty(n, dtype=np.uint8)
        node_name = np.zeros(n, dtype=np.int32)
        node_type[:n_obj] = vt_type[vt_of_object] if n_obj else vt_type[:0]
        node_kind[:n_obj] = vt_kind[vt_of_object] if n_obj else vt_kind[:0]
        node_kind[n_obj:] = KIND_SYNTHETIC
        synthetic = [intern(ROOT_NAME), *(intern(root_kind_node_name(self._kinds[int(c)])) for c in kind_order)]
        node_type[n_obj:] = synthetic
        node_name[n_obj:] = synthetic
        sizes = np.zeros(n, dtype=np.int64)
        sizes[:n_obj] = self_size

        graph = HeapGraph(
            ids=ids,
            kind=node_kind,
            type=node_type,
            name=node_name,
            self_size=sizes,
            edge_start=edge_start,
            edge_to=edge_to,
            edge_kind=kinds_all,
            edge_name=names_all,
            strings=safe_strings(table.strings),
            node_kinds=list(NODE_KINDS),
            root=n_obj,
            meta=self._meta(header, hs, chosen_number, dangling, dangling_roots),
        )
        try:
            graph.validate()
        except ValueError as e:
            raise self.error(f"inconsistent heapshot: {e}", int(hs[H_FIRST_AT])) from None
        return graph

    def _class_names(self, classes: np.ndarray) -> dict[int, str]:
        """Each MonoClass*'s name (a later event for the same pointer wins: a class freed and another
        loaded at its address)."""
        raw = self.buf
        return {
            int(ptr): raw[a:b].tobytes().decode("utf-8", "replace")
            for ptr, a, b in zip(
                classes[:, C_PTR].tolist(), classes[:, C_NAME_AT].tolist(), classes[:, C_NAME_END].tolist(), strict=True
            )
        }

    def _offset_names(self, offsets: np.ndarray, intern: Any) -> np.ndarray:
        """The string index of ``+OFFSET`` for each offset, each distinct offset interned once."""
        if not len(offsets):
            return np.zeros(0, dtype=np.uint32)
        if int(offsets.max()) < _OFFSET_TABLE and int(offsets.min()) >= 0:
            present = np.flatnonzero(np.bincount(offsets))
            table = np.zeros(int(present[-1]) + 1, dtype=np.uint32)
            table[present] = [intern(f"+{o}") for o in present.tolist()]
            return table[offsets]
        distinct, inverse = np.unique(offsets, return_inverse=True)
        return np.asarray([intern(f"+{o}") for o in distinct.tolist()], dtype=np.uint32)[inverse.reshape(-1)]

    def _area_kind(self, source: int, description: bytes) -> int:
        """The root kind of an area: its source's, a GC handle table's own kind where its name says
        it, and UNKNOWN_SOURCE for a source past the enum."""
        if source == SOURCE_GC_HANDLE:
            for word, kind in HANDLE_TABLES.items():
                if word.encode() in description:
                    return self._kinds.index(kind)
        return min(source, len(ROOT_SOURCES))

    def _root_areas(
        self, registers: np.ndarray, at: int, address: np.ndarray, statics: dict[int, str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each root's kind (an index into ``self._kinds``) and label (into ``self._labels``): the
        source and description of the area registered around its address at time ``at``; a class's
        static fields are labelled ``CLASS statics`` by the vtable ``statics`` names."""
        live: dict[int, tuple[int, int, int, int, int]] = {}
        for time, start, size, source, key, d_at, d_end in registers.tolist():
            if time > at:
                continue
            if size < 0:
                live.pop(start, None)
            else:
                live[start] = (size, source, key, d_at, d_end)
        self._kinds = [*ROOT_SOURCES, UNKNOWN_SOURCE, UNREGISTERED, *HANDLE_TABLES.values()]
        self._labels = list(self._kinds)  # a root in an area without a description is labelled by its kind
        starts = np.asarray(sorted(live), dtype=np.int64)
        ends = np.asarray([s + live[s][0] for s in starts.tolist()], dtype=np.int64)
        area_kind = np.asarray(
            [self._area_kind(live[s][1], self.buf[live[s][3] : live[s][4]].tobytes()) for s in starts.tolist()],
            dtype=np.int64,
        )
        area_label = []
        for s in starts.tolist():
            _, source, key, d_at, d_end = live[s]
            text = self.buf[d_at:d_end].tobytes().decode("utf-8", "replace")
            if source == SOURCE_STATIC and key in statics:
                text = f"{statics[key]} statics"
            area_label.append(len(self._labels) if text else min(source, len(ROOT_SOURCES)))
            if text:
                self._labels.append(text)
        area_label_arr = np.asarray(area_label, dtype=np.int64)
        outside = self._kinds.index(UNREGISTERED)  # the kind and label of a root in no area
        kind = np.full(len(address), outside, dtype=np.int64)
        label = np.full(len(address), outside, dtype=np.int64)
        if len(starts) and len(address):
            i = np.searchsorted(starts, address, side="right") - 1
            inside = (i >= 0) & (address < ends[np.maximum(i, 0)])
            kind[inside] = area_kind[i[inside]]
            label[inside] = area_label_arr[i[inside]]
        return kind, label

    def _meta(self, header: _Header, hs: np.ndarray, chosen: int, dangling: int, dangling_roots: int) -> dict[str, Any]:
        taken_ms = header.start_ms + (int(hs[H_START]) - header.start_ns) // 1_000_000
        meta: dict[str, Any] = {
            "format": MLPD.name,
            "format_version": f"{header.major}.{header.minor} data {header.data_version}",
            "runtime": "dotnet",
            "pid": header.pid,
            "pointer_size": header.pointer_size,
            "profiler_args": header.args,
            "heapshot": chosen,
            "heapshots": self._heapshots_complete,
            "gc_count": int(hs[H_GCS]),
            "nursery_bytes": int(hs[H_NURSERY]),
            "dangling_references": dangling,
            "dangling_roots": dangling_roots,
        }
        try:  # the header's start time and the events' clock: a damaged file may give any number
            taken = datetime.datetime.fromtimestamp(taken_ms / 1000, tz=datetime.UTC)
            meta["capture_time"] = taken.strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, ValueError, OSError):
            pass
        if hs[H_HEAP_SIZE]:  # GC resize events seen before the heapshot ended
            meta["total_heap_bytes"] = int(hs[H_HEAP_SIZE])
        return meta


def _in_order_of_appearance(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values in order of first appearance, and each element's index into them."""
    distinct, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return distinct[order], rank[inverse.reshape(-1)]
