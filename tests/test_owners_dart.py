"""Owners of a Dart snapshot profile (``gen_snapshot --write-v8-snapshot-profile-to``), against brute force.

There is no Dart SDK on these machines, so the profile is written here by hand, to the layout the
Dart VM's ``V8SnapshotProfileWriter`` (runtime/vm/v8_snapshot_writer.cc) documents: five node fields
(``type, name, id, self_size, edge_count``, no ``trace_node_id``), node types named by Dart's classes
with ``ArtificialRoot`` first, edge types ``context, element, property, internal``, the artificial
root first (id ``6``: nonce 0 in the artificial id space; objects ``nonce << 3 | 1``), no
``(GC roots)``, and a dropped weak reference's replacement at the negated element offset.

The program: two packages (``app``: two libraries; ``util``: one) and ``dart:core``, classes (one
patched), functions (a closure whose ``owner_`` is a class of another library than its parent
function's), a field, code objects with instructions (one instructions object shared by code of two
libraries), a stub, a code object owned by a type, and data shared by two packages, by two libraries
of one package, and reached by no owner.

The expected answer is worked out here by definition, independently of heapdb's kernels: the direct
owners are listed by hand from the Dart SDK's rules (``vm_snapshot_analysis``'s ``v8_profile.dart``);
d dominates v iff v is unreachable from the root once d is removed; an object takes its nearest
owned dominator's owner, else the owners whose objects reach its topmost unowned dominator without
passing another owned object decide (one: that one; several: ``@shared``; none: ``@unknown``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from heapdb.errors import FormatError
from heapdb.loader.analysis import analyze
from heapdb.loader.formats import read_graph
from heapdb.loader.owners.attribution import SHARED, UNKNOWN, owner_totals, owners_of
from heapdb.loader.owners.dart import is_dart

APP_MAIN, APP_MODEL, UTIL, CORE = (
    "package:app/main.dart",
    "package:app/src/model.dart",
    "package:util/util.dart",
    "dart:core",
)
STUBS = "@stubs"

# (type, name, self size), by node index; 0 is the artificial root.
NODES: list[tuple[str, str, int]] = [
    ("ArtificialRoot", "<artificial root>", 0),  # 0
    ("Library", APP_MAIN, 40),  # 1
    ("Library", APP_MODEL, 40),  # 2
    ("Library", UTIL, 40),  # 3
    ("Library", CORE, 40),  # 4
    ("Script", APP_MAIN, 64),  # 5: main.dart's script, also referenced by util's function
    ("Array", "owned scripts", 24),  # 6
    ("Class", "Model", 48),  # 7
    ("Class", "Helper", 48),  # 8
    ("PatchClass", "Helper", 16),  # 9
    ("Function", "main", 56),  # 10
    ("Function", "compute", 56),  # 11
    ("Function", "run", 56),  # 12: its owner_ is the patch class
    ("Function", "<anonymous closure>", 56),  # 13: owner_ Model (model.dart), parent function main (main.dart)
    ("ClosureData", "closure data", 24),  # 14
    ("Field", "value", 32),  # 15
    ("Code", "main", 80),  # 16
    ("Instructions", "main", 200),  # 17: shared by main's and compute's code (deduplicated)
    ("Code", "run", 80),  # 18
    ("Instructions", "run", 150),  # 19
    ("Code", "AllocateArrayStub", 80),  # 20: a stub (owner_ null)
    ("Null", "null", 8),  # 21
    ("Instructions", "AllocateArrayStub", 120),  # 22: the stub's, also called from main's code
    ("String", "hello", 24),  # 23
    ("ObjectPool", "pool", 48),  # 24
    ("String", "shared", 32),  # 25: in main's and run's pools: two packages
    ("Array", "model cache", 40),  # 26: in main's pool and compute's: two libraries of one package
    ("Instance", "_VmInternal", 16),  # 27: reached by no owner
    ("String", "vm internal", 24),  # 28
    ("ObjectPool", "pool", 32),  # 29: the stub's
    ("Array", "functions", 32),  # 30
    ("ObjectPool", "pool", 32),  # 31: run's, with a dropped reference and its replacement
    ("Code", "int type test", 40),  # 32: owned by a Type, so not program structure
    ("Type", "int", 16),  # 33
    ("Array", "empty list", 0),  # 34: a root of the VM's own, empty
    ("String", "dropped", 0),  # 35: the artificial node of a dropped object
    ("String", "dart:core", 24),  # 36
    ("Instructions", "int type test", 60),  # 37
    ("String", "stub data", 16),  # 38
    ("Code", "compute", 80),  # 39
]

# (source, edge type, property name or element index, target), in source order.
EDGES: list[tuple[int, str, int | str, int]] = [
    (0, "internal", 0, 1),
    (0, "internal", 1, 2),
    (0, "internal", 2, 3),
    (0, "internal", 3, 4),
    (0, "property", "AllocateArrayStub", 20),
    (0, "property", "object_store", 27),
    (0, "internal", 6, 32),
    (0, "internal", 7, 34),
    (1, "property", "dictionary_", 10),
    (1, "property", "owned_scripts_", 6),
    (2, "property", "dictionary_", 7),
    (3, "property", "dictionary_", 8),
    (4, "property", "name_", 36),
    (6, "element", 0, 5),
    (7, "property", "library_", 2),
    (7, "property", "functions_", 30),
    (7, "property", "fields_", 15),
    (8, "property", "library_", 3),
    (8, "property", "functions_", 12),
    (9, "property", "patched_class_", 8),
    (10, "property", "owner_", 1),
    (10, "property", "code_", 16),
    (11, "property", "owner_", 7),
    (11, "property", "cache_", 26),
    (11, "property", "code_", 39),
    (12, "property", "owner_", 9),
    (12, "property", "code_", 18),
    (12, "property", "script_", 5),
    (13, "property", "owner_", 7),
    (13, "property", "data_", 14),
    (14, "property", "parent_function_", 10),
    (15, "property", "owner_", 7),
    (15, "property", "type_", 33),
    (16, "property", "owner_", 10),
    (16, "property", "<instructions>", 17),
    (16, "property", "object_pool_", 24),
    (16, "property", "target_", 22),
    (18, "property", "owner_", 12),
    (18, "property", "<instructions>", 19),
    (18, "property", "object_pool_", 31),
    (20, "property", "owner_", 21),
    (20, "property", "<instructions>", 22),
    (20, "property", "object_pool_", 29),
    (24, "element", 0, 23),
    (24, "element", 1, 25),
    (24, "element", 2, 26),
    (24, "element", 3, 12),  # main calls util's run: no owned object dominates run, its own owner counts
    (24, "element", 4, 15),  # and reads Model's field: likewise
    (27, "property", "value_", 28),
    (29, "element", 0, 38),
    (30, "element", 0, 11),
    (30, "element", 1, 13),
    (31, "element", 0, 25),
    (31, "element", 2, 35),
    (31, "element", -2, 21),  # the replacement of the dropped object at offset 2
    (32, "property", "owner_", 33),
    (32, "property", "<instructions>", 37),
    (39, "property", "owner_", 11),
    (39, "property", "<instructions>", 17),
]

# What Dart's program structure says, per level (package, library), read off the rules by hand:
# libraries, classes (PatchClass: its patched class's), functions (a closure: its parent function's
# library), fields and code own themselves; a Code's instructions and a Library's owned scripts are
# frozen to their owner (claimed by two owners at a level: left to reachability there); a stub's
# code is @stubs. Code owned by a Type and ClosureData are not program structure.
DIRECT: dict[int, tuple[str, str | None]] = {
    1: ("package:app", APP_MAIN),
    2: ("package:app", APP_MODEL),
    3: ("package:util", UTIL),
    4: (CORE, CORE),
    5: ("package:app", APP_MAIN),
    7: ("package:app", APP_MODEL),
    8: ("package:util", UTIL),
    9: ("package:util", UTIL),
    10: ("package:app", APP_MAIN),
    11: ("package:app", APP_MODEL),
    12: ("package:util", UTIL),
    13: ("package:app", APP_MAIN),
    15: ("package:app", APP_MODEL),
    16: ("package:app", APP_MAIN),
    17: ("package:app", None),  # main's and compute's code: one package, two libraries
    18: ("package:util", UTIL),
    19: ("package:util", UTIL),
    20: (STUBS, STUBS),
    22: (STUBS, STUBS),
    39: ("package:app", APP_MODEL),
}
LEVELS = ("package", "library")


def write_dart_profile(path: Path) -> None:
    """The program above in the Dart VM's profile layout (see the module docstring)."""
    node_types = ["ArtificialRoot"]
    strings = ["<artificial root>"]

    def string(s: str) -> int:
        if s not in strings:
            strings.append(s)
        return strings.index(s)

    edge_types = ["context", "element", "property", "internal"]
    out_edges: list[list[tuple[str, int | str, int]]] = [[] for _ in NODES]
    for source, kind, name, target in EDGES:
        out_edges[source].append((kind, name, target))
    nodes: list[int] = []
    edges: list[int] = []
    for index, (kind, name, size) in enumerate(NODES):
        if kind not in node_types:
            node_types.append(kind)
        node_id = 6 if index == 0 else (index << 3 | (6 if name == "dropped" else 1))
        nodes += [node_types.index(kind), string(name), node_id, size, len(out_edges[index])]
        for edge_kind, edge_name, target in out_edges[index]:
            label = string(edge_name) if isinstance(edge_name, str) else edge_name
            edges += [edge_types.index(edge_kind), label, target * 5]
    profile = {
        "snapshot": {
            "meta": {
                "node_fields": ["type", "name", "id", "self_size", "edge_count"],
                "node_types": [node_types],
                "edge_fields": ["type", "name_or_index", "to_node"],
                "edge_types": [edge_types],
            },
            "node_count": len(NODES),
            "edge_count": len(EDGES),
        },
        "nodes": nodes,
        "edges": edges,
        "strings": strings,
    }
    path.write_text(json.dumps(profile))


