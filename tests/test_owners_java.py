"""Who owns the memory on a real Java heap (Java packages and class loaders), against VisualVM.

The dump is tests/java/Leak.java's (400 sessions, ``-all``: garbage stays), the one the hprof
oracle test reads (tests/support/java_fixtures.py makes it once per run). VisualVM's heap library
(tests/java/VisualVMOracle.java) lists every class with its instance count, its instances' bytes
and its class loader; grouped by package here, they are what ``java_owners`` must name before
attribution. The attribution is checked against its definition, walked again here in Python over
the analysis' dominator tree: every reached object has one package, and a package's retained size
is the sum of its outermost members' retained sizes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest

from heapdb.loader import analysis
from heapdb.loader.analysis import Analysis
from heapdb.loader.formats import hprof
from heapdb.loader.graph import HeapGraph
from heapdb.loader.owners.attribution import DirectOwners, Owners, owner_totals, owners_of
from heapdb.loader.owners.sources import BOOTSTRAP, DEFAULT_PACKAGE, direct_owners
from tests.support.java_fixtures import leak_dump

SESSIONS = 400


@dataclass(frozen=True)
class VisualVMClass:
    count: int  # instances
    size: int  # their summed shallow sizes
    loader: int  # the class loader's instance id, 0 for the bootstrap loader


@dataclass(frozen=True)
class Read:
    graph: HeapGraph
    result: Analysis
    direct: tuple[DirectOwners, ...]
    owners: Owners
    classes: dict[str, VisualVMClass]


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> Read:
    made = leak_dump(tmp_path_factory, SESSIONS, everything=True)
    classes = {}
    for row in made.table.read_text(encoding="utf-8", errors="surrogateescape").split("\n"):
        cells = row.split("\t")
        if cells[0] == "c":
            classes[cells[1]] = VisualVMClass(int(cells[2]), int(cells[3]), int(cells[4]))
    g = hprof.read_graph(made.dump)
    result = analysis.analyze(g)
    return Read(g, result, direct_owners(g), owners_of(g, result), classes)


def package_of(class_name: str) -> str:
    """A Java class's package: its outer class's name up to the last dot."""
    outer = class_name.split("$", 1)[0]
    return outer.rpartition(".")[0] or DEFAULT_PACKAGE


def is_array(class_name: str) -> bool:
    return class_name.endswith("]")


def kind_nodes(g: HeapGraph, kind: str) -> np.ndarray:
    return g.kind == g.node_kinds.index(kind)


def test_each_package_s_instances_are_visualvm_s_per_class_counts_grouped_by_package(read: Read) -> None:
    g, (package, _loader) = read.graph, read.direct
    assert package.level == "package"
    theirs_count: Counter[str] = Counter()
    theirs_size: Counter[str] = Counter()
    for name, cls in read.classes.items():
        if cls.count and not is_array(name):
            theirs_count[package_of(name)] += cls.count
            theirs_size[package_of(name)] += cls.size
    instances = kind_nodes(g, "instance")
    # Every instance has a package (its class is never an array's); no array has one of its own.
    assert (package.owner[instances] >= 0).all()
    arrays = kind_nodes(g, "object array") | kind_nodes(g, "primitive array")
    assert (package.owner[arrays] == -1).all()
    owner = package.owner[instances]
    mine_count = Counter({package.names[k]: int(c) for k, c in enumerate(np.bincount(owner)) if c})
    sizes = np.bincount(owner, weights=g.self_size[instances])
    mine_size = Counter({package.names[k]: int(s) for k, s in enumerate(sizes) if s})
    assert mine_count == theirs_count
    assert mine_size == theirs_size
    assert theirs_count[DEFAULT_PACKAGE] >= SESSIONS and "java.lang" in theirs_count
    # A class object is its own class's: as many per package as VisualVM lists non-array classes.
    class_nodes = kind_nodes(g, "class")
    of_classes = Counter(package.names[k] for k in package.owner[class_nodes & (package.owner >= 0)].tolist())
    assert of_classes == Counter(package_of(n) for n in read.classes if not is_array(n))


def test_each_class_s_loader_is_visualvm_s(read: Read) -> None:
    g, (package, loader) = read.graph, read.direct
    assert loader.level == "class loader"
    loader_of_class = {}
    for name, cls in read.classes.items():
        if cls.loader:
            (node,) = np.flatnonzero(g.ids == cls.loader)
            loader_of_class[name] = f"{g.type_name(int(node))}@{cls.loader:#x}"
        else:
            loader_of_class[name] = BOOTSTRAP
    # Every object with a package has its class's loader, a class object its own; the rest none.
    owned = package.owner >= 0
    assert ((loader.owner >= 0) == owned).all()
    instances = kind_nodes(g, "instance")
    wrong = [
        (g.type_name(v), loader.names[loader.owner[v]])
        for v in np.flatnonzero(instances).tolist()
        if loader.names[loader.owner[v]] != loader_of_class[g.type_name(v)]
    ]
    assert not wrong, wrong[:10]
    for v in np.flatnonzero(kind_nodes(g, "class") & owned).tolist():
        assert loader.names[loader.owner[v]] == loader_of_class[g.node_name(v)], g.node_name(v)
    # The program's classes are the application class loader's, java.lang's the JVM's own.
    app = loader_of_class["Leak$Session"]
    assert app.startswith("jdk.internal.loader.ClassLoaders$AppClassLoader@0x")
    assert loader_of_class["Leak"] == loader_of_class["Leak$Payload"] == app
    assert loader_of_class["java.lang.String"] == BOOTSTRAP
    level = read.owners.level("class loader")
    assert level is not None
    rows = {row.name: row for row in owner_totals(read.result, level)}
    assert rows[app].objects >= SESSIONS and rows[BOOTSTRAP].objects > rows[app].objects


def test_every_reached_object_has_one_package_and_the_sizes_add_up(read: Read) -> None:
    g, r = read.graph, read.result
    level = read.owners.level("package")
    assert level is not None and read.owners.levels[0] is level
    counted = r.reachable & ~g.synthetic_nodes()
    counted[r.root] = False
    assert (level.owner[counted] >= 0).all()
    assert (level.owner[~counted] == -1).all()
    assert (~r.reachable).any()  # an -all dump: garbage is there and has no owner
    rows = owner_totals(r, level)
    assert sum(row.objects for row in rows) == int(counted.sum())
    assert sum(row.self_size for row in rows) == int(g.self_size[counted].sum())
    # What program structure named stays named; the rest takes an owner by the rule.
    (package, _loader) = read.direct
    named = counted & (package.owner >= 0)
    assert [level.names[k] for k in level.owner[named]] == [package.names[k] for k in package.owner[named]]
    # A session's buffer (a byte[]: no package of its own) is its session's, the program's.
    default = level.names.index(DEFAULT_PACKAGE)
    sessions = np.flatnonzero(g.type == g.strings.index("Leak$Session"))
    buffers = [int(g.edge_to[e]) for s in sessions.tolist() for e in g.out_edges(s) if g.edge_label(e) == "buffer"]
    assert len(buffers) == len(sessions) == SESSIONS
    assert (r.idom[buffers] == sessions).all() and (level.owner[buffers] == default).all()


def test_the_program_s_package_retains_what_its_outermost_members_retain(read: Read) -> None:
    g, r = read.graph, read.result
    level = read.owners.level("package")
    assert level is not None
    default = level.names.index(DEFAULT_PACKAGE)
    member = level.owner == default
    # The dominator tree walked from the root; a member below another member is not outermost.
    children: dict[int, list[int]] = {}
    for v in np.flatnonzero(r.reachable).tolist():
        parent = int(r.idom[v])
        if parent >= 0:
            children.setdefault(parent, []).append(v)
    outermost = []
    stack = [(r.root, False)]
    while stack:
        v, inside = stack.pop()
        if member[v] and not inside:
            outermost.append(v)
        stack.extend((c, inside or bool(member[v])) for c in children.get(v, ()))
    expected = int(r.retained_size[outermost].sum())
    rows = {row.name: row for row in owner_totals(r, level)}
    assert rows[DEFAULT_PACKAGE].retained_size == expected
    assert rows[DEFAULT_PACKAGE].objects == int(member.sum())
    # The leak is the program's: the Leak class holds the cache, and so every session.
    (leak,) = (v for v in np.flatnonzero(kind_nodes(g, "class")).tolist() if g.node_name(v) == "Leak")
    assert leak in outermost and expected >= int(r.retained_size[leak]) > SESSIONS * 1000
