"""Synthetic heaps for benchmarks and tests: N objects, M references, shaped like a real heap.

The shape, all drawn with numpy from one seed (no Python object per heap object):

- every object but the first hangs off an earlier one (a random recursive tree), so the whole heap
  is alive, and 1% of the objects form one long linked list (deep dominator chains);
- the other references leave objects with power-law out-degrees (most objects hold a handful,
  a few hold thousands) and land on a small set of hubs half the time (power-law in-degrees, like
  prototypes, shared strings and caches), uniformly otherwise; 5% of them are weak;
- self sizes are 16 bytes plus a geometric number of words; types follow a Zipf law over 64 names;
- the root layout is snap.bin's: ``(root)`` over one ``(global roots)`` node holding a few objects.

Library use (benchmarks and tests share it)::

    from heapgen.synth import synth_graph, write_snapbin
    graph = synth_graph(1_000_000, 4_000_000, seed=0)
    write_snapbin(graph, "heap-1m.snap.bin")

Command line: ``python -m heapgen.synth OUT.snap.bin --objects 1000000 --references 4000000``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo

TYPE_NAMES = 64
HUB_SHARE = 0.5  # of the extra references, the share that lands on a hub
WEAK_SHARE = 0.05
LIST_SHARE = 0.01  # of the objects, the share in one long linked list


def synth_graph(objects: int, references: int, *, seed: int = 0, roots: int | None = None) -> HeapGraph:
    """A heap of ``objects`` objects and ``references`` references (plus the root layout's edges).

    ``references`` must be at least ``objects - 1`` (the tree that keeps everything alive).
    ``roots`` is the number of objects the ``(global roots)`` node holds (default: one per 100,000).
    """
    n = int(objects)
    if n < 1 or references < n - 1:
        raise ValueError("need at least one object and objects - 1 references")
    rng = np.random.default_rng(seed)
    roots = max(1, n // 100_000) if roots is None else roots

    # The tree: object i > 0 hangs off a uniformly chosen earlier object; a run of LIST_SHARE of
    # the objects instead hangs off its predecessor, making one long chain.
    parent = (rng.random(n) * np.arange(n)).astype(np.int64)
    chain = int(n * LIST_SHARE)
    if chain > 1:
        start = n - chain
        parent[start + 1 :] = np.arange(start, n - 1)
    tree_src = parent[1:]
    tree_dst = np.arange(1, n, dtype=np.int64)
    order = np.argsort(tree_src, kind="stable")
    tree_src, tree_dst = tree_src[order], tree_dst[order]
    del parent, order

    # The other references: power-law out-degrees (Pareto weights, Poisson counts, then trimmed or
    # topped up to the exact total), targets on hubs with a Zipf law or uniform.
    extra = int(references) - (n - 1)
    weights = rng.pareto(1.2, size=n) + 1.0
    counts = rng.poisson(weights * (extra / weights.sum())).astype(np.int64)
    del weights
    _adjust_total(rng, counts, extra)
    extra_src = np.repeat(np.arange(n, dtype=np.int64), counts)
    del counts
    hubs = rng.choice(n, size=max(1, n // 1000), replace=False)
    on_hub = rng.random(extra) < HUB_SHARE
    extra_dst = rng.integers(0, n, size=extra, dtype=np.int64)
    hub_rank = (rng.zipf(1.5, size=int(on_hub.sum())) - 1) % hubs.shape[0]
    extra_dst[on_hub] = hubs[hub_rank]
    del on_hub, hub_rank
    extra_kind = np.where(rng.random(extra) < WEAK_SHARE, EdgeKind.WEAK, EdgeKind.REFERENCE).astype(np.uint8)

    # (root) = n, (global roots) = n + 1.
    root, group = n, n + 1
    held = np.unique(np.concatenate([[0], rng.integers(0, n, size=roots - 1)]))
    src = np.concatenate([tree_src, extra_src, [root], np.full(held.shape[0], group)])
    dst = np.concatenate([tree_dst, extra_dst, [group], held])
    del tree_dst, extra_src, extra_dst
    kind = np.concatenate(
        [
            np.full(tree_src.shape[0], EdgeKind.REFERENCE, np.uint8),
            extra_kind,
            np.full(1 + held.shape[0], EdgeKind.REFERENCE, np.uint8),
        ]
    )
    del tree_src, extra_kind
    strings = ["", "ref", "(root)", "(global roots)", *(f"Type{i}" for i in range(TYPE_NAMES))]
    # Each source's edges come out in generation order; both runs are already sorted, so this
    # stable sort is a merge.
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(n + 2, src, dst, kind, np.ones(src.shape[0]))
    del src, dst, kind

    type_ = ((rng.zipf(1.3, size=n + 2) - 1) % TYPE_NAMES + 4).astype(np.int32)
    type_[root], type_[group] = 2, 3
    name = np.zeros(n + 2, dtype=np.int32)
    name[root], name[group] = 2, 3
    self_size = 16 + 8 * (rng.geometric(0.3, size=n + 2) - 1).astype(np.int64)
    self_size[[root, group]] = 0
    kind_of_node = np.zeros(n + 2, dtype=np.uint8)
    kind_of_node[[root, group]] = 1
    ids = 0x10000 + 16 * np.arange(n + 2, dtype=np.int64)
    graph = HeapGraph(
        ids=ids,
        kind=kind_of_node,
        type=type_,
        name=name,
        self_size=self_size,
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=strings,
        node_kinds=["object", "synthetic"],
        root=root,
        meta={"format": "synthetic", "seed": seed},
    )
    graph.validate()
    return graph


def _adjust_total(rng: np.random.Generator, counts: np.ndarray, total: int) -> None:
    """Add or remove single references at random objects until ``counts`` sums to ``total``."""
    diff = total - int(counts.sum())
    while diff > 0:
        np.add.at(counts, rng.integers(0, counts.shape[0], size=diff), 1)
        diff = total - int(counts.sum())
    while diff < 0:
        pick = rng.integers(0, counts.shape[0], size=-diff)
        pick = np.unique(pick[counts[pick] > 0])
        counts[pick] -= 1
        diff = total - int(counts.sum())


def write_snapbin(graph: HeapGraph, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` as snap.bin (the format's own writer)."""
    from heapdb.loader.formats import snapbin

    snapbin.write_graph(graph, path)


def parse_count(text: str) -> int:
    """``"4M"`` → 4000000, ``"500k"`` → 500000, plain integers as they are."""
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale != 1 else text) * scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the snap.bin file to write")
    parser.add_argument("--objects", type=parse_count, default=1_000_000)
    parser.add_argument("--references", type=parse_count, default=4_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    graph = synth_graph(args.objects, args.references, seed=args.seed)
    built = time.perf_counter()
    write_snapbin(graph, args.out)
    print(
        f"{graph.node_count:,} nodes, {graph.edge_count:,} edges: built in {built - started:.1f}s, "
        f"written in {time.perf_counter() - built:.1f}s to {args.out} ({os.path.getsize(args.out) / 2**20:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
