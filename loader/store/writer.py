"""Writing an analysed snapshot into Neo4j: :func:`load`.

In short (``docs/data-model.md`` has the whole model): one ``:Snapshot`` node per load, ``:Object``
nodes keyed by ``(sid, id)`` that also name their immediate dominator (``dom``) and the holder their
first retainer path arrives from (``via``), ``:PathGroup`` and ``:TypeGroup`` totals, the ``:Root``
label on the snapshot's root, then ``:REF`` relationships for the references that retain and
``:WEAK_REF`` for those that do not. Rows are packed in batches (:mod:`.bulk`) and sent, several
transactions at a time, to heapdb's Neo4j plugin, or as UNWIND statements to a Neo4j without it
(:data:`WRITERS`). The snapshot answers once the objects the first questions name and the groups are written, while
the other objects and the references still stream in (see :func:`load` and :mod:`.order`); until
then it is invisible (see :mod:`.lifecycle`). What each object and reference carries is in
:mod:`.rows`.
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
from heapdb.loader.store import bulk
from heapdb.loader.store.bulk import Batch
from heapdb.loader.store.lifecycle import HEARTBEAT_SECONDS, claim, hide, start_purge
from heapdb.loader.store.listings import DroppedReferences, TypeListing
from heapdb.loader.store.order import WriteOrder, write_order
from heapdb.loader.store.rows import OBJECT_COLUMNS, REFERENCE_COLUMNS, REFERENCE_TYPES, object_batch, reference_batch
from heapdb.loader.store.schema import STORE_VERSION, ensure_schema
from heapdb.loader.store.summaries import LoadInput

DEFAULT_BATCH = 20_000  # rows per write transaction


@dataclass
class LoadReport:
    """What a load wrote, and how long each phase took (seconds by phase name, in order)."""

    tag: str
    sid: int
    objects: int
    references: int
    seconds: dict[str, float] = field(default_factory=dict)
    # Wall time from the call until the snapshot answered questions: the phases, and what lies
    # between them (the schema check, claiming the tag), which on a large snapshot is not nothing.
    ready_seconds: float = 0.0
    writer: str = "cypher"  # what wrote it: "plugin" (heapdb's Neo4j plugin) or "cypher" (see WRITERS)

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


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

SET_TYPE_LISTINGS = """
UNWIND $rows AS r
MATCH (t:TypeGroup {sid: $sid, type: r.type})
SET t.listing_ids = r.listing_ids, t.listing_names = r.listing_names, t.listing_name_ends = r.listing_name_ends
"""
# Type listings go in transactions of about this many bytes (a listing holds about 20 bytes per
# object of its type): a few transactions for millions of objects, rather than one per type.
LISTING_BATCH_BYTES = 4_000_000


# --- where the rows go ----------------------------------------------------------------------------

WRITERS = ("auto", "plugin", "cypher")  # how a load may write; "auto": the plugin when Neo4j has it


class _PluginSink:
    """Through heapdb's Neo4j plugin: references name their ends by the internal ids of the nodes
    written, so no index is searched for them."""

    name = "plugin"

    def __init__(self, database: Database, sid: int, objects: int) -> None:
        self.database, self.sid = database, sid
        self.ends = np.full(objects, -1, dtype=np.int64)

    def objects(self, batch: Batch, index: np.ndarray) -> None:
        self.ends[index] = bulk.create_nodes(self.database, "Object", {"sid": self.sid}, OBJECT_COLUMNS, batch)

    def references(self, batch: Batch) -> None:
        bulk.create_relationships(self.database, REFERENCE_TYPES, REFERENCE_COLUMNS, batch)


class _CypherSink:
    """Through UNWIND statements, for a Neo4j without the plugin; ends are found by (sid, id)."""

    name = "cypher"

    def __init__(self, database: Database, sid: int, ids: np.ndarray) -> None:
        self.database, self.sid = database, sid
        self.ends = ids

    def objects(self, batch: Batch, index: np.ndarray) -> None:
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
    """Write an analysed graph into Neo4j under ``tag``, in three steps.

    First the objects the first questions name, closed under first-path holders and dominators
    (:mod:`.order`; each object carries its immediate dominator and first-path holder), and the
    group totals; then the snapshot becomes ``ready`` with ``objects_ready: false``, ``on_ready`` is
    called, and the questions those objects answer do (docs/data-model.md, "When a snapshot
    answers"). Then the other objects, nearest to the root first, after which ``objects_ready``
    turns true; then the references, after which ``references_ready`` does. A load that fails or is
    interrupted at any point ends invisible.
    ``writer`` is one of :data:`WRITERS`. ``analysed_with``: extra ``:Snapshot`` properties that
    say what the analysis ran with (a load under rules: ``rules``, ``rules_digest``...).
    """
    began = time.monotonic()
    g = data.graph
    plugin = _use_plugin(database, writer, say)
    ensure_schema(database)
    properties = {
        **snapshot_properties(data, source=source, meta=meta, analysed_with=analysed_with),
        "started_at": _now(),
        "objects_ready": False,
        "objects_written": 0,
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
    try:
        started = time.monotonic()
        ranks = data.top_ranks()
        order = write_order(data, ranks)
        report.seconds["order"] = time.monotonic() - started
        with _Heartbeat(database, sid) as heartbeat:
            steps = _Steps(database, data, sink, report, batch_size, workers, heartbeat, ranks, order)
            steps.first_objects_and_groups()
            report.ready_seconds = time.monotonic() - began
            _switch(database, sid, replaced, report)
            if replaced:
                start_purge(database)
            on_ready(report)
            steps.other_objects()
            steps.references()
    except BaseException as error:
        # Whatever went wrong once the snapshot was claimed (a lost connection, Ctrl-C, memory), it
        # must not stay visible or look like a load in progress: it is listed as failed, with the
        # error as the reason. If even this fails, the next heapdb command finds the loader gone
        # and marks it failed (see lifecycle).
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
        "reachable_size": data.reachable_size,
        "unreachable_count": int(g.node_count - np.count_nonzero(data.reachable)),
        "root_id": int(g.ids[g.root]),
        **data.root_groups_property(),
        "meta": json.dumps({**{k: v for k, v in g.meta.items() if _jsonable(v)}, **(meta or {})}, sort_keys=True),
        # Under bucket rules: each bucket's totals (JSON text), what `diff --by bucket` compares.
        **data.buckets_property(),
        **(analysed_with or {}),
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class _Steps:
    """One load's writes after the claim, in the order :func:`load` makes them."""

    database: Database
    data: LoadInput
    sink: _PluginSink | _CypherSink
    report: LoadReport
    batch_size: int
    workers: int
    heartbeat: _Heartbeat
    ranks: tuple[np.ndarray, np.ndarray]
    order: WriteOrder

    def first_objects_and_groups(self) -> None:
        """What the snapshot needs before it answers: the early objects (see :mod:`.order`), the
        ``:Root`` label and the groups."""
        data, order = self.data, self.order
        started = time.monotonic()
        self._objects("write first objects", order.order[: order.early])
        root = int(data.graph.ids[data.graph.root])
        self.database.write("MATCH (o:Object {sid: $sid, id: $id}) SET o:Root", {"sid": self.sink.sid, "id": root})
        self.report.seconds["first objects"] = time.monotonic() - started
        started = time.monotonic()
        write_groups(
            self.database,
            self.sink.sid,
            data.path_groups(),
            data.type_groups(),
            data.type_listings(),
            self.batch_size,
            self.workers,
            dropped=data.dropped_references(),
        )
        self.report.seconds["groups"] = time.monotonic() - started

    def other_objects(self) -> None:
        """The objects after the early ones, nearest to the root first; then ``objects_ready`` turns true."""
        started = time.monotonic()
        self._objects("write objects", self.order.order[self.order.early :])
        self.database.write(
            "MATCH (n:Snapshot {sid: $sid}) SET n.objects_ready = true, n.objects_written = n.object_count",
            {"sid": self.sink.sid},
        )
        self.report.seconds["objects"] = time.monotonic() - started

    def references(self) -> None:
        g, data, sink = self.data.graph, self.data, self.sink
        started = time.monotonic()
        sources = g.edge_sources()

        def send(span: tuple[int, int]) -> int:
            lo, hi = span
            sink.references(reference_batch(data, sources, sink.ends, lo, hi))
            return hi - lo

        with progress.bar("write references", total=g.edge_count, unit="ref") as bar:
            counting = _Counting(bar, self.heartbeat, "references_written")
            _run_batches(send, _chunks(g.edge_count, self.batch_size), counting, self.workers)
        self.report.seconds["references"] = time.monotonic() - started

    def _objects(self, title: str, objects: np.ndarray) -> None:
        """Write ``objects`` (object indexes, a stretch of the order) in batches of ascending indexes."""

        def send(span: tuple[int, int]) -> int:
            index = np.sort(objects[span[0] : span[1]])
            self.sink.objects(object_batch(self.data, self.ranks, self.order, index), index)
            return index.shape[0]

        with progress.bar(title, total=objects.shape[0], unit="obj") as bar:
            counting = _Counting(bar, self.heartbeat, "objects_written")
            _run_batches(send, _chunks(objects.shape[0], self.batch_size), counting, self.workers)


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

    def send_listings(rows: list[dict[str, Any]]) -> int:
        database.write(SET_TYPE_LISTINGS, {"sid": sid, "rows": rows})
        return len(rows)

    with progress.bar("write type listings", total=len(type_groups), unit="type") as bar:
        _run_batches(send_listings, _listing_batches(type_listings, batch_size), bar, workers)


def _listing_batches(listings: Iterator[tuple[str, TypeListing]], most: int) -> Iterator[list[dict[str, Any]]]:
    """The listings as rows of SET_TYPE_LISTINGS, about LISTING_BATCH_BYTES (and at most ``most`` types) a batch."""
    rows: list[dict[str, Any]] = []
    size = 0
    for type_name, listing in listings:
        rows.append({"type": type_name, **listing.properties()})
        size += listing.nbytes
        if size >= LISTING_BATCH_BYTES or len(rows) >= most:
            yield rows
            rows, size = [], 0
    if rows:
        yield rows


def _switch(database: Database, sid: int, replaced: list[int], report: LoadReport) -> None:
    """In one transaction the new snapshot becomes the tag's and the old ones stop being."""
    database.write(
        "MATCH (n:Snapshot {sid: $sid}) "
        "OPTIONAL MATCH (old:Snapshot) WHERE old.sid IN $replaced SET old.status = 'dropping' "
        "WITH DISTINCT n SET n.status = 'ready', n.ready_at = $now, n.ready_seconds = $seconds",
        {"sid": sid, "replaced": replaced, "now": _now(), "seconds": report.ready_seconds},
    )


class _Heartbeat:
    """Tells other heapdb processes, every HEARTBEAT_SECONDS, that this load is alive and how far it got.

    A load killed on another host cannot be found by its pid; its stale heartbeat gives it away.
    """

    def __init__(self, database: Database, sid: int) -> None:
        self.database, self.sid = database, sid
        # Objects and references written so far, shown by `heapdb snapshots` while a load runs.
        self.written = {"objects_written": 0, "references_written": 0}
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
                    "MATCH (n:Snapshot {sid: $sid}) SET n += $written, n.heartbeat = $now",
                    {"sid": self.sid, "now": _now(), "written": dict(self.written)},
                )


@dataclass
class _Counting:
    """A progress bar that also keeps one of the heartbeat's counts (``key``)."""

    bar: Any
    heartbeat: _Heartbeat
    key: str

    def update(self, n: int) -> None:
        self.bar.update(n)
        self.heartbeat.written[self.key] += n


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True
