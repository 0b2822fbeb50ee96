"""Who owns the memory on a real Node heap (heapdb.loader.owners), against a brute force written
again here from the rule in ``heapdb.loader.owners``' docstring.

The program is written at test time into a temporary folder: ``app.js`` requires two packages from
``node_modules``, ``leaky`` (which keeps every record its own constructor makes, each with a closure
and a tag made by ``inner``, a package nested in ``leaky/node_modules``) and the scoped
``@scope/tidy`` (which makes as many entries and keeps the last few). Node writes one snapshot.

The oracle uses none of heapdb's kernels: igraph's dominator tree over the analysis' retaining
references; each object's direct owner from the graph's source locations (the ``node_modules`` rule
written again); the nearest owned dominator, else for the top of a subtree no owned object
dominates the owners whose objects reach it (one igraph search per owner over retaining
references that never enter an owned object: one owner, ``@shared`` or ``@unknown``); per owner its
objects, their self sizes, and the retained sizes (sums over dominator subtrees) of its outermost
members. Every owner's row must equal ``owner_totals``' at both levels, package and file.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import igraph
import numpy as np
import pytest

from heapdb.loader import analysis, formats
from heapdb.loader.analysis import Analysis
from heapdb.loader.graph import HeapGraph
from heapdb.loader.owners.attribution import SHARED, UNKNOWN, Owners, owner_totals, owners_of
from heapdb.loader.owners.sources import APP, NODE
from heapgen.node import run_node
from tests.support.tiers import needs

RECORDS = 5000  # what leaky keeps, and what tidy makes
KEPT_BY_TIDY = 4

PROGRAM = {
    "app.js": """
'use strict';
const v8 = require('v8');
const leaky = require('leaky');
const tidy = require('@scope/tidy');
const count = Number(process.argv[3]);
const kept = leaky.grow(count);
const cached = tidy.work(count);
globalThis.gc();
v8.writeHeapSnapshot(process.argv[2]);
console.log(JSON.stringify({ kept, cached }));
""",
    "node_modules/leaky/index.js": """
'use strict';
const inner = require('inner');
class LeakyRegistry {
  constructor() { this.records = []; }
}
function LeakedRecord(i) {
  this.id = i;
  this.payload = new Array(64).fill(i + 0.5);
  this.tag = inner.tag(i);
  this.onEvent = () => this.id;
}
const registry = new LeakyRegistry();
exports.grow = function grow(n) {
  for (let i = 0; i < n; i++) registry.records.push(new LeakedRecord(i));
  return registry.records.length;
};
""",
    "node_modules/leaky/node_modules/inner/index.js": """
'use strict';
class InnerTag {
  constructor(i) { this.label = 'tag-' + i; }
}
exports.tag = (i) => new InnerTag(i);
""",
    "node_modules/@scope/tidy/package.json": '{"name": "@scope/tidy", "main": "lib/index.js"}\n',
    "node_modules/@scope/tidy/lib/index.js": f"""
'use strict';
class TidyEntry {{
  constructor(i) {{ this.key = i; this.values = new Array(32).fill(i); }}
}}
const recent = [];
exports.work = function work(n) {{
  for (let i = 0; i < n; i++) {{
    recent.push(new TidyEntry(i));
    if (recent.length > {KEPT_BY_TIDY}) recent.shift();
  }}
  return recent.length;
}};
""",
}


@dataclass(frozen=True)
class Heap:
    folder: Path
    graph: HeapGraph
    result: Analysis
    owners: Owners


@pytest.fixture(scope="module")
@needs("node")
def heap(tmp_path_factory: pytest.TempPathFactory) -> Heap:
    folder = tmp_path_factory.mktemp("owners-v8")
    for name, text in PROGRAM.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    out = folder / "owners.heapsnapshot"
    # Node finds the packages from app.js's own folder, whatever the working directory.
    made = run_node(["--expose-gc", str(folder / "app.js"), str(out), str(RECORDS)], "app.js", 120)
    assert made.strip() == f'{{"kept":{RECORDS},"cached":{KEPT_BY_TIDY}}}'
    graph = formats.read_graph(out)
    result = analysis.analyze(graph)
    return Heap(folder, graph, result, owners_of(graph, result))


def package_of(script: str) -> str:
    """The folder after a path's last ``node_modules`` (two for a scope); Node's own; else the app's."""
    parts = re.split(r"[/\\]", script)
    if "node_modules" in parts:
        at = len(parts) - 1 - parts[::-1].index("node_modules")
        name = parts[at + 1]
        return f"{name}/{parts[at + 2]}" if name.startswith("@") else name
    return NODE if script.startswith("node:") else APP


