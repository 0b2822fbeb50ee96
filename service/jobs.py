"""Load jobs: snapshots uploaded to the service, each loaded by ``heapdb load`` in a child process.

A job is a ``:Job`` node in Neo4j (:class:`JobStore`), so it outlives the service process, every
replica of the service sees it, and it is backed up with the snapshots it made. Its ``phase`` goes
``queued`` -> ``reading`` -> ``analysing`` -> ``writing objects`` -> ``references`` -> ``done``,
or ends ``failed`` (with ``error``) or ``cancelled``; ``progress`` is the share of the current phase
done (0 to 1).

:class:`JobRunner` runs them: a pool of ``HEAPDB_MAX_LOADS`` threads, each starting one child
process at a time (``python -m heapdb.service.loadproc``: the CLI's own ``heapdb load``) and
following it: its progress bars write their state to a file (:data:`heapdb.progress.PROGRESS_FILE_VARIABLE`)
that the thread copies into the job. A load is memory-hungry and runs native code; in a child of its
own it cannot take the service down, gives all its memory back when it ends, and can be stopped
alone (cancel: SIGINT, then SIGKILL after :data:`CANCEL_GRACE_SECONDS`). The load's lifecycle
(:mod:`heapdb.loader.store.lifecycle`) makes sure an interrupted one leaves nothing visible.

When the service dies (even with -9) its children die with it (``PR_SET_PDEATHSIG``); at the next
start :meth:`JobRunner.recover` marks the jobs it was running failed, hides their partial loads
(:func:`~heapdb.loader.store.lifecycle.tidy`), queues again the jobs that had not started, and
removes spool files no job needs. Jobs belong to a host: the spool files are local.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from heapdb import settings
from heapdb.db import Database
from heapdb.errors import LoadError, NotFound
from heapdb.loader.redaction import required
from heapdb.loader.store import lifecycle
from heapdb.processes import pid_alive
from heapdb.progress import PROGRESS_FILE_VARIABLE
from heapdb.service.pressure import Pressure

QUEUED = "queued"
RUNNING = ("reading", "analysing", "writing objects", "references")
ENDED = ("done", "failed", "cancelled")
PHASES = (QUEUED, *RUNNING, *ENDED)

POLL_SECONDS = 0.5  # how often a running load's progress is looked at
UPDATE_SECONDS = 1.0  # how often, at most, a job's progress is written to Neo4j
CANCEL_GRACE_SECONDS = 30  # after SIGINT, how long a load may take to hide its snapshot before SIGKILL
JOBS_LISTED = 100  # newest jobs GET /api/jobs lists
LOG_TAIL_BYTES = 65_536  # how much of a failed load's stderr is searched for its error

_SCHEMA = "CREATE CONSTRAINT heapdb_job_id IF NOT EXISTS FOR (j:Job) REQUIRE j.id IS UNIQUE"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Job:
    """One upload's load, as its ``:Job`` node holds it."""

    id: str
    tag: str
    phase: str
    created_at: str
    host: str
    service_pid: int
    replace: bool = False
    bytes: int = 0  # the snapshot's size, decompressed
    format: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    name: str = ""  # the uploaded file's name as its sender gave it: the snapshot's source
    progress: float | None = None
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    pid: int | None = None  # the load's process, while it runs
    report: dict[str, Any] | None = None  # `heapdb load --json`'s report, when done

    @classmethod
    def from_node(cls, node: dict[str, Any]) -> Job:
        known = {k: v for k, v in node.items() if k in cls.__dataclass_fields__}
        known["meta"] = json.loads(node.get("meta") or "{}")
        known["report"] = json.loads(node["report"]) if node.get("report") else None
        return cls(**known)

    def node(self) -> dict[str, Any]:
        properties = {k: v for k, v in asdict(self).items() if v is not None}
        properties["meta"] = json.dumps(self.meta, sort_keys=True)
        if self.report is not None:
            properties["report"] = json.dumps(self.report)
        return properties

    @property
    def ended(self) -> bool:
        return self.phase in ENDED

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class JobStore:
    """The ``:Job`` nodes. ``database`` opens (or returns) the service's database."""

    def __init__(self, database: Callable[[], Database]) -> None:
        self._database = database
        self._schema = False

    def db(self) -> Database:
        database = self._database()
        if not self._schema:
            database.write(_SCHEMA)
            self._schema = True
        return database

    def create(self, job: Job) -> None:
        self.db().write("CREATE (j:Job) SET j = $props", {"props": job.node()})

    def get(self, job_id: str) -> Job:
        rows = self.db().read("MATCH (j:Job {id: $id}) RETURN properties(j) AS j", {"id": job_id})
        if not rows:
            raise NotFound(f"no load job {job_id!r}")
        return Job.from_node(rows[0]["j"])

    def recent(self, tag: str | None = None, limit: int = JOBS_LISTED) -> list[Job]:
        rows = self.db().read(
            "MATCH (j:Job) WHERE $tag IS NULL OR j.tag = $tag "
            "RETURN properties(j) AS j ORDER BY j.created_at DESC, j.id LIMIT $limit",
            {"tag": tag, "limit": limit},
        )
        return [Job.from_node(r["j"]) for r in rows]

    def active(self, tag: str) -> Job | None:
        """A job of this tag that has not ended, if any."""
        rows = self.db().read(
            "MATCH (j:Job {tag: $tag}) WHERE NOT j.phase IN $ended RETURN properties(j) AS j LIMIT 1",
            {"tag": tag, "ended": list(ENDED)},
        )
        return Job.from_node(rows[0]["j"]) if rows else None

    def unfinished_here(self) -> list[Job]:
        """The jobs of this host that have not ended."""
        rows = self.db().read(
            "MATCH (j:Job {host: $host}) WHERE NOT j.phase IN $ended RETURN properties(j) AS j",
            {"host": socket.gethostname(), "ended": list(ENDED)},
        )
        return [Job.from_node(r["j"]) for r in rows]

    def update(self, job_id: str, changes: dict[str, Any], *, phases: tuple[str, ...] | None = None) -> bool:
        """Set properties of a job (None removes one), only while its phase is one of ``phases``
        (any phase but an ended one by default). Returns whether the job was changed."""
        rows = self.db().write(
            "MATCH (j:Job {id: $id}) WHERE j.phase IN $phases SET j += $changes RETURN j.id AS id",
            {"id": job_id, "changes": changes, "phases": list(phases or (QUEUED, *RUNNING))},
        )
        return bool(rows)

    def finish(self, job_id: str, phase: str, error: str | None = None, report: dict[str, Any] | None = None) -> None:
        changes: dict[str, Any] = {"phase": phase, "finished_at": _now(), "pid": None, "error": error}
        if phase == "done":
            changes["progress"] = 1.0
        if report is not None:
            changes["report"] = json.dumps(report)
        self.update(job_id, changes)


