"""Luau heapgraph.py-exact path attribution (loader/luau_heapgraph.py)."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from heapdb.errors import FormatError
from heapdb.loader.formats import luau
from heapdb.loader.graph import EdgeKind
from heapdb.loader.luau_heapgraph import heapgraph, heapgraph_files
from tests.support.snapshots import LUAU_FIXTURES

FIXTURES = LUAU_FIXTURES


def s(data: str) -> dict:
    return {"type": "string", "cat": 0, "size": 20 + len(data), "data": data}


def small_dump() -> dict:
    """A thread whose stack holds a global table with a cache, a signal, and a weak-valued table."""
    objects = {
        "0x100": {
            "type": "thread",
            "cat": 0,
            "size": 100,
            "env": "0x200",
            "stack": ["0x300"],
            "stacknames": ["frame:@x.luau:1:"],
        },
        "0x200": {"type": "table", "cat": 0, "size": 50, "pairs": ["0x401", "0x300"]},  # _G.Cache
        "0x300": {"type": "table", "cat": 0, "size": 60, "pairs": ["0x402", "0x500"]},  # Cache.entries
        "0x500": {
            "type": "table",
            "cat": 0,
            "size": 70,
            "pairs": ["0x403", "0x600", "0x404", "0x601"],
            "array": ["0x602"],
        },
        "0x600": {"type": "table", "cat": 1, "size": 80},  # entries.k1
        "0x601": {"type": "table", "cat": 1, "size": 90},  # entries.k2
        "0x602": {"type": "function", "cat": 0, "size": 40, "env": "0x200", "proto": "0x700", "upvalues": ["0x603"]},
        "0x603": {
            "type": "table",
            "cat": 0,
            "size": 30,
            "metatable": "0x604",
            "pairs": [None, "0x605", "0x403", "0x606"],
        },
        "0x604": {"type": "table", "cat": 0, "size": 10, "pairs": ["0x405", "0x406"]},  # { __mode = "v" }
        "0x605": {"type": "table", "cat": 0, "size": 11},  # only weakly held
        "0x606": {"type": "table", "cat": 0, "size": 12},  # only weakly held, under a string key
        "0x700": {"type": "proto", "cat": 0, "size": 300, "source": "@x.luau", "constants": ["0x401"]},
        "0x401": s("Cache"),
        "0x402": s("entries"),
        "0x403": s("k1"),
        "0x404": s("k2"),
        "0x405": s("__mode"),
        "0x406": s("v"),
        "0": {"type": "userdata", "cat": 0, "size": 0},
    }
    return {"objects": objects, "roots": {"mainthread": "0x100", "registry": "0x200"}, "stats": {"size": 0}}


def as_tree(rows: list[dict]) -> dict[str, tuple[int, int]]:
    return {"/".join(r["path"]): (r["count"], r["size"]) for r in rows}


def test_paths_follow_heapgraph_rules() -> None:
    dump = small_dump()
    tree = as_tree(heapgraph(dump).rows())
    sizes = {a: o["size"] for a, o in dump["objects"].items()}
    # The thread itself, under its root's name.
    assert tree["mainthread"] == (1, sizes["0x100"])
    # The env table is also the registry root; the root's queue entry comes off the queue before
    # the thread's __env entry, so the table and its string key "Cache" sit under "registry".
    assert tree["registry"] == (2, sizes["0x200"] + sizes["0x401"])
    assert tree["mainthread/__env"] == (0, 0)
    # The stack slot is the Cache table; the value under "entries" starts a labelled path.
    assert tree["mainthread/__stack"] == (2, sizes["0x300"] + sizes["0x402"])
    assert tree["mainthread/__stack/entries"] == (4, sizes["0x500"] + sizes["0x403"] + sizes["0x404"] + sizes["0x602"])
    assert tree["mainthread/__stack/entries/k1"] == (1, sizes["0x600"])
    assert tree["mainthread/__stack/entries/k2"] == (1, sizes["0x601"])
    # A function: its proto under __proto (with its constants), its upvalues under the proto's source.
    assert tree["mainthread/__stack/entries/__proto"] == (1, sizes["0x700"])
    assert tree["mainthread/__stack/entries/@x.luau"] == (1, sizes["0x603"])
    assert tree["mainthread/__stack/entries/@x.luau/__meta"] == (2, sizes["0x604"] + sizes["0x405"])
    assert tree["mainthread/__stack/entries/@x.luau/__meta/__mode"] == (1, sizes["0x406"])
    # Weak values are not followed: 0x605 and 0x606 are nowhere.
    assert sum(c for c, _ in tree.values()) == len(dump["objects"]) - 3  # the sentinel and the two weak-only tables
    # Cache is reached both from the stack and under registry/Cache; the stack's entry came first.
    assert tree["registry/Cache"] == (0, 0)


def test_baseline_counts_only_new_addresses() -> None:
    final = small_dump()
    baseline = small_dump()
    for address in ("0x600", "0x601", "0x603"):
        del baseline["objects"][address]
    rows = heapgraph(final, baseline).rows()
    assert rows[0]["path"] == [] and rows[0]["total_count"] == 3
    assert rows[0]["total_size"] == sum(final["objects"][a]["size"] for a in ("0x600", "0x601", "0x603"))
    tree = as_tree(rows)
    assert tree["mainthread/__stack/entries/k1"] == (1, 80) and tree["mainthread/__stack"] == (0, 0)


def test_a_dangling_reference_is_a_format_error(tmp_path: Path) -> None:
    dump = small_dump()
    dump["objects"]["0x300"]["pairs"] = ["0x402", "0xdead"]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    with pytest.raises(FormatError, match="0xdead"):
        heapgraph_files(path)


def fixture(name: str) -> Path:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"the real Luau dumps are not beside the repository ({FIXTURES})")
    return path


def test_real_dumps_growth_is_the_cache_and_the_listeners() -> None:
    rows = heapgraph_files(fixture("luau-3-final.json"), fixture("luau-1-baseline.json")).rows()
    total = rows[0]["total_size"]
    by_label: dict[str, int] = {}
    for r in rows:
        if r["path"] and r["path"][-1] in ("entries", "listeners"):
            by_label[r["path"][-1]] = by_label.get(r["path"][-1], 0) + r["total_size"]
    # leak.luau leaks 400 sessions between these dumps, each in Cache.entries and in a listener closure.
    assert by_label["entries"] + by_label["listeners"] == total
    assert by_label["entries"] > by_label["listeners"] > 0
    sessions = [
        r
        for r in rows
        if len(r["path"]) >= 2 and r["path"][-2] == "entries" and r["path"][-1].startswith("k") and r["total_count"]
    ]
    assert len(sessions) == 400


def test_visits_exactly_what_the_reader_graph_reaches_from_the_listed_roots() -> None:
    """Two independent walks of the same dump: this module's and the Luau reader's graph."""
    path = fixture("luau-3-final.json")
    dump = luau.load_dump(path)
    rows = heapgraph(dump).rows()
    graph = luau.read_graph(path)
    listed = [i for i in range(graph.node_count) if graph.node_name(i) in ("(mainthread roots)", "(registry roots)")]
    seen = np.zeros(graph.node_count, dtype=bool)
    queue = deque(listed)
    seen[listed] = True
    while queue:
        u = queue.popleft()
        for e in graph.out_edges(u):
            v = int(graph.edge_to[e])
            if graph.edge_kind[e] != EdgeKind.WEAK and not seen[v]:
                seen[v] = True
                queue.append(v)
    seen[listed] = False
    reached = seen.sum()
    reached_size = int(graph.self_size[seen].sum())
    assert rows[0]["total_count"] == reached
    assert rows[0]["total_size"] == reached_size


def test_cli_lists_paths_and_writes_a_flame_graph(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from heapdb.cli import main

    final, baseline = fixture("luau-3-final.json"), fixture("luau-1-baseline.json")
    svg = tmp_path / "growth.svg"
    result = CliRunner().invoke(main, ["heapgraph", str(final), str(baseline), "--svg", str(svg), "--top", "5"])
    assert result.exit_code == 0, result.output
    assert "2,400 objects" in result.stdout
    assert "mainthread / __stack / entries" in result.stdout
    assert svg.read_text().startswith("<svg") and "entries" in svg.read_text()
    data = CliRunner().invoke(main, ["heapgraph", str(final), str(baseline), "--json"])
    rows = json.loads(data.stdout)["paths"]
    assert rows[0]["total_size"] == sum(r["size"] for r in rows)
    bad = CliRunner().invoke(main, ["heapgraph", str(fixture("luau-classes.json"))])
    assert bad.exit_code == 1 and "invalid JSON" in bad.stderr
