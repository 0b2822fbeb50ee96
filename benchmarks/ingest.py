"""Getting one snapshot into Neo4j, as a user sees it: first answer, full load, disk, memory, drop.

Everything runs against a managed Neo4j of the run's own (``heapdb neo4j`` under a temporary home,
free ports, heapdb's defaults for heap and page cache unless ``--heap``/``--pagecache``), so that its
store and transaction logs hold only this run's writes, and so that it can be restarted: Community
edition has no ``db.checkpoint()`` procedure, and store files only reach their size on disk at a
checkpoint, which a clean shutdown takes. On one snapshot file, in one run, each step a whole
``heapdb`` process as a user would run it:

1. ``heapdb analyze FILE``: the analysis-only time (reading and analysing, no Neo4j) and its peak
   memory, and the object the questions below ask about (the largest retainer).
2. ``heapdb load FILE --tag T --json``, timed from its start. Meanwhile this process polls the
   snapshot's status every half second; once it says ``ready`` it asks the real questions through the
   CLI (``why``, ``dominators``, ``top``, ``types``, ``suspects``; with ``--diff-with`` also ``diff``
   by type and by path and ``leaks`` by path), one after the other, each retried
   until it answers; and notes when every object is written (``objects_ready``). Reported: when each
   answered (seconds since the load started, the CLI's own start-up included) and when the load
   process ended. Every second a sampler records the store's size and the transaction logs' size on
   disk and the loader's resident memory (``/proc``); the loader's peak comes from ``wait4``.
   Then every question once more, and ``object`` (which needs the references).
3. A restart (the checkpoint), then the store's growth per stored element, ``(store bytes after -
   before) / (objects + references)``, with the growth of every store file.
4. ``heapdb drop T``: the time until it returns, and until the purger has freed the records (polled:
   no ``:Object`` and no ``:Snapshot`` of that load left). A restart, then the same file is loaded
   again under the same tag (the same measurements), to show whether the second load reuses the
   records the drop freed; then it is dropped again.
5. With ``--admin-import``, ``neo4j-admin database import full`` of the same objects and references
   into a scratch database (``benchmarks/load_neo4j.py``'s), the offline ceiling.
6. A Markdown table on stdout and, with ``--json PATH``, every figure and sample as JSON, with the
   load average before and after.

Run from the repository root (a 220 MB V8 snapshot takes about half an hour in all):

    .venv/bin/python -m benchmarks.ingest /tmp/snaps/b219/baseline.heapsnapshot --admin-import --json ingest.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from heapdb import config, db, neo4j_server, settings

HEAPDB = [sys.executable, "-m", "heapdb"]
POLL_SECONDS = 0.5


# --- disk and memory -----------------------------------------------------------------------------


def store_dir(database_name: str = "neo4j") -> Path:
    return neo4j_server.paths().data / "databases" / database_name


def txlog_dir(database_name: str = "neo4j") -> Path:
    return neo4j_server.paths().data / "transactions" / database_name


def file_sizes(root: Path) -> dict[str, int]:
    """Bytes of every file under ``root``, by path relative to it (files may vanish while we walk)."""
    sizes: dict[str, int] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                sizes[os.path.relpath(path, root)] = os.lstat(path).st_size
            except OSError:
                continue
    return sizes


# The store files by what they hold (Neo4j 5's record format: a node record is 15 bytes, a
# relationship record 34, a property record 41 with room for four 8-byte property blocks, a dynamic
# string or array record 128).
CATEGORIES = {
    "neostore.nodestore.db": "nodes",
    "neostore.nodestore.db.labels": "nodes",
    "neostore.propertystore.db": "properties",
    "neostore.propertystore.db.strings": "strings",
    "neostore.propertystore.db.arrays": "arrays",
    "neostore.relationshipstore.db": "relationships",
    "neostore.relationshipgroupstore.db": "relationship groups",
    "neostore.relationshipgroupstore.degrees.db": "relationship groups",
}


# Record sizes of the record stores, to count the records in use: a fresh store's files hold zeros
# where no record was ever written, and they grow in steps of 64 MiB, so on one snapshot the file
# sizes carry up to that much room per file. An index file is counted by its 8 KiB pages that are
# not all zeros.
RECORD_BYTES = {
    "neostore.nodestore.db": 15,
    "neostore.relationshipstore.db": 34,
    "neostore.propertystore.db": 41,
    "neostore.propertystore.db.strings": 128,
    "neostore.propertystore.db.arrays": 128,
    "neostore.relationshipgroupstore.db": 25,
}
PAGE_BYTES = 8192


def bytes_in_use(root: Path) -> dict[str, int]:
    """By category, the bytes of the records (or index pages) under ``root`` that are not all zeros:
    what a store that never freed a record holds, without the room its files keep ahead. Read with
    Neo4j stopped."""
    used: dict[str, int] = {}
    for relative in file_sizes(root):
        unit = RECORD_BYTES.get(relative) or (PAGE_BYTES if category(relative) == "indexes (schema/)" else 0)
        if not unit:
            continue
        raw = np.fromfile(root / relative, dtype=np.uint8)
        whole = raw[: raw.size - raw.size % unit].reshape(-1, unit)
        used[category(relative)] = used.get(category(relative), 0) + int(whole.any(axis=1).sum()) * unit
    return used


def category(relative: str) -> str:
    if relative.startswith("schema" + os.sep):
        return "indexes (schema/)"
    if relative.endswith(".id"):
        return "id files (*.id)"
    return CATEGORIES.get(relative, "other")


def by_category(sizes: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for relative, size in sizes.items():
        out[category(relative)] = out.get(category(relative), 0) + size
    return out


def growth(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in sorted(set(before) | set(after))}


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds a live process has used, from /proc (0 if it is gone)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def resident_bytes(pid: int) -> int:
    """A live process's resident memory now, from /proc (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Child:
    """A heapdb command in its own process, reaped with ``wait4`` for its exact peak resident memory."""

    def __init__(self, command: list[str], log: Path) -> None:
        self.command = command
        fd, self._out = tempfile.mkstemp(prefix="heapdb-ingest-", suffix=".out")
        with open(log, "a") as err:
            self.process = subprocess.Popen(HEAPDB + command, stdout=fd, stderr=err, text=True)
        os.close(fd)
        self.pid = self.process.pid
        self.exit_code: int | None = None
        self.peak_rss_bytes = 0
        self.cpu_seconds = 0.0

    def done(self, block: bool = False) -> bool:
        if self.exit_code is None:
            pid, status, usage = os.wait4(self.pid, 0 if block else os.WNOHANG)
            if pid == 0:
                return False
            self.exit_code = self.process.returncode = os.waitstatus_to_exitcode(status)
            self.peak_rss_bytes = usage.ru_maxrss * 1024  # kilobytes on Linux
            self.cpu_seconds = usage.ru_utime + usage.ru_stime
        return True

    def output(self) -> str:
        self.done(block=True)
        text = Path(self._out).read_text()
        os.unlink(self._out)
        if self.exit_code != 0:
            raise SystemExit(f"`heapdb {' '.join(self.command)}` failed (exit {self.exit_code})")
        return text


