"""``heapdb analyze`` end to end: a real V8 snapshot checked against memlab, a snap.bin built by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader.formats import snapbin
from heapdb.loader.graph import EdgeKind, HeapGraph, csr_from_coo
from tests.support.snapshots import LUAU_FIXTURES

SHARED_LUAU = LUAU_FIXTURES / "luau-3-final.json"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["analyze", *args])
    return result.exit_code, result.output


def test_json_report_agrees_with_memlab(leak_snapshot: Path, memlab_oracle) -> None:
    code, output = run(str(leak_snapshot), "--json", "--top", "15")
    assert code == 0, output
    report = json.loads(output)
    oracle = memlab_oracle(leak_snapshot)
    index_of = {int(i): k for k, i in enumerate(oracle.ids)}
    assert report["format"] == "v8" and report["semantics"] == "v8"
    assert report["objects"] == oracle.node_count
    assert report["references"] == oracle.edge_count
    assert report["total_self_size"] == int(oracle.self_size.sum())
    assert report["root"]["retained_size"] == int(oracle.retained_size[0])
    rows = report["top_retainers"]
    assert len(rows) == 15
    sizes = [row["retained_size"] for row in rows]
    assert sizes == sorted(sizes, reverse=True)
    for row in rows + report["roots"]:
        assert row["retained_size"] == int(oracle.retained_size[index_of[row["id"]]])
        assert row["type"] != "(synthetic)" or row in report["roots"]
    # The deliberate leak is among the biggest retainers.
    assert any(row["type"] == "LeakyCache" for row in rows)


def test_text_report(leak_snapshot: Path) -> None:
    code, output = run(str(leak_snapshot), "--top", "30")
    assert code == 0, output
    assert "Top retainers:" in output and "Roots:" in output
    assert "LeakyCache" in output
    assert "KiB" in output or "MiB" in output


def test_options_change_the_rules(leak_snapshot: Path, memlab_oracle) -> None:
    oracle = memlab_oracle(leak_snapshot)
    index_of = {int(i): k for k, i in enumerate(oracle.ids)}
    code, output = run(str(leak_snapshot), "--json", "--semantics", "generic")
    assert code == 0, output
    generic = json.loads(output)
    assert generic["semantics"] == "generic"
    assert generic["root"]["retained_size"] == generic["reachable_size"]
    code, output = run(str(leak_snapshot), "--json", "--devtools-sizes", "--top", "100")
    assert code == 0, output
    devtools = json.loads(output)
    # Sizes move between objects; none appear or vanish.
    assert devtools["total_self_size"] == int(oracle.self_size.sum())
    assert devtools["root"]["retained_size"] == int(oracle.retained_size[0])
    raw = {r["id"]: int(oracle.self_size[index_of[r["id"]]]) for r in devtools["top_retainers"]}
    gained = [r for r in devtools["top_retainers"] if r["self_size"] > raw[r["id"]]]
    gave = [r for r in devtools["top_retainers"] if r["self_size"] < raw[r["id"]]]
    # Owners (a Map holding its backing store, for one) gain; the hidden/array objects drop to 0.
    assert gained and all(r["type"] not in ("(array)", "(system)") for r in gained)
    assert all(r["self_size"] == 0 and r["type"] in ("(array)", "(system)") for r in gave)


def small_graph() -> HeapGraph:
    """A hand-made heap with the synthetic root layout snap.bin readers build.

    (root) -> (global roots) -> a;  a -> b, a -> c, b -> d, c -> d, d -> e, a -weak-> f, g -> e.
    Sizes: a=1, b=10, c=100, d=1000, e=10000, f=100000, g=1000000. f and g are garbage.
    """
    names = ["a", "b", "c", "d", "e", "f", "g"]
    strings = ["", "Thing", "(root)", "(global roots)", "x", *names]
    n = 9  # a..g, then (root), (global roots)
    edges = [
        (7, 8, EdgeKind.REFERENCE),
        (8, 0, EdgeKind.REFERENCE),
        (0, 1, EdgeKind.REFERENCE),
        (0, 2, EdgeKind.REFERENCE),
        (1, 3, EdgeKind.REFERENCE),
        (2, 3, EdgeKind.REFERENCE),
        (3, 4, EdgeKind.REFERENCE),
        (0, 5, EdgeKind.WEAK),
        (6, 4, EdgeKind.REFERENCE),
    ]
    src, dst, kind = zip(*edges)
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(
        n, np.array(src), np.array(dst), np.array(kind, dtype=np.uint8), np.full(len(edges), 4)
    )
    graph = HeapGraph(
        ids=np.array([16, 32, 48, 64, 80, 96, 112, 1, 2], dtype=np.int64),
        kind=np.array([0] * 7 + [1, 1], dtype=np.uint8),
        type=np.array([1] * 7 + [2, 3], dtype=np.int32),
        name=np.array([5, 6, 7, 8, 9, 10, 11, 2, 3], dtype=np.int32),
        self_size=np.array([1, 10, 100, 1000, 10000, 100000, 1000000, 0, 0], dtype=np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=strings,
        node_kinds=["object", "synthetic"],
        root=7,
    )
    graph.validate()
    return graph


def test_snapbin_report_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "small.snap.bin"
    snapbin.write_graph(small_graph(), path)
    code, output = run(str(path), "--json", "--top", "3")
    assert code == 0, output
    report = json.loads(output)
    assert report["format"] == "snapbin" and report["semantics"] == "generic"
    assert report["objects"] == 9
    assert report["total_self_size"] == 1111111
    assert report["reachable_objects"] == 7  # a-e and the two synthetic nodes
    assert report["reachable_size"] == 11111
    assert report["unreachable_objects"] == 2
    assert report["root"]["retained_size"] == 11111
    assert [r["name"] for r in report["roots"]] == ["(global roots)"]
    # a holds everything; d holds e (b and c both reach d); then e, c, b, in that order.
    top = [(r["name"], r["retained_size"], r["retained_count"], r["distance"]) for r in report["top_retainers"]]
    assert top == [("a", 11111, 5, 2), ("d", 11000, 2, 4), ("e", 10000, 1, 5)]


def test_text_report_units(tmp_path: Path) -> None:
    path = tmp_path / "small.snap.bin"
    snapbin.write_graph(small_graph(), path)
    code, output = run(str(path))
    assert code == 0, output
    assert "10.9 KiB" in output  # a's 11111 bytes
    assert re.search(r"unreachable\s+2 objects", output)


def test_not_a_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    code, output = run(str(path))
    assert code == 1
    assert "heapdb: error:" in output and "notes.txt" in output


@pytest.mark.skipif(not SHARED_LUAU.exists(), reason="needs ../shared/fixtures/luau (not part of the repository)")
def test_luau_dump() -> None:
    code, output = run(str(SHARED_LUAU), "--json", "--top", "5")
    assert code == 0, output
    report = json.loads(output)
    assert report["semantics"] == "generic"
    assert report["root"]["retained_size"] == report["reachable_size"]
    assert report["reachable_objects"] + report["unreachable_objects"] == report["objects"]
    assert report["top_retainers"] and all(r["distance"] >= 1 for r in report["top_retainers"])