@cache
def reachable(removed: int | None) -> frozenset[int]:
    """What the root reaches once ``removed`` is taken out of the graph."""
    if removed == 0:
        return frozenset()
    adjacency: dict[int, list[int]] = {}
    for source, _, _, target in EDGES:
        adjacency.setdefault(source, []).append(target)
    seen = {0}
    queue = deque([0])
    while queue:
        v = queue.popleft()
        for w in adjacency.get(v, ()):
            if w != removed and w not in seen:
                seen.add(w)
                queue.append(w)
    return frozenset(seen)


def expected_owners(level: int) -> dict[int, str]:
    """Each object's owner at ``level`` (0: package, 1: library), by the definitions."""
    everything = reachable(None)
    # dominators[v]: every d whose removal cuts v off (v itself included).
    dominators = {v: {v} | {d for d in everything if d != v and v not in reachable(d)} for v in everything}
    idom = {v: max(dominators[v] - {v}, key=lambda d: len(dominators[d])) for v in everything if v != 0}
    direct: dict[int, str] = {}
    for v, owners in DIRECT.items():
        named = owners[level]
        if named is not None:
            direct[v] = named
    # Which owners' objects reach each object without passing through another owned object.
    reach: dict[int, set[str]] = {v: set() for v in everything}
    for start, owner in direct.items():
        seen = {start}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            for source, _, _, target in EDGES:
                if source == v and target not in seen and target not in direct:
                    seen.add(target)
                    reach[target].add(owner)
                    queue.append(target)
    answer = {}
    for v in everything - {0}:
        u = v
        while u != 0 and u not in direct and idom[u] != 0:
            u = idom[u]
        if u in direct:
            answer[v] = direct[u]
        else:  # u is v's topmost dominator below the root, owned by no one
            found = reach[u]
            answer[v] = next(iter(found)) if len(found) == 1 else SHARED if found else UNKNOWN
    return answer


