"""The first minute of a restarted service under load: ``heapdb serve`` and its Neo4j both just started.

Needs a managed Neo4j of its own holding the snapshots (never point this at someone else's: every run
stops and starts it). With the private instance and the demo snapshots of
``benchmarks/service_load.py``'s docstring::

    python -m benchmarks.cold_start --snapshot demo-baseline=/tmp/bench/demo/baseline.heapsnapshot \\
        --snapshot demo-target=/tmp/bench/demo/target.heapsnapshot ... [--service-env HEAPDB_WARM_UP=0]

Each run stops Neo4j (``heapdb neo4j stop``), starts it again, starts ``heapdb serve`` and, as soon
as ``/api/health`` answers, sends the requests of ``benchmarks/service_load.py``'s phase 1 (the same
mix, ``--clients`` threads back to back, the same draws for the same ``--seed``) for ``--seconds``:
nothing is warmed beforehand, neither Neo4j's page cache, its query plans and JIT-compiled code, nor
the service's remembered answers. The operating system's file cache is left as it is (dropping it
needs root and slows everything else on the machine), so the store's files are read from memory,
not disk. Reported per endpoint (p50, p99, max of the 200s, and every other status) and per 10 s
window, with the load average before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from benchmarks.service_load import Service, by_window, heapdb_cli, read_targets, report, run_phase

WINDOW_SECONDS = 10  # the width of the per-window p99s, to show how soon the service is warm


def restart_and_ask(args: argparse.Namespace, targets: list, env: dict[str, str], seed: int) -> dict:
    """One run: Neo4j stopped and started, a new service, then the clients at once."""
    before = os.getloadavg()
    stopped = heapdb_cli("neo4j", "stop")
    started = heapdb_cli("neo4j", "start", "--timeout", "300")
    service = Service.start(args.service_log, env)
    try:
        healthy = service.wait_healthy()
        phase = run_phase(service.base, targets, args.clients, args.seconds, args.max_requests, seed=seed)
    finally:
        service.stop()
    return {
        "load_average_before": before,
        "load_average_after": os.getloadavg(),
        "neo4j_stop_s": round(stopped, 1),
        "neo4j_start_s": round(started, 1),
        "service_healthy_after_s": round(healthy, 1),
        **report(phase, args.seconds),
        "windows": by_window(phase, WINDOW_SECONDS),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", action="append", required=True, metavar="TAG=FILE")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=1, help="restarts measured one after the other")
    parser.add_argument("--seed", type=int, default=4, help="the clients' draws (the same seed asks the same)")
    parser.add_argument(
        "--service-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the service only (repeat), e.g. HEAPDB_WARM_UP=0",
    )
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--service-log", default="/tmp/heapdb-cold-start.log")
    args = parser.parse_args()
    if not os.environ.get("XDG_DATA_HOME", "").startswith("/tmp"):
        sys.exit("set XDG_DATA_HOME/XDG_CONFIG_HOME to a private managed instance under /tmp: each run restarts it")
    env = dict(item.partition("=")[::2] for item in args.service_env)
    targets = read_targets(args.snapshot)
    runs = []
    for run in range(args.runs):
        figures = restart_and_ask(args, targets, env, args.seed)
        runs.append(figures)
        print(json.dumps({k: v for k, v in figures.items() if k != "by_kind"}, indent=2), flush=True)
        print(json.dumps(figures["by_kind"], indent=2), flush=True)
        time.sleep(5 if run + 1 < args.runs else 0)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"service_env": env, "clients": args.clients, "seconds": args.seconds, "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
