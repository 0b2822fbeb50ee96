"""Duplicate objects (heapdb.loader.inspections.objects) against memlab's `object-shallow` analysis,
VisualVM's heap library and brute force.

- Real V8 snapshots of two Node programs (tests/js/dup_objects.js: 2,000 copies of one settings
  object, objects in two property orders, heap numbers, concatenations, dictionaries; leak.js):
  every object content memlab groups is one of ours with the same copies, ids and bytes, the totals
  are its "All objects" statistics, and the report's top lists are its top lists.
- A real Java heap dump (tests/java/DupArrays.java: 400 copies of four arrays, arrays that differ
  in one element, an int[] and a float[] of equal bytes): the primitive arrays VisualVM reads and
  reaches, grouped by the digest of all their elements, are our groups, bytes and ids included.
- Small generated graphs: the groups equal those of a brute force that writes memlab's JSON text of
  every object (JavaScript's key order, a key set twice, `REFERENCE_` texts, numbers' values).
- A redacting load's duplicate objects: the figures of an unredacted one, the texts the redacted
  graph shows and keys no guess can hash to.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.inspections import objects
from heapdb.loader.redaction import DATA_NAMES, EVERY_STRING, Redaction
from heapdb.loader.store import LoadInput
from heapgen.java import compile_java, dump_program
from tests.support.snapshots import LUAU_FIXTURES
from tests.support.v8 import (
    assert_ranked_as_memlab,
    read_beside_memlab,
    run_memlab_objects,
    v8_graph,
    write_duplicate_objects_snapshot,
)

VISUALVM_HEAP_JAR = Path("/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar")
COPIES = 2000  # dup_objects.js's settings objects
ARRAY_COPIES = 400  # DupArrays.java's requests


def our_groups(graph: HeapGraph, result: analysis.Analysis) -> list[tuple[int, int, list[int]]]:
    """Every group as (copies, retained bytes, sorted ids), sorted."""
    grouped = objects.object_groups(graph, result)
    assert grouped is not None
    return sorted(
        (int(grouped.count[g]), int(grouped.retained_size[g]), sorted(graph.ids[grouped.members(g)].tolist()))
        for g in range(grouped.count.shape[0])
    )


@pytest.fixture(scope="module")
def dup_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_duplicate_objects_snapshot(tmp_path_factory.mktemp("dup-objects"))


@pytest.fixture(scope="module", params=["dup_objects.js", "leak.js"])
def compared(request: pytest.FixtureRequest, dup_snapshot: Path, leak_snapshot: Path, tmp_path_factory) -> Any:
    """A snapshot read and analysed, with memlab's object-shallow analysis of it."""
    path = dup_snapshot if request.param == "dup_objects.js" else leak_snapshot
    return read_beside_memlab(path, run_memlab_objects, tmp_path_factory.mktemp("memlab-objects") / "objects.json")


def test_every_object_content_is_grouped_as_memlab_groups_it(compared: Any) -> None:
    _path, graph, result, memlab = compared
    theirs = sorted((g["n"], g["size"], sorted(g["ids"])) for g in memlab["groups"])
    assert our_groups(graph, result) == theirs
    report = objects.duplicate_objects(graph, result, source="x", limit=1)
    assert report is not None
    everything = memlab["patterns"]["All objects"]
    assert (report.objects, report.duplicated, report.object_bytes) == (
        everything["n"],
        everything["dupN"],
        everything["size"],
    )
    grouped = objects.object_groups(graph, result)
    assert grouped is not None
    assert grouped.wasted()[grouped.count > 1].sum() == pytest.approx(everything["dupSize"], abs=0.5)


def test_the_report_ranks_as_memlabs_top_lists(compared: Any) -> None:
    path, graph, result, memlab = compared
    for sort, top, key in (("retained_size", "topBySize", "size"), ("count", "topByCount", "n")):
        report = objects.duplicate_objects(graph, result, source=str(path), limit=10, sort=sort)
        assert report is not None
        ours = [(r.count, r.retained_size) for r in report.rows]
        theirs = [(r["n"], r["size"]) for r in memlab[top]]
        figure = 1 if key == "size" else 0
        assert_ranked_as_memlab(ours, theirs, figure)


