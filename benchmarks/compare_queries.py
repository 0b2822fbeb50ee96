"""Cross-snapshot questions on big snapshots: how long diff, leaks, growth and suspects take.

Prepare once (Node ``leak.js`` snapshots of one process, so V8 ids are stable; ~1M objects in final)::

    node tests/js/leak.js /tmp/bench 20000 15000 15000 20000
    for s in baseline target final step-3; do heapdb load /tmp/bench/$s.heapsnapshot --tag bench-$s; done

then::

    python -m benchmarks.compare_queries --tags bench-baseline bench-target bench-final bench-step-3

Each question is asked once to warm Neo4j's page cache and query plans, then timed ``--repeat``
times through :class:`heapdb.queries.questions.Questions` (the functions the CLI and the REST service call,
over Bolt on loopback). Prints a Markdown table: the median and the slowest of the timed runs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from heapdb import db
from heapdb.queries import params
from heapdb.queries.questions import Questions


def timed(ask: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """Seconds per run of ``ask`` after one warm-up run, and the last answer."""
    answer = ask()
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = ask()
        seconds.append(time.perf_counter() - started)
    return seconds, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--tags", nargs="+", required=True, help="loaded snapshots of one process, oldest first (at least three)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per query")
    args = parser.parse_args()
    baseline, target, final = args.tags[0], args.tags[1], args.tags[2]
    with db.connect() as database:
        q = Questions(database, args.timeout)
        sizes = {tag: q.snapshot(tag).object_count for tag in args.tags}
        print("snapshots: " + ", ".join(f"{tag} {count:,} objects" for tag, count in sizes.items()))
        questions: list[tuple[str, Callable[[], Any], Callable[[Any], str]]] = [
            (
                "diff --by type",
                lambda: q.diff(baseline, final, params.Diff(by="type")),
                lambda a: f"{len(a.changes)} rows",
            ),
            (
                "diff --by path",
                lambda: q.diff(baseline, final, params.Diff(by="path")),
                lambda a: f"{len(a.changes)} rows",
            ),
            (
                "id check (part of diff --by object)",
                lambda: q.id_check(baseline, final),
                lambda a: f"{a[0].shared:,} shared ids, {a[0].retyped:,} retyped",
            ),
            (
                "diff --by object",
                lambda: q.diff(baseline, final, params.Diff(by="object")),
                lambda a: f"{a.total.new_count:,} new, {a.total.freed_count:,} freed",
            ),
            (
                "leaks --by id",
                lambda: q.leaks(baseline, target, final, params.Leaks(by="id")),
                lambda a: f"{len(a.clusters)} clusters, top {a.clusters[0].objects:,} × {a.clusters[0].type}",
            ),
            (
                "leaks --by path",
                lambda: q.leaks(baseline, target, final, params.Leaks(by="path")),
                lambda a: f"{len(a.clusters)} clusters, top {a.clusters[0].objects:,} × {a.clusters[0].type}",
            ),
            (
                f"growth --by type ({len(args.tags)} tags)",
                lambda: q.growth(args.tags, params.Growth(by="type")),
                lambda a: f"{len(a.rows)} types",
            ),
            (
                f"growth --by path ({len(args.tags)} tags)",
                lambda: q.growth(args.tags, params.Growth(by="path")),
                lambda a: f"{len(a.rows)} paths",
            ),
            (
                "suspects --share 0.1",
                lambda: q.suspects(final, params.Suspects(share=0.1)),
                lambda a: f"{len(a.objects)} objects, {len(a.types)} types",
            ),
            (
                "suspects --share 0.01",
                lambda: q.suspects(final, params.Suspects(share=0.01)),
                lambda a: f"{len(a.objects)} objects, {len(a.types)} types",
            ),
        ]
        print()
        print("| question | median | slowest | answer |")
        print("|---|---:|---:|---|")
        for label, ask, summary in questions:
            seconds, answer = timed(ask, args.repeat)
            print(
                f"| `{label}` | {statistics.median(seconds):.2f} s | {max(seconds):.2f} s | {summary(answer)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
