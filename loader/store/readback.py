"""Reading a stored snapshot back from Neo4j as a :class:`HeapGraph`: :func:`read_back`.

A load stores every object (``id``, ``type``, ``name`` cut to 200 characters, ``kind``,
``self_size``, ``detached``) and every reference with its raw kind and name (``:REF`` or
``:WEAK_REF`` says what the analysis of that load made of it; ``kind`` keeps the runtime's own edge
kind), so the raw graph can be rebuilt without the original file and analysed again, under other
rules (``heapdb reanalyze``).

What comes back differs from the reader's graph in ways no analysis result depends on:

- nodes are numbered in id order (index ``i`` is the ``i``-th smallest id), not in file order;
- each object's references are ordered by kind, then name (text order; element and hidden indexes
  as numbers), then target index, since nothing stored keeps the file's order. Dominators, retained
  sizes, reachability and distances do not depend on the order; the first retainer path an object
  is given among several of the same length (``via``, ``path_sig``) may differ from the original load;
- names and reference names longer than 200 characters come back cut (as stored), and a rule
  selecting on the cut part of such a name no longer matches it;
- detachedness only says ``DETACHED`` or ``UNKNOWN`` (attached objects are not marked in the store);
- source locations come back from each object's ``location`` text, without script ids (owners need
  only the script's name); a Luau object's memory category from its stored ``owner``, whose first
  level it is (under bucket rules, its bucket where a rule selected it).

Memory stays bounded: objects and references are read in pages (one query each, keyed on the
``(sid, id)`` index), each page's columns go straight into numpy arrays, and no Python object per
heap object outlives its page (the interned strings aside, which the graph keeps anyway).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from heapdb import progress
from heapdb.db import Database
from heapdb.errors import LoadError, NotFound, OutdatedSnapshot, ReferencesLoading
from heapdb.loader.graph import EDGE_KIND_NAMES, NAMES_CUT, NUMERIC_NAME_KINDS, Detachedness, HeapGraph, StringTable
from heapdb.loader.sources import SourceLocations
from heapdb.loader.store.schema import OLDEST_ANSWERED_VERSION, STORE_VERSION
from heapdb.loader.store.snapshots import Snapshot

READ_BATCH = 20_000  # objects per page (a page's references come in one query too)

_KIND_INDEX = {name: i for i, name in enumerate(EDGE_KIND_NAMES)}
_NUMERIC = frozenset(int(k) for k in NUMERIC_NAME_KINDS)

_OBJECTS = """
MATCH (o:Object {sid: $sid}) WHERE o.id > $after
WITH o ORDER BY o.sid, o.id LIMIT $batch
RETURN collect(o.id) AS ids, collect(coalesce(o.type, '')) AS types, collect(coalesce(o.name, '')) AS names,
       collect(coalesce(o.kind, '')) AS kinds, collect(coalesce(o.self_size, 0)) AS sizes, collect(coalesce(o.detached, false)) AS detached,
       [x IN collect([o.id, o.location]) WHERE x[1] IS NOT NULL] AS locations,
       [x IN collect([o.id, o.owner]) WHERE x[1] IS NOT NULL] AS owners
"""
_REFERENCES = """
MATCH (a:Object {sid: $sid}) WHERE a.id >= $low AND a.id <= $high
MATCH (a)-[r:REF|WEAK_REF]->(b:Object)
RETURN collect(a.id) AS sources, collect(b.id) AS targets, collect(r.kind) AS kinds, collect(r.name) AS names
"""


@dataclass(frozen=True)
class StoredGraph:
    """A ready snapshot's record and its graph as read back (see the module docstring)."""

    snapshot: Snapshot
    graph: HeapGraph


def ready_snapshot(database: Database, tag: str) -> Snapshot:
    """The tag's ready snapshot with all its references written, or a clear refusal."""
    rows = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s {.*} AS s ORDER BY s.sid", {"tag": tag})
    records = [Snapshot.from_properties(row["s"]) for row in rows]
    ready = [s for s in records if s.status == "ready"]
    if not ready:
        states = ", ".join(sorted({s.status for s in records}))
        why = f" (its loads are {states}; see `heapdb snapshots --all`)" if records else " (see `heapdb snapshots`)"
        raise NotFound(f"no ready snapshot tagged {tag!r}{why}")
    snapshot = ready[-1]
    if snapshot.store_version < OLDEST_ANSWERED_VERSION:
        raise OutdatedSnapshot(
            f"snapshot {tag!r} was stored by an older heapdb (store version {snapshot.store_version}, "
            f"now {STORE_VERSION}): load its file again instead"
        )
    if snapshot.summary:  # pruned: its objects are gone, only its groups remain
        from heapdb.loader.store.prune import summary_only

        raise summary_only(snapshot)
    if not snapshot.references_ready:
        raise ReferencesLoading(
            f"snapshot {tag!r} is still writing its references ({snapshot.references_written or 0:,} of "
            f"{snapshot.reference_count or 0:,}): read it back once `heapdb snapshots` shows it complete"
        )
    return snapshot