def phase_of(bar: str) -> str | None:
    """The job phase a progress bar of ``heapdb load`` belongs to (see heapdb.cli.steps and the writer)."""
    if bar.startswith("read "):
        return "reading"
    if bar == "analyse":
        return "analysing"
    if bar == "write references":
        return "references"
    if bar.startswith("write "):  # objects, path and type groups, type listings
        return "writing objects"
    return None


def load_error(log: Path, snapshot: Path, returncode: int) -> str:
    """Why a load failed, from the end of its stderr: its ``heapdb: error:`` line, the spool path
    said as "the uploaded snapshot"."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    for line in reversed(lines):
        for prefix in ("heapdb: error: ", "heapdb: internal error: "):
            if line.startswith(prefix):
                text = line[len("heapdb: error: ") :] if prefix == "heapdb: error: " else line[len("heapdb: ") :]
                return lifecycle.failure_text(text.replace(str(snapshot), "the uploaded snapshot"))
    said = f"the load was killed by {signal.Signals(-returncode).name}" if returncode < 0 else ""
    said = said or f"the load exited with status {returncode}"
    last = [line for line in lines if line.strip()][-3:]
    if last:  # not one of heapdb's own errors: what it printed last says more than the status
        said += ": " + " | ".join(last).replace(str(snapshot), "the uploaded snapshot")
    return lifecycle.failure_text(said)


class JobRunner:
    """Runs the jobs of one service process: at most ``loads`` at once, the rest wait queued."""

    def __init__(self, database: Callable[[], Database], spool: Path, loads: int) -> None:
        self.store = JobStore(database)
        self._database = database
        self.spool = spool
        self.loads = loads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()  # the children and cancel requests, and a job's start
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self._cancelled: set[str] = set()
        self._stopping = False
        self._started = float("inf")  # when start() ran (time.time()): spool files since are this service's
        self._pressure: Pressure | None = None  # from start(): how busy the service is, for its loads

    # Files of a job in the spool directory; all removed when the job ends.
    def snapshot_file(self, job_id: str) -> Path:
        return self.spool / f"{job_id}.snapshot"

    def _files(self, job_id: str) -> list[Path]:
        return [self.spool / f"{job_id}.{suffix}" for suffix in ("snapshot", "progress", "progress.tmp", "log", "out")]

    def _clean(self, job_id: str) -> None:
        for path in self._files(job_id):
            path.unlink(missing_ok=True)

    def start(self) -> None:
        """Start the pool, and recover what a previous service process left (in the background:
        the service answers while Neo4j is still away, and recovery retries until it is back)."""
        self.spool.mkdir(parents=True, exist_ok=True)
        self._started = time.time()
        self._pool = ThreadPoolExecutor(self.loads, thread_name_prefix="heapdb-load")
        self._pressure = Pressure()
        threading.Thread(target=self._recover_until_done, name="heapdb-job-recovery", daemon=True).start()

    def _recover_until_done(self) -> None:
        while not self._stopping:
            try:
                self.recover()
                return
            except Exception as e:  # Neo4j away: try again, the jobs wait
                print(f"heapdb: cannot recover load jobs yet ({type(e).__name__}: {e}); retrying", file=sys.stderr)
                time.sleep(5)

    def recover(self) -> None:
        """Settle the jobs of service processes of this host that are gone (see the module's docstring)."""
        me = os.getpid()
        for job in self.store.unfinished_here():
            if job.service_pid == me or pid_alive(job.service_pid):
                continue  # ours, or another live service's on this host
            if job.phase == QUEUED and self.snapshot_file(job.id).exists():
                taken = self.store.update(job.id, {"service_pid": me}, phases=(QUEUED,))
                if taken:
                    self.submit(job.id)
                continue
            if job.pid is not None:  # its load dies with the service: wait for that, so tidy sees it gone
                deadline = time.monotonic() + 10
                while pid_alive(job.pid) and time.monotonic() < deadline:
                    time.sleep(0.1)
            self._clean(job.id)
            self.store.finish(
                job.id,
                "failed",
                f"the service (pid {job.service_pid}) stopped while this job was {job.phase}; "
                "its partial load was hidden: upload the snapshot again",
            )
        lifecycle.tidy(self._database())
        self._remove_orphans()

    def _remove_orphans(self) -> None:
        """Spool files of no unfinished job: uploads cut off by a dead service, loads whose job ended.

        Never a file written since this service started: recovery runs while the service already
        takes uploads, and one that arrived after the jobs were listed is no orphan."""
        live = {j.id for j in self.store.unfinished_here()}
        for path in self.spool.iterdir():
            try:
                if path.stat().st_mtime >= self._started:
                    continue
            except FileNotFoundError:  # its job ended meanwhile and took it
                continue
            job_id, _, rest = path.name.partition(".")
            if rest.endswith("upload"):  # <id>.<pid>.upload: being received by that service
                pid = rest.split(".")[0]
                if pid.isdigit() and pid_alive(int(pid)):
                    continue
            elif job_id in live:
                continue
            path.unlink(missing_ok=True)

    def submit(self, job_id: str) -> None:
        assert self._pool is not None, "JobRunner.start() first"
        self._pool.submit(self._run, job_id)

    def cancel(self, job_id: str) -> Job:
        """Stop a job: a queued one ends cancelled at once, a running one once its load has stopped."""
        job = self.store.get(job_id)
        if job.ended:
            raise LoadError(f"load job {job_id} has ended already ({job.phase})")
        with self._lock:
            child = self._children.get(job_id)
            if child is None:
                if self.store.update(job_id, {"phase": "cancelled", "finished_at": _now()}, phases=(QUEUED,)):
                    self._clean(job_id)
                    return self.store.get(job_id)
                raise LoadError(
                    f"load job {job_id} runs in another service process (pid {job.service_pid} on {job.host}): "
                    "cancel it there"
                )
            self._cancelled.add(job_id)
            child.send_signal(signal.SIGINT)  # the load hides its snapshot and exits
        threading.Thread(target=self._kill_after_grace, args=(child,), daemon=True).start()
        return self.store.get(job_id)

    @staticmethod
    def _kill_after_grace(child: subprocess.Popen[bytes]) -> None:
        try:
            child.wait(CANCEL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()

    def stop(self) -> None:
        """On the service's shutdown: stop the loads running (their jobs fail); queued jobs stay
        queued for the next start."""
        with self._lock:
            self._stopping = True
            children = list(self._children.values())
        for child in children:
            child.send_signal(signal.SIGINT)
        for child in children:
            self._kill_after_grace(child)
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._pressure is not None:
            self._pressure.close()

    def _run(self, job_id: str) -> None:
        try:
            self._run_load(job_id)
        except Exception as e:  # Neo4j away, or a bug: the job must still end, and its files go
            self._clean(job_id)
            with contextlib.suppress(Exception):
                self.store.finish(job_id, "failed", f"internal error while running the load: {type(e).__name__}: {e}")

    def _run_load(self, job_id: str) -> None:
        job = self.store.get(job_id)
        snapshot = self.snapshot_file(job_id)
        if job.phase != QUEUED or self._stopping:
            if job.ended:
                self._clean(job_id)
            return
        command = [sys.executable, "-m", "heapdb.service.loadproc", str(os.getpid()), str(snapshot)]
        command += ["--tag", job.tag, "--source", job.name, "--json", *(["--replace"] if job.replace else [])]
        if required():  # HEAPDB_REDACT=always: the file must say its sender redacted it (the load redacts too)
            command.append("--only-redacted")
        for key, value in job.meta.items():
            command += ["--meta", f"{key}={value}"]
        progress = self.spool / f"{job_id}.progress"
        env = {
            **os.environ,
            **self._database().connection.environment(),
            PROGRESS_FILE_VARIABLE: str(progress),
            **({} if self._pressure is None else {settings.BUSY_FILE.name: str(self._pressure.file)}),
        }
        log, out = self.spool / f"{job_id}.log", self.spool / f"{job_id}.out"
        with open(log, "wb") as log_file, open(out, "wb") as out_file:
            with self._lock:
                if not self.store.update(
                    job_id, {"phase": "reading", "progress": 0.0, "started_at": _now()}, phases=(QUEUED,)
                ):
                    return  # cancelled meanwhile
                child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out_file, stderr=log_file, env=env)
                self._children[job_id] = child
            self.store.update(job_id, {"pid": child.pid})
            with self._pressure.running() if self._pressure is not None else contextlib.nullcontext():
                self._follow(job_id, child, progress)
        with self._lock:
            self._children.pop(job_id, None)
            cancelled = job_id in self._cancelled
            self._cancelled.discard(job_id)
        # The spool files go before the job says it ended: an ended job has nothing left on disk.
        if child.returncode == 0:
            report = json.loads(out.read_text())
            self._clean(job_id)
            self.store.finish(job_id, "done", report=report)
            return
        lifecycle.tidy(self._database())  # a load killed before it could hide its snapshot
        error = load_error(log, snapshot, child.returncode)
        self._clean(job_id)
        if cancelled:
            self.store.finish(job_id, "cancelled")
        elif self._stopping:
            self.store.finish(job_id, "failed", "the service stopped during the load: upload the snapshot again")
        else:
            self.store.finish(job_id, "failed", error)

    def _follow(self, job_id: str, child: subprocess.Popen[bytes], progress: Path) -> None:
        """Wait for the load, copying its progress into the job now and then."""
        shown: tuple[str, float] | None = None
        written = 0.0
        while True:
            try:
                child.wait(POLL_SECONDS)
                return
            except subprocess.TimeoutExpired:
                pass
            try:
                state = json.loads(progress.read_text())
            except (OSError, ValueError):
                continue
            phase = phase_of(str(state.get("phase", "")))
            if phase is None:
                continue
            total = state.get("total") or 0
            share = round(min(1.0, state.get("done", 0) / total), 3) if total else 0.0
            if (phase, share) != shown and (
                shown is None or phase != shown[0] or time.monotonic() - written >= UPDATE_SECONDS
            ):
                self.store.update(job_id, {"phase": phase, "progress": share}, phases=RUNNING)
                shown, written = (phase, share), time.monotonic()


def new_job(job_id: str, tag: str, *, replace: bool, size: int, fmt: str, meta: dict[str, str], name: str = "") -> Job:
    """A queued job of this service process."""
    return Job(
        id=job_id,
        tag=tag,
        phase=QUEUED,
        created_at=_now(),
        host=socket.gethostname(),
        service_pid=os.getpid(),
        replace=replace,
        bytes=size,
        format=fmt,
        meta=meta,
        name=name,
        progress=0.0,
    )
