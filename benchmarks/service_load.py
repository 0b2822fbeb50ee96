"""A bounded load test of every ``heapdb serve`` endpoint on loopback, then the same with Neo4j stopped mid-run.

Needs a managed Neo4j of its own holding the snapshots (never point this at someone else's: phase 2
stops it). With a private instance under temporary XDG directories::

    export XDG_DATA_HOME=/tmp/bench/data XDG_CONFIG_HOME=/tmp/bench/config
    heapdb neo4j install --bolt-port auto --http-port auto && heapdb neo4j start
    node tests/js/leak.js /tmp/bench/demo 200 1200 2200 3200
    for m in baseline target final step-3; do heapdb load /tmp/bench/demo/$m.heapsnapshot --tag demo-$m; done
    python -m benchmarks.service_load --snapshot demo-baseline=/tmp/bench/demo/baseline.heapsnapshot \
        --snapshot demo-target=/tmp/bench/demo/target.heapsnapshot ...

``--snapshot TAG=FILE`` names each loaded snapshot and the file it was loaded from, oldest first (the
files give the object ids, types and names the clients ask about). Every endpoint is asked (see
:data:`MIX`): object questions about objects drawn uniformly from all those the root reaches, in a
snapshot drawn uniformly, so nearly every one is asked for the first time and the service's answer
cache rarely helps; ``find`` for the type of such an object, half the time with a part of its name;
diff between consecutive snapshots, leaks over the first three, growth over all of them.

Before phase 1 Neo4j's page cache is warmed (each snapshot's objects and references read once) and
each snapshot's top, types and suspects, and every variant of diff, leaks and growth the clients
ask, are asked once, one at a time (their first-answer times are reported; the service remembers
answers per snapshot load). Phase 1: ``--clients`` threads, each with its own HTTP
connection, send requests back to back for ``--seconds``. Every request has a 10 s timeout; the run
stops at the time limit or after ``--max-requests``, whichever comes first. Phase 2 does the same
while Neo4j is stopped (``heapdb neo4j stop``, 15 s in) and started again (15 s after it stopped),
and reports what the clients saw second by second.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from heapdb import neo4j_server
from heapdb.loader import analysis, formats
from heapdb.service import links


@dataclass
class Record:
    started: float  # seconds since the phase began
    kind: str
    status: int  # 0: no HTTP answer (timeout, connection error)
    ms: float
    json_error: bool = False  # a non-200 answer with a JSON {"error": ...} body


@dataclass
class Phase:
    records: list[Record] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Target:
    """One loaded snapshot and what the clients may ask about it, drawn from its file."""

    tag: str
    ids: np.ndarray  # int64: the objects the root reaches (the root itself aside)
    types: np.ndarray  # object[]: each of those objects' type
    names: np.ndarray  # object[]: and name
    object_count: int = 0  # the objects in the file, as its snapshot's record counts them
    counted: int = 0  # those the per-type totals count: reachable, the root and synthetic root kinds aside

    @classmethod
    def read(cls, tag: str, file: str) -> Target:
        graph = formats.read_graph(file)
        result = analysis.analyze(graph)
        picked = np.flatnonzero(result.reachable & (result.distance > 0))
        strings = np.array(graph.strings, dtype=object)
        counted = result.reachable & ~graph.synthetic_nodes()
        counted[graph.root] = False
        return cls(
            tag,
            graph.ids[picked],
            strings[graph.type[picked]],
            strings[graph.name[picked]],
            graph.node_count,
            int(counted.sum()),
        )


# Each endpoint and variant with its share of the requests. Object questions and find dominate, as
# they do when people investigate; the cross-snapshot reports and the listings are asked less often.
MIX: dict[str, float] = {
    "why": 0.22,
    "why svg": 0.02,
    "object": 0.10,
    "find": 0.14,
    "dominators": 0.06,
    "retains": 0.06,
    "top": 0.08,
    "types": 0.06,
    "suspects": 0.03,
    "diff type": 0.03,
    "diff path": 0.03,
    "diff object": 0.02,
    "leaks id": 0.02,
    "leaks path": 0.02,
    "growth type": 0.015,
    "growth path": 0.015,
    "snapshot": 0.01,
    "snapshots": 0.01,
    "health": 0.01,
    "queries": 0.01,
    "stored query": 0.01,
}


def request_mix(targets: list[Target], rng: random.Random) -> tuple[str, str, dict]:
    """One request drawn from :data:`MIX`: its kind, path and query parameters."""
    kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
    target = rng.choice(targets)
    snapshot = links.path(links.SNAPSHOT, tag=target.tag)
    pick = rng.randrange(target.ids.size)
    object_id = int(target.ids[pick])
    obj = links.path(links.OBJECT, tag=target.tag, object_id=object_id)
    tags = [t.tag for t in targets]
    step = rng.randrange(len(targets) - 1) if len(targets) > 1 else 0
    before, after = tags[step], tags[min(step + 1, len(tags) - 1)]
    diff = links.path(links.DIFF, before=before, after=after)
    three = {"baseline": tags[0], "target": tags[min(1, len(tags) - 1)], "final": tags[min(2, len(tags) - 1)]}
    if kind == "why":
        return kind, links.path(links.WHY, tag=target.tag, object_id=object_id), {}
    if kind == "why svg":
        return kind, links.path(links.WHY, tag=target.tag, object_id=object_id), {"format": "svg"}
    if kind == "object":
        return kind, obj, {}
    if kind == "find":
        name = str(target.names[pick])
        # Half of the searches narrow by a part of a real object's name, half ask for a whole type.
        part = name[: rng.randint(1, 6)] if name and rng.random() < 0.5 else ""
        return (
            kind,
            links.path(links.FIND, tag=target.tag),
            {"type": str(target.types[pick]), "name_contains": part, "limit": 10},
        )
    if kind == "dominators":
        return kind, links.path(links.DOMINATORS, tag=target.tag, object_id=object_id), {}
    if kind == "retains":
        return (
            kind,
            links.path(links.RETAINS, tag=target.tag, object_id=object_id),
            {"depth": 3, "limit": 50},
        )
    if kind == "top":
        return kind, links.path(links.TOP, tag=target.tag), {"limit": rng.choice([10, 20, 50])}
    if kind == "types":
        return (
            kind,
            links.path(links.TYPES, tag=target.tag),
            {"sort": rng.choice(["self_size", "count", "retained_size"]), "limit": 50},
        )
    if kind == "suspects":
        return kind, links.path(links.SUSPECTS, tag=target.tag), {}
    if kind.startswith("diff"):
        return kind, diff, {"by": kind.split()[1], "limit": 20}
    if kind.startswith("leaks"):
        return kind, links.LEAKS, {**three, "by": kind.split()[1], "limit": 10}
    if kind.startswith("growth"):
        return kind, links.GROWTH, {"tag": tags, "by": kind.split()[1], "limit": 20}
    if kind == "snapshot":
        return kind, snapshot, {}
    if kind == "snapshots":
        return kind, links.SNAPSHOTS, {}
    if kind == "health":
        return kind, links.HEALTH, {}
    if kind == "queries":
        return kind, links.QUERIES, {}
    return kind, links.path(links.QUERY, name="types"), {"tag": target.tag, "limit": 10}


def client_loop(
    base: str, targets: list[Target], phase: Phase, t0: float, deadline: float, budget: list[int], seed: int
) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=10.0) as http:
        while time.monotonic() < deadline:
            with phase.lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            kind, url, params = request_mix(targets, rng)
            answer = ask(http, url, params)
            with phase.lock:
                phase.records.append(Record(answer.started - t0, kind, answer.status, answer.ms, answer.json_error))
            if answer.status == 503:
                time.sleep(0.05)  # a client that sees 503 backs off a little, as real ones do


@dataclass(frozen=True)
class Answer:
    """One request's outcome: when it was sent, its status (0: no HTTP answer), how long it took."""

    started: float  # time.monotonic()
    status: int
    ms: float
    json_error: bool  # a non-200 answer with a JSON {"error": ...} body
    body: Any = None  # the decoded JSON of a 200, when asked for


