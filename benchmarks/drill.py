"""A mixed-load drill: readers on every endpoint while snapshots are pushed, dropped, replaced, pruned and reanalysed.

Needs a managed Neo4j of its own holding the base snapshots (the drill adds, drops and prunes
snapshots: never point it at someone else's). With the private instance and the demo snapshots of
``benchmarks/service_load.py``'s docstring::

    python -m benchmarks.drill --snapshot demo-baseline=/tmp/bench/demo/baseline.heapsnapshot \\
        --snapshot demo-target=/tmp/bench/demo/target.heapsnapshot ... [--seconds 600]

It starts ``heapdb serve`` (with a write token of its own) and runs, for ``--seconds``:

- ``--clients`` readers, each with its own connection, asking back to back what phase 1 of
  ``benchmarks/service_load.py`` asks (:data:`~benchmarks.service_load.MIX`, over the full ready
  snapshots it knows), and refreshing its list of snapshots every ``--refresh`` seconds or so
  (``list``). Each time a reader sees a snapshot in a state it has not seen (a new load, its objects
  or references done, pruned), it checks that the snapshot is whole (below).
- One writer, at set points of the drill (:data:`PLAN`): ``heapdb push --wait`` of new snapshots
  (the ``--push`` files, by default the ``--snapshot`` files, under new tags), ``heapdb drop`` of
  one, a push with ``--replace`` of another (a different file under the same tag), ``heapdb prune``
  keeping the two newest pushed snapshots and every ``--snapshot`` tag full, and ``heapdb reanalyze``
  of one.

Every answer is classified: ``200``; the documented refusals, ``409`` (a load still writing what the
question reads) and ``503`` (Neo4j away, the load queue full); ``404`` and ``410`` for a snapshot the
writer dropped, pruned, replaced or reanalysed while it was asked, or shortly before (a reader's list
is up to ``--refresh`` seconds old, and the service remembers which load a tag names for a second),
which is expected; anything else (a timeout of the client's 10 s, a 500, a 404 of a snapshot nothing
touched) is an error.

"Whole": a snapshot listed ready answers ``types`` with every object its load counts (the sum of
the per-type counts equals what the analysis of its file counts: reachable objects, the root and
synthetic root kinds aside, see :attr:`~benchmarks.service_load.Target.counted`), ``top`` with as
many rows as asked, and ``why`` about the first of them (the objects top names are written before a
snapshot answers, docs/data-model.md, "When a snapshot answers"). A failed check of a snapshot the
writer touched meanwhile is counted apart (excused), as its tag may name another load by then.

Reported: the answers by class, per endpoint p50/p99 of the 200s, the checks and their violations,
the writer's operations with their durations (and when a pushed snapshot was first seen ready), and
the load average before, every 10 s during, and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from benchmarks.service_load import (
    Answer,
    Phase,
    Record,
    Service,
    Target,
    ask,
    by_window,
    read_targets,
    report,
    request_mix,
)
from heapdb import settings
from heapdb.queries.params import MAX_GROUP_LIMIT
from heapdb.service import links

DOCUMENTED = (409, 503)  # refusals the service documents (docs/operations.md, heapdb.errors)
GONE = (404, 410)  # expected for a snapshot dropped, pruned or replaced while it was asked
GRACE_SECONDS = 1.5  # beyond a reader's refresh: the service remembers which load a tag names for 1 s
TOP_ROWS = 10  # rows the visibility check asks top for
KEEP_PUSHED = 2  # the pushed snapshots `heapdb prune` keeps full


@dataclass(frozen=True)
class Step:
    """One operation of the writer: at which share of the drill it starts, what it does, to which
    pushed snapshot (its number) and with which ``--push`` file (its index)."""

    at: float
    op: str  # push, replace, drop, prune, reanalyze
    number: int = 0
    file: int = 0


# Spread over the drill so that the readers see each change under load, one at a time.
PLAN = (
    Step(0.02, "push", 1, 0),
    Step(0.12, "push", 2, 1),
    Step(0.22, "drop", 1),
    Step(0.32, "replace", 2, 2),
    Step(0.42, "push", 3, 0),
    Step(0.52, "push", 4, 1),
    Step(0.62, "prune"),
    Step(0.72, "reanalyze", 3),
    Step(0.82, "push", 5, 2),
    Step(0.92, "drop", 4),
)


@dataclass
class Operation:
    """What the writer did: its tags (for a prune, those it pruned), when (seconds since the drill
    began), whether it succeeded, and what it said."""

    op: str
    tags: tuple[str, ...]
    started: float
    ended: float | None = None
    ok: bool | None = None
    detail: str = ""


@dataclass
class Asked(Record):
    """A reader's request, with the tags it named."""

    tags: tuple[str, ...] = ()


