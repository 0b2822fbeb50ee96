"""The rows a load writes: an object's stored columns and a reference's, packed as batches.

One place for what each ``:Object`` and reference carries (docs/data-model.md says what each
property means), shared by the transactional load (:mod:`.writer`) and the offline import
(:mod:`.admin_import`), so both write the same graph.
"""

from __future__ import annotations

import numpy as np

from heapdb.loader.graph import HeapGraph
from heapdb.loader.store.bulk import NULL, Batch, Column, Kind, Lists, Strings, pack
from heapdb.loader.store.order import WriteOrder
from heapdb.loader.store.summaries import LoadInput, reference_label
from heapdb.units import shorten

# An :Object's properties, in the order of a batch's columns (docs/data-model.md says what each
# means). The writer sends no cell for NULL, so a property that does not apply is not stored at all.
OBJECT_COLUMNS = (
    Column("id", Kind.INTEGER),
    # Its children in the dominator tree (the objects it immediately dominates), largest retained
    # first, then by id: what it retains, level by level, read without an index over every object's
    # dominator (docs/data-model.md). Absent where it dominates nothing. Second: neo4j-admin packs
    # properties into records in column order, and the list among the last ones took four times the
    # records (docs/benchmarks.md, "A leaner store").
    Column("dominated_order", Kind.INTEGERS),
    Column("type", Kind.TEXT),
    Column("name", Kind.TEXT),
    Column("kind", Kind.TEXT),
    Column("self_size", Kind.INTEGER),
    Column("retained_size", Kind.INTEGER),
    Column("retained_count", Kind.INTEGER),
    Column("distance", Kind.INTEGER),
    Column("reachable", Kind.BOOLEAN),
    Column("detached", Kind.BOOLEAN),  # only ever true: set on detached DOM objects alone
    Column("path_sig", Kind.INTEGER),
    Column("rank", Kind.INTEGER),
    Column("type_rank", Kind.INTEGER),
    # On the objects a load writes before the snapshot answers (see .order): the largest retained
    # size among its children, where it has any, read before they are written.
    Column("largest_dominated", Kind.INTEGER),
    Column("dom", Kind.INTEGER),
    Column("via", Kind.INTEGER),
    Column("via_kind", Kind.TEXT),
    Column("via_name", Kind.TEXT),
    Column("bucket", Kind.TEXT),  # a load under rules: the object's bucket, where a bucket rule selects it
    # Its owner (heapdb.loader.owners): the first level its format gives (package, category...), the
    # rules' buckets first; on every counted object of a format that names owners.
    Column("owner", Kind.TEXT),
    # A load under internal rules: true on the objects answers look through, and where an object's
    # dominator is one of them, the id of its nearest dominator that is not (docs/rules.md).
    Column("through", Kind.BOOLEAN),
    Column("holder", Kind.INTEGER),
    # A load under known_leak and verdict rules: the reason of the known leak the object is part of,
    # and the verdict note on it, where a rule gives one.
    Column("known_leak", Kind.TEXT),
    Column("verdict", Kind.TEXT),
    # Where the object comes from, where the snapshot records it (docs/data-model.md, "Source
    # locations"): its script position ``file:line:column`` and its allocation stack as text.
    Column("location", Kind.TEXT),
    Column("allocated_at", Kind.TEXT),
    # Its primitive values, where the format has them (hprof: an instance's primitive fields, a
    # primitive array's first elements), as bytes in hexadecimal; on a class object, its instances'
    # primitive fields, which decode them (heapdb.loader.values).
    Column("values", Kind.TEXT),
    Column("field_layout", Kind.TEXT),
)
# A reference's properties; its relationship type is REFERENCE_TYPES[0] when it retains, else [1].
REFERENCE_COLUMNS = (Column("kind", Kind.TEXT), Column("name", Kind.TEXT))
REFERENCE_TYPES = ("REF", "WEAK_REF")


def _null_where(values: np.ndarray, missing: np.ndarray) -> np.ndarray:
    return np.where(missing, NULL, values)


def _reference_labels(strings: Strings, g: HeapGraph, kinds: np.ndarray, names: np.ndarray) -> list[np.ndarray]:
    """Columns of the stored kind and name (see :func:`reference_label`) of references given by
    their edge kinds and names; each distinct pair is labelled once."""
    if len(kinds) == 0:
        return [np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)]
    pairs, inverse = np.unique(np.stack([kinds.astype(np.int64), names.astype(np.int64)]), axis=1, return_inverse=True)
    labels = [reference_label(g, k, n) for k, n in zip(pairs[0].tolist(), pairs[1].tolist())]
    inverse = inverse.reshape(-1)
    return [strings.add([label[0] for label in labels])[inverse], strings.add([label[1] for label in labels])[inverse]]