@dataclass
class Sample:
    t: float  # seconds since the run started
    phase: str
    store_bytes: int
    txlog_bytes: int
    rss_bytes: int  # of the process being watched (the loader), 0 when there is none
    neo4j_rss_bytes: int
    load_average: float  # the machine's, over the last minute


class Sampler(threading.Thread):
    """Every ``interval`` seconds: store size, transaction-log size, the watched process's memory."""

    def __init__(self, interval: float, started: float) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.started = started
        self.samples: list[Sample] = []
        self.phase = "idle"
        self.pid: int | None = None
        self._done = threading.Event()
        self._neo4j_pid: int | None = None

    def watch(self, phase: str, pid: int | None = None) -> None:
        self.phase, self.pid = phase, pid
        self._neo4j_pid = neo4j_server.running_pid()
        self.sample()

    def sample(self) -> None:
        rss = resident_bytes(self.pid) if self.pid is not None else 0
        neo4j_rss = resident_bytes(self._neo4j_pid) if self._neo4j_pid else 0
        self.samples.append(
            Sample(
                t=round(time.monotonic() - self.started, 2),
                phase=self.phase,
                store_bytes=sum(file_sizes(store_dir()).values()),
                txlog_bytes=sum(file_sizes(txlog_dir()).values()),
                rss_bytes=rss,
                neo4j_rss_bytes=neo4j_rss,
                load_average=os.getloadavg()[0],
            )
        )

    def run(self) -> None:
        while not self._done.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._done.set()
        self.join()

    def peak(self, phases: tuple[str, ...], key: str) -> int:
        return max((getattr(s, key) for s in self.samples if s.phase in phases), default=0)


