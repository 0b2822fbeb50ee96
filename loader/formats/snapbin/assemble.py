"""Records to a :class:`HeapGraph`: :func:`read_graph` for a snap.bin file.

Object columns come straight from the chunk payloads (``numpy.frombuffer``); the arbitrary, sparse,
possibly forward object ids are resolved once every object is known, through a hash index
(:mod:`~heapdb.loader.formats.snapbin.ids`). The graph gets the synthetic root layout of
:mod:`heapdb.loader.graph`: ``"(root)"`` over one ``"(<kind> roots)"`` node per root kind.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from heapdb.errors import FormatError
from heapdb.loader.formats import SNAPBIN
from heapdb.loader.formats.snapbin.layout import MAJOR, MAX_NODE_KINDS, MetaValue
from heapdb.loader.formats.snapbin.reader import iter_records
from heapdb.loader.formats.snapbin.records import Header, Metadata, ObjectNames, Objects, Record, Roots, Strings, Types
from heapdb.loader.graph import ROOT_NAME, SYNTHETIC_KIND, WEAK_ROOT_KINDS, EdgeKind, HeapGraph, root_kind_node_name

if TYPE_CHECKING:
    from heapdb.loader.formats.snapbin.ids import IdIndex
    from heapdb.progress import ByteProgress


def read_graph(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
    """Read a snap.bin file into a :class:`HeapGraph` with the synthetic root layout.

    Objects keep file order (indexes ``0..n-1``), then come ``"(root)"`` and one ``"(<kind> roots)"``
    node per root kind, in order of first appearance. Raises :class:`FormatError` for any bad input,
    including duplicate object ids and references to ids no object record defines.
    """
    acc = _Accumulator(path)
    for record in iter_records(path, on_bytes):
        acc.add(record)
    return acc.build()


@dataclass
class _Accumulator:
    path: str | os.PathLike[str]
    strings: list[str] = field(default_factory=lambda: [""])
    meta: dict[str, MetaValue] = field(default_factory=dict)
    type_name: list[np.ndarray] = field(default_factory=list)
    type_kind: list[np.ndarray] = field(default_factory=list)
    objects: list[Objects] = field(default_factory=list)
    roots: list[Roots] = field(default_factory=list)
    names: list[ObjectNames] = field(default_factory=list)
    minor: int = 0
    spans: list[tuple[int, int, int]] = field(default_factory=list)  # (offset, ordinal, objects) per chunk

    def add(self, r: Record) -> None:
        if isinstance(r, Header):
            self.minor = r.minor
        elif isinstance(r, Strings):
            self.strings.extend(r.values)
        elif isinstance(r, Types):
            self.type_name.append(r.name)
            self.type_kind.append(r.kind)
        elif isinstance(r, Objects):
            self.objects.append(r)
        elif isinstance(r, Roots):
            self.roots.append(r)
        elif isinstance(r, ObjectNames):
            self.names.append(r)
        elif isinstance(r, Metadata):
            self.meta.update(r.values)

    def build(self) -> HeapGraph:
        """Assemble the graph: objects in file order, then (root) and the root kind nodes.

        The final arrays are allocated once (their pages are touched only as they fill) and filled
        chunk by chunk, each chunk's payload being released as soon as it is copied, so the peak is
        about the payloads or the graph, whichever is larger, plus the id index.
        """
        self.spans = [(o.offset, o.index, o.id.shape[0]) for o in self.objects]
        n = sum(count for _, _, count in self.spans)
        m = sum(o.ref_target.shape[0] for o in self.objects)
        # Roots first: their kinds decide how many synthetic nodes there are.
        root_target = _cat([r.target for r in self.roots], np.int64)
        kinds, group = _in_order_of_appearance(_cat([r.kind for r in self.roots], np.int64))
        group_kinds = [self.strings[int(s)] for s in kinds]
        k, r = len(group_kinds), root_target.shape[0]
        by_group = np.argsort(group, kind="stable")
        total_nodes, total_edges = n + 1 + k, m + k + r

        ids = np.empty(total_nodes, dtype=np.int64)
        _fill(ids[:n], [o.id for o in self.objects])
        index = self._index_ids(ids[:n])
        ids[n:] = _synthetic_ids(ids[:n], 1 + k)
        type_index = _cat([o.type for o in self.objects], np.uint32)
        node_kinds, object_kind = self._node_kinds(type_index)
        type_name = _cat(self.type_name, np.int64)

        node_type = np.empty(total_nodes, dtype=np.int32)
        node_kind = np.empty(total_nodes, dtype=np.uint8)
        self_size = np.empty(total_nodes, dtype=np.int64)
        detachedness = None
        if any(o.detachedness is not None for o in self.objects):
            detachedness = np.zeros(total_nodes, dtype=np.uint8)
        edge_start = np.empty(total_nodes + 1, dtype=np.int64)
        edge_to = np.empty(total_edges, dtype=np.int32)
        edge_kind = np.empty(total_edges, dtype=np.uint8)
        edge_name = np.empty(total_edges, dtype=np.uint32)
        edge_start[0] = node = edge = 0
        while self.objects:
            o = self.objects.pop(0)  # dropped once copied, so its payload is freed
            a, b = node, node + o.id.shape[0]
            e, f = edge, edge + o.ref_target.shape[0]
            self._resolve(index, o.ref_target, edge_to[e:f], functools.partial(self._where_ref, o, a))
            edge_kind[e:f] = o.ref_kind
            edge_name[e:f] = o.ref_name
            np.cumsum(o.ref_count, out=edge_start[a + 1 : b + 1])
            edge_start[a + 1 : b + 1] += edge
            node_type[a:b] = type_name[type_index[a:b]]
            node_kind[a:b] = object_kind[a:b]
            self_size[a:b] = o.self_size.view(np.int64)
            if detachedness is not None and o.detachedness is not None:
                detachedness[a:b] = o.detachedness
            node, edge = b, f

        # (root) -element #i-> (kind roots) -property "root name"-> each root's target.
        edge_to[m : m + k] = np.arange(n + 1, n + 1 + k)
        edge_kind[m : m + k] = int(EdgeKind.ELEMENT)
        edge_name[m : m + k] = np.arange(k)
        self._resolve(index, root_target[by_group], edge_to[m + k :], lambda j: self._where_root(int(by_group[j])))
        edge_kind[m + k :] = int(EdgeKind.PROPERTY)
        # Weak root kinds (a weak GC handle) name their objects without keeping them alive.
        weak_group = np.array([kind in WEAK_ROOT_KINDS for kind in group_kinds], dtype=bool)
        if weak_group.any():
            edge_kind[m + k :][weak_group[group[by_group]]] = int(EdgeKind.WEAK)
        edge_name[m + k :] = _cat([r.name for r in self.roots], np.uint32)[by_group]
        edge_start[n + 1] = m + k
        edge_start[n + 2 :] = m + k + np.cumsum(np.bincount(group, minlength=k))
        synthetic_names = [_find_or_add(self.strings, s) for s in [ROOT_NAME, *map(root_kind_node_name, group_kinds)]]
        node_type[n:] = synthetic_names
        if SYNTHETIC_KIND not in node_kinds:
            node_kinds.append(SYNTHETIC_KIND)
        node_kind[n:] = node_kinds.index(SYNTHETIC_KIND)
        self_size[n:] = 0
        node_name = np.zeros(total_nodes, dtype=np.int32)
        self._fill_names(node_name, index)
        node_name[n:] = synthetic_names

        meta: dict[str, Any] = dict(self.meta)
        meta.update(format=SNAPBIN.name, format_version=f"{MAJOR}.{self.minor}")
        graph = HeapGraph(
            ids=ids,
            kind=node_kind,
            type=node_type,
            name=node_name,
            self_size=self_size,
            edge_start=edge_start,
            edge_to=edge_to,
            edge_kind=edge_kind,
            edge_name=edge_name,
            strings=self.strings,
            node_kinds=node_kinds,
            root=n,
            detachedness=detachedness,
            meta=meta,
        )
        try:
            graph.validate()
        except ValueError as e:
            raise FormatError(self.path, f"inconsistent snapshot: {e}", record="objects") from None
        return graph

    def _node_kinds(self, type_index: np.ndarray) -> tuple[list[str], np.ndarray]:
        """The node kind names, and each object's index into them.

        Kinds are listed in order of first appearance among the objects (not in type table order), so
        a graph read, written back and read again gets the same list.
        """
        type_kind = _cat(self.type_kind, np.int64)
        n = type_index.shape[0]
        first_use = np.full(type_kind.shape[0], n, dtype=np.int64)
        np.minimum.at(first_use, type_index, np.arange(n))
        used = np.flatnonzero(first_use < n)
        used = used[np.argsort(first_use[used], kind="stable")]
        kinds, code = _in_order_of_appearance(type_kind[used])
        if kinds.shape[0] > MAX_NODE_KINDS:
            raise FormatError(
                self.path,
                f"the objects use {kinds.shape[0]} node kinds; heapdb handles at most {MAX_NODE_KINDS}",
                record="types",
            )
        kind_of_type = np.zeros(type_kind.shape[0], dtype=np.uint8)
        kind_of_type[used] = code
        return [self.strings[int(s)] for s in kinds], kind_of_type[type_index]

    def _fill_names(self, names: np.ndarray, index: IdIndex) -> None:
        for rec in self.names:
            nodes = np.empty(rec.id.shape[0], dtype=np.int32)
            self._resolve(index, rec.id, nodes, functools.partial(_where_name, rec))
            names[nodes] = rec.name  # a later name for the same id wins, as the spec says

    def _index_ids(self, ids: np.ndarray) -> IdIndex:
        from heapdb.loader.formats.snapbin.ids import IdIndex  # numba: only readers need it

        if ids.shape[0] + 1 >= np.iinfo(np.int32).max:
            raise FormatError(
                self.path, f"{ids.shape[0]} objects are more than heapdb's graph can index", record="objects"
            )
        index = IdIndex(ids)
        dup = index.duplicate()
        if dup is not None:
            first, second = dup
            raise FormatError(
                self.path,
                f"object id {int(ids[second])} is defined twice: object #{first} "
                f"({self._object_chunk(first)}) and object #{second}",
                offset=self._object_offset(second),
                record=self._object_chunk(second),
            )
        return index

    def _resolve(self, index: IdIndex, wanted: np.ndarray, out: np.ndarray, where: Callable[[int], str]) -> None:
        """Write the node index of each wanted id into ``out``; an id no object defines is a FormatError."""
        missing = index.lookup(wanted, out)
        if missing >= 0:
            raise FormatError(
                self.path,
                f"{where(missing)}, which no object record defines (dangling reference)",
                record="references to object ids",
            )

    def _where_ref(self, rec: Objects, first: int, j: int) -> str:
        local = int(np.searchsorted(np.cumsum(rec.ref_count, dtype=np.int64), j, side="right"))
        number = first + local
        return (
            f"object id {int(rec.id[local])} (object #{number}, {_chunk_label(rec)} at byte {rec.offset}) "
            f"refers to id {int(rec.ref_target[j])}"
        )

    def _where_root(self, j: int) -> str:
        for rec in self.roots:
            if j < rec.target.shape[0]:
                return f"root #{j} of {_chunk_label(rec)} targets id {int(rec.target[j])}"
            j -= rec.target.shape[0]
        raise AssertionError("root index out of range")

    def _object_chunk(self, i: int) -> str:
        offset, index = self._object_span(i)
        return f"chunk #{index} at byte {offset}"

    def _object_offset(self, i: int) -> int:
        return self._object_span(i)[0]

    def _object_span(self, i: int) -> tuple[int, int]:
        """The byte offset and ordinal of the chunk holding object number ``i``."""
        for offset, index, count in self.spans:
            if i < count:
                return offset, index
            i -= count
        raise AssertionError("object index out of range")


def _where_name(rec: ObjectNames, j: int) -> str:
    return f"object name #{j} in {_chunk_label(rec)} names id {int(rec.id[j])}"


def _chunk_label(rec: Record) -> str:
    return f"chunk #{rec.index}"


def _fill(out: np.ndarray, parts: list[np.ndarray]) -> None:
    """Concatenate column parts straight into ``out`` (converting dtype), without a temporary."""
    at = 0
    for part in parts:
        out[at : at + part.shape[0]] = part
        at += part.shape[0]


def _cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


def _in_order_of_appearance(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values in order of first appearance, and each element's index into them."""
    distinct, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0])
    return distinct[order], rank[inverse.reshape(-1)]


def _find_or_add(strings: list[str], s: str) -> int:
    try:
        return strings.index(s)
    except ValueError:
        strings.append(s)
        return len(strings) - 1


def _synthetic_ids(ids: np.ndarray, count: int) -> np.ndarray:
    """Ids for the synthetic nodes: just above the largest object id, or if that is the largest int64,
    the first unused ids from 0 (among ``len(ids) + count`` candidates at least ``count`` are free)."""
    top = int(ids.max()) if ids.size else 0
    if top + count < 1 << 63:
        return np.arange(top + 1, top + 1 + count, dtype=np.int64)
    candidates = np.arange(ids.shape[0] + count, dtype=np.int64)
    return np.setdiff1d(candidates, ids)[:count]
