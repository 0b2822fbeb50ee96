"""Who owns the memory on a real Python heap (``heapdb.capture``): modules and top-level packages.

The program, written at test time, imports a package of its own, ``shelf``, whose module
``shelf.store`` keeps a list of books (instances of a class it defines, each with a title and a
list of pages) and defines an abstract class (whose type, ``abc.ABCMeta``, is another module's). What only that list keeps alive is found here by brute force (the objects the root
reaches over retaining references, less those it reaches once the list is taken out); all of it
must be ``shelf.store``'s, at the ``shelf`` package one level up.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import deque

import numpy as np
import pytest

from heapdb.loader import analysis
from heapdb.loader.analysis import Analysis
from heapdb.loader.formats import read_graph
from heapdb.loader.graph import HeapGraph
from heapdb.loader.owners.attribution import Owners, owner_totals, owners_of
from heapdb.loader.owners.sources import direct_owners

BOOKS = 3000
PACKAGE, MODULE = "shelf", "shelf.store"

STORE = textwrap.dedent(
    """
    import abc

    class Catalogue(abc.ABC):  # its type is abc's (abc.ABCMeta), the class is this module's
        pass

    class Book:
        def __init__(self, i):
            self.title = "title-%d" % i
            self.pages = list(range(i % 50))

    BOOKS = []

    def fill(n):
        BOOKS.extend(Book(i) for i in range(n))
    """
)
PROGRAM = textwrap.dedent(
    """
    import sys

    import heapdb.capture
    import shelf.store

    shelf.store.fill(int(sys.argv[2]))
    heapdb.capture.capture(sys.argv[1])
    """
)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[HeapGraph, Analysis, Owners]:
    work = tmp_path_factory.mktemp("owners-python")
    (work / PACKAGE).mkdir()
    (work / PACKAGE / "__init__.py").write_text("")
    (work / PACKAGE / "store.py").write_text(STORE)
    (work / "program.py").write_text(PROGRAM)
    out = work / "heap.snapbin"
    subprocess.run([sys.executable, str(work / "program.py"), str(out), str(BOOKS)], check=True, timeout=120)
    g = read_graph(out)
    result = analysis.analyze(g)
    return g, result, owners_of(g, result)


def child(g: HeapGraph, node: int, label: str) -> int:
    (target,) = [int(g.edge_to[e]) for e in g.out_edges(node) if g.edge_label(e) == label]
    return target


def kept_only_by(g: HeapGraph, result: Analysis, holder: int) -> np.ndarray:
    """The objects the root reaches over retaining references only through ``holder`` (and it)."""

    def reach(blocked: int) -> np.ndarray:
        seen = np.zeros(g.node_count, dtype=bool)
        seen[g.root] = True
        queue = deque([g.root])
        while queue:
            v = queue.popleft()
            for e in g.out_edges(v):
                t = int(g.edge_to[e])
                if result.retaining[e] and not seen[t] and t != blocked:
                    seen[t] = True
                    queue.append(t)
        return seen

    return reach(-1) & ~reach(holder)


def test_the_module_owns_the_structure_it_keeps(captured: tuple[HeapGraph, Analysis, Owners]) -> None:
    g, result, owners = captured
    level = owners.level("module")
    assert level is not None and MODULE in level.names and PACKAGE in level.names
    module = next(
        v
        for v in np.flatnonzero(g.type == g.strings.index("module")).tolist()
        if g.node_name(v) == MODULE and result.reachable[v]
    )
    books = child(g, child(g, module, "__dict__"), "BOOKS")
    kept = kept_only_by(g, result, books)
    book_type = g.strings.index(f"{MODULE}.Book")
    assert int((g.type[kept] == book_type).sum()) == BOOKS
    mine = level.names.index(MODULE)
    assert (level.owner[kept] == mine).all()
    assert level.owner[module] == mine
    row = next(row for row in owner_totals(result, level) if row.name == MODULE)
    assert row.retained_size >= int(g.self_size[kept].sum()) and row.objects >= int(kept.sum())
    # Program structure names the module's namespace, and the functions and classes it defines.
    direct = next(d for d in direct_owners(g) if d.level == "module")
    namespace = child(g, module, "__dict__")
    defined = [child(g, namespace, name) for name in ("Book", "Catalogue", "fill")]
    assert [direct.names[k] for k in direct.owner[[module, namespace, *defined]]] == [MODULE] * 5
    # Its package's own module (shelf/__init__.py) is another owner.
    assert row.objects > next(row.objects for row in owner_totals(result, level) if row.name == PACKAGE)


def test_the_package_level_groups_modules_by_top_level_package(captured: tuple[HeapGraph, Analysis, Owners]) -> None:
    g, result, owners = captured
    package, module = owners.level("package"), owners.level("module")
    assert package is not None and module is not None and owners.levels[0] is package
    named = len(module.names) - 2  # the last two are @shared and @unknown
    modules = module.names[:named]
    assert set(package.names[: len(package.names) - 2]) == {m.split(".", 1)[0] for m in modules}
    # An object one module owns is that module's top-level package's: the same objects are named,
    # and the one module reaching an unowned object is in the one package reaching it.
    by_module = module.owner >= 0
    by_module[by_module] = module.owner[by_module] < named
    tops = np.array([package.names.index(m.split(".", 1)[0]) for m in modules], dtype=np.int32)
    assert (package.owner[by_module] == tops[module.owner[by_module]]).all()
    rows = {row.name: row for row in owner_totals(result, package)}
    module_rows = {row.name: row for row in owner_totals(result, module)}
    assert rows[PACKAGE].objects >= module_rows[MODULE].objects + module_rows[PACKAGE].objects
    assert sum(row.self_size for row in rows.values()) == sum(row.self_size for row in module_rows.values())
