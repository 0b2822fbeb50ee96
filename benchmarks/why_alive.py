"""Why-alive latency: the stored why-alive query (following :FIRST back to the root) in Neo4j against an in-process breadth-first search.

Prepare once (a ~214 MB Node snapshot, 2.5M objects, 8.4M references; the load takes minutes)::

    node tests/js/leak.js /tmp/bench 135000
    heapdb load /tmp/bench/baseline.heapsnapshot --tag bench-why

then::

    python -m benchmarks.why_alive --snapshot /tmp/bench/baseline.heapsnapshot --tag bench-why --samples 300

Two samples of objects the root reaches: uniform (what people typically ask about) and stratified by
distance from the root (every depth equally often, so the deep chains are well represented). Each object's question is asked once to warm Neo4j's page cache, then timed
``--repeat`` times (``Questions.why_alive``, k=1: the snapshot and object lookups plus the why-alive query, over
Bolt on loopback). The floor is a breadth-first search from the root over the same retaining edges,
in process on numpy arrays (numba), stopping at the object and rebuilding the path. Every path's
length is checked against the analysis' distance.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from numba import njit

from heapdb import db
from heapdb.loader import analysis, formats
from heapdb.queries.questions import Questions


@njit(cache=True)
def bfs_path(root, target, edge_start, edge_to, mask, parent):
    """Breadth-first search from ``root`` until ``target``; returns the path's length (-1: none).

    ``parent`` is scratch space of n int32, all -1 on entry; it is reset before returning.
    """
    n = edge_start.shape[0] - 1
    queue = np.empty(n, dtype=np.int32)
    queue[0] = root
    parent[root] = root
    head, tail = 0, 1
    found = root == target
    while head < tail and not found:
        v = queue[head]
        head += 1
        for e in range(edge_start[v], edge_start[v + 1]):
            if mask[e]:
                w = edge_to[e]
                if parent[w] < 0:
                    parent[w] = v
                    queue[tail] = w
                    tail += 1
                    if w == target:
                        found = True
                        break
    length = -1
    if found:
        length = 0
        v = target
        while v != root:
            v = parent[v]
            length += 1
    for i in range(tail):
        parent[queue[i]] = -1
    return length


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def sample_objects(result: analysis.Analysis, count: int, seed: int) -> np.ndarray:
    """``count`` reachable objects, spread evenly over the distances from the root."""
    rng = np.random.default_rng(seed)
    reachable = np.flatnonzero(result.reachable & (result.distance > 0))
    distances = np.unique(result.distance[reachable])
    per = max(1, count // len(distances))
    chosen = []
    for d in distances:
        at = reachable[result.distance[reachable] == d]
        chosen.append(rng.choice(at, size=min(per, at.size), replace=False))
    picked = np.concatenate(chosen)
    if picked.size < count:
        rest = np.setdiff1d(reachable, picked)
        picked = np.concatenate([picked, rng.choice(rest, size=count - picked.size, replace=False)])
    return rng.permutation(picked)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True, help="the snapshot file loaded under --tag")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", dest="json_out", help="also write the figures here")
    args = parser.parse_args()

    graph = formats.read_graph(args.snapshot)
    result = analysis.analyze(graph)
    rng = np.random.default_rng(args.seed)
    reachable = np.flatnonzero(result.reachable & (result.distance > 0))
    samples = {
        # What people ask about: any live object, so mostly shallow and medium depths.
        "uniform": rng.choice(reachable, size=args.samples, replace=False),
        # Every depth equally often, down to the deepest chains.
        "by_distance": sample_objects(result, args.samples, args.seed),
    }
    parent = np.full(graph.node_count, -1, dtype=np.int32)
    bfs_path(result.root, result.root, graph.edge_start, graph.edge_to, result.retaining, parent)  # compile

    figures: dict[str, object] = {
        "snapshot": args.snapshot,
        "objects": graph.node_count,
        "references": graph.edge_count,
        "repeat": args.repeat,
    }
    with db.connect() as database:
        questions = Questions(database)
        snapshot = questions.snapshot(args.tag)
        assert snapshot.object_count == graph.node_count, "the tag holds a different snapshot"
        for label, sample in samples.items():
            for node in sample.tolist():
                questions.why_alive(args.tag, int(graph.ids[node]))  # warm-up
            floor_ms, neo_ms, lengths = [], [], []
            by_length: dict[int, list[float]] = {}
            for node in sample.tolist():
                object_id = int(graph.ids[node])
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    length = bfs_path(result.root, node, graph.edge_start, graph.edge_to, result.retaining, parent)
                    floor_ms.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    answer = questions.why_alive(args.tag, object_id)
                    elapsed = (time.perf_counter() - started) * 1000
                    neo_ms.append(elapsed)
                    by_length.setdefault(min(length // 10 * 10, 60), []).append(elapsed)
                assert length == result.distance[node] == answer.paths[0].length, (
                    object_id,
                    length,
                    answer.paths[0].length,
                )
                lengths.append(length)
            figures[label] = {
                "samples": len(sample),
                "path_length": {"min": min(lengths), "median": statistics.median(lengths), "max": max(lengths)},
                "neo4j_ms": summary(neo_ms),
                "in_process_bfs_ms": summary(floor_ms),
                "neo4j_ms_by_path_length": {
                    f"{k}-{k + 9}" if k < 60 else "60+": summary(v) for k, v in sorted(by_length.items())
                },
            }
    print(json.dumps(figures, indent=2))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(figures, f, indent=2)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "count": len(values),
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "p99": round(percentile(values, 99), 1),
        "max": round(max(values), 1),
    }


if __name__ == "__main__":
    main()