class Oracle:
    """The dominator tree and what owner-independent facts the brute force needs, once per snapshot."""

    def __init__(self, graph: HeapGraph, result: Analysis) -> None:
        n = graph.node_count
        self.n = n
        self.graph = graph
        self.root = int(result.root)
        source = np.repeat(np.arange(n), np.diff(graph.edge_start))
        keep = result.retaining
        self.edges = np.column_stack([source[keep], graph.edge_to[keep]]).astype(np.int64)
        tree = igraph.Graph(n=n, edges=self.edges.tolist(), directed=True)
        self.reached = set(tree.subcomponent(self.root, mode="out"))
        self.idom = [-1 if (d is None or math.isnan(d) or d < 0) else int(d) for d in tree.dominator(self.root)]
        self.idom[self.root] = -1
        synthetic = np.array(graph.node_kinds)[graph.kind] == "synthetic"
        self.counted = [v in self.reached and not synthetic[v] and v != self.root for v in range(n)]
        children: list[list[int]] = [[] for _ in range(n)]
        for v in self.reached:
            if self.idom[v] >= 0:
                children[self.idom[v]].append(v)
        self.order = [self.root]  # parents before children
        for v in self.order:
            self.order.extend(children[v])
        # A retained size by its definition: the self sizes of the object's dominator-tree subtree.
        self.retained = [0] * n
        for v in reversed(self.order):
            self.retained[v] += int(graph.self_size[v])
            if self.idom[v] >= 0:
                self.retained[self.idom[v]] += self.retained[v]

    def direct(self, level: str) -> dict[int, str]:
        """Each counted located object's owner by its script: its package, or the script itself."""
        loc = self.graph.locations
        assert loc is not None
        named = {}
        for v, script in zip(loc.node.tolist(), loc.script.tolist()):
            if script >= 0 and self.counted[v]:
                name = self.graph.strings[script]
                named[v] = package_of(name) if level == "package" else name
        return named

    def reaching(self, direct: dict[int, str], tops: list[int]) -> dict[int, set[str]]:
        """Per top, the owners whose objects reach it over retaining references that enter no owned
        object: a search from one extra vertex per owner, joined to that owner's objects."""
        names = sorted(set(direct.values()))
        into_unowned = [(a, b) for a, b in self.edges.tolist() if b not in direct]
        starts = [(self.n + names.index(name), v) for v, name in direct.items()]
        walk = igraph.Graph(n=self.n + len(names), edges=into_unowned + starts, directed=True)
        found: dict[int, set[str]] = {t: set() for t in tops}
        for k, name in enumerate(names):
            for v in walk.subcomponent(self.n + k, mode="out"):
                if v in found:
                    found[v].add(name)
        return found

    def owners(self, level: str) -> list[str | None]:
        """Every counted object's owner by the rule (None for the rest)."""
        direct = self.direct(level)
        nearest: list[str | None] = [None] * self.n  # the nearest owned dominator's owner (or its own)
        for v in self.order:
            parent = self.idom[v]
            nearest[v] = direct.get(v, nearest[parent] if parent >= 0 else None)
        # The tops of the subtrees no owned object dominates: dominated by the root or a root group.
        tops = [v for v in self.order if self.counted[v] and nearest[v] is None and not self.counted[self.idom[v]]]
        reach = self.reaching(direct, tops)
        owner: list[str | None] = [None] * self.n
        for v in self.order:
            if not self.counted[v]:
                continue
            if nearest[v] is not None:
                owner[v] = nearest[v]
            elif v in reach:
                found = reach[v]
                owner[v] = next(iter(found)) if len(found) == 1 else SHARED if found else UNKNOWN
            else:
                owner[v] = owner[self.idom[v]]
        return owner

    def totals(self, level: str) -> dict[str, tuple[int, int, int]]:
        """Per owner: objects, self size, and the retained sizes of its outermost members."""
        owner = self.owners(level)
        rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for v in range(self.n):
            name = owner[v]
            if name is None:
                continue
            row = rows[name]
            row[0] += 1
            row[1] += int(self.graph.self_size[v])
            up = self.idom[v]
            while up >= 0 and owner[up] != name:
                up = self.idom[up]
            if up < 0:  # no dominator of the same owner: an outermost member
                row[2] += self.retained[v]
        return {name: (a, b, c) for name, (a, b, c) in rows.items()}