@dataclass
class View:
    """One reader's knowledge: the full ready snapshots it asks about, and the states it has checked."""

    targets: list[Target] = field(default_factory=list)
    checked: set[tuple[Any, ...]] = field(default_factory=set)


class Drill:
    """The state the readers and the writer share, and what they do (see the module's docs)."""

    def __init__(self, base: str, token: str, files: list[Target], args: argparse.Namespace) -> None:
        self.base = base
        self.token = token
        self.args = args
        self.known = {t.object_count: t for t in files}  # a record's object count names its file
        self.phase = Phase()
        self.lock = self.phase.lock
        self.operations: list[Operation] = []
        self.suspects: list[dict[str, Any]] = []  # failed visibility checks, judged after the drill
        self.checks = 0
        self.first_seen: dict[tuple[str, int], float] = {}  # (tag, sid): when a reader first saw it ready
        self.load_averages: list[tuple[float, float]] = []
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.seconds

    def now(self) -> float:
        return time.monotonic() - self.t0

    # --- the readers

    def read_loop(self, index: int) -> None:
        rng = random.Random(self.args.seed * 1000 + index)
        view = View()
        next_list = 0.0
        with httpx.Client(base_url=self.base, timeout=10.0) as http:
            while time.monotonic() < self.deadline:
                if time.monotonic() >= next_list:
                    self.refresh(http, view)
                    next_list = time.monotonic() + self.args.refresh * rng.uniform(0.5, 1.5)
                if not view.targets:
                    time.sleep(0.1)
                    continue
                kind, url, params = request_mix(view.targets, rng)
                self.ask(http, kind, url, params, named(url, params, view.targets))

    def ask(
        self, http: httpx.Client, kind: str, url: str, params: dict, tags: tuple[str, ...], decode: bool = False
    ) -> Answer:
        answer = ask(http, url, params, decode)
        record = Asked(answer.started - self.t0, kind, answer.status, answer.ms, answer.json_error, tags)
        with self.lock:
            self.phase.records.append(record)
        if answer.status == 503:
            time.sleep(0.05)  # a client that sees 503 backs off a little, as real ones do
        return answer

    def refresh(self, http: httpx.Client, view: View) -> None:
        """The reader's list of snapshots anew; each snapshot in a state it has not seen is checked."""
        listed = self.ask(http, "list", links.SNAPSHOTS, {}, (), decode=True)
        if listed.body is None:
            return
        targets = []
        for record in listed.body:
            key = (record["tag"], record["sid"])
            with self.lock:
                self.first_seen.setdefault(key, listed.started - self.t0)
            state = (*key, record.get("summary"), record.get("objects_ready"), record.get("references_ready"))
            if state not in view.checked:
                view.checked.add(state)
                self.check_whole(http, record)
            known = self.known.get(record.get("object_count", -1))
            if known is not None and not record.get("summary"):
                targets.append(replace(known, tag=record["tag"]))
        view.targets = targets

    def check_whole(self, http: httpx.Client, record: dict[str, Any]) -> None:
        """Whether a snapshot listed ready answers whole (see the module's docs)."""
        tag = record["tag"]
        expected = self.counted(record)
        with self.lock:
            self.checks += 1
        types = self.ask(
            http,
            "visible types",
            links.path(links.TYPES, tag=tag),
            {"sort": "count", "limit": MAX_GROUP_LIMIT},
            (tag,),
            decode=True,
        )
        if types.status != 200:
            self.suspect(types, tag, f"types answered {types.status}")
        elif expected is not None:
            counted = sum(row["count"] for row in types.body)
            if counted != expected and not self.replaced(http, tag, record["sid"], counted):
                self.suspect(types, tag, f"types counted {counted:,} objects, its load {expected:,}")
        if record.get("summary"):
            return  # pruned: it answers types only
        top = self.ask(http, "visible top", links.path(links.TOP, tag=tag), {"limit": TOP_ROWS}, (tag,), decode=True)
        if top.status != 200 or not top.body:
            self.suspect(top, tag, f"top answered {top.status} with {len(top.body or [])} rows")
            return
        if len(top.body) != min(TOP_ROWS, expected or TOP_ROWS):
            self.suspect(top, tag, f"top answered {len(top.body)} rows of {TOP_ROWS}")
        first = top.body[0]["id"]
        why = self.ask(http, "visible why", links.path(links.WHY, tag=tag, object_id=first), {}, (tag,))
        if why.status != 200:
            self.suspect(why, tag, f"why about top's first object {first} answered {why.status}")

    def replaced(self, http: httpx.Client, tag: str, sid: int, counted: int) -> bool:
        """Whether the tag names another load by now, one that counts ``counted`` objects."""
        now = self.ask(http, "visible record", links.path(links.SNAPSHOT, tag=tag), {}, (tag,), decode=True)
        if now.body is None or now.body["sid"] == sid:
            return False
        return self.counted(now.body) == counted

    def counted(self, record: dict[str, Any]) -> int | None:
        """The objects a snapshot record's load counts per type, known from its file (None: unknown)."""
        known = self.known.get(record.get("object_count", -1))
        return None if known is None else known.counted

    def suspect(self, answer: Answer, tag: str, what: str) -> None:
        started = answer.started - self.t0
        with self.lock:
            self.suspects.append(
                {"tag": tag, "at_s": round(started, 1), "ended": started + answer.ms / 1000, "what": what}
            )

    # --- the writer

    def write_loop(self, files: list[str], prefix: str, keep: list[str]) -> None:
        for step in PLAN:
            start = self.t0 + step.at * self.args.seconds
            time.sleep(max(0.0, start - time.monotonic()))
            if time.monotonic() >= self.deadline:
                return
            tag = f"{prefix}-{step.number}"
            if step.op in ("push", "replace"):
                replacing = ["--replace"] if step.op == "replace" else []
                push = ["push", files[step.file % len(files)], "--tag", tag, "--server", self.base, "--wait", "--json"]
                self.operate(step.op, (tag,), [*push, *replacing])
            elif step.op == "drop":
                self.operate("drop", (tag,), ["drop", tag])
            elif step.op == "reanalyze":
                self.operate("reanalyze", (tag,), ["reanalyze", tag, "--json"])
            else:
                globs = [g for t in keep for g in ("--keep-tags-matching", t)]
                self.operate("prune", (), ["prune", "--keep-last", str(KEEP_PUSHED), *globs, "--json"])

    def operate(self, op: str, tags: tuple[str, ...], command: list[str]) -> None:
        """Run one ``heapdb`` command as the writer, timed; a prune's tags are those it pruned."""
        operation = Operation(op, tags, self.now())
        with self.lock:
            self.operations.append(operation)
        done = subprocess.run(
            [sys.executable, "-m", "heapdb", *command],
            capture_output=True,
            text=True,
            timeout=self.args.seconds + 600,
            env={**os.environ, settings.API_WRITE_TOKEN.name: self.token, settings.PROGRESS.name: "0"},
        )
        operation.ended, operation.ok = self.now(), done.returncode == 0
        operation.detail = (done.stderr if done.returncode else "").strip()[-500:]
        if op == "prune" and operation.ok:
            operation.tags = tuple(p["tag"] for p in json.loads(done.stdout)["pruned"])

    # --- judging

    def touched(self, tags: tuple[str, ...], start: float, end: float) -> bool:
        """Whether the writer changed what one of ``tags`` names around ``start``..``end``: from the
        operation's start to a reader's refresh (and the service's tag memory) after its end."""
        late = self.args.refresh * 1.5 + GRACE_SECONDS
        return any(
            o.op != "push"
            and set(o.tags) & set(tags)
            and o.started <= end
            and (o.ended is None or o.ended + late >= start)
            for o in self.operations
        )

    def verdict(self, record: Asked) -> str:
        if record.status == 200:
            return "200"
        if record.status in DOCUMENTED:
            return f"{record.status} (documented)"
        if record.status in GONE and self.touched(record.tags, record.started, record.started + record.ms / 1000):
            return f"{record.status} (snapshot changed while asked)"
        return f"{record.status or 'no answer'} (error)"

    def figures(self) -> dict[str, Any]:
        records: list[Asked] = self.phase.records  # type: ignore[assignment]
        verdicts = Counter(self.verdict(r) for r in records)
        errors = [r for r in records if self.verdict(r).endswith("(error)")]
        violations = [s for s in self.suspects if not self.touched((s["tag"],), s["at_s"], s["ended"])]
        summary = report(self.phase, self.args.seconds)
        return {
            "requests": summary["requests"],
            "per_second": summary["per_second"],
            "answers": dict(verdicts.most_common()),
            "errors": len(errors),
            "error_examples": [vars(r) for r in errors[:20]],
            "ms_200": summary["ms_200"],
            "by_kind": summary["by_kind"],
            "whole_checks": self.checks,
            "violations": violations,
            "excused": len(self.suspects) - len(violations),
            "operations": [self.operation_figures(o) for o in self.operations],
            "by_minute": by_window(self.phase, 60),
            "load_average_samples": self.load_averages,
        }

    def operation_figures(self, o: Operation) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": o.op,
            "tags": list(o.tags),
            "at_s": round(o.started, 1),
            "seconds": None if o.ended is None else round(o.ended - o.started, 1),
            "ok": o.ok,
        }
        if o.op in ("push", "replace", "reanalyze"):
            seen = [t for (tag, _sid), t in self.first_seen.items() if tag in o.tags and t >= o.started]
            out["first_seen_ready_s"] = round(min(seen) - o.started, 1) if seen else None
        if o.detail:
            out["detail"] = o.detail
        return out


