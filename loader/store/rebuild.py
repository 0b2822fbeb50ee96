"""``heapdb rebuild``: a fresh store of many snapshots at once, through neo4j-admin's offline import.

For a backlog of builds or a nightly rebuild: neo4j-admin writes several times faster than
transactions do (docs/benchmarks.md has the figures, the restart and index builds included). Neo4j Community has one user database, so a rebuild replaces it whole:
the new store holds exactly the snapshots given, plus what is not part of any snapshot (rule sets,
and any other node without a ``sid``), carried over from the old one.

The steps (:func:`rebuild`), each only once the one before succeeded:

1. check: the managed Neo4j is the configured one (the import writes its store files), no load is
   writing into it, no earlier rebuild left its old store aside;
2. stage: read and analyse each snapshot (the caller's ``analyse``, the same as ``heapdb load``'s)
   and write its objects and references as neo4j-admin CSV files (:mod:`.admin_import`) in a work
   directory beside the store; keep its small parts (the ``:Snapshot`` properties, groups, listings);
3. read what is carried over, stop Neo4j, move the database's store and transaction logs aside
   (a rename: same disk), import, start;
4. create the indexes and constraints, write the carried nodes, the groups and listings, and last
   each ``:Snapshot`` node, ready: a snapshot answers only once all of it is in;
5. verify: per snapshot, the objects and references stored equal the analysed counts, its root and
   its largest object are where the analysis put them;
6. only then delete the old store.

Whatever fails after the old store was moved aside (the import, the start, the verification, Ctrl-C),
Neo4j is stopped, the new store deleted, the old one put back and Neo4j started again: the database
answers as before, and the error says what failed. A rebuild killed outright (kill -9, a crash) leaves
the old store in :func:`aside_dir`; the next rebuild refuses to start until it is put back or deleted
(docs/operations.md says how).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from heapdb import config, db, neo4j_server
from heapdb.errors import RebuildError
from heapdb.loader.graph import HeapGraph
from heapdb.loader.store.admin_import import ImportFiles, run_import
from heapdb.loader.store.groups import GROUP_KINDS, write_groups, write_listings
from heapdb.loader.store.hubs import hub_orders, write_hub_orders
from heapdb.loader.store.lifecycle import check_tag, loader_alive, unfinished
from heapdb.loader.store.listings import DroppedReferences, TypeListing
from heapdb.loader.store.schema import ensure_schema
from heapdb.loader.store.summaries import LoadInput
from heapdb.loader.store.writer import snapshot_properties

Say = Callable[[str], None]

# What belongs to snapshots, and so is never carried over: their nodes, and the purger's claim.
SNAPSHOT_LABELS = ("Object", *(kind.label for kind in GROUP_KINDS), "Snapshot", "Purger")


def _quiet(_: str) -> None:
    pass


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class StagedSnapshot:
    """One snapshot of a rebuild, once its CSV files are written: what is written after the import,
    and what its verification expects."""

    tag: str
    sid: int
    objects: int
    references: int
    properties: dict[str, Any]  # its :Snapshot node's (snapshot_properties)
    groups: dict[str, list[list[Any]]]  # its group nodes' rows by label (LoadInput's and its inspections' group_rows)
    listings: list[tuple[str, TypeListing]]
    hubs: dict[str, list[dict[str, Any]]]  # its hubs' reference orders (hubs.hub_orders)
    root_id: int
    top_id: int | None  # the id of its object of rank 1 (the largest retained size), if any
    dropped: DroppedReferences | None = None  # the references its rules keep from retaining


@dataclass(frozen=True)
class RebuildReport:
    """What a rebuild stored, and the seconds of each step (by name, in order)."""

    snapshots: tuple[tuple[str, int, int], ...]  # (tag, objects, references) in order
    elements: int  # objects and references imported
    carried: int  # nodes carried over from the old store (rule sets...)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def import_seconds(self) -> float:
        """From stopping Neo4j until the new store answered, verified: the offline part."""
        return sum(
            self.seconds[k] for k in ("stop", "import", "start", "indexes", "write", "verify") if k in self.seconds
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "snapshots": [{"tag": t, "objects": o, "references": r} for t, o, r in self.snapshots],
            "elements": self.elements,
            "carried": self.carried,
            "seconds": self.seconds,
        }


def aside_dir() -> Path:
    """Where a rebuild keeps the old store until the new one is verified (beside the store: a rename)."""
    return neo4j_server.paths().data / "rebuild-previous"


def check_managed() -> config.Connection:
    """The managed Neo4j's connection, or :class:`RebuildError` when heapdb uses another Neo4j or an
    earlier rebuild left its old store aside."""
    conn = config.connection()
    if not conn.managed:
        raise RebuildError(
            f"heapdb rebuild imports into the managed Neo4j's store files, and heapdb is set to use {conn.uri}; "
            "unset NEO4J_URI (or the [neo4j] uri of the config file) to rebuild the managed one. For a Neo4j of "
            'your own, load the snapshots with `heapdb load` (docs/operations.md, "Rebuilding a store")'
        )
    if aside_dir().exists():
        raise RebuildError(
            f"an earlier rebuild was stopped before it finished and left the old store in {aside_dir()}: put it "
            'back or delete it first (docs/operations.md, "Rebuilding a store")'
        )
    return conn


def stage(
    files: ImportFiles,
    data: LoadInput,
    tag: str,
    sid: int,
    *,
    source: str,
    meta: dict[str, str] | None = None,
    analysed_with: dict[str, Any] | None = None,
    on_rows: Callable[[int], object] = lambda _n: None,
) -> StagedSnapshot:
    """Write one analysed snapshot's CSV files into ``files``; what is left to write after the import."""
    g = data.graph
    ranks = data.top_ranks()
    files.add(data, sid, ranks, on_rows=on_rows)
    first = np.flatnonzero(ranks[0] == 1)
    return StagedSnapshot(
        tag=tag,
        sid=sid,
        objects=g.node_count,
        references=g.edge_count,
        properties=snapshot_properties(data, source=source, meta=meta, analysed_with=analysed_with),
        groups={**data.group_rows(), **data.inspections.group_rows()},
        listings=list(data.type_listings()),
        hubs=hub_orders(data),
        root_id=int(g.ids[g.root]),
        top_id=int(g.ids[first[0]]) if len(first) else None,
        dropped=data.dropped_references(),
    )


