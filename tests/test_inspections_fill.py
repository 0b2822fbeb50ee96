"""Empty, sparse and low-fill collections (heapdb.loader.inspections.fill) on real snapshots.

- A Java dump of tests/java/Fill.java: every collection and object array heapdb measures has the
  size and capacity that VisualVM's heap library (tests/java/FillOracle.java) reads from the same
  dump, worked out here by brute force from its raw facts (fields, array lengths, non-null slots,
  super classes); and each group the program made has the sizes and capacities it made.
- A Node snapshot of tests/js/fill.js: each group of Maps, Sets and Arrays has the size and
  capacity V8 gives it (a Map or Set starts with room for 4 and doubles).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats
from heapdb.loader.graph import NUMERIC_NAME_KINDS, HeapGraph
from heapdb.loader.inspections import fill, fill_v8
from heapdb.loader.paths import first_paths, path_hops
from heapgen.java import compile_java, dump_program
from heapgen.node import JS_DIR, run_node
from tests.support.tiers import needs

VISUALVM_HEAP_JAR = Path("/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar")
SCALE = 2  # Fill.java's groups, each this many times its base count


@dataclasses.dataclass(frozen=True)
class Inspected:
    path: Path
    graph: HeapGraph
    result: analysis.Analysis
    answer: fill.CollectionFill  # every collection listed
    measured: fill.Measured


def inspect(path: Path) -> Inspected:
    graph = formats.read_graph(path)
    result = analysis.analyze(graph)
    paths = first_paths(graph, result.retaining, result.transient)
    answer = fill.collection_fill(graph, result, paths, source=path.name, limit=1 << 30)
    assert answer is not None
    declared = formats.named(graph.meta["format"])
    assert declared is not None
    measure = fill.java_collections if declared.collections is formats.Collections.JAVA else fill_v8.v8_collections
    return Inspected(path, graph, result, answer, measure(graph, result.reachable))


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inspected, Path]:
    tmp = tmp_path_factory.mktemp("fill-java")
    classes = compile_java(tmp / "classes", "Fill.java", "FillOracle.java", classpath=VISUALVM_HEAP_JAR)
    dump = tmp / "fill.hprof"
    dump_program(classes, "Fill", dump, str(SCALE))
    facts = tmp / "facts.tsv"
    wanted = {c.array for c in fill.JAVA_COLLECTIONS} | {w.field for w in fill.JAVA_WRAPPERS}
    wanted |= {c.size for c in fill.JAVA_COLLECTIONS if c.size}
    subprocess.run(
        ["java", "-cp", f"{VISUALVM_HEAP_JAR}:{classes}", "FillOracle", str(dump), str(facts), *sorted(wanted)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return inspect(dump), facts


def brute_force(facts: Path) -> dict[int, tuple[str, int, int]]:
    """Per collection or object array the oracle's facts make one: (type, size, capacity), by the
    rules of the module docstring applied one object at a time."""
    parent: dict[str, str] = {}
    types: dict[int, str] = {}
    fields: dict[int, dict[str, str]] = defaultdict(dict)
    arrays: dict[int, tuple[str, int, int]] = {}
    for line in facts.read_text().splitlines():
        f = line.split("\t")
        if f[0] == "c":
            parent[f[1]] = f[2]
        elif f[0] == "i":
            types[int(f[1])] = f[2]
        elif f[0] == "f":
            fields[int(f[1])].setdefault(f[2], f[3])  # a field a subclass hides: the subclass's (listed first)
        elif f[0] == "a":
            arrays[int(f[1])] = (f[2], int(f[3]), int(f[4]))

    def nearest(name: str, known: dict[str, int]) -> int:
        while name:
            if name in known:
                return known[name]
            name = parent.get(name, "")
        return -1

    collections = {c.name: i for i, c in enumerate(fill.JAVA_COLLECTIONS)}
    wrappers = {w.name: i for i, w in enumerate(fill.JAVA_WRAPPERS)}
    found: dict[int, tuple[str, int, int]] = {}
    backing: dict[int, int] = {}
    for oid, name in types.items():
        k = nearest(name, collections)
        if k < 0:
            continue
        spec = fill.JAVA_COLLECTIONS[k]
        array = int(fields[oid].get(spec.array, "0"))
        length, non_null = arrays[array][1:] if array else (0, 0)
        size = non_null if spec.size is None else int(fields[oid][spec.size])
        found[oid] = (name, size, length // spec.slots_per_entry)
        backing[oid] = array
    for oid, name in types.items():
        w = nearest(name, wrappers)
        if w < 0:
            continue
        inner = int(fields[oid].get(fill.JAVA_WRAPPERS[w].field, "0"))
        if inner in found:
            found[oid] = (name, *found.pop(inner)[1:])
            backing[oid] = backing.pop(inner)
    backs = set(backing.values())
    for oid, (name, length, non_null) in arrays.items():
        if oid not in backs:
            found[oid] = (name, non_null, length)
    return found


def test_java_collections_equal_visualvm_read_by_brute_force(java: tuple[Inspected, Path]) -> None:
    inspected, facts = java
    g, m = inspected.graph, inspected.measured
    ours = {
        int(i): (g.type_name(int(v)), int(s), int(c))
        for v, i, s, c in zip(m.nodes, g.ids[m.nodes], m.size, m.capacity, strict=True)
    }
    theirs = brute_force(facts)
    assert len(ours) > 1000 and ours == theirs
    # The totals and the histogram are the same figures summed.
    answer = inspected.answer
    slot = answer.slot_size
    assert slot == g.meta["oop_size"]
    per_entry = {c.name: c.slots_per_entry for c in fill.JAVA_COLLECTIONS}
    by_type: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for name, size, capacity in theirs.values():
        by_type[name].append((size, capacity))
    assert {t.type: (t.count, t.empty, t.size, t.capacity) for t in answer.types} == {
        name: (len(rows), sum(s == 0 for s, _ in rows), sum(s for s, _ in rows), sum(c for _, c in rows))
        for name, rows in by_type.items()
    }
    identity = by_type["java.util.IdentityHashMap"]
    assert identity and {t.type: t.wasted for t in answer.types}["java.util.IdentityHashMap"] == sum(
        max(c - s, 0) * slot * per_entry["java.util.IdentityHashMap"] for s, c in identity
    )
    assert answer.wasted == sum(r.wasted for r in answer.rows) == sum(t.wasted for t in answer.types)
    for t in answer.types:
        ratios = [s / c for s, c in by_type[t.type] if c]
        assert list(t.histogram) == [
            sum(r == 0 for r in ratios),
            *(sum(i / 10 < min(r, 1) <= (i + 1) / 10 for r in ratios) for i in range(10)),
        ]


def test_java_groups_have_the_sizes_the_program_made(java: tuple[Inspected, Path]) -> None:
    answer = java[0].answer
    made = Counter((r.path.split(" / ")[-3].split(" → ")[0], r.type, r.size, r.capacity) for r in answer.rows)
    expected = {
        ("EMPTY_PRESIZED", "java.util.ArrayList", 0, 100): 20,
        ("SPARSE_LISTS", "java.util.ArrayList", 3, 1000): 10,
        ("CLEARED_MAPS", "java.util.HashMap", 0, 64): 7,
        ("SMALL_MAPS", "java.util.HashMap", 1, 16): 15,
        ("PRESIZED_MAPS", "java.util.HashMap", 2, 1024): 4,
        ("SETS", "java.util.HashSet", 2, 16): 6,
        ("SETS", "java.util.LinkedHashMap", 12, 16): 6,
        ("OTHERS", "java.util.Vector", 1, 50): 3,
        ("OTHERS", "java.util.ArrayDeque", 2, 65): 3,  # JDK 11 on: one slot more than asked for
        ("OTHERS", "java.util.Hashtable", 1, 101): 3,
        ("OTHERS", "java.util.concurrent.ConcurrentHashMap", 5, 512): 3,
        ("OTHERS", "java.util.WeakHashMap", 1, 64): 3,
        ("OTHERS", "java.util.IdentityHashMap", 1, 128): 3,
        ("OTHERS", "java.util.Properties", 1, 16): 3,
        ("ARRAYS", "java.lang.Object[]", 5, 100): 8,
    }
    assert {key: made[key] for key in expected} == {key: n * SCALE for key, n in expected.items()}
    # Collections with no unused room are no rows: the full lists, the full arrays, the lists and
    # maps that never allocated an array (counted empty, with no capacity).
    groups = {r.path.split(" / ")[-3].split(" → ")[0] for r in answer.rows}
    assert not groups & {"FULL_LISTS", "EMPTY_DEFAULT", "EMPTY_MAPS"}
    lists = {t.type: t for t in answer.types}["java.util.ArrayList"]
    assert lists.empty >= (30 + 20) * SCALE and lists.no_capacity >= 30 * SCALE


def test_java_report_and_cli(java: tuple[Inspected, Path]) -> None:
    inspected = java[0]
    result = CliRunner().invoke(main, ["analyze", str(inspected.path), "--fill", "--top", "3"])
    assert result.exit_code == 0, result.output
    text = fill.collection_fill_text(
        fill.CollectionFill(
            **{**inspected.answer.__dict__, "source": str(inspected.path), "rows": inspected.answer.rows[:3]}
        )
    )
    assert text in result.output
    assert f"{inspected.answer.collections:,} collections, {inspected.answer.empty:,} empty" in text


@needs("node")
def write_fill_snapshot(out: Path) -> tuple[Path, dict[str, int]]:
    """Run tests/js/fill.js; the snapshot's path and how many collections each group holds."""
    made = json.loads(run_node(["--expose-gc", str(JS_DIR / "fill.js"), str(out)], "fill.js", 120))
    return Path(made["path"]), made["groups"]