def ask(http: httpx.Client, url: str, params: dict, decode: bool = False) -> Answer:
    """GET ``url``, timed; a timeout or connection error is status 0, never an exception. A 200's
    body is decoded only with ``decode`` (the clients share the service's cores)."""
    started = time.monotonic()
    status, json_error, body = 0, False, None
    try:
        response = http.get(url, params=params)
        status = response.status_code
        if status != 200 or decode:
            try:
                decoded = response.json()
            except ValueError:
                decoded = None
            body = decoded if status == 200 else None
            json_error = status != 200 and isinstance(decoded, dict) and isinstance(decoded.get("error"), str)
    except httpx.HTTPError:
        pass
    return Answer(started, status, (time.monotonic() - started) * 1000, json_error, body)


def run_phase(
    base: str,
    targets: list[Target],
    clients: int,
    seconds: float,
    max_requests: int,
    during=None,
    seed: int = 0,
) -> Phase:
    """``clients`` threads asking back to back; ``seed`` sets their draws apart from other phases'."""
    phase = Phase()
    t0 = time.monotonic()
    deadline = t0 + seconds
    budget = [max_requests]
    threads = [
        threading.Thread(
            target=client_loop, args=(base, targets, phase, t0, deadline, budget, seed * 1000 + i), daemon=True
        )
        for i in range(clients)
    ]
    for t in threads:
        t.start()
    if during is not None:
        during(t0)
    for t in threads:
        t.join(timeout=seconds + 30)
    return phase


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def by_window(phase: Phase, width: float) -> dict[str, dict[str, float]]:
    """Per ``width`` seconds of the phase: requests, non-200 answers and the p99 of the 200s."""
    windows: dict[int, list[Record]] = {}
    for record in phase.records:
        windows.setdefault(int(record.started // width), []).append(record)
    return {
        f"{w * width:g}-{(w + 1) * width:g}s": {
            "requests": len(rs),
            "non_200": sum(1 for r in rs if r.status != 200),
            "p99": round(percentile([r.ms for r in rs if r.status == 200], 99), 1),
        }
        for w, rs in sorted(windows.items())
    }


def report(phase: Phase, seconds: float) -> dict:
    ok = [r for r in phase.records if r.status == 200]
    out: dict = {
        "requests": len(phase.records),
        "per_second": round(len(phase.records) / seconds, 1),
        "status": dict(Counter(r.status for r in phase.records)),
        "non_200": sum(1 for r in phase.records if r.status != 200),
        "non_200_without_json_error": sum(1 for r in phase.records if r.status not in (0, 200) and not r.json_error),
        "ms_200": {
            "p50": round(percentile([r.ms for r in ok], 50), 1),
            "p99": round(percentile([r.ms for r in ok], 99), 1),
            "max": round(max((r.ms for r in ok), default=0), 1),
        },
        "by_kind": {},
    }
    # The mix's kinds in its order, then any other kind a phase recorded (the drill's own checks).
    for kind in dict.fromkeys([*MIX, *(r.kind for r in phase.records)]):
        asked = [r for r in phase.records if r.kind == kind]
        times = [r.ms for r in asked if r.status == 200]
        out["by_kind"][kind] = {
            "count": len(asked),
            "non_200": len(asked) - len(times),
            "status": dict(Counter(r.status for r in asked if r.status != 200)),
            "p50": round(percentile(times, 50), 1),
            "p99": round(percentile(times, 99), 1),
            "max": round(max(times, default=0), 1),
        }
    return out


def warm_page_cache(tag: str) -> float:
    """Read every object and reference of the snapshot once, so Neo4j's page cache holds them."""
    from heapdb import db

    started = time.monotonic()
    with db.connect(start_managed=False) as database:
        sid = database.read("MATCH (s:Snapshot {tag: $tag, status: 'ready'}) RETURN s.sid AS sid", {"tag": tag})[0][
            "sid"
        ]
        database.read("MATCH (o:Object {sid: $sid}) RETURN count(properties(o)) AS n", {"sid": sid}, timeout=600)
        database.read(
            "MATCH (o:Object {sid: $sid})-[r]->() RETURN count(properties(r)) AS n", {"sid": sid}, timeout=600
        )
    return round(time.monotonic() - started, 1)


def heapdb_cli(*args: str) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "heapdb", *args], check=True, capture_output=True, text=True, timeout=600)
    return time.monotonic() - started