def object_batch(data: LoadInput, ranks: tuple[np.ndarray, np.ndarray], order: WriteOrder, index: np.ndarray) -> Batch:
    """The objects ``index`` (object indexes, ascending) as a batch of :data:`OBJECT_COLUMNS`."""
    g = data.graph
    strings = Strings()
    holders = data.tree_ids
    distance = data.distance[index]
    detached = g.detachedness
    edges = data.paths.parent_edge[index]
    arrived = edges >= 0
    via_labels = [np.full(index.shape[0], NULL, dtype=np.int64) for _ in range(2)]
    for column, values in zip(
        via_labels, _reference_labels(strings, g, g.edge_kind[edges[arrived]], g.edge_name[edges[arrived]])
    ):
        column[arrived] = values
    signature, rank, type_rank = data.paths.signature[index], ranks[0][index], ranks[1][index]
    start = order.child_start
    dominated, children = Lists.gather(order.children, start, index)
    dominated = Lists(items=g.ids[dominated.items], ends=dominated.ends)  # their indexes, as ids
    early = order.early_mask[index] & (start[index + 1] > start[index])
    largest = np.where(early, order.largest_dominated(data.retained_size, index), NULL)
    columns = [
        g.ids[index],
        children,
        strings.codes(g.type[index], g.strings.__getitem__),
        strings.codes(g.name[index], lambda s: shorten(g.strings[s])),
        strings.codes(g.kind[index], g.node_kinds.__getitem__),
        g.self_size[index],
        data.retained_size[index],
        data.retained_count[index],
        _null_where(distance, distance < 0),
        data.reachable[index],
        (np.where(detached[index] == 2, 1, NULL) if detached is not None else np.full(index.shape[0], NULL)),
        _null_where(signature, signature == 0),
        _null_where(rank, rank == 0),
        _null_where(type_rank, type_rank == 0),
        largest,
        holders.dom[index],  # NO_OBJECT is NULL: no property
        holders.via[index],
        *via_labels,
        _bucket_column(strings, data, index),
        _owner_column(strings, data, index),
        *_look_through_columns(data, index),
        _note_column(strings, data, data.known_leak, index),
        _note_column(strings, data, data.verdict, index),
        *_text_columns(strings, g, index),
    ]
    return pack(columns, strings, lists=dominated)


def _text_columns(strings: Strings, g: HeapGraph, index: np.ndarray) -> list[np.ndarray]:
    """The objects ``index``'s ``location``, ``allocated_at``, ``values`` and ``field_layout``, NULL
    (no property) where none."""
    columns = [np.full(index.shape[0], NULL, dtype=np.int64) for _ in range(4)]
    for column, sources in zip(columns[:2], (g.locations, g.allocations)):
        if sources is not None:
            offsets, texts = sources.texts_of(g.strings, index)
            if texts:
                column[offsets] = strings.add(texts)
    if g.values is not None:
        for column, of in zip(columns[2:], (g.values.stored_of, g.values.layouts_of)):
            offsets, texts = of(index)
            if texts:
                column[offsets] = strings.add(texts)
    return columns


def _note_column(strings: Strings, data: LoadInput, labels: np.ndarray | None, index: np.ndarray) -> np.ndarray:
    """The objects ``index``'s notes (``labels`` index ``data.notes``), NULL (no property) where none."""
    column = np.full(index.shape[0], NULL, dtype=np.int64)
    if labels is not None:
        part = labels[index]
        has = part >= 0
        column[has] = strings.codes(part[has], data.notes.__getitem__)
    return column


def _look_through_columns(data: LoadInput, index: np.ndarray) -> list[np.ndarray]:
    """The objects ``index``'s ``through`` (only ever true) and ``holder`` (only where it is not
    the dominator), NULL (no property) elsewhere."""
    if data.look_through is None:
        return [np.full(index.shape[0], NULL, dtype=np.int64) for _ in range(2)]
    through = data.look_through.through[index]
    holder = data.look_through.holder[index]
    differs = (holder >= 0) & (holder != data.idom[index])
    holder_ids = np.full(index.shape[0], NULL, dtype=np.int64)
    holder_ids[differs] = data.graph.ids[holder[differs]]
    return [np.where(through, 1, NULL), holder_ids]


def _bucket_column(strings: Strings, data: LoadInput, index: np.ndarray) -> np.ndarray:
    """The objects ``index``'s bucket names, NULL (no property) where there is none."""
    column = np.full(index.shape[0], NULL, dtype=np.int64)
    if data.bucket is not None:
        bucket = data.bucket[index]
        has = bucket >= 0
        column[has] = strings.codes(bucket[has], data.bucket_names.__getitem__)
    return column


def _owner_column(strings: Strings, data: LoadInput, index: np.ndarray) -> np.ndarray:
    """The objects ``index``'s owners at the first level, NULL (no property) where none is counted."""
    column = np.full(index.shape[0], NULL, dtype=np.int64)
    levels = data.owners.levels
    if levels:
        owner = levels[0].owner[index]
        has = owner >= 0
        column[has] = strings.codes(owner[has], levels[0].names.__getitem__)
    return column


def reference_batch(data: LoadInput, sources: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> Batch:
    """References ``lo`` to ``hi`` as a batch: their two ends as ``ends`` names objects, the index of
    their type in :data:`REFERENCE_TYPES`, then :data:`REFERENCE_COLUMNS`."""
    g = data.graph
    strings = Strings()
    labels = _reference_labels(strings, g, g.edge_kind[lo:hi], g.edge_name[lo:hi])
    kind = np.where(data.retaining[lo:hi], 0, 1)
    return pack([ends[sources[lo:hi]], ends[g.edge_to[lo:hi]], kind, *labels], strings, lead=3)