@pytest.fixture(scope="module")
def v8_fill(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inspected, dict[str, int]]:
    path, groups = write_fill_snapshot(tmp_path_factory.mktemp("fill-v8") / "fill.heapsnapshot")
    return inspect(path), groups


def test_v8_groups_have_the_sizes_v8_gives_them(v8_fill: tuple[Inspected, dict[str, int]]) -> None:
    inspected, groups = v8_fill
    g, m, result = inspected.graph, inspected.measured, inspected.result
    paths = first_paths(g, result.retaining, result.transient)
    rows: Counter[tuple[str, str, int, int]] = Counter()
    for v, size, capacity in zip(m.nodes.tolist(), m.size.tolist(), m.capacity.tolist(), strict=True):
        hops = path_hops(g, paths, v)
        group = hops[-2].split(" → ")[0] if len(hops) >= 3 and hops[-3].endswith("→ global") else ""
        if group in groups and hops[-1].startswith("[] → "):
            rows[(group, g.type_name(v), size, capacity)] += 1
    # A Map or Set has room for 4 entries at first and doubles; a cleared one has room for 4 again.
    assert rows == {
        ("emptyMaps", "Map", 0, 4): groups["emptyMaps"],
        ("emptySets", "Set", 0, 4): groups["emptySets"],
        ("emptyArrays", "Array", 0, 0): groups["emptyArrays"],
        ("smallMaps", "Map", 3, 4): groups["smallMaps"],
        ("clearedMaps", "Map", 0, 4): groups["clearedMaps"],
        ("grownSets", "Set", 9, 16): groups["grownSets"],
        ("holeyArrays", "Array", 1, 50): groups["holeyArrays"],
        ("numberArrays", "Array", -1, 3): groups["numberArrays"],
    }
    assert inspected.answer.slot_size == 8  # Node keeps full pointers
    by_type = {t.type: t for t in inspected.answer.types}
    assert by_type["Array"].unknown >= groups["numberArrays"]
    assert by_type["Array"].no_capacity >= groups["emptyArrays"]
    assert by_type["Map"].empty >= groups["emptyMaps"] + groups["clearedMaps"]
    # A Map's entry is 3 slots (key, value, chain), a Set's 2: the unused room of an empty Map is
    # 4 x 3 x 8 bytes.
    assert {(r.type, r.size, r.capacity, r.wasted) for r in inspected.answer.rows} >= {
        ("Map", 0, 4, 96),
        ("Set", 9, 16, 112),
    }