def expected_rows(owner: dict[int, str]) -> dict[str, tuple[int, int, int]]:
    """Per owner: objects, self size, retained size of its outermost members."""
    everything = reachable(None)
    dominated_by = {d: {v for v in everything if v == d or v not in reachable(d)} for d in everything}
    retained = {d: sum(NODES[v][2] for v in dominated_by[d]) for d in everything}
    rows: dict[str, tuple[int, int, int]] = {}
    for name in set(owner.values()):
        members = {v for v, o in owner.items() if o == name}
        outer = [v for v in members if not any(v in dominated_by[d] for d in members if d != v)]
        rows[name] = (len(members), sum(NODES[v][2] for v in members), sum(retained[v] for v in outer))
    return rows


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dart") / "app.heapsnapshot"
    write_dart_profile(path)
    return path


def test_the_profile_reads_as_a_v8_snapshot_of_dart(profile: Path) -> None:
    graph = read_graph(profile)
    assert graph.node_count == len(NODES) and graph.edge_count == len(EDGES)
    assert is_dart(graph)
    # The replacement of a dropped object sits at the element offset it replaced.
    pool = 31
    slots = [
        (int(graph.edge_name[e]), int(graph.edge_to[e]))
        for e in range(graph.edge_start[pool], graph.edge_start[pool + 1])
    ]
    assert slots == [(0, 25), (2, 35), (2, 21)]


