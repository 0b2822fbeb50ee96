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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import neo4j
import numpy as np

from heapdb import progress
from heapdb.db import Database, translate_errors
from heapdb.errors import DatabaseUnavailable, LoadError
from heapdb.loader.graph import NAMES_CUT
from heapdb.loader.store import bulk
from heapdb.loader.store.batches import DEFAULT_BATCH, chunks, run_batches
from heapdb.loader.store.bulk import Batch
from heapdb.loader.store.groups import write_groups, write_listings
from heapdb.loader.store.hubs import hub_orders, write_hub_orders
from heapdb.loader.store.lifecycle import HEARTBEAT_SECONDS, claim, hide, start_purge
from heapdb.loader.store.order import WriteOrder, write_order
from heapdb.loader.store.rows import OBJECT_COLUMNS, REFERENCE_COLUMNS, REFERENCE_TYPES, object_batch, reference_batch
from heapdb.loader.store.schema import STORE_VERSION, ensure_schema
from heapdb.loader.store.summaries import LoadInput


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

        def run() -> None:
            with translate_errors(self.database.connection), self.database.session() as session:
                session.execute_write(lambda tx: tx.run(CREATE_OBJECTS, rows=rows, sid=self.sid).consume())

        self.database.answering(run)

    def references(self, batch: Batch) -> None:
        rows = batch.rows(REFERENCE_COLUMNS)

        def work(tx: neo4j.ManagedTransaction) -> None:
            for index, name in enumerate(REFERENCE_TYPES):
                typed = [row for row in rows if row[2] == index]
                if typed:
                    tx.run(CREATE_REFERENCES[name], rows=typed, sid=self.sid).consume()

        def run() -> None:
            with translate_errors(self.database.connection), self.database.session() as session:
                session.execute_write(work)

        self.database.answering(run)


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
        **snapshot_properties(data, source=source, meta=meta, analysed_with=analysed_with, inspections=False),
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
            steps.inspections()
            steps.other_objects()
            steps.references()
    except BaseException as error:
        gone = database.gone() if isinstance(error, DatabaseUnavailable) else None
        if gone is not None:  # nothing to tell a database that is not there, and no point waiting
            raise DatabaseUnavailable(
                f"{gone}. The load of {tag!r} stopped there: it stays invisible, and the next heapdb "
                "command lists it as failed"
            ) from None
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
    inspections: bool = True,
) -> dict[str, Any]:
    """What a ``:Snapshot`` node says of the snapshot itself, whichever way it is written (a load, or
    ``heapdb rebuild``); the state of its load (status, heartbeat...) comes on top. A load leaves
    out the ``inspections`` and writes them once the snapshot answers."""
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
        "meta": json.dumps(
            {**{k: v for k, v in g.meta.items() if _jsonable(v) and k != NAMES_CUT}, **(meta or {})}, sort_keys=True
        ),
        # Under bucket rules: each bucket's totals (JSON text), what `diff --by bucket` compares.
        **data.buckets_property(),
        # Each inspection computed (JSON text; heapdb.loader.store.inspected): a load writes them
        # once the snapshot answers (_Steps.inspections), a rebuild with the rest.
        **(data.inspections.properties() if inspections else {}),
        **(data.owners_property() if inspections else {}),
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
    listed_types: int = 0

    def first_objects_and_groups(self) -> None:
        """What the snapshot needs before it answers: the early objects (see :mod:`.order`), the
        ``:Root`` label and the groups (their totals; the type listings come with the other objects)."""
        data, order = self.data, self.order
        started = time.monotonic()
        self._objects("write first objects", order.order[: order.early])
        root = int(data.graph.ids[data.graph.root])
        self.database.write("MATCH (o:Object {sid: $sid, id: $id}) SET o:Root", {"sid": self.sink.sid, "id": root})
        self.report.seconds["first objects"] = time.monotonic() - started
        started = time.monotonic()
        rows = data.group_rows()
        self.listed_types = len(rows["TypeGroup"])  # one listing each, written with the other objects
        write_groups(
            self.database,
            self.sink.sid,
            rows,
            self.batch_size,
            self.workers,
            dropped=data.dropped_references(),
        )
        self.report.seconds["groups"] = time.monotonic() - started

    def inspections(self) -> None:
        """Every inspection (heapdb.loader.store.inspected), worked out and written once the snapshot
        answers: no first question needs them, and on a large snapshot they take seconds. Written
        before the other objects, so they are there within seconds of the first answer; a question
        about one asked before says so (:class:`~heapdb.errors.InspectionsLoading`)."""
        started = time.monotonic()
        with progress.bar("work out the inspections", total=1, unit="step") as bar:
            found = self.data.inspections
            owners = self.data.owners_property()
            bar.update(1)
        self.report.seconds["inspections"] = time.monotonic() - started
        started = time.monotonic()
        write_groups(self.database, self.sink.sid, found.group_rows(), self.batch_size, self.workers)
        self.database.write(
            "MATCH (n:Snapshot {sid: $sid}) SET n += $properties",
            {"sid": self.sink.sid, "properties": {**found.properties(), **owners}},
        )
        self.report.seconds["inspections written"] = time.monotonic() - started

    def other_objects(self) -> None:
        """The type listings and the objects after the early ones, nearest to the root first; then
        ``objects_ready`` turns true.

        The listings are read only by questions that wait for every object (find, lifelines, diff
        and leaks by id), so they are written once the snapshot answers, not before: on the 220 MB
        snapshot of docs/benchmarks.md they are 72 MB, seconds of writing. They go first: written
        after the objects, they raised the loader's peak by about 100 MB on that snapshot."""
        started = time.monotonic()
        # One writer: no question waits for the listings, and one at a time holds fewer of them
        # (up to tens of MB each) in memory.
        write_listings(self.database, self.sink.sid, self.data.type_listings(), self.listed_types, self.batch_size, 1)
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
            run_batches(send, chunks(g.edge_count, self.batch_size), counting, self.workers)
        # After every reference: a hub's page is read from its order, then its references.
        write_hub_orders(self.database, sink.sid, hub_orders(data))
        self.report.seconds["references"] = time.monotonic() - started

    def _objects(self, title: str, objects: np.ndarray) -> None:
        """Write ``objects`` (object indexes, a stretch of the order) in batches of ascending indexes."""

        def send(span: tuple[int, int]) -> int:
            index = np.sort(objects[span[0] : span[1]])
            self.sink.objects(object_batch(self.data, self.ranks, self.order, index), index)
            return index.shape[0]

        with progress.bar(title, total=objects.shape[0], unit="obj") as bar:
            counting = _Counting(bar, self.heartbeat, "objects_written")
            run_batches(send, chunks(objects.shape[0], self.batch_size), counting, self.workers)


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