def read_targets(specs: list[str]) -> list[Target]:
    """The ``--snapshot TAG=FILE`` arguments read into targets, in their order."""
    targets = []
    for spec in specs:
        tag, sep, file = spec.partition("=")
        if not sep:
            sys.exit(f"--snapshot {spec!r}: expected TAG=FILE")
        targets.append(Target.read(tag, file))
        print(f"{tag}: {targets[-1].ids.size:,} reachable objects to ask about", flush=True)
    return targets


@dataclass
class Service:
    """``heapdb serve`` as a subprocess on a free loopback port, its output in a log file."""

    process: subprocess.Popen
    base: str
    log: Any  # the open log file, closed when the service stops

    @classmethod
    def start(cls, log_path: str, env: dict[str, str] | None = None) -> Service:
        port = neo4j_server.free_port()
        log = open(log_path, "a")  # noqa: SIM115 (open for the service's whole life)
        process = subprocess.Popen(
            [sys.executable, "-m", "heapdb", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=None if env is None else {**os.environ, **env},
        )
        return cls(process, f"http://127.0.0.1:{port}", log)

    def wait_healthy(self, seconds: float = 300) -> float:
        """Wait until ``/api/health`` answers 200 (after the service's warm-up, HEAPDB_WARM_UP); the
        seconds it took (the deadline passed: raise)."""
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            try:
                if httpx.get(self.base + links.HEALTH, timeout=2).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the service at {self.base} did not answer /api/health within {seconds:.0f} s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--snapshot",
        action="append",
        required=True,
        metavar="TAG=FILE",
        help="a loaded snapshot's tag and its file, oldest first (repeat)",
    )
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument(
        "--outage-seconds",
        type=float,
        default=120,
        help="length of phase 2: Neo4j stops after 15 s, starts 15 s after it stopped (0: skip it)",
    )
    parser.add_argument("--json", dest="json_out")
    parser.add_argument(
        "--service-log",
        default="/tmp/heapdb-service-load.log",
        help="where the service's own log goes (errors, tracebacks)",
    )
    args = parser.parse_args()
    if args.outage_seconds > 0 and not os.environ.get("XDG_DATA_HOME", "").startswith("/tmp"):
        sys.exit("set XDG_DATA_HOME/XDG_CONFIG_HOME to a private managed instance under /tmp: phase 2 stops its Neo4j")

    targets = read_targets(args.snapshot)
    service = Service.start(args.service_log)
    base = service.base
    figures: dict[str, object] = {
        "clients": args.clients,
        "seconds": args.seconds,
        "snapshots": {t.tag: int(t.ids.size) for t in targets},
        "load_average_before": os.getloadavg(),
    }
    try:
        service.wait_healthy()
        # A service that has been up a while: Neo4j's page cache holds the snapshots (read once here,
        # objects and references, as a day of questions would have), and the first answers of the
        # per-snapshot reports are timed one at a time.
        figures["page_cache_warm_up_s"] = {t.tag: warm_page_cache(t.tag) for t in targets}
        print(f"page cache warmed: {figures['page_cache_warm_up_s']}", flush=True)
        cold = {}
        for target in targets:
            reports: list[tuple[str, str, dict[str, str | int]]] = [
                ("top", links.TOP, {"limit": 50}),
                *[
                    ("types", links.TYPES, {"sort": sort, "limit": 50})
                    for sort in ("self_size", "count", "retained_size")
                ],
                ("suspects", links.SUSPECTS, {}),
            ]
            for kind, url, params in reports:
                started = time.monotonic()
                status = httpx.get(base + links.path(url, tag=target.tag), params=params, timeout=120).status_code
                cold[f"{target.tag} {kind} {params}"] = {
                    "status": status,
                    "ms": round((time.monotonic() - started) * 1000, 1),
                }
        # The cross-snapshot reports, each variant the clients ask, first time (then remembered).
        tags = [t.tag for t in targets]
        if len(tags) >= 3:
            pairs = [
                (links.path(links.DIFF, before=a, after=b), {"by": by, "limit": 20})
                for a, b in zip(tags, tags[1:])
                for by in ("type", "path", "object")
            ]
            three = {"baseline": tags[0], "target": tags[1], "final": tags[2]}
            across: list[tuple[str, dict[str, Any]]] = [
                *pairs,
                *[(links.LEAKS, {**three, "by": by, "limit": 10}) for by in ("id", "path")],
                *[(links.GROWTH, {"tag": tags, "by": by, "limit": 20}) for by in ("type", "path")],
            ]
            for url, asked in across:
                started = time.monotonic()
                status = httpx.get(f"{base}{url}", params=asked, timeout=600).status_code
                cold[f"{url} {asked}"] = {"status": status, "ms": round((time.monotonic() - started) * 1000, 1)}
        figures["cold_reports"] = cold
        print(json.dumps(cold, indent=2), flush=True)
        warm = run_phase(base, targets, 8, 20, 5000, seed=1)
        figures["warm_up"] = report(warm, 20)

        steady = run_phase(base, targets, args.clients, args.seconds, args.max_requests, seed=2)
        figures["steady"] = report(steady, args.seconds)
        figures["load_average_after"] = os.getloadavg()
        print(json.dumps(figures["steady"], indent=2), flush=True)

        if args.outage_seconds > 0:
            events: dict[str, float] = {}

            def outage(t0: float) -> None:
                time.sleep(15)
                events["stop_begin"] = time.monotonic() - t0
                heapdb_cli("neo4j", "stop")
                events["stopped"] = time.monotonic() - t0
                time.sleep(15)
                events["start_begin"] = time.monotonic() - t0
                heapdb_cli("neo4j", "start", "--timeout", "300")
                events["started"] = time.monotonic() - t0

            down = run_phase(base, targets, args.clients, args.outage_seconds, args.max_requests, during=outage, seed=3)
            by_second: dict[int, Counter] = {}
            for r in down.records:
                by_second.setdefault(int(r.started), Counter())[r.status] += 1
            after = [r for r in down.records if r.started > events.get("started", 1e9)]
            first_ok = min((r.started for r in after if r.status == 200), default=None)
            last_bad = max((r.started for r in down.records if r.status != 200), default=None)
            outage_figures = figures["outage"] = {
                "events_s": {k: round(v, 1) for k, v in events.items()},
                **report(down, args.outage_seconds),
                "statuses_while_down": dict(
                    Counter(
                        r.status
                        for r in down.records
                        if events.get("stop_begin", 0) <= r.started <= events.get("started", 0)
                    )
                ),
                "first_200_after_start_s": None if first_ok is None else round(first_ok - events["started"], 2),
                "last_non_200_s": None if last_bad is None else round(last_bad, 1),
                "non_200_after_start": sum(1 for r in after if r.status != 200),
                "timeline": {s: dict(c) for s, c in sorted(by_second.items())},
            }
            print(json.dumps({k: v for k, v in outage_figures.items() if k != "timeline"}, indent=2), flush=True)
    finally:
        service.stop()
        if neo4j_server.running_pid() is None:
            heapdb_cli("neo4j", "start", "--timeout", "300")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(figures, f, indent=2)
    print(
        f"median of per-second request counts in phase 1: {statistics.median(Counter(int(r.started) for r in steady.records).values())}"
    )


if __name__ == "__main__":
    main()
