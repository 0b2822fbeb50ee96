"""What listeners, the console and closures hold, and the added globals (heapdb.loader.inspections.held).

Three oracles:

- **brute force**: Chrome DevTools' filters written out again in plain Python (its ``bfs`` from the
  root over every reference but weak ones, avoiding one kind of holder; the handlers found by
  walking each ``V8EventListener``'s references and each ``_events`` object's), on random small
  graphs and on two real snapshots, object for object, with the totals and groups summed again;
- **the programs' own construction**: tests/js/held.js registers 25 listeners on one EventEmitter,
  each a closure over its own array, logs three objects to V8's console with an inspector session
  open, and adds four globals; a Chromium page (``LISTENER_PAGE``) registers five click listeners
  each over its own array and logs two objects while the CDP client has the Runtime domain enabled;
  the Chromium page of the detached-DOM tests (heapgen.chromium's ``DETACHED_DOM_PAGE``) has one
  click listener and four globals;
- **memlab's `global-variable` analysis**: on the page, heapdb lists exactly memlab's references
  that pass the narrowing docs/analysis.md describes (properties, not symbols, not built in); on a
  Node snapshot memlab finds no global object at all.
"""

from __future__ import annotations

import json
import random
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats
from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind, HeapGraph
from heapdb.loader.inspections import held
from heapdb.loader.paths import first_paths
from heapgen.node import JS_DIR, run_node
from tests.support.chromium import capture_heap_snapshot
from tests.support.once import once
from tests.support.tiers import needs
from tests.support.v8 import v8_graph
from tests.support.v8_fixtures import node_tools  # noqa: F401

V8_KINDS = ["hidden", "array", "string", "object", "code", "closure", "regexp", "number", "native", "synthetic"]


@needs("node")
def write_held_snapshot(directory: Path) -> dict[str, Any]:
    """Run tests/js/held.js; what it says it made."""
    made: dict[str, Any] = json.loads(
        run_node(["--expose-gc", str(JS_DIR / "held.js"), str(directory / "held.heapsnapshot")], "held.js", 120)
    )
    return made


@needs("node")
def memlab_globals(snapshot: Path) -> list[dict[str, Any]]:
    """``memlab analyze global-variable --snapshot FILE --output json``: every reference it lists."""
    out = run_node(
        [str(JS_DIR / "node_modules" / ".bin" / "memlab"), "analyze", "global-variable", "--snapshot", str(snapshot),
         "--output", "json"],
        "memlab analyze global-variable",
        300,
    )  # fmt: skip
    listed: list[dict[str, Any]] = json.loads(next(line for line in out.splitlines() if line.startswith("[")))
    return listed


# A page with five click listeners, each over its own array, two objects logged to the console while
# the CDP client has the Runtime domain enabled (as DevTools does), and two globals of its own.
LISTENED, LISTENED_ITEMS, LOGGED, LOGGED_ITEMS = 5, 1000, 2, 500
LISTENER_PAGE = f"""<!doctype html>
<title>held</title>
<body>
<script>
for (let i = 0; i < {LISTENED}; i++) {{
  const payload = new Array({LISTENED_ITEMS}).fill(i + 0.5);
  const button = document.createElement('button');
  document.body.appendChild(button);
  button.addEventListener('click', () => payload.length);
}}
for (let i = 0; i < {LOGGED}; i++) console.log({{ logged: i, items: new Array({LOGGED_ITEMS}).fill(i + 0.25) }});
window.pageCache = new Array(300).fill(0).map((_, j) => ({{ slot: j }}));
window.ready = true;
</script>
</body>
"""


@needs("chromium")
def write_listener_page_snapshot(directory: Path) -> str:
    page = directory / "held.html"
    page.write_text(LISTENER_PAGE)
    return str(capture_heap_snapshot(page, directory / "held-page.heapsnapshot", ready_expression="window.ready"))


class Inspected:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.graph = formats.read_graph(path)
        self.result = analysis.analyze(self.graph)
        self.paths = first_paths(self.graph, self.result.retaining, self.result.transient)
        answer = held.held(self.graph, self.result, self.paths, source=str(path), limit=10_000)
        assert answer is not None
        self.answer = answer
        self.masks = held.held_objects(self.graph, held.holders(self.graph))


@pytest.fixture(scope="module")
def node_program(tmp_path_factory: pytest.TempPathFactory, node_tools: Path) -> tuple[Inspected, dict[str, Any]]:  # noqa: F811
    made = once(tmp_path_factory, "held-node", write_held_snapshot)
    return Inspected(Path(made["path"])), made


