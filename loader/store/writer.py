"""Writing an analysed snapshot into Neo4j: :func:`load`.

In short (``docs/data-model.md`` has the whole model): one ``:Snapshot`` node per load, ``:Object``
nodes keyed by ``(sid, id)`` that also name their immediate dominator (``dom``) and the holder their
first retainer path arrives from (``via``), ``:PathGroup`` and ``:TypeGroup`` totals, the ``:Root``
label on the snapshot's root, then ``:REF`` relationships for the references that retain and
``:WEAK_REF`` for those that do not. Rows are packed in batches (:mod:`.bulk`) and sent, several
transactions at a time, to heapdb's Neo4j plugin, or as UNWIND statements to a Neo4j without it
(:data:`WRITERS`). The snapshot answers once the objects and groups are written, while the references still
stream in (see :func:`load`); until then it is invisible (see :mod:`.lifecycle`).

Why this module is long: it holds the stored columns of an object (one per property, the rules'
views included) beside the write loop that sends them, so that adding a property is one edit here
and one line in docs/data-model.md; splitting the columns out is the next step if it grows again.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import neo4j
import numpy as np

from heapdb import progress
from heapdb.db import Database, translate_errors
from heapdb.errors import LoadError
from heapdb.loader.graph import HeapGraph
from heapdb.loader.store import bulk
from heapdb.loader.store.bulk import NULL, Batch, Column, Kind, Strings, pack
from heapdb.loader.store.lifecycle import HEARTBEAT_SECONDS, claim, hide, start_purge
from heapdb.loader.store.schema import STORE_VERSION, ensure_schema
from heapdb.loader.store.summaries import DroppedReferences, LoadInput, TypeListing, reference_label
from heapdb.units import shorten

DEFAULT_BATCH = 20_000  # rows per write transaction


@dataclass
class LoadReport:
    """What a load wrote, and how long each phase took (seconds by phase name, in order)."""

    tag: str
    sid: int
    objects: int
    references: int
    seconds: dict[str, float] = field(default_factory=dict)
    ready_seconds: float = 0.0  # from the start of the write until the snapshot answered questions
    writer: str = "cypher"  # what wrote it: "plugin" (heapdb's Neo4j plugin) or "cypher" (see WRITERS)

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())


# --- rows -------------------------------------------------------------------------------------

# An :Object's properties, in the order of a batch's columns (docs/data-model.md says what each
# means). The writer sends no cell for NULL, so a property that does not apply is not stored at all.
OBJECT_COLUMNS = (
    Column("id", Kind.INTEGER),
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
    Column("dom", Kind.INTEGER),
    Column("via", Kind.INTEGER),
    Column("via_kind", Kind.TEXT),
    Column("via_name", Kind.TEXT),
    Column("bucket", Kind.TEXT),  # a load under rules: the object's bucket, where a bucket rule selects it
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
)
# A reference's properties; its relationship type is REFERENCE_TYPES[0] when it retains, else [1].
REFERENCE_COLUMNS = (Column("kind", Kind.TEXT), Column("name", Kind.TEXT))
REFERENCE_TYPES = ("REF", "WEAK_REF")


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


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


def object_batch(data: LoadInput, ranks: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> Batch:
    """Objects ``lo`` to ``hi`` as a batch of :data:`OBJECT_COLUMNS`."""
    g = data.graph
    strings = Strings()
    holders = data.tree_ids
    distance = data.distance[lo:hi]
    detached = g.detachedness
    edges = data.paths.parent_edge[lo:hi]
    arrived = edges >= 0
    via_labels = [np.full(hi - lo, NULL, dtype=np.int64) for _ in range(2)]
    for column, values in zip(
        via_labels, _reference_labels(strings, g, g.edge_kind[edges[arrived]], g.edge_name[edges[arrived]])
    ):
        column[arrived] = values
    signature, rank, type_rank = data.paths.signature[lo:hi], ranks[0][lo:hi], ranks[1][lo:hi]
    columns = [
        g.ids[lo:hi],
        strings.codes(g.type[lo:hi], g.strings.__getitem__),
        strings.codes(g.name[lo:hi], lambda s: shorten(g.strings[s])),
        strings.codes(g.kind[lo:hi], g.node_kinds.__getitem__),
        g.self_size[lo:hi],
        data.retained_size[lo:hi],
        data.retained_count[lo:hi],
        _null_where(distance, distance < 0),
        data.reachable[lo:hi],
        (np.where(detached[lo:hi] == 2, 1, NULL) if detached is not None else np.full(hi - lo, NULL)),
        _null_where(signature, signature == 0),
        _null_where(rank, rank == 0),
        _null_where(type_rank, type_rank == 0),
        holders.dom[lo:hi],  # NO_OBJECT is NULL: no property
        holders.via[lo:hi],
        *via_labels,
        _bucket_column(strings, data, lo, hi),
        *_look_through_columns(data, lo, hi),
        _note_column(strings, data, data.known_leak, lo, hi),
        _note_column(strings, data, data.verdict, lo, hi),
        *_source_columns(strings, g, lo, hi),
    ]
    return pack(columns, strings)


def _source_columns(strings: Strings, g: HeapGraph, lo: int, hi: int) -> list[np.ndarray]:
    """Objects ``lo`` to ``hi``'s ``location`` and ``allocated_at``, NULL (no property) where none."""
    columns = [np.full(hi - lo, NULL, dtype=np.int64) for _ in range(2)]
    for column, sources in zip(columns, (g.locations, g.allocations)):
        if sources is not None:
            offsets, texts = sources.texts(g.strings, lo, hi)
            if texts:
                column[offsets] = strings.add(texts)
    return columns