def test_the_settings_copies_lead_with_their_owner_and_text(dup_snapshot: Path) -> None:
    graph = formats.read_graph(dup_snapshot)
    result = analysis.analyze(graph)
    report = objects.duplicate_objects(graph, result, source=str(dup_snapshot), limit=10)
    assert report is not None and report.rule == "shallow"
    settings = report.rows[0]
    assert settings.count == COPIES and settings.type == "Object" and settings.size == 4
    assert settings.value.startswith("{host: 'db.internal.example', user: 'checkout-service', tls: @")
    assert settings.wasted == round(settings.retained_size * (COPIES - 1) / COPIES)
    assert settings.owners[0].type == "Array" and settings.owners[0].copies == COPIES
    # The same two properties in two orders are two contents; heap numbers are null, so every Point is one.
    orders = {r.value for r in report.rows if r.value in ("{a: 'alpha', b: 'beta'}", "{b: 'beta', a: 'alpha'}")}
    assert len(orders) == 2
    assert [r.count for r in report.rows if r.type == "Point"] == [500]


def test_analyze_lists_them_and_refuses_a_format_without_them(dup_snapshot: Path, tmp_path: Path) -> None:
    as_json = CliRunner().invoke(main, ["analyze", str(dup_snapshot), "--dup-objects", "--top", "3", "--json"])
    assert as_json.exit_code == 0, as_json.output
    answer = json.loads(as_json.stdout)["dup_objects"]
    assert len(answer["rows"]) == 3 and answer["rows"][0]["count"] == COPIES
    as_text = CliRunner().invoke(main, ["analyze", str(dup_snapshot), "--dup-objects", "--top", "3"])
    assert as_text.exit_code == 0, as_text.output
    assert "Duplicate objects in" in as_text.stdout and "db.internal.example" in as_text.stdout
    luau = LUAU_FIXTURES / "luau-3-final.json"
    refused = CliRunner().invoke(main, ["analyze", str(luau), "--dup-objects"])
    assert refused.exit_code == 2 and "--dup-objects: heapdb does not compare the objects of luau" in refused.output


# --- Java: primitive arrays against VisualVM ------------------------------------------------------