@pytest.fixture(scope="module")
def page(dom_page_snapshot: Path) -> Inspected:
    return Inspected(dom_page_snapshot)


# --- brute force: DevTools' filters, written out again -------------------------------------------


def label(graph: HeapGraph, e: int) -> str:
    return graph.edge_label(e)


def brute_handlers(graph: HeapGraph) -> set[int]:
    """The event handlers: each V8EventListener's callback (reference "1"), or the first object it
    references that has code; each function an `_events` object names, alone or in an Array."""

    def has_code(v: int) -> bool:
        return any(label(graph, e) == "code" for e in graph.out_edges(v))

    found = set()
    for v in range(graph.node_count):
        if graph.node_name(v) == "V8EventListener":
            callback = next((int(graph.edge_to[e]) for e in graph.out_edges(v) if label(graph, e) == "1"), None)
            if callback is None:
                continue
            if has_code(callback):
                found.add(callback)
                continue
            inner = [int(graph.edge_to[e]) for e in graph.out_edges(callback) if has_code(int(graph.edge_to[e]))]
            found.add(inner[0] if inner else callback)
    closure = graph.node_kinds.index("closure")
    for e in range(graph.edge_count):
        if graph.edge_kind[e] == EdgeKind.PROPERTY and graph.strings[graph.edge_name[e]] == "_events":
            for f in graph.out_edges(int(graph.edge_to[e])):
                if graph.edge_kind[f] != EdgeKind.PROPERTY:
                    continue
                value = int(graph.edge_to[f])
                if graph.kind[value] == closure:
                    found.add(value)
                elif graph.node_name(value) == "Array" and graph.node_kinds[graph.kind[value]] == "object":
                    found |= {
                        int(graph.edge_to[g])
                        for g in graph.out_edges(value)
                        if graph.edge_kind[g] == EdgeKind.ELEMENT and graph.kind[graph.edge_to[g]] == closure
                    }
    return found


def brute_walk(graph: HeapGraph, refuse: Any) -> set[int]:
    """What a breadth-first walk from the root reaches over non-weak references ``refuse(edge)`` lets by."""
    seen = {graph.root}
    queue = deque([graph.root])
    while queue:
        v = queue.popleft()
        for e in graph.out_edges(v):
            t = int(graph.edge_to[e])
            if graph.edge_kind[e] == EdgeKind.WEAK or t in seen or refuse(v, e, t):
                continue
            seen.add(t)
            queue.append(t)
    return seen


def brute_held(graph: HeapGraph) -> dict[str, set[int]]:
    handlers = brute_handlers(graph)
    contexts = {
        v for v in range(graph.node_count)
        if graph.node_name(v) == "system / Context" or graph.node_name(v).startswith("system / Context / ")
    }  # fmt: skip

    def console(v: int, e: int, _t: int) -> bool:
        named = int(graph.edge_kind[e]) not in {int(k) for k in NUMERIC_NAME_KINDS}
        synthetic = graph.node_kinds[graph.kind[v]] == "synthetic"
        return synthetic and named and label(graph, e).endswith(" / DevTools console")

    everything = brute_walk(graph, lambda v, e, t: False)
    return {
        "listeners": everything - brute_walk(graph, lambda v, e, t: t in handlers),
        "console": everything - brute_walk(graph, console),
        "closures": everything - brute_walk(graph, lambda v, e, t: t in contexts),
    }


def assert_brute_force(graph: HeapGraph, result: analysis.Analysis, answer: held.Held) -> dict[str, set[int]]:
    """Every category's objects, totals and groups against the brute force; its objects returned."""
    expected = brute_held(graph)
    paths = first_paths(graph, result.retaining, result.transient)
    masks = held.held_objects(graph, held.holders(graph))
    for category, objects in expected.items():
        assert set(np.flatnonzero(masks[category]).tolist()) == objects, category
        by: held.HeldBy = getattr(answer, category)
        assert by.objects == len(objects)
        assert by.self_size == sum(int(graph.self_size[v]) for v in objects)

        def dominated(v: int, members: set[int] = objects) -> bool:  # by another held object
            u = int(result.idom[v])
            while u >= 0 and u != result.root:
                if u in members:
                    return True
                u = int(result.idom[u])
            return False

        outer = [v for v in objects if not dominated(v)]
        assert by.retained_size == sum(int(result.retained_size[v]) for v in outer)
        signatures = {int(paths.signature[v]) for v in outer}
        assert by.paths == len(signatures) and {g.signature for g in by.groups} == signatures
        for g in by.groups:
            mine = [v for v in outer if paths.signature[v] == g.signature]
            assert (g.outermost, g.retained_size) == (len(mine), sum(int(result.retained_size[v]) for v in mine))
            best = max(mine, key=lambda v: (int(result.retained_size[v]), -int(graph.ids[v])))
            assert g.example_id == int(graph.ids[best])
    return expected