# --- the questions ------------------------------------------------------------------------------


@dataclass
class Answer:
    question: str
    command: list[str]
    answered_after: float | None = None  # seconds since the load started until the CLI returned an answer
    seconds: float | None = None  # how long the answering command took, start-up included
    attempts: int = 0
    error: str = ""


def questions(tag: str, object_id: int, diff_with: str | None) -> dict[str, list[str]]:
    asked = {
        "why": ["why", tag, str(object_id)],
        "dominators": ["dominators", tag, str(object_id)],
        "top": ["top", tag],
        "types": ["types", tag],
        "suspects": ["suspects", tag],
    }
    if diff_with:
        asked["diff by type"] = ["diff", diff_with, tag, "--by", "type"]
        asked["diff by path"] = ["diff", diff_with, tag, "--by", "path"]
        asked["leaks by path"] = ["leaks", diff_with, tag, tag, "--by", "path"]
    return asked


def ask(command: list[str], timeout: float = 600) -> tuple[bool, float, str]:
    """Run one heapdb command; (answered, seconds, the error's last line)."""
    started = time.monotonic()
    try:
        done = subprocess.run(HEAPDB + command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - started, f"no answer in {timeout:.0f} s"
    seconds = time.monotonic() - started
    if done.returncode == 0 and done.stdout.strip():
        return True, seconds, ""
    lines = (done.stderr or done.stdout).strip().splitlines()
    return False, seconds, lines[-1] if lines else f"exit {done.returncode}"


def snapshot_state(database: db.Database, tag: str) -> dict[str, Any] | None:
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag}) WHERE s.status IN ['loading', 'ready'] "
        "RETURN s.sid AS sid, s.status AS status, s.objects_ready AS objects_ready, "
        "s.references_ready AS references_ready ORDER BY s.sid DESC LIMIT 1",
        {"tag": tag},
    )
    return rows[0] if rows else None


# --- one load ------------------------------------------------------------------------------------


@dataclass
class LoadRun:
    phase: str
    command: list[str]
    exit_code: int = 0
    wall_seconds: float = 0.0  # from the start of `heapdb load` until it exited
    ready_seen_after: float | None = None  # when this process first saw status 'ready'
    objects_seen_after: float | None = None  # when it first saw every object written (objects_ready)
    report: dict[str, Any] = field(default_factory=dict)  # `heapdb load --json`
    answers: list[Answer] = field(default_factory=list)
    loader_peak_rss_bytes: int = 0
    loader_cpu_seconds: float = 0.0
    neo4j_cpu_seconds: float = 0.0  # Neo4j's CPU time while the load ran
    txlog_peak_bytes: int = 0
    store_before: dict[str, int] = field(default_factory=dict)
    store_after: dict[str, int] = field(default_factory=dict)

    @property
    def elements(self) -> int:
        return int(self.report.get("objects", 0)) + int(self.report.get("references", 0))

    @property
    def store_growth(self) -> int:
        return sum(self.store_after.values()) - sum(self.store_before.values())

    @property
    def first_answer(self) -> Answer | None:
        answered = [a for a in self.answers if a.answered_after is not None]
        return min(answered, key=lambda a: a.answered_after or 0.0, default=None)

    def summary(self) -> dict[str, Any]:
        first = self.first_answer
        write_seconds = sum(v for k, v in self.report.get("seconds", {}).items() if k not in ("read", "analyse"))
        return {
            "phase": self.phase,
            "exit_code": self.exit_code,
            "wall_seconds": round(self.wall_seconds, 2),
            "ready_after_loader": self.report.get("ready_after"),
            "ready_seen_after": self.ready_seen_after,
            "objects_seen_after": self.objects_seen_after,
            "first_answer": first.question if first else None,
            "first_answer_after": first.answered_after if first else None,
            "phases": self.report.get("seconds", {}),
            "writer": self.report.get("writer"),
            "objects": self.report.get("objects"),
            "references": self.report.get("references"),
            "elements_per_second_whole": round(self.elements / self.wall_seconds) if self.wall_seconds else None,
            "elements_per_second_writing": round(self.elements / write_seconds) if write_seconds else None,
            "loader_peak_rss_bytes": self.loader_peak_rss_bytes,
            "loader_cpu_seconds": round(self.loader_cpu_seconds, 1),
            "neo4j_cpu_seconds": round(self.neo4j_cpu_seconds, 1),
            "txlog_peak_bytes": self.txlog_peak_bytes,
            "store_growth_bytes": self.store_growth,
            "store_bytes_per_element": round(self.store_growth / self.elements, 1) if self.elements else None,
            "store_growth_by_category": growth(by_category(self.store_before), by_category(self.store_after)),
            "store_growth_by_file": {k: v for k, v in growth(self.store_before, self.store_after).items() if v},
            "answers": [asdict(a) for a in self.answers],
        }