def _note_column(strings: Strings, data: LoadInput, labels: np.ndarray | None, lo: int, hi: int) -> np.ndarray:
    """Objects ``lo`` to ``hi``'s notes (``labels`` index ``data.notes``), NULL (no property) where none."""
    column = np.full(hi - lo, NULL, dtype=np.int64)
    if labels is not None:
        part = labels[lo:hi]
        has = part >= 0
        column[has] = strings.codes(part[has], data.notes.__getitem__)
    return column


def _look_through_columns(data: LoadInput, lo: int, hi: int) -> list[np.ndarray]:
    """Objects ``lo`` to ``hi``'s ``through`` (only ever true) and ``holder`` (only where it is not
    the dominator), NULL (no property) elsewhere."""
    if data.look_through is None:
        return [np.full(hi - lo, NULL, dtype=np.int64) for _ in range(2)]
    through = data.look_through.through[lo:hi]
    holder = data.look_through.holder[lo:hi]
    differs = (holder >= 0) & (holder != data.idom[lo:hi])
    holder_ids = np.full(hi - lo, NULL, dtype=np.int64)
    holder_ids[differs] = data.graph.ids[holder[differs]]
    return [np.where(through, 1, NULL), holder_ids]


def _bucket_column(strings: Strings, data: LoadInput, lo: int, hi: int) -> np.ndarray:
    """Objects ``lo`` to ``hi``'s bucket names, NULL (no property) where there is none."""
    column = np.full(hi - lo, NULL, dtype=np.int64)
    if data.bucket is not None:
        bucket = data.bucket[lo:hi]
        has = bucket >= 0
        column[has] = strings.codes(bucket[has], data.bucket_names.__getitem__)
    return column