def random_graph(seed: int) -> HeapGraph:
    """A small V8 graph with listeners (Blink's and Node's), contexts, console references and a
    global object, wired at random."""
    rng = random.Random(seed)
    table = ["", "(GC roots)", "(Global handles)", "V8EventListener", "system / Context", "system / Context / scope",
             "Object", "Array", "_events", "code", "1", "3 / DevTools console", "fn", "x", "global", "tick"]  # fmt: skip
    k = {name: V8_KINDS.index(name) for name in V8_KINDS}
    kinds = [k["synthetic"], k["synthetic"], k["synthetic"]]
    names = [0, 1, 2]
    n = 40
    # (name, kind) of the other objects: listeners, contexts of both namings, objects, functions.
    plan = [("V8EventListener", "native"), ("system / Context", "object"), ("system / Context / scope", "object"),
            ("Object", "object"), ("Array", "object"), ("fn", "closure"), ("x", "code")]  # fmt: skip
    for _ in range(n - 3):
        name, kind = rng.choice(plan)
        names.append(table.index(name))
        kinds.append(k[kind])
    edges = [(0, 1, int(EdgeKind.ELEMENT), 1), (1, 2, int(EdgeKind.ELEMENT), 2)]
    kinds_of_edges = [EdgeKind.PROPERTY, EdgeKind.ELEMENT, EdgeKind.INTERNAL, EdgeKind.WEAK, EdgeKind.HIDDEN]
    for _ in range(3 * n):
        src, dst = rng.randrange(1, n), rng.randrange(3, n)
        edge_kind = rng.choice(kinds_of_edges)
        if edge_kind in NUMERIC_NAME_KINDS:
            edges.append((src, dst, int(edge_kind), rng.choice([0, 1, 2])))
        else:
            edge_name = rng.choice(["x", "code", "_events", "tick", "1"])
            edges.append((src, dst, int(edge_kind), table.index(edge_name)))
    for _ in range(4):  # console references from the global handles
        edges.append((2, rng.randrange(3, n), int(EdgeKind.INTERNAL), table.index("3 / DevTools console")))
    return v8_graph(V8_KINDS, kinds, names, [rng.randrange(1, 100) for _ in range(n)], edges, table)


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_hold_what_devtools_filters_find(seed: int) -> None:
    graph = random_graph(seed)
    result = analysis.analyze(graph)
    answer = held.held(graph, result, first_paths(graph, result.retaining), source="random")
    assert answer is not None
    assert_brute_force(graph, result, answer)


def test_the_node_program_holds_what_it_built(node_program: tuple[Inspected, dict[str, Any]]) -> None:
    inspected, made = node_program
    g, answer = inspected.graph, inspected.answer
    found = assert_brute_force(g, inspected.result, answer)
    # Every listener the program registered is a handler, with its own array: 25 closures, 25 arrays.
    ticks = {
        int(g.edge_to[f]) for e in range(g.edge_count) if g.edge_label(e) == "tick"
        for f in g.out_edges(int(g.edge_to[e])) if g.edge_kind[f] == EdgeKind.ELEMENT
    }  # fmt: skip
    assert len(ticks) == made["listeners"] and ticks <= found["listeners"]
    payloads = [v for v in found["listeners"] if g.node_name(v) == "Array" and g.self_size[v] > 0]
    elements = [v for v in found["listeners"] if g.node_name(v) == "(object elements)"]
    assert sum(1 for v in elements if g.self_size[v] >= made["listenerItems"] * 8) == made["listeners"] <= len(payloads)
    # The console keeps each logged object and its array, and nothing the program still holds.
    logged = [v for v in found["console"] if g.node_name(v) == "Object"]
    assert len(logged) == made["console"] == answer.console.holders
    assert sum(1 for v in found["console"] if g.self_size[v] >= made["consoleItems"] * 8) == made["console"]
    # The globals it added, and no other: Node's own (process, Buffer, gc...) are built in.
    assert {v.name for v in answer.globals} == {*made["globals"], "heldBus"}
    for v in answer.globals:
        index = int(np.flatnonzero(g.ids == v.id)[0])
        assert v.retained_size == inspected.result.retained_size[index]
    assert [v.retained_size for v in answer.globals] == sorted((v.retained_size for v in answer.globals), reverse=True)