def settle(sampler: Sampler, why: str, in_use: dict[str, int] | None = None) -> dict[str, int]:
    """Restart Neo4j and return the store's files: a shutdown ends with a checkpoint, which gives every
    store file its size on disk (Community has no ``db.checkpoint()`` procedure). ``in_use``, when
    given, gets :func:`bytes_in_use` meanwhile."""
    sampler.watch(f"restart ({why})")
    started = time.monotonic()
    neo4j_server.stop()
    sizes = file_sizes(store_dir())
    if in_use is not None:
        in_use.update(bytes_in_use(store_dir()))
    neo4j_server.start(timeout=600)
    _say(f"restarted Neo4j ({why}) in {time.monotonic() - started:.1f} s")
    return sizes


def run_load(sampler: Sampler, phase: str, file: Path, tag: str, asked: dict[str, list[str]], log: Path) -> LoadRun:
    run = LoadRun(phase=phase, command=["load", str(file), "--tag", tag, "--json"])
    run.answers = [Answer(question=name, command=command) for name, command in asked.items()]
    neo4j_pid = neo4j_server.running_pid()
    neo4j_cpu = cpu_seconds(neo4j_pid)
    started = time.monotonic()
    child = Child(run.command, log)
    sampler.watch(phase, child.pid)

    def wait() -> None:
        child.done(block=True)
        run.wall_seconds = time.monotonic() - started
        run.neo4j_cpu_seconds = cpu_seconds(neo4j_pid) - neo4j_cpu
        run.exit_code = child.exit_code or 0
        sampler.watch(f"{phase} done")

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    pending = list(run.answers)
    with db.connect(start_managed=False) as database:
        while waiter.is_alive() or (pending and run.exit_code == 0):
            if run.ready_seen_after is None or run.objects_seen_after is None:
                state = snapshot_state(database, tag)
                if state and state["status"] == "ready" and run.ready_seen_after is None:
                    run.ready_seen_after = round(time.monotonic() - started, 2)
                    _say(f"{phase}: {tag!r} ready after {run.ready_seen_after:.1f} s; asking")
                if state and state["objects_ready"] is not False and state["status"] == "ready":
                    run.objects_seen_after = round(time.monotonic() - started, 2)
            if run.ready_seen_after is None or not pending:
                time.sleep(POLL_SECONDS)
                continue
            # One question at a time, each until it answers, so that they do not queue behind each other.
            answer = pending[0]
            answer.attempts += 1
            ok, seconds, error = ask(answer.command)
            if ok:
                answer.answered_after = round(time.monotonic() - started, 2)
                answer.seconds = round(seconds, 2)
                answer.error = ""
                pending.pop(0)
                _say(f"{phase}: {answer.question} answered at {answer.answered_after:.1f} s ({seconds:.1f} s)")
            else:
                answer.error = error
                if answer.attempts >= 20:
                    pending.pop(0)
                time.sleep(POLL_SECONDS)
    waiter.join()
    run.report = json.loads(child.output())
    run.loader_peak_rss_bytes = child.peak_rss_bytes
    run.loader_cpu_seconds = child.cpu_seconds
    run.txlog_peak_bytes = sampler.peak((phase,), "txlog_bytes")
    _say(f"{phase}: loaded in {run.wall_seconds:.1f} s")
    return run


