"""Diff of two ~1M-object snapshots: Neo4j's stored diff against recomputing it from the files.

Prepare once (two snapshots of one Node process, 958,403 and 1,068,889 objects; each load takes a
few minutes)::

    node tests/js/leak.js /tmp/benchdiff/snaps 50000 6000
    heapdb load /tmp/benchdiff/snaps/baseline.heapsnapshot --tag benchdiff-baseline
    heapdb load /tmp/benchdiff/snaps/target.heapsnapshot --tag benchdiff-target

then::

    python -m benchmarks.diff --before /tmp/benchdiff/snaps/baseline.heapsnapshot --before-tag benchdiff-baseline \\
        --after /tmp/benchdiff/snaps/target.heapsnapshot --after-tag benchdiff-target --memlab

In one run, on the same pair:

- Neo4j: ``Questions.diff(before, after, by=...)`` for ``type``, ``path`` and, when the installed
  heapdb supports it, ``object``, over Bolt on loopback: the first call, then ``--repeat`` more
  (``--object-repeat`` by object; p50 and max), with a per-query timeout of ``--timeout``;
- in process, from the files: what a tool without a database redoes for every comparison: read both
  snapshots, analyse them (dominators, retained sizes), compute first retainer paths (by path only),
  group with numpy (the loader's own grouping, :meth:`heapdb.loader.store.LoadInput.type_groups` and
  ``path_groups``) and merge the two sides, ``--in-process-repeat`` times;
- with ``--memlab``: ``memlab find-leaks`` with the earlier snapshot as baseline and the later one as
  both target and final (memlab has no two-snapshot diff; that call lists the objects allocated
  between the two that are still alive, clustered by retainer trace), once with memlab's default
  leak filter and once with ``--trace-all-objects``.

Every Neo4j row by type and by path is checked against the in-process figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from heapdb import db
from heapdb.errors import ParameterError
from heapdb.loader import analysis, formats, store
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff

REPO = Path(__file__).resolve().parent.parent
MEMLAB = REPO / "tests" / "js" / "node_modules" / ".bin" / "memlab"

# Figures per group, as LoadInput's grouping returns them after the key (and, by path, text and hops).
FIGURES = ("objects", "self_size", "retained_size")


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = call()
    return time.perf_counter() - started, value


def summary(seconds: list[float]) -> dict[str, float]:
    return {"runs": len(seconds), "p50_s": round(statistics.median(seconds), 3), "max_s": round(max(seconds), 3)}


def neo4j_diff(
    questions: Questions, before: str, after: str, by: str, repeat: int, limit: int
) -> dict[str, Any] | None:
    """The first call and ``repeat`` more of ``Questions.diff``; ``None`` if ``by`` is not supported."""
    try:
        first_s, answer = timed(lambda: questions.diff(before, after, params.Diff(by=by, limit=limit)))
    except ParameterError:
        return None
    runs = [timed(lambda: questions.diff(before, after, params.Diff(by=by, limit=limit)))[0] for _ in range(repeat)]
    return {"first_s": round(first_s, 3), "repeat": summary(runs), "answer": answer}


def merge(before_rows: list[list[Any]], after_rows: list[list[Any]], key_width: int) -> dict[Any, dict[str, Any]]:
    """Group rows of both sides by key: the label, and (before, after) for each figure.

    A row is ``[key, ..., objects, self size, retained size, largest retained]`` where the key and
    label columns come first (``key_width`` of them: 1 by type, 3 by path: signature, text, hops).
    """
    merged: dict[Any, dict[str, Any]] = {}
    for side, rows in enumerate((before_rows, after_rows)):
        for row in rows:
            label = row[1] if key_width > 1 else row[0]
            entry = merged.setdefault(row[0], {"label": label, **{f: [0, 0] for f in FIGURES}})
            for name, value in zip(FIGURES, row[key_width:]):
                entry[name][side] = value
    return merged


def in_process_diff(before: Path, after: Path) -> tuple[dict[str, float], dict[str, dict[Any, dict[str, Any]]]]:
    """Recompute both diffs from the files; seconds per stage (both files together) and the merged groups."""
    seconds = {"read": 0.0, "analyse": 0.0, "first_paths": 0.0, "group_type": 0.0, "group_path": 0.0}
    types, paths = [], []
    for path in (before, after):
        t, graph = timed(partial(formats.read_graph, path))
        seconds["read"] += t
        t, result = timed(partial(analysis.analyze, graph))
        seconds["analyse"] += t
        t, data = timed(partial(store.LoadInput.from_analysis, graph, result))
        seconds["first_paths"] += t
        t, rows = timed(data.type_groups)
        seconds["group_type"] += t
        types.append(rows)
        t, rows = timed(data.path_groups)
        seconds["group_path"] += t
        paths.append(rows)
    t, by_type = timed(lambda: merge(types[0], types[1], key_width=1))
    seconds["group_type"] += t
    t, by_path = timed(lambda: merge(paths[0], paths[1], key_width=3))
    seconds["group_path"] += t
    seconds["type_total"] = seconds["read"] + seconds["analyse"] + seconds["group_type"]
    seconds["path_total"] = seconds["read"] + seconds["analyse"] + seconds["first_paths"] + seconds["group_path"]
    return seconds, {"type": by_type, "path": by_path}


def check(answer: Diff, groups: dict[Any, dict[str, Any]]) -> int:
    """Assert every row Neo4j answered equals a group computed in process; return the rows checked."""
    expected: dict[str, list[tuple[int, ...]]] = {}
    for entry in groups.values():
        expected.setdefault(entry["label"], []).append(tuple(v for f in FIGURES for v in entry[f]))
    for change in answer.changes:
        got = (
            change.count_before,
            change.count_after,
            change.size_before,
            change.size_after,
            change.retained_before,
            change.retained_after,
        )
        assert got in expected.get(change.label, []), (change.label, got, expected.get(change.label))
    deltas = [c.size_delta for c in answer.changes]
    assert deltas == sorted(deltas, reverse=True)
    assert deltas[0] == max(e["self_size"][1] - e["self_size"][0] for e in groups.values())
    return len(answer.changes)


def memlab_find_leaks(before: Path, after: Path, timeout: float, trace_all: bool) -> dict[str, Any]:
    """``memlab find-leaks`` with ``after`` as target and final: wall time and the clusters it reports.

    memlab's default leak filter keeps detached DOM and React Fiber objects and similar; with
    ``trace_all`` (``--trace-all-objects``) every new object is a candidate, as in heapdb's diffs.
    """
    if not MEMLAB.exists():
        return {"error": f"{MEMLAB} is missing (npm ci in tests/js)"}
    work = Path(tempfile.mkdtemp(prefix="heapdb-memlab-diff-"))
    try:
        command = [
            str(MEMLAB),
            "find-leaks",
            "--baseline",
            str(before),
            "--target",
            str(after),
            "--final",
            str(after),
            "--work-dir",
            str(work),
        ]
        if trace_all:
            command.append("--trace-all-objects")
        environment = {**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1", "NODE_OPTIONS": "--max-old-space-size=16384"}
        try:
            seconds, done = timed(
                lambda: subprocess.run(
                    command, capture_output=True, text=True, timeout=timeout, env=environment, check=False
                )
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        output = done.stdout + done.stderr
        found = re.search(r"MemLab found (\d+) leak", output)
        traces = re.search(r"Number of Traces: (\d+)", output)
        return {
            "seconds": round(seconds, 1),
            "exit_code": done.returncode,
            "clusters": int(found.group(1)) if found else None,
            "traces": int(traces.group(1)) if traces else None,
            "output_tail": output[-1500:],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path, help="the earlier snapshot file, loaded as --before-tag")
    parser.add_argument("--after", required=True, type=Path, help="the later snapshot file, loaded as --after-tag")
    parser.add_argument("--before-tag", required=True)
    parser.add_argument("--after-tag", required=True)
    parser.add_argument("--repeat", type=int, default=10, help="timed Neo4j calls after the first, by type and by path")
    parser.add_argument(
        "--object-repeat", type=int, default=5, help="the same by object (a scan of every object: slow)"
    )
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds per Neo4j query (the product's default is 30)"
    )
    parser.add_argument("--in-process-repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=50, help="rows per diff")
    parser.add_argument("--memlab", action="store_true", help="also time memlab find-leaks on the pair")
    parser.add_argument("--memlab-timeout", type=float, default=1800)
    parser.add_argument("--json", dest="json_out", type=Path, help="also write the figures here")
    args = parser.parse_args()

    figures: dict[str, Any] = {
        "before": str(args.before),
        "after": str(args.after),
        "limit": args.limit,
        "load_average": [os.getloadavg()],
    }
    with db.connect() as database:
        questions = Questions(database, timeout=args.timeout)
        for tag in (args.before_tag, args.after_tag):
            snapshot = questions.snapshot(tag)
            figures.setdefault("objects", []).append(snapshot.object_count)
        neo4j: dict[str, Any] = {}
        for by in ("type", "path", "object"):
            repeat = args.object_repeat if by == "object" else args.repeat
            measured = neo4j_diff(questions, args.before_tag, args.after_tag, by, repeat, args.limit)
            if measured is not None:
                neo4j[by] = measured
            figures["load_average"].append(os.getloadavg())

    in_process_runs = []
    for _ in range(args.in_process_repeat):
        seconds, groups = in_process_diff(args.before, args.after)
        in_process_runs.append(seconds)
        figures["load_average"].append(os.getloadavg())
    figures["in_process"] = {
        stage: {
            "first_s": round(in_process_runs[0][stage], 2),
            "p50_s": round(statistics.median(r[stage] for r in in_process_runs), 2),
        }
        for stage in in_process_runs[0]
    }
    figures["groups"] = {by: len(g) for by, g in groups.items()}
    figures["checked_rows"] = {by: check(neo4j[by]["answer"], groups[by]) for by in ("type", "path")}
    figures["neo4j"] = {by: {k: v for k, v in m.items() if k != "answer"} for by, m in neo4j.items()}
    top = neo4j["type"]["answer"].changes[:3] + neo4j["path"]["answer"].changes[:3]
    figures["top_growth"] = [{"label": c.label, "count_delta": c.count_delta, "size_delta": c.size_delta} for c in top]
    if "object" in neo4j:
        total = neo4j["object"]["answer"].total
        figures["object_total"] = {
            "new_count": total.new_count,
            "survived_count": total.survived_count,
            "freed_count": total.freed_count,
        }
    if args.memlab:
        for trace_all in (False, True):
            label = "memlab_find_leaks" + ("_trace_all" if trace_all else "")
            figures[label] = memlab_find_leaks(args.before, args.after, args.memlab_timeout, trace_all)
            figures["load_average"].append(os.getloadavg())
    print(json.dumps(figures, indent=2, default=str))
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=2, default=str))


if __name__ == "__main__":
    main()