def test_node_has_no_global_object_for_memlab(node_program: tuple[Inspected, dict[str, Any]]) -> None:
    """memlab looks for `Window …` objects only: on Node it lists nothing, heapdb the program's globals."""
    inspected, _made = node_program
    assert memlab_globals(inspected.path) == []
    assert inspected.answer.global_count == 4


def test_the_page_globals_are_memlabs_narrowed(page: Inspected, tmp_path_factory: pytest.TempPathFactory) -> None:
    theirs = once(tmp_path_factory, "memlab-globals-page", lambda _d: memlab_globals(page.path))
    builtin = held.builtin_globals()["browser"]
    kept = [
        (e["nameOrIndex"], e["toNode"]["id"], e["toNode"]["retainedSize"])
        for e in theirs
        if e["type"] == "property"
        and not str(e["nameOrIndex"]).startswith("<symbol")
        and str(e["nameOrIndex"]).removeprefix("get ").removeprefix("set ") not in builtin
    ]
    ours = [(v.name, v.id, v.retained_size) for v in page.answer.globals]
    assert sorted(ours) == sorted(kept)
    assert {name for name, _i, _r in ours} == {"closedPanels", "rowCache", "tree", "ready"}  # the page's own
    assert len(theirs) > 100  # memlab's own list: Window's internals and Blink's objects too


def test_the_page_listener_and_its_closure(page: Inspected) -> None:
    g = page.graph
    found = assert_brute_force(g, page.result, page.answer)
    assert page.answer.listeners.holders == 1  # the button's click listener
    (handler,) = [v for v in found["listeners"] if g.node_kinds[g.kind[v]] == "closure"]
    listener = next(v for v in range(g.node_count) if g.node_name(v) == "V8EventListener")
    assert handler in {int(g.edge_to[e]) for e in g.out_edges(listener)}
    assert page.answer.console.holders == 0 and page.answer.console.objects == 0


def test_a_page_with_listeners_and_the_console(tmp_path_factory: pytest.TempPathFactory) -> None:
    inspected = Inspected(Path(once(tmp_path_factory, "held-page", write_listener_page_snapshot)))
    g, answer = inspected.graph, inspected.answer
    found = assert_brute_force(g, inspected.result, answer)

    def backing_stores(objects: set[int], items: int) -> int:  # an array's elements: 8 bytes a number
        return sum(1 for v in objects if g.node_name(v) == "(object elements)" and g.self_size[v] >= items * 8)

    assert answer.listeners.holders == LISTENED and backing_stores(found["listeners"], LISTENED_ITEMS) == LISTENED
    assert answer.console.holders == LOGGED and backing_stores(found["console"], LOGGED_ITEMS) == LOGGED
    assert {v.name for v in answer.globals} == {"pageCache", "ready"}


def test_analyze_held_prints_and_refuses(node_program: tuple[Inspected, dict[str, Any]], tmp_path: Path) -> None:
    inspected, _made = node_program
    as_json = CliRunner().invoke(main, ["analyze", str(inspected.path), "--rules", "none", "--held", "--json"])
    assert as_json.exit_code == 0, as_json.output
    shown = json.loads(as_json.output)["held"]
    assert shown["listeners"]["objects"] == inspected.answer.listeners.objects
    assert [g["name"] for g in shown["globals"]] == [v.name for v in inspected.answer.globals]
    as_text = CliRunner().invoke(main, ["analyze", str(inspected.path), "--rules", "none", "--held", "--top", "2"])
    assert as_text.exit_code == 0 and "Global variables the program added: 4" in as_text.output
    dump = tmp_path / "empty.json"
    dump.write_text('{"objects": {}, "roots": {}}')  # a Luau dump: its first bytes say so
    refused = CliRunner().invoke(main, ["analyze", str(dump), "--held"])
    assert refused.exit_code == 2 and "--held: luau snapshots hold no JavaScript listeners" in refused.output
    assert "Traceback" not in refused.output
