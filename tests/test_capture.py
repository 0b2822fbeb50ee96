"""heapdb.capture: a real Python program's heap, captured via gc, read back as a HeapGraph.

Each capture runs in a fresh interpreter (a subprocess), so the test's own heap does not matter.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from heapdb.loader.formats import read_graph
from heapdb.loader.graph import EdgeKind, HeapGraph

LEAKS = 137

PROGRAM = textwrap.dedent(
    f"""
    import sys
    from collections import OrderedDict, namedtuple

    import heapdb.capture

    class Leaky:
        def __init__(self, i):
            self.index = i
            self.payload = "x" * i

    class Secret:
        pass

    class Marker:
        __slots__ = ("alpha",)

        def __init__(self):
            self.alpha = 12345678

    class Far:
        pass

    Point = namedtuple("Point", "x y")
    LEAKED = []
    POINT = Point(Far(), 2)
    ORDERED = OrderedDict(key=Far())
    TABLE = {{"marker": Marker(), 99: Secret()}}

    def make_closure():
        captured_thing = Secret()

        def inner():
            return captured_thing

        return inner

    CLOSURE = make_closure()

    def work(out):
        local_marker = Marker()
        for i in range({LEAKS}):
            LEAKED.append(Leaky(i))
        heapdb.capture.capture(out)

    work(sys.argv[1])
    """
)


def child(g: HeapGraph, node: int, label: str) -> int:
    targets = [int(g.edge_to[e]) for e in g.out_edges(node) if g.edge_label(e) == label]
    assert targets, f"{g.type_name(node)} has no reference named {label!r}"
    return targets[0]


def group(g: HeapGraph, kind: str) -> int:
    return child_by_name(g, g.root, f"({kind} roots)")


def child_by_name(g: HeapGraph, node: int, name: str) -> int:
    (target,) = [int(g.edge_to[e]) for e in g.out_edges(node) if g.node_name(int(g.edge_to[e])) == name]
    return target


def test_a_leak_into_a_module_list_is_captured(tmp_path: Path) -> None:
    script = tmp_path / "leaky_program.py"
    script.write_text(PROGRAM)
    out = tmp_path / "leak.snapbin"
    subprocess.run([sys.executable, str(script), str(out)], check=True, timeout=300)
    g = read_graph(out)

    counts = Counter(g.type_name(i) for i in range(g.node_count))
    assert counts["__main__.Leaky"] == LEAKS
    assert counts["__main__.Secret"] == 2 and counts["__main__.Marker"] == 2

    # (module roots) -__main__-> module -__dict__-> dict -LEAKED-> list -[i]-> Leaky
    main = child(g, group(g, "module"), "__main__")
    assert g.node_kinds[g.kind[main]] == "module"
    leaked = child(g, child(g, main, "__dict__"), "LEAKED")
    assert g.type_name(leaked) == "list"
    elements = list(g.out_edges(leaked))
    assert [int(g.edge_name[e]) for e in elements] == list(range(LEAKS))
    assert all(g.edge_kind[e] == EdgeKind.ELEMENT for e in elements)
    assert {g.type_name(int(g.edge_to[e])) for e in elements} == {"__main__.Leaky"}

    # Attribute names through the instance dict; str contents as names; sizes from sys.getsizeof.
    leaky = int(g.edge_to[elements[5]])
    attrs = child(g, leaky, "__dict__")
    assert g.node_name(child(g, attrs, "payload")) == "xxxxx"
    assert g.type_name(child(g, attrs, "index")) == "int"
    assert child(g, leaky, "__class__") == child(g, child(g, main, "__dict__"), "Leaky")
    assert g.self_size[leaky] > 0 and g.self_size[leaked] >= 8 * LEAKS

    # Dict keys of any type, container subclasses, __slots__, closure cells, frame locals.
    assert g.type_name(child(g, child(g, child(g, main, "__dict__"), "POINT"), "x")) == "__main__.Far"
    assert g.type_name(child(g, child(g, child(g, main, "__dict__"), "ORDERED"), "key")) == "__main__.Far"
    table = child(g, child(g, main, "__dict__"), "TABLE")
    assert g.type_name(child(g, table, "99")) == "__main__.Secret"
    marker = child(g, table, "marker")
    assert g.type_name(child(g, marker, "alpha")) == "int"
    closure = child(g, child(g, main, "__dict__"), "CLOSURE")
    cell = int(g.edge_to[next(iter(g.out_edges(child(g, closure, "__closure__"))))])
    assert g.type_name(child(g, cell, "captured_thing")) == "__main__.Secret"
    frame = child(
        g,
        group(g, "thread"),
        next(g.edge_label(e) for e in g.out_edges(group(g, "thread")) if g.edge_label(e).startswith("MainThread")),
    )
    assert g.type_name(frame) == "frame"
    assert g.type_name(child(g, frame, "local_marker")) == "__main__.Marker"
    # The capture's own frames and bookkeeping stay out of the snapshot.
    assert "heapdb.capture._Walker" not in counts
    assert "heapdb.loader.formats.snapbin.writer.SnapbinWriter" not in counts

    assert g.meta["runtime"] == "cpython" and g.meta["runtime_version"] == platform.python_version()
    assert g.meta["total_heap_bytes"] == int(g.self_size.sum())


def test_python_m_heapdb_capture_runs_a_script_then_captures(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("class Kept:\n    pass\n\nKEEP = [Kept() for _ in range(41)]\n")
    out = tmp_path / "script.snapbin"
    subprocess.run([sys.executable, "-m", "heapdb.capture", str(out), str(script)], check=True, timeout=300)
    g = read_graph(out)
    assert Counter(g.type_name(i) for i in range(g.node_count))["__main__.Kept"] == 41
    keep = child(g, child(g, child(g, group(g, "module"), "__main__"), "__dict__"), "KEEP")
    assert len(g.out_edges(keep)) == 41