def reference_batch(data: LoadInput, sources: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> Batch:
    """References ``lo`` to ``hi`` as a batch: their two ends as ``ends`` names objects, the index of
    their type in :data:`REFERENCE_TYPES`, then :data:`REFERENCE_COLUMNS`."""
    g = data.graph
    strings = Strings()
    labels = _reference_labels(strings, g, g.edge_kind[lo:hi], g.edge_name[lo:hi])
    kind = np.where(data.retaining[lo:hi], 0, 1)
    return pack([ends[sources[lo:hi]], ends[g.edge_to[lo:hi]], kind, *labels], strings, lead=3)


CREATE_OBJECTS = (
    "UNWIND $rows AS r CREATE (:Object {sid: $sid, "
    + ", ".join(f"{column.key}: r[{i}]" for i, column in enumerate(OBJECT_COLUMNS))
    + "})"
)
CREATE_REFERENCES = {
    name: "UNWIND $rows AS r MATCH (a:Object {sid: $sid, id: r[0]}), (b:Object {sid: $sid, id: r[1]}) "
    f"CREATE (a)-[:{name} {{kind: r[3], name: r[4]}}]->(b)"
    for name in REFERENCE_TYPES
}

CREATE_PATH_GROUPS = """
UNWIND $rows AS r
CREATE (:PathGroup {sid: $sid, sig: r[0], path: r[1], hops: r[2], objects: r[3], self_size: r[4], retained_size: r[5],
                    max_retained_size: r[6], samples: r[7], held: r[8]})
"""

CREATE_TYPE_GROUPS = """
UNWIND $rows AS r
CREATE (:TypeGroup {sid: $sid, type: r[0], objects: r[1], self_size: r[2], retained_size: r[3], max_retained_size: r[4]})
"""

SET_TYPE_LISTING = """
MATCH (t:TypeGroup {sid: $sid, type: $type})
SET t.listing_ids = $listing_ids, t.listing_names = $listing_names, t.listing_name_ends = $listing_name_ends
"""


# --- where the rows go ----------------------------------------------------------------------------

WRITERS = ("auto", "plugin", "cypher")  # how a load may write; "auto": the plugin when Neo4j has it


class _PluginSink:
    """Through heapdb's Neo4j plugin: references name their ends by the internal ids of the nodes
    written, so no index is searched for them."""

    name = "plugin"

    def __init__(self, database: Database, sid: int, objects: int) -> None:
        self.database, self.sid = database, sid
        self.ends = np.full(objects, -1, dtype=np.int64)

    def objects(self, batch: Batch, lo: int, hi: int) -> None:
        self.ends[lo:hi] = bulk.create_nodes(self.database, "Object", {"sid": self.sid}, OBJECT_COLUMNS, batch)

    def references(self, batch: Batch) -> None:
        bulk.create_relationships(self.database, REFERENCE_TYPES, REFERENCE_COLUMNS, batch)


class _CypherSink:
    """Through UNWIND statements, for a Neo4j without the plugin; ends are found by (sid, id)."""

    name = "cypher"

    def __init__(self, database: Database, sid: int, ids: np.ndarray) -> None:
        self.database, self.sid = database, sid
        self.ends = ids

    def objects(self, batch: Batch, lo: int, hi: int) -> None:
        rows = batch.rows(OBJECT_COLUMNS)
        with translate_errors(self.database.connection), self.database.session() as session:
            session.execute_write(lambda tx: tx.run(CREATE_OBJECTS, rows=rows, sid=self.sid).consume())

    def references(self, batch: Batch) -> None:
        rows = batch.rows(REFERENCE_COLUMNS)

        def work(tx: neo4j.ManagedTransaction) -> None:
            for index, name in enumerate(REFERENCE_TYPES):
                typed = [row for row in rows if row[2] == index]
                if typed:
                    tx.run(CREATE_REFERENCES[name], rows=typed, sid=self.sid).consume()

        with translate_errors(self.database.connection), self.database.session() as session:
            session.execute_write(work)


def _use_plugin(database: Database, writer: str, say: Callable[[str], None]) -> bool:
    """Whether to write through the plugin: when the connected Neo4j has one this loader speaks to and
    ``writer`` allows it; else Cypher, saying why in one line (or failing, if ``writer`` is "plugin")."""
    if writer not in WRITERS:
        raise ValueError(f"writer must be one of {', '.join(WRITERS)}, not {writer!r}")
    if writer == "cypher":
        return False
    protocol = bulk.plugin_protocol(database)
    if protocol == bulk.PROTOCOL:
        return True
    where = database.connection.describe()
    why = (
        f"{where} has no heapdb plugin"
        if protocol is None
        else f"the heapdb plugin in {where} speaks protocol {protocol}, this heapdb {bulk.PROTOCOL}"
    )
    if writer == "plugin":
        raise LoadError(f"{why}; {PLUGIN_HINT}")
    say(f"{why}: writing through Cypher, several times slower ({PLUGIN_HINT})")
    return False


PLUGIN_HINT = "`heapdb neo4j install` adds the plugin to the managed Neo4j; docs/operations.md tells how for your own"


def _run_batches(send: Callable[[Any], int], batches: Iterator[Any], bar: Any, workers: int) -> int:
    """``send`` each batch (in its own write transaction), ``workers`` at a time; how many rows went."""
    written = 0
    # Building the next batch's rows overlaps with Neo4j writing the previous one.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = []
        for batch in batches:
            pending.append(pool.submit(send, batch))
            while len(pending) >= workers * 2:
                done = pending.pop(0).result()
                written += done
                bar.update(done)
        for future in pending:
            done = future.result()
            written += done
            bar.update(done)
    return written


def load(
    database: Database,
    data: LoadInput,
    tag: str,
    *,
    replace: bool = False,
    meta: dict[str, str] | None = None,
    source: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    workers: int = 2,
    writer: str = "auto",
    say: Callable[[str], None] = lambda _m: None,
    on_ready: Callable[[LoadReport], None] = lambda _r: None,
    analysed_with: dict[str, Any] | None = None,
) -> LoadReport:
    """Write an analysed graph into Neo4j under ``tag``, in two steps.

    First the objects (each carrying its immediate dominator and first-path holder) and the group
    totals; then the snapshot becomes ``ready`` with ``references_ready: false``, ``on_ready`` is
    called, and every question that needs no references answers. Then the references, after which
    ``references_ready`` turns true. A load that fails or is interrupted at any point ends invisible.
    ``writer`` is one of :data:`WRITERS`. ``analysed_with``: extra ``:Snapshot`` properties that
    say what the analysis ran with (a load under rules: ``rules``, ``rules_digest``...).
    """
    g = data.graph
    plugin = _use_plugin(database, writer, say)
    ensure_schema(database)
    properties = {
        **snapshot_properties(data, source=source, meta=meta, analysed_with=analysed_with),
        "started_at": _now(),
        "references_ready": False,
        "references_written": 0,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "heartbeat": _now(),
    }
    sid, replaced, leftovers = claim(database, tag, replace, properties)
    sink: _PluginSink | _CypherSink = (
        _PluginSink(database, sid, g.node_count) if plugin else _CypherSink(database, sid, g.ids)
    )
    report = LoadReport(tag=tag, sid=sid, objects=g.node_count, references=g.edge_count, writer=sink.name)
    if leftovers:
        say(f"the leftovers of an earlier, unfinished load of {tag!r} are freed in the background")
        hide(database, leftovers)
        start_purge(database)
    with _Heartbeat(database, sid) as heartbeat:
        try:
            _write_objects_and_groups(database, data, sink, report, batch_size, workers)
            _switch(database, sid, replaced, report)
            if replaced:
                start_purge(database)
            on_ready(report)
            _write_references(data, sink, report, batch_size, workers, heartbeat)
        except BaseException as error:
            # Whatever went wrong (a lost connection, Ctrl-C), the snapshot must not stay visible or
            # look like a load in progress: it is listed as failed, with the error as the reason. If
            # even this fails, the next heapdb command finds the loader gone and marks it failed
            # (see lifecycle).
            with contextlib.suppress(Exception):
                hide(database, [sid], failure=error)
                start_purge(database)
            raise
    database.write(
        "MATCH (n:Snapshot {sid: $sid}) SET n.references_ready = true, n.references_written = $count, "
        "n.loaded_at = $now, n.load_seconds = $seconds REMOVE n.pid, n.host, n.heartbeat",
        {"sid": sid, "count": g.edge_count, "now": _now(), "seconds": report.total_seconds},
    )
    return report


def snapshot_properties(
    data: LoadInput,
    *,
    source: str | None = None,
    meta: dict[str, str] | None = None,
    analysed_with: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What a ``:Snapshot`` node says of the snapshot itself, whichever way it is written (a load, or
    ``heapdb rebuild``); the state of its load (status, heartbeat...) comes on top."""
    g = data.graph
    return {
        "store_version": STORE_VERSION,
        "format": g.meta.get("format", "unknown"),
        "runtime": str(g.meta.get("runtime", "")),
        "source": source or "",
        "object_count": g.node_count,
        "reference_count": g.edge_count,
        "total_size": int(g.self_size.sum()),
        "reachable_size": int(g.self_size[data.reachable].sum()),
        "unreachable_count": int(g.node_count - np.count_nonzero(data.reachable)),
        "root_id": int(g.ids[g.root]),
        "meta": json.dumps({**{k: v for k, v in g.meta.items() if _jsonable(v)}, **(meta or {})}, sort_keys=True),
        # Under bucket rules: each bucket's totals (JSON text), what `diff --by bucket` compares.
        **data.buckets_property(),
        **(analysed_with or {}),
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_objects_and_groups(
    database: Database,
    data: LoadInput,
    sink: _PluginSink | _CypherSink,
    report: LoadReport,
    batch_size: int,
    workers: int,
) -> None:
    g = data.graph
    sid = sink.sid
    started = time.monotonic()
    ranks = data.top_ranks()

    def send_objects(span: tuple[int, int]) -> int:
        lo, hi = span
        sink.objects(object_batch(data, ranks, lo, hi), lo, hi)
        return hi - lo

    with progress.bar("write objects", total=g.node_count, unit="obj") as bar:
        _run_batches(send_objects, _chunks(g.node_count, batch_size), bar, workers)
    database.write("MATCH (o:Object {sid: $sid, id: $id}) SET o:Root", {"sid": sid, "id": int(g.ids[g.root])})
    report.seconds["objects"] = time.monotonic() - started

    started = time.monotonic()
    write_groups(
        database,
        sid,
        data.path_groups(),
        data.type_groups(),
        data.type_listings(),
        batch_size,
        workers,
        dropped=data.dropped_references(),
    )
    report.seconds["groups"] = time.monotonic() - started


def write_groups(
    database: Database,
    sid: int,
    path_groups: list[list[Any]],
    type_groups: list[list[Any]],
    type_listings: Iterator[tuple[str, TypeListing]],
    batch_size: int = DEFAULT_BATCH,
    workers: int = 2,
    dropped: DroppedReferences | None = None,
) -> None:
    """A snapshot's ``:PathGroup`` and ``:TypeGroup`` nodes and its types' listings (from
    :class:`LoadInput`'s ``path_groups``, ``type_groups`` and ``type_listings``), and on its root
    object, the references its rules keep from retaining (``dropped``, from ``dropped_references``)."""
    if dropped is not None:
        database.write(
            "MATCH (o:Root {sid: $sid}) SET o += $properties", {"sid": sid, "properties": dropped.properties()}
        )
    for label, statement, groups in (
        ("path groups", CREATE_PATH_GROUPS, path_groups),
        ("type groups", CREATE_TYPE_GROUPS, type_groups),
    ):

        def send_groups(rows: list[list[Any]], statement: str = statement) -> int:
            database.write(statement, {"rows": rows, "sid": sid})
            return len(rows)

        with progress.bar(f"write {label}", total=len(groups), unit="group") as bar:
            _run_batches(send_groups, (groups[lo:hi] for lo, hi in _chunks(len(groups), batch_size)), bar, workers)

    def send_listing(item: tuple[str, TypeListing]) -> int:
        type_name, listing = item
        # One transaction per type: a listing holds about 20 bytes per object of the type.
        database.write(SET_TYPE_LISTING, {"sid": sid, "type": type_name, **listing.properties()})
        return 1

    with progress.bar("write type listings", total=len(type_groups), unit="type") as bar:
        _run_batches(send_listing, type_listings, bar, workers)


def _switch(database: Database, sid: int, replaced: list[int], report: LoadReport) -> None:
    """In one transaction the new snapshot becomes the tag's and the old ones stop being."""
    report.ready_seconds = report.total_seconds
    database.write(
        "MATCH (n:Snapshot {sid: $sid}) "
        "OPTIONAL MATCH (old:Snapshot) WHERE old.sid IN $replaced SET old.status = 'dropping' "
        "WITH DISTINCT n SET n.status = 'ready', n.ready_at = $now, n.ready_seconds = $seconds",
        {"sid": sid, "replaced": replaced, "now": _now(), "seconds": report.ready_seconds},
    )


def _write_references(
    data: LoadInput,
    sink: _PluginSink | _CypherSink,
    report: LoadReport,
    batch_size: int,
    workers: int,
    heartbeat: _Heartbeat,
) -> None:
    g = data.graph
    started = time.monotonic()
    sources = g.edge_sources()

    def send(span: tuple[int, int]) -> int:
        lo, hi = span
        sink.references(reference_batch(data, sources, sink.ends, lo, hi))
        return hi - lo

    with progress.bar("write references", total=g.edge_count, unit="ref") as bar:
        _run_batches(send, _chunks(g.edge_count, batch_size), _Counting(bar, heartbeat), workers)
    report.seconds["references"] = time.monotonic() - started


class _Heartbeat:
    """Tells other heapdb processes, every HEARTBEAT_SECONDS, that this load is alive and how far it got.

    A load killed on another host cannot be found by its pid; its stale heartbeat gives it away.
    """

    def __init__(self, database: Database, sid: int) -> None:
        self.database, self.sid = database, sid
        self.written = 0  # references written so far, shown by `heapdb snapshots`
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heapdb-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(Exception):  # a missed beat is harmless; the load reports real failures
                self.database.write(
                    "MATCH (n:Snapshot {sid: $sid}) SET n.heartbeat = $now, n.references_written = $written",
                    {"sid": self.sid, "now": _now(), "written": self.written},
                )


@dataclass
class _Counting:
    """A progress bar that also keeps the heartbeat's count of written references."""

    bar: Any
    heartbeat: _Heartbeat

    def update(self, n: int) -> None:
        self.bar.update(n)
        self.heartbeat.written += n


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