def rebuild(
    paths: Sequence[str],
    analyse: Callable[[str], tuple[LoadInput, dict[str, Any] | None]],
    tag_of: Callable[[str, HeapGraph], str],
    *,
    meta: dict[str, str] | None = None,
    say: Say = _quiet,
    work_parent: Path | None = None,
    after_staging: Callable[[ImportFiles], object] = lambda _f: None,
) -> RebuildReport:
    """Replace the managed Neo4j's database with one holding exactly the snapshots in ``paths``.

    ``analyse`` reads and analyses one file (as ``heapdb load`` does); ``tag_of`` names a snapshot
    from its path and graph. Tags are checked as they come (valid, distinct) before Neo4j is touched.
    ``after_staging`` sees the CSV files before the import (the benchmark copies them). See the
    module's docstring for the steps and what a failure leaves.
    """
    check_managed()
    seconds: dict[str, float] = {}
    with db.connect(say=say) as database:
        _refuse_live_loads(database)
    p = neo4j_server.paths()
    work = Path(tempfile.mkdtemp(prefix="rebuild-csv-", dir=work_parent or p.instance))
    try:
        started = time.monotonic()
        files = ImportFiles(work)
        staged: list[StagedSnapshot] = []
        for sid, path in enumerate(paths, start=1):
            data, analysed_with = analyse(path)
            tag = tag_of(path, data.graph)
            check_tag(tag)
            if any(s.tag == tag for s in staged):
                raise RebuildError(f"two snapshots would be tagged {tag!r} ({path} and an earlier file)")
            say(f"staged {tag!r}: {data.graph.node_count:,} objects, {data.graph.edge_count:,} references")
            staged.append(
                stage(files, data, tag, sid, source=os.path.abspath(path), meta=meta, analysed_with=analysed_with)
            )
            del data
        seconds["stage"] = time.monotonic() - started
        after_staging(files)
        carried = _swap(staged, files, seconds, say)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return RebuildReport(
        snapshots=tuple((s.tag, s.objects, s.references) for s in staged),
        elements=files.elements,
        carried=carried,
        seconds=seconds,
    )