def test_chunk_boundaries_inside_a_negative_offset(profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read chunks of one and two bytes split the '-' from its digits; the graph must not change."""
    from heapdb.loader.formats import v8

    whole = read_graph(profile)
    for chunk in (1, 2):
        monkeypatch.setattr(v8, "CHUNK_BYTES", chunk)
        split = read_graph(profile)
        for array in ("edge_start", "edge_to", "edge_kind", "edge_name", "kind", "name", "self_size", "ids"):
            assert np.array_equal(getattr(whole, array), getattr(split, array)), array


@pytest.mark.parametrize(
    ("replacement", "problem"),
    [
        ("2, -2, 105", "a negative name_or_index outside an element edge"),  # a property's name
        ("1, -, 105", "expected a number"),
        ("1, 2, -105", "unexpected character"),  # a negative to_node
        ("1, 2 -2, 105", "unexpected character"),
        ("-1, -2, 105", "unexpected character"),  # a negative edge type
    ],
)
def test_only_element_offsets_may_be_negative(profile: Path, tmp_path: Path, replacement: str, problem: str) -> None:
    text = profile.read_text()
    assert text.count("1, -2, 105") == 1  # the dropped reference's replacement: node 21 is at 21 * 5
    bad = tmp_path / "bad.heapsnapshot"
    bad.write_text(text.replace("1, -2, 105", replacement))
    with pytest.raises(FormatError, match=problem):
        read_graph(bad)


@pytest.mark.parametrize("level", [0, 1], ids=LEVELS)
def test_owners_equal_brute_force(profile: Path, level: int) -> None:
    graph = read_graph(profile)
    result = analyze(graph)
    owners = owners_of(graph, result)
    assert [lv.level for lv in owners.levels] == list(LEVELS)
    answer = owners.levels[level]
    expected = expected_owners(level)
    got = {v: answer.names[int(answer.owner[v])] for v in range(1, len(NODES)) if answer.owner[v] >= 0}
    assert got == expected
    rows = {row.name: (row.objects, row.self_size, row.retained_size) for row in owner_totals(result, answer)}
    assert rows == expected_rows(expected)
    # The rule's cases all occur, so each is tested.
    assert {SHARED, UNKNOWN, STUBS} <= set(expected.values())


def test_analyze_reads_a_dart_profile(profile: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "heapdb", "analyze", str(profile), "--json"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)