def read_back(database: Database, tag: str, *, batch: int = READ_BATCH) -> StoredGraph:
    """The ready snapshot tagged ``tag`` and its raw graph, rebuilt from what the store holds.

    Refuses (:class:`~heapdb.errors.NotFound`, :class:`~heapdb.errors.ReferencesLoading`,
    :class:`~heapdb.errors.OutdatedSnapshot`) a tag with no ready snapshot, one whose references are
    still being written, and one stored by an older heapdb. Progress bars show on a terminal
    (:mod:`heapdb.progress`). A snapshot that changes while it is read (dropped or replaced
    meanwhile) raises :class:`~heapdb.errors.LoadError`.
    """
    snapshot = ready_snapshot(database, tag)
    n, m = int(snapshot.object_count or 0), int(snapshot.reference_count or 0)
    strings = StringTable()
    node_kinds: dict[str, int] = {}
    ids, self_size = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    type_, name = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
    kind, detached = np.empty(n, dtype=np.uint8), np.zeros(n, dtype=np.bool_)

    located: list[tuple[int, str]] = []  # (id, location), for owners (heapdb.loader.owners)
    owned: list[tuple[int, str]] = []  # (id, owner): a Luau object's first owner is its category
    read, after = 0, -(2**63)
    with progress.bar("read back objects", total=n, unit="obj") as objects_bar:
        while True:
            page = database.read(_OBJECTS, {"sid": snapshot.sid, "after": after, "batch": batch})[0]
            count = len(page["ids"])
            if count == 0:
                break
            if read + count > n:
                raise _changed(tag, f"more than its {n:,} objects")
            span = slice(read, read + count)
            ids[span] = page["ids"]
            type_[span] = [strings.intern(s) for s in page["types"]]
            name[span] = [strings.intern(s) for s in page["names"]]
            kind[span] = [node_kinds.setdefault(s, len(node_kinds)) for s in page["kinds"]]
            self_size[span] = page["sizes"]
            detached[span] = page["detached"]
            located.extend((int(i), str(t)) for i, t in page["locations"])
            owned.extend((int(i), str(t)) for i, t in page["owners"])
            read += count
            after = int(ids[read - 1])
            objects_bar.update(count)
    if read != n:
        raise _changed(tag, f"{read:,} of its {n:,} objects")

    with progress.bar("read back references", total=m, unit="ref") as references_bar:
        sources, targets, kinds, names = _read_references(
            database, snapshot.sid, ids, strings, batch, references_bar.update
        )
    if len(targets) != m:
        raise _changed(tag, f"{len(targets):,} of its {m:,} references")
    edge_start, edge_to, edge_kind, edge_name = _csr(n, sources, targets, kinds, names, strings.strings)
    root = int(np.searchsorted(ids, snapshot.root_id)) if snapshot.root_id is not None else 0
    if not (0 <= root < n and ids[root] == snapshot.root_id):
        raise _changed(tag, f"its root object {snapshot.root_id}")
    meta: dict[str, Any] = dict(snapshot.meta)
    meta.setdefault("format", snapshot.format or "unknown")  # what the analysis' semantics follow
    meta[NAMES_CUT] = True  # inspections that compare whole names skip it
    if snapshot.runtime:
        meta.setdefault("runtime", snapshot.runtime)
    if snapshot.format == "luau" and owned:
        meta |= _categories(ids, owned, meta.get("category_names") or {})
    graph = HeapGraph(
        ids=ids,
        kind=kind,
        type=type_,
        name=name,
        self_size=self_size,
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=strings.strings,
        node_kinds=list(node_kinds),
        root=root,
        detachedness=np.where(detached, Detachedness.DETACHED, Detachedness.UNKNOWN).astype(np.uint8)
        if detached.any()
        else None,
        meta=meta,
    )
    if located:
        at = _indexes(ids, [i for i, _ in located]).tolist()
        graph.locations = SourceLocations.from_texts(at, [t for _, t in located], strings.intern)
    graph.validate()
    return StoredGraph(snapshot, graph)