def answers_now(asked: dict[str, list[str]]) -> list[Answer]:
    """Every question once, one after the other, with how long each took."""
    out = []
    for name, command in asked.items():
        ok, seconds, error = ask(command)
        out.append(Answer(question=name, command=command, seconds=round(seconds, 2), attempts=1, error=error))
    return out


def run_drop(sampler: Sampler, phase: str, tag: str, sid: int, log: Path) -> dict[str, Any]:
    sampler.watch(phase)
    with open(log, "a") as err:
        started = time.monotonic()
        done = subprocess.run([*HEAPDB, "drop", tag], stdout=subprocess.PIPE, stderr=err, text=True)
        returned = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"`heapdb drop {tag}` failed (exit {done.returncode}); see {log}")
    with db.connect(start_managed=False) as database:
        # The purger deletes the :Snapshot node last, once the objects and groups are gone.
        while database.read(
            "OPTIONAL MATCH (o:Object {sid: $sid}) WITH o LIMIT 1 OPTIONAL MATCH (s:Snapshot {sid: $sid}) "
            "WITH o, s WHERE o IS NOT NULL OR s IS NOT NULL RETURN 1 AS left LIMIT 1",
            {"sid": sid},
        ):
            time.sleep(POLL_SECONDS)
    freed = time.monotonic() - started
    _say(f"{phase}: returned after {returned:.1f} s, records freed after {freed:.1f} s")
    sampler.watch(f"{phase} done")
    return {
        "returned_after": round(returned, 2),
        "freed_after": round(freed, 2),
        "txlog_peak_bytes": sampler.peak((phase,), "txlog_bytes"),
    }


def admin_import(sampler: Sampler, file: Path, figures: dict[str, Any]) -> dict[str, Any]:
    """``neo4j-admin database import full`` of the same objects and references into a scratch
    database (offline, no indexes kept up during the import): the ceiling, in the same run."""
    from benchmarks.load_neo4j import bench_admin_import
    from heapdb.loader import analysis, formats

    sampler.watch("neo4j-admin import")
    graph = formats.detect(file).read_graph(file)
    result = analysis.analyze(graph)
    with tempfile.TemporaryDirectory(prefix="heapdb-ingest-admin-") as tmp:
        csv_seconds, seconds = bench_admin_import(graph, result, Path(tmp))
    sampler.watch("neo4j-admin import done")
    elements = graph.node_count + graph.edge_count
    _say(f"neo4j-admin import: {seconds:.1f} s ({elements / seconds:,.0f} objects + references per second)")
    return {
        "seconds": round(seconds, 2),
        "csv_seconds": round(csv_seconds, 2),
        "elements_per_second": round(elements / seconds),
    }


@contextlib.contextmanager
def private_neo4j(home: Path, heap: str, pagecache: str) -> Iterator[config.ManagedSettings]:
    """A managed Neo4j of this run's own under ``home`` (XDG directories, free ports), so that its store
    and transaction logs hold nothing but this run's writes and it can be restarted at will. The
    heapdb commands run by this benchmark inherit the environment and use it."""
    os.environ["XDG_DATA_HOME"] = str(home / "data")
    os.environ["XDG_CONFIG_HOME"] = str(home / "config")
    for variable in (settings.NEO4J_URI, settings.NEO4J_USER, settings.NEO4J_PASSWORD, settings.NEO4J_DATABASE):
        os.environ.pop(variable.name, None)
    with neo4j_server.running_on_free_ports(heap, pagecache, timeout=600) as managed:
        yield managed


# --- report --------------------------------------------------------------------------------------