def named(url: str, params: dict, targets: list[Target]) -> tuple[str, ...]:
    """The tags a request names, in its path or its parameters."""
    segments = set(url.split("/"))
    values: set[str] = set()
    for value in params.values():
        values.update(str(v) for v in (value if isinstance(value, list) else [value]))
    return tuple(t.tag for t in targets if links.encode_segment(t.tag) in segments or t.tag in values)


def sample_load(drill: Drill) -> None:
    """The 1-minute load average every 10 s of the drill."""
    while time.monotonic() < drill.deadline:
        drill.load_averages.append((round(drill.now()), os.getloadavg()[0]))
        time.sleep(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", action="append", required=True, metavar="TAG=FILE", help="a loaded base snapshot")
    parser.add_argument("--push", action="append", default=[], metavar="FILE", help="a file to push (repeat)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--refresh", type=float, default=2.0, help="seconds between a reader's listings (about)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--prefix", default=f"drill{int(time.time()) % 1_000_000}", help="the pushed snapshots' tags")
    parser.add_argument("--keep", action="store_true", help="leave the pushed snapshots (default: dropped at the end)")
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--service-log", default="/tmp/heapdb-drill.log")
    parser.add_argument(
        "--records",
        metavar="FILE",
        help="also write every request (start s, kind, status, ms), one JSON list a line, after one line with the clock",
    )
    args = parser.parse_args()
    if not os.environ.get("XDG_DATA_HOME", "").startswith("/tmp"):
        sys.exit("set XDG_DATA_HOME/XDG_CONFIG_HOME to a private managed instance under /tmp: the drill changes it")

    bases = read_targets(args.snapshot)
    pushed = args.push or [spec.partition("=")[2] for spec in args.snapshot[:3]]
    files = [*bases, *(Target.read(path, path) for path in args.push)]
    token = secrets.token_hex(16)
    service = Service.start(args.service_log, {settings.API_WRITE_TOKEN.name: token})
    before = os.getloadavg()
    try:
        service.wait_healthy()
        drill = Drill(service.base, token, files, args)
        readers = [threading.Thread(target=drill.read_loop, args=(i,), daemon=True) for i in range(args.clients)]
        writer = threading.Thread(target=drill.write_loop, args=(pushed, args.prefix, [t.tag for t in bases]))
        for thread in [*readers, writer, threading.Thread(target=sample_load, args=(drill,), daemon=True)]:
            thread.start()
        for thread in readers:
            thread.join(timeout=args.seconds + 60)
        writer.join()  # an operation under way runs to its end
        figures = {
            "seconds": args.seconds,
            "clients": args.clients,
            "load_average_before": before,
            "load_average_after": os.getloadavg(),
            **drill.figures(),
        }
    finally:
        service.stop()
    if not args.keep:
        for number in sorted({s.number for s in PLAN if s.number}):
            subprocess.run([sys.executable, "-m", "heapdb", "drop", f"{args.prefix}-{number}"], capture_output=True)
    print(json.dumps({k: v for k, v in figures.items() if k not in ("by_kind", "error_examples")}, indent=2))
    print(json.dumps(figures["by_kind"], indent=2))
    per_second = Counter(int(r.started) for r in drill.phase.records).values()
    print(f"median of per-second request counts: {statistics.median(per_second) if per_second else 0}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(figures, f, indent=2)
    if args.records:  # to line the slow answers up with what else happened (a load's writes, Neo4j's pauses)
        with open(args.records, "w") as f:
            f.write(json.dumps({"t0_unix": round(time.time() - drill.now(), 3)}) + "\n")  # the records' clock
            for r in drill.phase.records:
                f.write(json.dumps([round(r.started, 3), r.kind, r.status, round(r.ms, 1)]) + "\n")


if __name__ == "__main__":
    main()