def _refuse_live_loads(database: db.Database) -> None:
    rows = database.read(
        "MATCH (s:Snapshot) WHERE s.status = 'loading' OR (s.status = 'ready' AND s.references_ready = false) "
        "RETURN s.tag AS tag, s.status AS status, s.references_ready AS references_ready, s.pid AS pid, "
        "s.host AS host, duration.inSeconds(datetime(coalesce(s.heartbeat, s.started_at)), datetime()).seconds AS age"
    )
    live = [r for r in rows if unfinished(r) and loader_alive(r)]
    if live:
        tags = ", ".join(repr(r["tag"]) for r in live)
        raise RebuildError(f"a load is writing into the database right now ({tags}); rebuild when it ends")


@dataclass(frozen=True)
class _Carried:
    """The nodes not part of any snapshot (rule sets...), and the relationships between them."""

    nodes: list[dict[str, Any]]  # {"id": elementId, "labels": [...], "props": {...}}
    relationships: list[dict[str, Any]]  # {"a": elementId, "b": elementId, "type": str, "props": {...}}


def _read_carried(database: db.Database) -> _Carried:
    labels = [r["label"] for r in database.read("CALL db.labels() YIELD label RETURN label")]
    nodes: dict[str, dict[str, Any]] = {}
    for label in labels:
        if label in SNAPSHOT_LABELS:
            continue
        for row in database.read(
            f"MATCH (n:{_name(label)}) WHERE n.sid IS NULL AND NOT any(l IN labels(n) WHERE l IN $skip) "
            "RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props",
            {"skip": list(SNAPSHOT_LABELS)},
        ):
            nodes[row["id"]] = row
    relationships = database.read(
        "MATCH (a)-[r]->(b) WHERE elementId(a) IN $ids AND elementId(b) IN $ids "
        "RETURN elementId(a) AS a, elementId(b) AS b, type(r) AS type, properties(r) AS props",
        {"ids": list(nodes)},
    )
    return _Carried(list(nodes.values()), relationships)


def _write_carried(database: db.Database, carried: _Carried) -> None:
    created: dict[str, str] = {}
    for node in carried.nodes:
        labels = "".join(f":{_name(label)}" for label in node["labels"])
        row = database.write(f"CREATE (n{labels}) SET n = $props RETURN elementId(n) AS id", {"props": node["props"]})
        created[node["id"]] = row[0]["id"]
    for rel in carried.relationships:
        database.write(
            f"MATCH (a), (b) WHERE elementId(a) = $a AND elementId(b) = $b CREATE (a)-[r:{_name(rel['type'])}]->(b) "
            "SET r = $props",
            {"a": created[rel["a"]], "b": created[rel["b"]], "props": rel["props"]},
        )


def _name(name: str) -> str:
    """A label or relationship type as Cypher names it, whatever its characters."""
    return "`" + name.replace("`", "``") + "`"


def _swap(staged: list[StagedSnapshot], files: ImportFiles, seconds: dict[str, float], say: Say) -> int:
    """Steps 3 to 6 (see the module's docstring): how many nodes were carried over."""
    conn = check_managed()  # again: a rebuild of the same instance may have run meanwhile
    with db.connect(say=say, tidy=False) as database:
        _refuse_live_loads(database)
        carried = _read_carried(database)
    p = neo4j_server.paths()
    moves = [
        (p.store / conn.database, aside_dir() / "databases"),
        (p.tx_logs / conn.database, aside_dir() / "transactions"),
    ]
    phase = "stop"
    try:
        started = time.monotonic()
        say("stopping Neo4j for the import")
        neo4j_server.stop(say=say)
        aside_dir().mkdir(parents=True)
        (aside_dir() / "rebuild.json").write_text(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "at": _now(), "database": conn.database})
            + "\n"
        )
        for live, kept in moves:
            if live.exists():
                os.replace(live, kept)
        seconds["stop"] = time.monotonic() - started

        phase = "import"
        say(f"importing {files.elements:,} objects and references with neo4j-admin")
        seconds["import"] = run_import(p.instance, conn.database, files.arguments(), files.directory / "import.report")

        phase, started = "start", time.monotonic()
        neo4j_server.start(say=say)
        seconds["start"] = time.monotonic() - started

        phase, started = "indexes", time.monotonic()
        with db.connect(say=say, start_managed=False, tidy=False) as database:
            ensure_schema(database)  # populating the object indexes is most of this step
            seconds["indexes"] = time.monotonic() - started
            phase, started = "write", time.monotonic()
            _write_carried(database, carried)
            for snapshot in staged:
                write_groups(database, snapshot.sid, snapshot.groups, dropped=snapshot.dropped)
                write_listings(database, snapshot.sid, iter(snapshot.listings), len(snapshot.listings))
                write_hub_orders(database, snapshot.sid, snapshot.hubs)
                _write_snapshot(database, snapshot, seconds)
            seconds["write"] = time.monotonic() - started
            phase, started = "verify", time.monotonic()
            for snapshot in staged:
                verify(database, snapshot)
            seconds["verify"] = time.monotonic() - started
    except BaseException as error:
        _put_back(moves, say)
        if isinstance(error, Exception):  # Ctrl-C and exits go on as they are
            raise RebuildError(
                f"the rebuild failed at its {phase} step, and the old store is back in place, answering as before: "
                f"{error}"
            ) from error
        raise
    shutil.rmtree(aside_dir(), ignore_errors=True)
    return len(carried.nodes)