def _say(message: str) -> None:
    print(f"[ingest] {message}", file=sys.stderr, flush=True)


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def markdown(figures: dict[str, Any]) -> str:
    loads = figures["loads"]
    drops = figures["drops"]
    analysis_seconds = figures["analyze"]["seconds"]
    lines = [
        f"{figures['file']}: {loads[0]['objects']:,} objects, {loads[0]['references']:,} references; "
        f"load average {figures['load_average_before']} before, {figures['load_average_after']} after",
        "",
        "| | " + " | ".join(load["phase"] for load in loads) + " |",
        "|---|" + "---:|" * len(loads),
    ]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("`heapdb analyze` (read + analysis, no Neo4j)", [f"{analysis_seconds:.1f} s"] + [""] * (len(loads) - 1))
    row("ready (the loader's `ready_after`)", [f"{load['ready_after_loader']:.1f} s" for load in loads])
    row(
        "first answer (CLI, since `heapdb load` started)",
        [
            f"{load['first_answer_after']:.1f} s ({load['first_answer']})" if load["first_answer"] else "none"
            for load in loads
        ],
    )
    row(
        "first answer / analysis",
        [f"{load['first_answer_after'] / analysis_seconds:.2f}" if load["first_answer"] else "-" for load in loads],
    )
    for name in [a["question"] for a in loads[0]["answers"]]:
        cells = []
        for load in loads:
            answer = next(a for a in load["answers"] if a["question"] == name)
            cells.append(
                f"{answer['answered_after']:.1f} s (took {answer['seconds']:.1f} s)"
                if answer["answered_after"] is not None and answer["seconds"] is not None
                else f"no answer: {answer['error']}"
            )
        row(f"&nbsp;&nbsp;`{name}` answered at", cells)
    row(
        "every object written (`objects_ready`, since `heapdb load` started)",
        [f"{load['objects_seen_after']:.1f} s" if load.get("objects_seen_after") else "-" for load in loads],
    )
    row("full load (`heapdb load` exits)", [f"{load['wall_seconds']:.1f} s" for load in loads])
    row("written through", [str(load["writer"]) for load in loads])
    row(
        "phases",
        [", ".join(f"{k} {v:.1f} s" for k, v in load["phases"].items()) for load in loads],
    )
    row(
        "objects + references per second, whole command",
        [f"{load['elements_per_second_whole']:,}" for load in loads],
    )
    row(
        "objects + references per second, writing only",
        [f"{load['elements_per_second_writing']:,}" for load in loads],
    )
    row("loader peak RSS", [mb(load["loader_peak_rss_bytes"]) for load in loads])
    row(
        "CPU seconds during the load: loader, Neo4j",
        [f"{load['loader_cpu_seconds']:.0f}, {load['neo4j_cpu_seconds']:.0f}" for load in loads],
    )
    row("transaction logs, peak during the load", [mb(load["txlog_peak_bytes"]) for load in loads])
    row("store growth (after a checkpoint)", [mb(load["store_growth_bytes"]) for load in loads])
    row("store bytes per object + reference", [f"{load['store_bytes_per_element']:.1f}" for load in loads])
    row(
        "bytes in use per object + reference (records and index pages not all zeros)",
        [f"{load['bytes_in_use_per_element']:.1f}" for load in loads],
    )
    if figures.get("neo4j_admin"):
        admin = figures["neo4j_admin"]
        row(
            "`neo4j-admin database import full` of the same graph (offline, scratch database)",
            [f"{admin['seconds']:.1f} s, {admin['elements_per_second']:,} per second"] + [""] * (len(loads) - 1),
        )
    if drops:
        row("`heapdb drop` returned after", [f"{d['returned_after']:.1f} s" for d in drops])
        row("records freed after", [f"{d['freed_after']:.1f} s" for d in drops])
        row("transaction logs, peak during the drop", [mb(d["txlog_peak_bytes"]) for d in drops])
        row(
            "store growth from the drop (after a checkpoint)",
            [mb(sum(d["store_growth_by_category"].values())) for d in drops],
        )
    if figures.get("after_load"):
        row(
            "questions once loaded, each (s)",
            [", ".join(f"{a['question']} {a['seconds']:.1f}" for a in figures["after_load"])] + [""] * (len(loads) - 1),
        )
    lines += ["", "Store growth by file (first load, after a checkpoint):", "", "| store | bytes | per element |"]
    lines.append("|---|---:|---:|")
    first = loads[0]
    for name, size in sorted(first["store_growth_by_category"].items(), key=lambda kv: -kv[1]):
        if size:
            lines.append(f"| {name} | {size:,} | {size / (first['objects'] + first['references']):.1f} |")
    return "\n".join(lines)