@pytest.fixture(scope="module")
def java_dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """DupArrays' heap dump, and VisualVM's reading of its primitive arrays (ArraysOracle)."""
    assert all(shutil.which(tool) for tool in ("javac", "java", "jcmd")), "scripts/bootstrap.sh installs a JDK"
    assert VISUALVM_HEAP_JAR.is_file(), "scripts/bootstrap.sh installs visualvm"
    tmp = tmp_path_factory.mktemp("dup-arrays")
    classes = compile_java(tmp, "DupArrays.java", "ArraysOracle.java", classpath=VISUALVM_HEAP_JAR)
    dump = tmp / "dup.hprof"
    assert dump_program(classes, "DupArrays", dump) == [str(ARRAY_COPIES)]
    table = tmp / "arrays.tsv"
    subprocess.run(
        ["java", "-cp", f"{VISUALVM_HEAP_JAR}:{classes}", "ArraysOracle", str(dump), str(table)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return dump, table


def test_primitive_arrays_group_as_visualvm_reads_them(java_dump: tuple[Path, Path]) -> None:
    dump, table = java_dump
    groups: dict[tuple[str, str, str], list[int]] = collections.defaultdict(list)
    retained: dict[int, int] = {}
    for line in table.read_text().splitlines():
        array_id, type_name, length, size, reached, digest = line.split("\t")
        if reached == "1":  # what the root reaches: the rest is garbage, not waste
            groups[(type_name, length, digest)].append(int(array_id))
            retained[int(array_id)] = int(size)
    theirs = sorted((len(ids), sum(retained[i] for i in ids), sorted(ids)) for ids in groups.values())
    graph = formats.read_graph(dump)
    result = analysis.analyze(graph)
    assert our_groups(graph, result) == theirs
    report = objects.duplicate_objects(graph, result, source="dump", limit=4)
    assert report is not None and report.rule == "arrays"
    assert report.objects == len(retained) and report.duplicated == sum(len(ids) - 1 for ids in groups.values())
    # Each request's four arrays (and the originals the program still holds): int[256] wastes most.
    assert [r.type for r in report.rows] == ["int[]", "byte[]", "char[]", "long[]"]
    assert all(r.count == ARRAY_COPIES + 1 for r in report.rows)
    assert report.rows[0].value.startswith("[7, 38, 69,") and report.rows[0].size == 256
    assert report.rows[0].owners[0].type == "DupArrays$Request" and report.rows[0].owners[0].copies == ARRAY_COPIES
    assert report.rows[2].value.startswith("'Content-Type")


def test_a_redacting_load_keeps_the_figures_and_shows_no_value(
    java_dump: tuple[Path, Path], dup_snapshot: Path
) -> None:
    key = bytes(range(32))
    for path, redaction in (
        (java_dump[0], Redaction(values=True, key=key)),
        (dup_snapshot, Redaction(strings=EVERY_STRING, names=DATA_NAMES, key=key)),
    ):
        graph = formats.read_graph(path)
        result = analysis.analyze(graph)
        plain = LoadInput.from_analysis(graph, result).inspections.objects
        redacted = LoadInput.from_analysis(graph, result, redaction=redaction).inspections.objects
        assert plain is not None and redacted is not None and plain.rows
        figures = ("type", "size", "count", "retained_size", "wasted", "example_id", "owners")
        assert [[getattr(r, f) for f in figures] for r in redacted.rows] == [
            [getattr(r, f) for f in figures] for r in plain.rows
        ]
        assert dataclasses.replace(redacted, rows=()) == dataclasses.replace(plain, rows=())
        assert all(r.key != p.key and r.key.endswith(f"-{p.size}") for r, p in zip(redacted.rows, plain.rows))
    # Java: no value kept at all, so no text; V8: the strings' placeholders instead of their contents.
    assert plain is not None and redacted is not None
    assert plain.rows[0].value.startswith("{host: 'db.internal.example'")
    assert "db.internal.example" not in redacted.rows[0].value and "[redacted 19 chars" in redacted.rows[0].value


def test_redacted_arrays_show_no_elements(java_dump: tuple[Path, Path]) -> None:
    graph = formats.read_graph(java_dump[0])
    result = analysis.analyze(graph)
    redacted = LoadInput.from_analysis(
        graph, result, redaction=Redaction(values=True, key=b"k" * 32)
    ).inspections.objects
    assert redacted is not None and redacted.rows and all(r.value == "" for r in redacted.rows)


# --- brute force on small graphs ------------------------------------------------------------------

KINDS = ["synthetic", "object", "string", "concatenated string", "number", "hidden", "closure"]
CLASSES = ["Object", "Point", "Array", "Map", "Window (global)", "system / Context"]
KEYS = ["a", "b", "__proto__", "0", "2", "10", "01", "4294967295", "x y"]
TEXTS = ["", "a", "b", "ab", "REFERENCE_4", "REFERENCE_6", "é"]
NUMBERS = ["1.5", "2", "-0", "NaN", "Infinity", "3.25"]


def small_graph(rng: random.Random, n: int) -> HeapGraph:
    """A root, then objects of CLASSES with property references (names from KEYS, a name sometimes
    twice) to strings, concatenations, numbers (with their value's text, or without), other objects
    and closures; hidden references to some objects."""
    table = ["", "first", "second", "value", *CLASSES, *KEYS, *TEXTS, *NUMBERS]
    kind = [0] + [rng.choice([1, 1, 1, 2, 2, 3, 4, 4, 6]) for _ in range(n - 1)]
    name = [0] * n
    edges: list[tuple[int, int, int, int]] = []
    # Numbers' value texts are string nodes of their own, added after the others.
    for v in range(1, n):
        k = KINDS[kind[v]]
        if k == "object":
            name[v] = table.index(rng.choice(CLASSES))
        elif k == "string":
            name[v] = table.index(rng.choice(TEXTS))
        elif k == "concatenated string":
            earlier = [u for u in range(1, v) if KINDS[kind[u]] in ("string", "concatenated string")]
            for part in ("first", "second"):
                if earlier:
                    edges.append((v, rng.choice(earlier), int(EdgeKind.INTERNAL), table.index(part)))
        if rng.random() < 0.9:
            edges.append((0, v, int(EdgeKind.PROPERTY), table.index("a")))
        if k == "object" and rng.random() < 0.15:
            edges.append((0, v, int(EdgeKind.HIDDEN), 1))
    for v in range(1, n):
        if KINDS[kind[v]] == "number" and rng.random() < 0.7:
            kind.append(KINDS.index("string"))
            name.append(table.index(rng.choice(NUMBERS)))
            edges.append((v, len(kind) - 1, int(EdgeKind.INTERNAL), table.index("value")))
    for v in range(1, n):
        if KINDS[kind[v]] == "object":
            for _ in range(rng.randint(0, 4)):
                target = rng.randrange(1, len(kind))
                edges.append((v, target, int(EdgeKind.PROPERTY), table.index(rng.choice(KEYS))))
            if rng.random() < 0.3:
                edges.append((v, rng.randrange(1, n), int(EdgeKind.ELEMENT), 0))  # not a property
    return built(kind, name, [rng.randint(1, 50) for _ in kind], edges, table)


def built(
    kind: list[int], name: list[int], self_size: list[int], edges: list[tuple[int, int, int, int]], table: list[str]
) -> HeapGraph:
    """A V8 graph of KINDS nodes (see :func:`tests.support.v8.v8_graph`)."""
    return v8_graph(KINDS, kind, name, self_size, edges, table)


def memlab_text(graph: HeapGraph, v: int) -> str:
    """memlab's object-shallow text of object ``v``, written out: the object it builds, key by key
    in reference order, then JSON.stringify's (integer keys first, ascending)."""

    def kind(u: int) -> str:
        return KINDS[graph.kind[u]]

    def part(u: int, label: str) -> int | None:
        found = [int(graph.edge_to[e]) for e in graph.out_edges(u) if graph.edge_label(e) == label]
        return found[0] if found else None

    def content(u: int | None) -> str:
        if u is None:
            return ""
        if kind(u) == "concatenated string":
            return content(part(u, "first")) + content(part(u, "second"))
        return graph.strings[graph.name[u]]

    def number(u: int) -> float | int | None:
        value = part(u, "value")
        if value is None:
            return None
        x = float(graph.strings[graph.name[value]])
        if math.isnan(x) or math.isinf(x):
            return None
        return int(x) if x.is_integer() else x

    built: dict[str, Any] = {}
    for e in graph.out_edges(v):
        key = graph.edge_label(e)
        if graph.edge_kind[e] != EdgeKind.PROPERTY or key == "__proto__":
            continue
        t = int(graph.edge_to[e])
        if kind(t) in ("string", "concatenated string"):
            built[key] = content(t)
        elif kind(t) == "number":
            built[key] = number(t)
        else:
            built[key] = f"REFERENCE_{int(graph.ids[t])}"

    def array_index(key: str) -> bool:
        return key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1

    ordered = {k: built[k] for k in sorted((k for k in built if array_index(k)), key=int)}
    ordered.update({k: value for k, value in built.items() if not array_index(k)})
    return json.dumps({"class": graph.strings[graph.name[v]], "object": ordered}, ensure_ascii=False)


def brute_groups(graph: HeapGraph, result: analysis.Analysis) -> list[tuple[int, int, list[int]]]:
    hidden = {int(graph.edge_to[e]) for e in range(graph.edge_count) if graph.edge_kind[e] == EdgeKind.HIDDEN}
    found: dict[str, list[int]] = collections.defaultdict(list)
    for v in range(graph.node_count):
        name = graph.strings[graph.name[v]]
        if (
            KINDS[graph.kind[v]] == "object"
            and v not in hidden
            and name not in ("Array", "ArrayBuffer", "Set", "Map")
            and not name.startswith(("Window", "system /"))
            and result.reachable[v]
        ):
            found[memlab_text(graph, v)].append(v)
    return sorted(
        (len(vs), int(result.retained_size[vs].sum()), sorted(graph.ids[vs].tolist())) for vs in found.values()
    )


@pytest.mark.parametrize("seed", range(60))
def test_groups_equal_brute_force_on_small_graphs(seed: int) -> None:
    rng = random.Random(seed)
    graph = small_graph(rng, rng.randint(2, 40))
    result = analysis.analyze(graph)
    assert our_groups(graph, result) == brute_groups(graph, result)


def test_a_string_holding_a_reference_text_is_that_reference() -> None:
    # memlab writes a reference as the text "REFERENCE_<id>": a string with that text is equal to it.
    table = ["", "Object", "p", "REFERENCE_6"]
    obj, prop = KINDS.index("object"), int(EdgeKind.PROPERTY)
    edges = [(0, 1, prop, 2), (0, 2, prop, 2), (1, 2, prop, 2), (3, 4, prop, 2), (0, 3, prop, 2)]
    kind, name = [0, obj, KINDS.index("closure"), obj, KINDS.index("string")], [0, 1, 0, 1, 3]
    graph = built(kind, name, [1] * 5, edges, table)
    result = analysis.analyze(graph)
    assert memlab_text(graph, 1) == memlab_text(graph, 3)
    assert [count for count, _, _ in our_groups(graph, result)] == [2]


def test_a_format_without_them_has_no_answer() -> None:
    graph = small_graph(random.Random(1), 10)
    graph.meta["format"] = "luau"
    assert formats.LUAU.duplicates is None and not objects.shows_objects("luau")
    assert objects.duplicate_objects(graph, analysis.analyze(graph), source="x", limit=5) is None