def test_v8_word_size_follows_the_tables_bytes(v8_fill: tuple[Inspected, dict[str, int]]) -> None:
    # The same tables under pointer compression (4-byte slots, a 2-slot header): the word found is 4.
    g = v8_fill[0].graph
    compressed = g.self_size.copy()
    tables = _tables(g)
    for _members, table, _per_entry in tables:
        compressed[table] //= 2
    assert fill_v8._v8_word(g, tables) == 8
    halved = dataclasses.replace(g, self_size=compressed)
    assert fill_v8._v8_word(halved, tables) == 4


def _tables(g: HeapGraph) -> list[tuple[np.ndarray, np.ndarray, int]]:
    from heapdb.loader.inspections.common import first_targets, string_indexes

    at = string_indexes(g, (*fill_v8.V8_HASHED, fill_v8.V8_TABLE))
    found = []
    for name, per_entry in fill_v8.V8_HASHED.items():
        members = np.flatnonzero(np.isin(g.name, at[name]))
        table = first_targets(g, members, at[fill_v8.V8_TABLE])[members].astype(np.int64)
        found.append((members[table >= 0], table[table >= 0], per_entry))
    return found


def test_v8_sizes_do_not_depend_on_the_order_of_references(v8_fill: tuple[Inspected, dict[str, int]]) -> None:
    # A graph read back from the store (heapdb reanalyze) orders each object's references by kind,
    # then by name as text ("11" before "5"): measured in that order, every collection is the same.
    g, m = v8_fill[0].graph, v8_fill[0].measured
    rank = np.empty(len(g.strings), dtype=np.int64)
    rank[sorted(range(len(g.strings)), key=g.strings.__getitem__)] = np.arange(len(g.strings))
    numeric = np.isin(g.edge_kind, [int(k) for k in NUMERIC_NAME_KINDS])
    by_text = np.where(numeric, g.edge_name.astype(np.int64), rank[np.minimum(g.edge_name, len(g.strings) - 1)])
    order = np.lexsort((by_text, g.edge_kind, g.edge_sources()))
    stored_order = dataclasses.replace(
        g, edge_to=g.edge_to[order], edge_kind=g.edge_kind[order], edge_name=g.edge_name[order]
    )
    again = fill_v8.v8_collections(stored_order, v8_fill[0].result.reachable)
    assert np.array_equal(again.nodes, m.nodes) and np.array_equal(again.size, m.size)
    assert np.array_equal(again.capacity, m.capacity) and (m.size > 9).sum() > 5


def test_java_values_redacted_leave_it_not_computed(java: tuple[Inspected, Path]) -> None:
    # Under `--redact` with values, no primitive value is kept: sizes with them.
    from heapdb.loader.redaction import Redaction, redact_graph

    inspected = java[0]
    redacted = redact_graph(inspected.graph, Redaction(values=True, key=b"k"))
    paths = first_paths(redacted, inspected.result.retaining, inspected.result.transient)
    assert fill.collection_fill(redacted, inspected.result, paths, source="") is None
    kept = redact_graph(inspected.graph, Redaction(key=b"k"))  # nothing covered: the sizes stay
    again = fill.collection_fill(kept, inspected.result, paths, source="")
    assert again is not None and (again.types, again.wasted) == (inspected.answer.types, inspected.answer.wasted)
