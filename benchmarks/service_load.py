"""A bounded load test of ``heapdb serve`` on loopback, then the same with Neo4j stopped mid-run.

Needs a managed Neo4j of its own holding the snapshot (never point this at someone else's: phase 2
stops it). With a private instance under temporary XDG directories::

    export XDG_DATA_HOME=/tmp/bench/data XDG_CONFIG_HOME=/tmp/bench/config
    heapdb neo4j install --bolt-port auto --http-port auto && heapdb neo4j start
    heapdb load /tmp/bench/baseline.heapsnapshot --tag bench-why
    python -m benchmarks.service_load --snapshot /tmp/bench/baseline.heapsnapshot --tag bench-why

Before phase 1 the top and types variants are asked once each, one at a time (their cold times are
reported; the service remembers them per snapshot load). Phase 1: ``--clients`` threads, each with its own HTTP connection, send requests back to back for
``--seconds``: 60% why-alive (objects drawn uniformly from those the root reaches), 20% top, 20%
types (a few parameter variants each). The why-alive objects are drawn from all the objects the root
reaches, millions on a real heap, so nearly every one is asked for the first time. Every request has a 10 s timeout; the run stops at the time
limit or after ``--max-requests``, whichever comes first. Phase 2 does the same while Neo4j is
stopped (``heapdb neo4j stop``, 15 s in) and started again (15 s after it stopped), and reports what
the clients saw second by second.
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

import httpx
import numpy as np

from heapdb import neo4j_server
from heapdb.loader import analysis, formats


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


def request_mix(tag: str, ids: np.ndarray, rng: random.Random) -> tuple[str, str, dict]:
    roll = rng.random()
    if roll < 0.6:
        return "why", f"/api/snapshots/{tag}/objects/{int(ids[rng.randrange(ids.size)])}/why", {}
    if roll < 0.8:
        return "top", f"/api/snapshots/{tag}/top", {"limit": rng.choice([10, 20, 50])}
    return (
        "types",
        f"/api/snapshots/{tag}/types",
        {"sort": rng.choice(["self_size", "count", "retained_size"]), "limit": 50},
    )


def client_loop(
    base: str, tag: str, ids: np.ndarray, phase: Phase, t0: float, deadline: float, budget: list[int], seed: int
) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=10.0) as http:
        while time.monotonic() < deadline:
            with phase.lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            kind, url, params = request_mix(tag, ids, rng)
            started = time.monotonic()
            status, json_error = 0, False
            try:
                response = http.get(url, params=params)
                status = response.status_code
                if status != 200:
                    try:
                        json_error = isinstance(response.json().get("error"), str)
                    except ValueError:
                        json_error = False
            except httpx.HTTPError:
                pass
            elapsed = (time.monotonic() - started) * 1000
            with phase.lock:
                phase.records.append(Record(started - t0, kind, status, elapsed, json_error))
            if status == 503:
                time.sleep(0.05)  # a client that sees 503 backs off a little, as real ones do


def run_phase(
    base: str, tag: str, ids: np.ndarray, clients: int, seconds: float, max_requests: int, during=None, seed: int = 0
) -> Phase:
    """``clients`` threads asking back to back; ``seed`` sets their draws apart from other phases'."""
    phase = Phase()
    t0 = time.monotonic()
    deadline = t0 + seconds
    budget = [max_requests]
    threads = [
        threading.Thread(
            target=client_loop, args=(base, tag, ids, phase, t0, deadline, budget, seed * 1000 + i), daemon=True
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


def report(phase: Phase, seconds: float) -> dict:
    ok = [r for r in phase.records if r.status == 200]
    out = {
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
    }
    for kind in ("why", "top", "types"):
        times = [r.ms for r in ok if r.kind == kind]
        out[f"ms_200_{kind}"] = {
            "count": len(times),
            "p50": round(percentile(times, 50), 1),
            "p99": round(percentile(times, 99), 1),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--tag", required=True)
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
    if not os.environ.get("XDG_DATA_HOME", "").startswith("/tmp"):
        sys.exit("set XDG_DATA_HOME/XDG_CONFIG_HOME to a private managed instance under /tmp: phase 2 stops its Neo4j")

    graph = formats.read_graph(args.snapshot)
    result = analysis.analyze(graph)
    # Every reachable object can be asked about, so the service's answer cache rarely helps why-alive:
    # the figures show what Neo4j answers, not what the service remembers.
    ids = graph.ids[np.flatnonzero(result.reachable & (result.distance > 0))]
    del graph, result

    port = neo4j_server.free_port()
    base = f"http://127.0.0.1:{port}"
    service_log = open(args.service_log, "w")  # noqa: SIM115 (open for the service's whole life)
    server = subprocess.Popen(
        [sys.executable, "-m", "heapdb", "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=service_log,
        stderr=subprocess.STDOUT,
    )
    figures: dict[str, object] = {"clients": args.clients, "seconds": args.seconds}
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        # A service that has been up a while: Neo4j's page cache holds the snapshot (read once here,
        # objects and references, as a day of questions would have), and the first top/types answers
        # are timed one at a time.
        started = time.monotonic()
        figures["page_cache_warm_up_s"] = warm_page_cache(args.tag)
        print(f"page cache warmed in {time.monotonic() - started:.1f} s", flush=True)
        cold = {}
        for kind, url, params in [("top", "top", {"limit": n}) for n in (10, 20, 50)] + [
            ("types", "types", {"sort": sort, "limit": 50}) for sort in ("self_size", "count", "retained_size")
        ]:
            started = time.monotonic()
            status = httpx.get(f"{base}/api/snapshots/{args.tag}/{url}", params=params, timeout=120).status_code
            cold[f"{kind} {params}"] = {"status": status, "ms": round((time.monotonic() - started) * 1000, 1)}
        figures["cold_top_types"] = cold
        print(json.dumps(cold, indent=2), flush=True)
        warm = run_phase(base, args.tag, ids, 8, 20, 5000, seed=1)
        figures["warm_up"] = report(warm, 20)

        steady = run_phase(base, args.tag, ids, args.clients, args.seconds, args.max_requests, seed=2)
        figures["steady"] = report(steady, args.seconds)
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

            down = run_phase(
                base, args.tag, ids, args.clients, args.outage_seconds, args.max_requests, during=outage, seed=3
            )
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
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if neo4j_server.running_pid() is None:
            heapdb_cli("neo4j", "start", "--timeout", "300")
        service_log.close()
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(figures, f, indent=2)
    print(
        f"median of per-second request counts in phase 1: {statistics.median(Counter(int(r.started) for r in steady.records).values())}"
    )


if __name__ == "__main__":
    main()