def _categories(ids: np.ndarray, owned: list[tuple[int, str]], named: dict[str, str]) -> dict[str, Any]:
    """A Luau graph's memory categories (``meta["category"]``, ``meta["category_names"]``) from the
    objects' stored owners, whose first level they are (under bucket rules: their buckets, where a
    rule selected them): a category keeps its number where the dump named it (``category_names``,
    stored with the meta) or numbered it (``category 3``); others take free numbers."""
    codes = {name: int(code) for code, name in named.items()}
    for name in {t for _, t in owned}:
        numbered = _NUMBERED.fullmatch(name)
        if name not in codes and numbered and int(numbered[1]) < 256:
            codes[name] = int(numbered[1])
    free = iter(sorted(set(range(1, 256)) - set(codes.values())))
    category = np.zeros(ids.shape[0], dtype=np.uint8)
    for node, (_, name) in zip(_indexes(ids, [i for i, _ in owned]).tolist(), owned, strict=True):
        if name not in codes:
            codes[name] = next(free, 0)
        category[node] = codes[name]
    return {"category": category, "category_names": {code: name for name, code in codes.items()}}


_NUMBERED = re.compile(r"category (\d+)")


def _read_references(
    database: Database,
    sid: int,
    ids: np.ndarray,
    strings: StringTable,
    batch: int,
    progress: Callable[[int], object],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every reference as ``(source index, target index, EdgeKind, name)`` arrays, read page by
    page of their holders (``batch`` holders per query); names are element indexes or string indexes."""
    parts: list[tuple[np.ndarray, ...]] = []
    for lo in range(0, len(ids), batch):
        hi = min(len(ids), lo + batch)
        page = database.read(_REFERENCES, {"sid": sid, "low": int(ids[lo]), "high": int(ids[hi - 1])})[0]
        kinds = np.fromiter((_KIND_INDEX[k] for k in page["kinds"]), dtype=np.uint8, count=len(page["kinds"]))
        names = np.fromiter(
            (int(t) if k in _NUMERIC else strings.intern(t) for k, t in zip(kinds.tolist(), page["names"])),
            dtype=np.uint32,
            count=len(kinds),
        )
        parts.append((_indexes(ids, page["sources"]), _indexes(ids, page["targets"]), kinds, names))
        progress(len(kinds))
    if not parts:
        empty = np.empty(0, dtype=np.int32)
        return empty, empty, np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.uint32)
    columns = tuple(np.concatenate([p[i] for p in parts]) for i in range(4))
    parts.clear()
    return columns[0], columns[1], columns[2], columns[3]


def _indexes(ids: np.ndarray, values: list[int]) -> np.ndarray:
    """The node indexes of these object ids (``ids`` sorted); LoadError for an id not among them."""
    wanted = np.asarray(values, dtype=np.int64)
    at = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    if len(wanted) and not np.array_equal(ids[at], wanted):
        raise LoadError("a stored reference names an object that is not in its snapshot")
    return at.astype(np.int32)


def _csr(
    n: int, sources: np.ndarray, targets: np.ndarray, kinds: np.ndarray, names: np.ndarray, strings: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The references in CSR order: by source, then kind, name (text order, or numeric for element
    and hidden indexes) and target, so the same stored snapshot always reads back the same."""
    numeric = np.isin(kinds, list(_NUMERIC))
    named = np.unique(names[~numeric])
    rank = np.zeros(len(strings), dtype=np.int64)
    rank[named[np.argsort([strings[i] for i in named.tolist()], kind="stable")]] = np.arange(len(named))
    name_key = np.where(numeric, names.astype(np.int64), rank[np.where(numeric, 0, names)])
    order = np.lexsort((targets, name_key, kinds, sources))
    edge_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(sources, minlength=n), out=edge_start[1:])
    return edge_start, targets[order], kinds[order], names[order]


def _changed(tag: str, what: str) -> LoadError:
    return LoadError(
        f"snapshot {tag!r} changed while it was read back (read {what}): it was dropped or replaced meanwhile; "
        "try again"
    )