@pytest.fixture(scope="module")
def oracle(heap: Heap) -> Oracle:
    return Oracle(heap.graph, heap.result)


def heapdb_totals(heap: Heap, level: str) -> dict[str, tuple[int, int, int]]:
    found = heap.owners.level(level)
    assert found is not None, f"no {level} level"
    return {row.name: (row.objects, row.self_size, row.retained_size) for row in owner_totals(heap.result, found)}


@pytest.mark.parametrize("level", ["package", "file"])
def test_totals_equal_the_brute_force(heap: Heap, oracle: Oracle, level: str) -> None:
    ours = heapdb_totals(heap, level)
    expected = oracle.totals(level)
    assert ours == expected
    # Each counted object has exactly one owner: self sizes add up to the heap's.
    counted = [v for v in range(oracle.n) if oracle.counted[v]]
    assert sum(row[1] for row in ours.values()) == int(heap.graph.self_size[counted].sum())


def test_packages_are_named_in_full(heap: Heap) -> None:
    packages = heapdb_totals(heap, "package")
    assert {"leaky", "inner", "@scope/tidy", APP, NODE} <= set(packages)
    files = heapdb_totals(heap, "file")
    nested = heap.folder / "node_modules/leaky/node_modules/inner/index.js"
    assert str(nested) in files and str(heap.folder / "node_modules/@scope/tidy/lib/index.js") in files
    # Every InnerTag is inner's though leaky's records dominate them: program structure names it first.
    assert packages["inner"][0] >= RECORDS


def test_the_leaking_package_retains_the_most(heap: Heap, oracle: Oracle) -> None:
    graph, result = heap.graph, heap.result
    level = heap.owners.level("package")
    assert level is not None
    packages = {row.name: row for row in owner_totals(result, level)}
    leaky = packages["leaky"]
    registry = next(v for v in range(graph.node_count) if graph.type_name(v) == "LeakyRegistry")
    held = next(
        int(graph.edge_to[e]) for e in graph.out_edges(registry) if graph.edge_label(e) == "records"
    )  # the leaked array
    records = [v for v in range(graph.node_count) if graph.type_name(v) == "LeakedRecord"]
    assert len(records) == RECORDS
    assert level.names[level.owner[held]] == "leaky"
    assert oracle.retained[held] >= int(graph.self_size[records].sum())
    assert leaky.retained_size >= oracle.retained[held]
    # Largest, but for the owners whose objects dominate leaky's records (Node's module objects
    # hold each package's exports): their retained sizes include leaky's.
    above: set[str] = set()
    up = oracle.idom[registry]
    while up >= 0:
        if level.owner[up] >= 0:
            above.add(level.names[level.owner[up]])
        up = oracle.idom[up]
    others = [row for name, row in packages.items() if name != "leaky" and name not in above]
    assert all(row.retained_size < leaky.retained_size for row in others)
    assert all(packages[name].retained_size >= leaky.retained_size for name in above if name in packages)
    # What leaky's objects are themselves: the most of any package.
    assert max(packages.values(), key=lambda row: row.self_size).name == "leaky"