def _write_snapshot(database: db.Database, snapshot: StagedSnapshot, seconds: dict[str, float]) -> None:
    """The snapshot's node, last: ready, with its references, from this moment on."""
    now = _now()
    total = sum(seconds.values())
    database.write(
        "CREATE (n:Snapshot {sid: $sid, tag: $tag}) SET n += $props, n.status = 'ready', n.references_ready = true, "
        "n.references_written = $references, n.started_at = $now, n.ready_at = $now, n.loaded_at = $now, "
        "n.ready_seconds = $seconds, n.load_seconds = $seconds, n.rebuilt = true",
        {
            "sid": snapshot.sid,
            "tag": snapshot.tag,
            "props": snapshot.properties,
            "references": snapshot.references,
            "now": now,
            "seconds": total,
        },
    )


def verify(database: db.Database, snapshot: StagedSnapshot) -> None:
    """The rebuilt snapshot holds what its analysis said: counts, root, largest object."""
    row = database.read(
        "MATCH (s:Snapshot {sid: $sid, tag: $tag, status: 'ready'}) "
        "OPTIONAL MATCH (o:Object {sid: $sid}) "
        "WITH count(o) AS objects, sum(COUNT { (o)-->() }) AS references "
        "OPTIONAL MATCH (r:Object:Root {sid: $sid}) WITH objects, references, collect(r.id) AS roots "
        "OPTIONAL MATCH (t:Object {sid: $sid, rank: 1}) "
        "RETURN objects, references, roots, collect(t.id) AS tops",
        {"sid": snapshot.sid, "tag": snapshot.tag},
    )
    if not row:
        raise RebuildError(f"snapshot {snapshot.tag!r} is not listed after the import")
    found = row[0]
    expected = {
        "objects": snapshot.objects,
        "references": snapshot.references,
        "roots": [snapshot.root_id],
        "tops": [] if snapshot.top_id is None else [snapshot.top_id],
    }
    wrong = {k: (found[k], v) for k, v in expected.items() if found[k] != v}
    if wrong:
        said = ", ".join(f"{k} {got} where the analysis has {want}" for k, (got, want) in wrong.items())
        raise RebuildError(f"snapshot {snapshot.tag!r} was not imported whole: {said}")


def _put_back(moves: list[tuple[Path, Path]], say: Say) -> None:
    """Stop Neo4j, delete whatever the rebuild wrote, put the old store back and start again; the
    moves are not to be cut short by a second Ctrl-C.

    Neo4j starts after the signals are back: a process inherits the signals its parent ignores, and a
    Neo4j started meanwhile would ignore SIGTERM for good, so that `heapdb neo4j stop` could only kill
    it, after two minutes, and the next start would recover."""
    with _no_interrupts():
        say("putting the old store back")
        neo4j_server.stop(say=say)
        for live, kept in moves:
            if kept.exists():
                shutil.rmtree(live, ignore_errors=True)
                os.replace(kept, live)
        shutil.rmtree(aside_dir(), ignore_errors=True)
    neo4j_server.start(say=say)


@contextlib.contextmanager
def _no_interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM ignored meanwhile (in the main thread; elsewhere signals go there anyway)."""
    try:
        saved = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        saved = {}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
