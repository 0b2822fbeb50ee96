"""A thousand builds: the questions across a long history of loaded snapshots, timed warm.

Makes a history of ``--builds`` builds (:mod:`heapgen.history`: one small V8 snapshot per build,
a structure that grows at every build, a leak that appears at three fifths of the way and stays,
another that comes at a quarter and goes at half), each loaded in process under the tag
``PREFIX-NNNN`` with ``build=N`` as its metadata (what ``heapdb load --meta build=N`` stores), then
gated against the build before and recorded, as a CI job's ``heapdb gate`` does. Every hundred
builds, and at the end, ``heapdb prune --keep-last KEEP`` frees all but the newest ``--keep`` to
their summaries. How long that took is reported per step.

Then each question is asked once (Neo4j's page cache and query plans warm), then ``--repeat``
times, through :class:`heapdb.queries.questions.Questions` as the CLI asks it (no answer cache);
the fastest and the median are reported, with the load average before and after:

- growth by type and by path over every build (``heapdb growth --builds all``);
- one type's bytes per build (``heapdb type-history Record``), a page of 100 and every build;
- the builds where each leak signature first appeared (``heapdb signatures``), and one signature's
  history (``heapdb history SIG``);
- the gate against the previous release (the last build numbered a multiple of ``--release-every``
  before the newest, long pruned), and against the build before; and recording such a gate.

Also asked once each through the REST routes and MCP tools (the service in process), paged, so
that their answers can be checked against the Python API's.

Usage (a private managed Neo4j, never the default one)::

    export XDG_DATA_HOME=/tmp/hist/data XDG_CONFIG_HOME=/tmp/hist/config
    heapdb neo4j install --bolt-port auto --http-port auto && heapdb neo4j start
    python -m benchmarks.history --builds 1000 --json

``--reuse`` times an existing history of that prefix without making it again; without it, the
Neo4j must hold no such history (build names are global: two histories would interleave).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from heapdb import db
from heapdb.loader import analysis, formats, store
from heapdb.loader.store import prune
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapgen.history import Plan, write_build

PRUNE_EVERY = 100


def tag_of(prefix: str, n: int) -> str:
    return f"{prefix}-{n:04d}"


def make_history(
    database: db.Database, prefix: str, plan: Plan, keep: int, say: Callable[[str], None]
) -> dict[str, float]:
    """Load, gate, record and prune the builds of ``plan``; seconds spent in each step."""
    builds = plan.builds
    q = Questions(database, timeout=600)
    spent = {"generate": 0.0, "analyze": 0.0, "load": 0.0, "gate": 0.0, "record": 0.0, "prune": 0.0}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        for n in range(1, builds + 1):
            t = time.perf_counter()
            path = write_build(n, plan, Path(work) / "build.heapsnapshot")
            spent["generate"] += time.perf_counter() - t
            t = time.perf_counter()
            graph = formats.read_graph(path)
            result = analysis.analyze(graph)
            spent["analyze"] += time.perf_counter() - t
            t = time.perf_counter()
            store.load(
                database,
                store.LoadInput.from_analysis(graph, result),
                tag_of(prefix, n),
                replace=True,
                meta={"build": str(n)},
                source=f"{prefix}/build-{n}.heapsnapshot",
            )
            spent["load"] += time.perf_counter() - t
            if n > 1:
                t = time.perf_counter()
                report = q.gate(tag_of(prefix, n - 1), tag_of(prefix, n))
                spent["gate"] += time.perf_counter() - t
                t = time.perf_counter()
                q.record_gate(report)
                spent["record"] += time.perf_counter() - t
            if n % PRUNE_EVERY == 0 or n == builds:
                t = time.perf_counter()
                prune.prune(database, keep, wait=True)
                spent["prune"] += time.perf_counter() - t
            if n % 50 == 0:
                say(f"{n} builds in {time.perf_counter() - began:.0f} s")
    spent["total"] = time.perf_counter() - began
    return {k: round(v, 1) for k, v in spent.items()}


def timed(ask: Callable[[], Any], repeat: int) -> tuple[dict[str, float], Any]:
    """Seconds of ``repeat`` runs of ``ask`` after one warm-up run: fastest and median; and the answer."""
    answer = ask()
    seconds = []
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        answer = ask()
        seconds.append(time.perf_counter() - started)
    return {"fastest": round(min(seconds), 3), "median": round(statistics.median(seconds), 3)}, answer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", type=int, default=1000, help="builds in the history (default 1000)")
    parser.add_argument("--keep", type=int, default=20, help="newest builds kept full; the rest pruned (default 20)")
    parser.add_argument("--prefix", default="hist", help="the builds' tags are PREFIX-NNNN (default hist)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each question after a warm-up one")
    parser.add_argument(
        "--release-every", type=int, default=100, help="a release is a build numbered a multiple of this"
    )
    parser.add_argument(
        "--modules",
        type=int,
        default=1000,
        help="types and paths every build has besides the growing ones (default 1000)",
    )
    parser.add_argument("--reuse", action="store_true", help="time the history already loaded under PREFIX")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.builds < 3 or args.keep < 1:
        parser.error("--builds must be at least 3 and --keep at least 1")

    for name in ("httpx", "httpx2"):  # the in-process REST calls' request lines
        logging.getLogger(name).setLevel(logging.WARNING)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    figures: dict[str, Any] = {
        "builds": args.builds,
        "keep": args.keep,
        "modules": args.modules,
        "load_before_make": os.getloadavg(),
    }
    with db.connect(start_managed=False) as database:
        made = database.read(
            "MATCH (s:Snapshot) WHERE s.tag STARTS WITH $prefix RETURN count(s) AS n", {"prefix": args.prefix + "-"}
        )[0]["n"]
        if made and not args.reuse:
            # Build names are global (the gate's history merges builds by name): a second history
            # in the same Neo4j would interleave with the first.
            parser.error(f"{made} snapshots tagged {args.prefix}-* are loaded already: time them with --reuse, or wipe")
        if not args.reuse:
            figures["make"] = make_history(database, args.prefix, Plan(args.builds, args.modules), args.keep, say)
            say(f"made in (s): {figures['make']}")  # said now too: the timing below may fail
        figures["load_before"] = os.getloadavg()
        figures["questions"] = time_questions(database, args)
        figures["front ends"] = time_front_ends(database, args)
        figures["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(render(figures))


def time_questions(database: db.Database, args: argparse.Namespace) -> dict[str, Any]:
    q = Questions(database, timeout=600)
    newest = tag_of(args.prefix, args.builds)
    release = (args.builds - 1) // args.release_every * args.release_every or 1
    out: dict[str, Any] = {}

    def measure(name: str, ask: Callable[[], Any], about: Callable[[Any], str]) -> Any:
        figures, answer = timed(ask, args.repeat)
        out[name] = {**figures, "answer": about(answer)}
        return answer

    measure(
        "growth --by type --builds all",
        lambda: q.growth([], params.Growth(by="type", builds="all")),
        lambda a: f"{len(a.rows)} rows over {len(a.tags)} builds; first {a.rows[0].label if a.rows else None}",
    )
    measure(
        "growth --by path --builds all",
        lambda: q.growth([], params.Growth(by="path", builds="all")),
        lambda a: f"{len(a.rows)} rows over {len(a.tags)} builds",
    )
    measure(
        "type-history Record (a page of 100)",
        lambda: q.type_history(params.TypeHistory(type="Record", limit=100)),
        lambda a: f"{len(a.rows)} of {a.total} builds",
    )
    measure(
        "type-history Record (every build)",
        lambda: q.type_history(params.TypeHistory(type="Record", limit=params.MAX_BUILDS)),
        lambda a: f"{len(a.rows)} of {a.total} builds",
    )
    signatures = measure(
        "signatures",
        lambda: q.signatures(None),
        lambda a: "; ".join(f"{s.signature} first seen in {s.first_seen} ({s.status})" for s in a),
    )
    if signatures:
        sig = signatures[0].signature
        measure(
            "history SIG",
            lambda: q.history(sig),
            lambda a: f"{len(a.observations)} builds, first {a.first_seen}, last {a.last_seen}",
        )
    measure(
        f"gate against the previous release (build {release}, pruned)",
        lambda: q.gate(tag_of(args.prefix, release), newest),
        lambda a: f"passed={a.passed}, {len(a.findings)} findings",
    )
    measure(
        "gate against the build before",
        lambda: q.gate(tag_of(args.prefix, args.builds - 1), newest),
        lambda a: f"passed={a.passed}, {len(a.findings)} findings",
    )
    measure(
        "gate against the build before, recorded",
        lambda: q.record_gate(q.gate(tag_of(args.prefix, args.builds - 1), newest)),
        lambda a: "recorded",
    )
    return out


def time_front_ends(database: db.Database, args: argparse.Namespace) -> dict[str, Any]:
    """The same questions through the REST routes, the pages and the MCP tools, in process: the
    first answer (Neo4j warm, the service's answer cache not) and the warm figures (that cache on, as
    a running service has it); with each answer's size and, for MCP, whether it came paged."""
    import anyio
    from fastapi.testclient import TestClient
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import TextContent

    from heapdb.service.app import create_app
    from heapdb.service.mcp import build_server

    client = TestClient(create_app(token=""))
    server = build_server(lambda: database)
    newest, before = tag_of(args.prefix, args.builds), tag_of(args.prefix, args.builds - 1)
    release = tag_of(args.prefix, (args.builds - 1) // args.release_every * args.release_every or 1)
    sig = Questions(database).signatures(None)[0].signature
    out: dict[str, Any] = {}

    def first_and_warm(name: str, ask: Callable[[], tuple[int, str]]) -> None:
        started = time.perf_counter()
        ask()
        first = time.perf_counter() - started
        figures, (status, text) = timed(ask, args.repeat)
        out[name] = {"first": round(first, 3), **figures, "status": status, "chars": len(text)}

    def rest(path: str, **query: Any) -> Callable[[], tuple[int, str]]:
        def ask() -> tuple[int, str]:
            answer = client.get(path, params=query)
            return answer.status_code, answer.text

        return ask

    def tool(name: str, **arguments: Any) -> Callable[[], tuple[int, str]]:
        def ask() -> tuple[int, str]:
            try:
                result = anyio.run(server.call_tool, name, arguments)
            except ToolError as e:  # a slow answer: "still being worked out, ask again"
                return 0, str(e)
            content = result.content[0]  # type: ignore[union-attr]
            assert isinstance(content, TextContent)
            paged = '"next":"' in content.text
            return (0 if result.is_error else 200 if not paged else 206), content.text  # type: ignore[union-attr]

        return ask

    first_and_warm("REST growth?builds=all", rest("/api/growth", builds="all"))
    first_and_warm("REST type-history (a page of 100)", rest("/api/type-history", type="Record", offset=900))
    first_and_warm("REST signatures", rest("/api/signatures"))
    first_and_warm("REST signature's history (a page of 100)", rest(f"/api/signatures/{sig}"))
    first_and_warm("REST gate against the release", rest("/api/gate", baseline=release, candidate=newest))
    first_and_warm("page /ask/growth?builds=all", rest("/ask/growth", builds="all"))
    first_and_warm("page /ask/type-history (a page of 100)", rest("/ask/type-history", type="Record", offset=900))
    first_and_warm("page /ask/history (a page of 100)", rest("/ask/history", sig=sig))
    first_and_warm("page /ask/gate", rest("/ask/gate", baseline=before, candidate=newest))
    first_and_warm("MCP growth builds=all", tool("growth", builds="all"))
    first_and_warm("MCP type-history (a page of 100)", tool("type-history", type="Record", offset=900))
    first_and_warm("MCP signatures", tool("signatures"))
    first_and_warm("MCP signature (a page of 100)", tool("signature", signature=sig))
    first_and_warm("MCP gate against the release", tool("gate", baseline=release, candidate=newest))
    return out


def render(figures: dict[str, Any]) -> str:
    lines = [f"{figures['builds']} builds of {figures['modules']} modules each, the newest {figures['keep']} full"]
    if "make" in figures:
        lines.append(f"load average before making it: {figures['load_before_make']}")
        lines.append("making the history (s): " + ", ".join(f"{k} {v}" for k, v in figures["make"].items()))
    lines.append(f"load average before: {figures['load_before']}, after: {figures['load_after']}")
    lines.append("| question | fastest s | median s | answer |")
    lines.append("| --- | ---: | ---: | --- |")
    for name, f in figures["questions"].items():
        lines.append(f"| {name} | {f['fastest']} | {f['median']} | {f['answer']} |")
    lines.append("")
    lines.append("| front end | first s | fastest s | median s | status | characters |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, f in figures["front ends"].items():
        lines.append(f"| {name} | {f['first']} | {f['fastest']} | {f['median']} | {f['status']} | {f['chars']:,} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
