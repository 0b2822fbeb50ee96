"""Why-alive beyond the first path: further paths (``--k``) and rule selectors (``--ignore``) on a
snapshot loaded under rules, against an in-process breadth-first search over the same references.

Prepare once (a Node snapshot, loaded under a rule file with ``ignore``/``weak``/``owns`` rules)::

    node tests/js/leak.js /tmp/paths 20000
    heapdb load /tmp/paths/baseline.heapsnapshot --tag bench-paths --rules RULES.toml

then::

    python -m benchmarks.why_paths --snapshot /tmp/paths/baseline.heapsnapshot --tag bench-paths \\
        --rules RULES.toml --ignore 'from.type = "Object", edge.name = { glob = "_*" }' --samples 100

For each sampled object (uniform over the objects the root reaches, at distance 3 or more) it times,
after one warm-up each: ``why`` (k = 1: the stored first path), ``why --k 3`` (independent paths,
then paths through other holders) and ``why --ignore SELECTOR`` (searches checked hop by hop against
the selector and the references the rules keep from retaining). The floor is a breadth-first search
in process over the references that retain under the rules, without those the selector names; each
``--ignore`` answer's length is checked against it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from benchmarks.why_alive import bfs_path, percentile
from heapdb import db
from heapdb.loader import analysis, formats
from heapdb.loader.rules import compile_rules, load_rules
from heapdb.loader.rules.defaults import with_defaults
from heapdb.queries import ignoring, params
from heapdb.queries.questions import Questions
from heapdb.queries.results import ObjectInfo, Reference


def selected_edges(graph, selector: ignoring.IgnoreSelector) -> np.ndarray:
    """bool[m]: the references ``selector`` names, judged as the questions judge them (object by object)."""
    sources = graph.edge_sources()
    kinds = [graph.node_kinds[k] for k in graph.kind.tolist()]
    out = np.zeros(graph.edge_count, dtype=np.bool_)

    def info(node: int) -> ObjectInfo:
        return ObjectInfo(
            id=int(graph.ids[node]),
            type=graph.type_name(node),
            name=graph.node_name(node),
            kind=kinds[node],
            self_size=0,
            retained_size=0,
            retained_count=0,
            distance=None,
            reachable=True,
        )

    from heapdb.loader.graph import EDGE_KIND_NAMES

    for e in range(graph.edge_count):
        reference = Reference(EDGE_KIND_NAMES[int(graph.edge_kind[e])], graph.edge_label(e))
        out[e] = selector.matches(info(int(sources[e])), reference, info(int(graph.edge_to[e])))
    return out


def summary(values: list[float]) -> dict[str, float]:
    return {
        "count": len(values),
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "max": round(max(values), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True, help="the snapshot file loaded under --tag")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--rules", required=True, help="the rule file the snapshot was loaded under")
    parser.add_argument("--ignore", required=True, help="a rule selector, as `heapdb why --ignore` takes it")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", dest="json_out", help="also write the figures here")
    args = parser.parse_args()

    load_before = os.getloadavg()
    graph = formats.read_graph(args.snapshot)
    rules, _runtime = with_defaults(load_rules(args.rules), graph)
    assert rules is not None
    compiled = compile_rules(rules, graph)
    result = analysis.analyze(graph, edge_weight=compiled.edge_weight, transient=compiled.transient)
    selector = ignoring.parse_ignore(args.ignore)
    allowed = result.retaining & ~selected_edges(graph, selector)
    rng = np.random.default_rng(args.seed)
    candidates = np.flatnonzero(result.reachable & (result.distance >= 3))
    sample = rng.choice(candidates, size=min(args.samples, candidates.size), replace=False)
    parent = np.full(graph.node_count, -1, dtype=np.int32)
    bfs_path(result.root, result.root, graph.edge_start, graph.edge_to, allowed, parent)  # compile

    times: dict[str, list[float]] = {"why": [], "why --k 3": [], "why --ignore": [], "in-process bfs": []}
    paths_k: list[int] = []
    with db.connect() as database:
        questions = Questions(database)
        snapshot = questions.snapshot(args.tag)
        assert snapshot.object_count == graph.node_count, "the tag holds a different snapshot"
        for node in sample.tolist():
            object_id = int(graph.ids[node])
            asks = {
                "why": params.Why(),
                "why --k 3": params.Why(k=3),
                "why --ignore": params.Why(ignore=(args.ignore,)),
            }
            for label, p in asks.items():
                questions.why_alive(args.tag, object_id, p)  # warm-up
                started = time.perf_counter()
                answer = questions.why_alive(args.tag, object_id, p)
                times[label].append((time.perf_counter() - started) * 1000)
                if label == "why --k 3":
                    paths_k.append(len(answer.paths))
                if label == "why --ignore":
                    ignored_answer = answer
            started = time.perf_counter()
            length = bfs_path(result.root, node, graph.edge_start, graph.edge_to, allowed, parent)
            times["in-process bfs"].append((time.perf_counter() - started) * 1000)
            got = ignored_answer.paths[0].length if ignored_answer.paths else -1
            assert got == length, (object_id, got, length)
    figures = {
        "snapshot": args.snapshot,
        "objects": graph.node_count,
        "references": graph.edge_count,
        "selected_references": int(np.count_nonzero(result.retaining & ~allowed)),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "paths_with_k_3": {"mean": round(statistics.mean(paths_k), 2), "min": min(paths_k)},
        **{label: summary(values) for label, values in times.items()},
    }
    print(json.dumps(figures, indent=2))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