def uptime() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path)
    parser.add_argument("--tag", default="bench-ingest")
    parser.add_argument(
        "--diff-with", type=Path, metavar="FILE", help="load this first and also time diff FILE -> file"
    )
    parser.add_argument("--heap", default="", help="the private Neo4j's heap (default: heapdb's default)")
    parser.add_argument("--pagecache", default="", help="its page cache (default: heapdb's default)")
    parser.add_argument("--home", type=Path, help="where the private Neo4j lives (default: a temporary directory)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between disk and memory samples")
    parser.add_argument("--no-reload", action="store_true", help="skip the second load after the drop")
    parser.add_argument(
        "--no-drop", action="store_true", help="load once and stop: no drop, no second load (for very big heaps)"
    )
    parser.add_argument(
        "--admin-import", action="store_true", help="also time neo4j-admin's offline import of the same graph"
    )
    parser.add_argument("--json", dest="json_out", type=Path, help="also write every figure and sample here")
    args = parser.parse_args()
    file = args.file.resolve()
    home = args.home or Path(tempfile.mkdtemp(prefix="heapdb-ingest-"))
    log = home / "commands.log"
    figures: dict[str, Any] = {"file": str(file), "file_bytes": file.stat().st_size, "load_average_before": uptime()}
    _say(f"load average {figures['load_average_before']}; Neo4j and the commands' stderr under {home}")

    try:
        with private_neo4j(home, args.heap, args.pagecache) as settings:
            figures["neo4j"] = {
                "version": neo4j_server.NEO4J_VERSION,
                "heap": settings.heap,
                "pagecache": settings.pagecache,
            }
            run_all(args, file, log, figures)
    finally:
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)
    figures["load_average_after"] = uptime()
    print(markdown(figures))
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=2))


def run_all(args: argparse.Namespace, file: Path, log: Path, figures: dict[str, Any]) -> None:
    with open(file, "rb") as f:  # the same warm file cache for analyze and load
        while f.read(1 << 24):
            pass
    sampler = Sampler(args.interval, time.monotonic())
    sampler.start()

    analyze_started = time.monotonic()
    child = Child(["analyze", str(file), "--json", "--top", "1"], log)
    sampler.watch("analyze", child.pid)
    child.done(block=True)
    figures["analyze"] = {
        "seconds": round(time.monotonic() - analyze_started, 2),
        "peak_rss_bytes": child.peak_rss_bytes,
    }
    sampler.watch("analyze done")
    analysed = json.loads(child.output())
    object_id = int(analysed["top_retainers"][0]["id"])
    figures["asked_about"] = analysed["top_retainers"][0]
    _say(f"analyze: {figures['analyze']['seconds']:.1f} s; asking about object {object_id}")

    diff_with = None
    if args.diff_with:
        diff_with = f"{args.tag}-before"
        Child(["load", str(args.diff_with.resolve()), "--tag", diff_with, "--json"], log).output()
    asked = questions(args.tag, object_id, diff_with)

    loads: list[dict[str, Any]] = []
    drops: list[dict[str, Any]] = []
    used: dict[str, int] = {}
    store = settle(sampler, "before the first load", used)
    for phase in ("first load", "second load, after the drop")[: 1 if args.no_reload or args.no_drop else 2]:
        run = run_load(sampler, phase, file, args.tag, asked, log)
        if not loads:
            asked_once = {**asked, "object": ["object", args.tag, str(object_id)]}
            figures["after_load"] = [asdict(a) for a in answers_now(asked_once)]
        used_after: dict[str, int] = {}
        run.store_before, run.store_after = store, settle(sampler, f"after the {phase}", used_after)
        loads.append(run.summary())
        grown = growth(used, used_after)
        loads[-1]["bytes_in_use_growth_by_category"] = grown
        loads[-1]["bytes_in_use_per_element"] = round(sum(grown.values()) / run.elements, 1) if run.elements else None
        used = used_after
        if args.no_drop:
            break
        drops.append(run_drop(sampler, f"drop after the {phase}", args.tag, run.report["sid"], log))
        store = settle(sampler, f"after the drop after the {phase}")
        drops[-1]["store_bytes_after"] = sum(store.values())
        drops[-1]["store_growth_by_category"] = growth(by_category(run.store_after), by_category(store))
    if args.admin_import:
        figures["neo4j_admin"] = admin_import(sampler, file, figures)
    sampler.stop()
    figures["loads"] = loads
    figures["drops"] = drops
    figures["samples"] = [asdict(s) for s in sampler.samples]


if __name__ == "__main__":
    main()
