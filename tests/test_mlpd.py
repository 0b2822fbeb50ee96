"""Mono's log-profiler heapshots (.mlpd): a real C# program run under ``mono --profile=log``, its
heapshots read by heapdb and checked against ``mprof-report``, Mono's own reader of the same file,
and against heapdb's own Mono module (heapdb/mono) capturing the same heap.

The program (tests/dotnet/MlpdLeak.cs) holds requests in a static list and cache entries in a static
chain, and asks for a heapshot after each; how many of each it makes are this file's arguments.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb import mono, settings
from heapdb.errors import FormatError
from heapdb.loader import analysis
from heapdb.loader.formats import detect
from heapdb.loader.formats import read_graph as read_any
from heapdb.loader.formats.mlpd import read_graph
from heapdb.loader.graph import EdgeKind, HeapGraph, root_kind_node_name
from heapgen.mlpd import NAMESPACE, compile_program, heapshots, log_profile

REQUESTS, ENTRIES = 37, 53  # what the program makes: its arguments
# mprof-report --reports=heapshot: a section per heapshot, then a row per class.
SECTION = re.compile(r"Heap shot (\d+) at [\d.]+ secs: size: (\d+), object count: (\d+), class count: (\d+)")
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+\d+ (.+?)(?: \(bytes: [-+]\d+, count: [-+]\d+\))?$")


@pytest.fixture(scope="module")
def mlpd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return heapshots(tmp_path_factory.mktemp("mlpd"), REQUESTS, ENTRIES)


@pytest.fixture(scope="module")
def oracle(mlpd: Path) -> list[tuple[int, int, Counter[str], Counter[str]]]:
    """mprof-report's heapshots: (bytes, objects, objects per class, bytes per class) each."""
    text = subprocess.run(
        ["mprof-report", "--reports=heapshot", str(mlpd)], check=True, capture_output=True, text=True
    ).stdout
    shots: list[tuple[int, int, Counter[str], Counter[str]]] = []
    rows = classes = 0
    for line in text.splitlines():
        section = SECTION.search(line)
        if section:
            assert not shots or rows == classes, "mprof-report listed fewer classes than it counted"
            classes, rows = int(section[4]), 0
            shots.append((int(section[2]), int(section[3]), Counter(), Counter()))
            continue
        row = ROW.match(line)
        if row and shots and not line.lstrip().startswith("Bytes"):
            rows += 1
            shots[-1][2][row[3]] += int(row[2])  # two classes of one name (two domains) add up
            shots[-1][3][row[3]] += int(row[1])
    assert shots and rows == classes
    return shots


def per_class(graph: HeapGraph) -> tuple[Counter[str], Counter[str]]:
    objects = ~graph.synthetic_nodes()
    types = graph.type[objects]
    count, size = Counter[str](), Counter[str]()
    for t, c in zip(*np.unique(types, return_counts=True), strict=True):
        count[graph.strings[int(t)]] = int(c)
    for t, s in zip(np.unique(types), np.bincount(np.unique(types, return_inverse=True)[1], graph.self_size[objects])):
        size[graph.strings[int(t)]] = int(s)
    return count, size


def test_every_heapshot_has_mprof_reports_objects_and_bytes_per_class(mlpd: Path, oracle: list) -> None:
    assert detect(mlpd).name == "mlpd"
    assert len(oracle) == 2
    for number, (total, objects, count, size) in enumerate(oracle, start=1):
        graph = read_graph(mlpd, heapshot=number)
        assert graph.meta["heapshot"] == number and graph.meta["heapshots"] == len(oracle)
        mine_count, mine_size = per_class(graph)
        assert mine_count == count
        assert mine_size == size
        assert sum(mine_count.values()) == objects and sum(mine_size.values()) == total


def test_the_program_s_own_objects_are_what_it_made(mlpd: Path) -> None:
    first, second = read_graph(mlpd, heapshot=1), read_graph(mlpd, heapshot=2)
    first_count, _ = per_class(first)
    second_count, _ = per_class(second)
    assert first_count[f"{NAMESPACE}.Request"] == REQUESTS
    assert first_count[f"{NAMESPACE}.CacheEntry"] == 0
    assert second_count[f"{NAMESPACE}.Request"] == REQUESTS
    assert second_count[f"{NAMESPACE}.CacheEntry"] == ENTRIES
    # Each cache entry's value is an int[4]: one more than the program held before, per entry.
    assert second_count["System.Int32[]"] - first_count["System.Int32[]"] == ENTRIES


def test_the_last_heapshot_is_read_unless_the_setting_names_another(
    mlpd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(settings.MLPD_HEAPSHOT.name, raising=False)
    assert read_graph(mlpd).meta["heapshot"] == 2
    monkeypatch.setenv(settings.MLPD_HEAPSHOT.name, "1")
    assert read_graph(mlpd).meta["heapshot"] == 1
    monkeypatch.setenv(settings.MLPD_HEAPSHOT.name, "3")
    with pytest.raises(FormatError, match="2 complete heapshot"):
        read_graph(mlpd)


def test_references_and_roots_lead_from_the_static_field_to_every_request(mlpd: Path) -> None:
    graph = read_graph(mlpd)
    n = graph.root
    registry_statics = [
        graph.edge_to[e]
        for kind_node in graph.edge_to[graph.out_edges(n)]
        for e in graph.out_edges(int(kind_node))
        if graph.edge_label(e) == f"{NAMESPACE}.Registry statics"
    ]
    assert f"System.Collections.Generic.List<{NAMESPACE}.Request>" in {
        graph.type_name(int(i)) for i in registry_statics
    }
    the_list = next(int(i) for i in registry_statics if graph.type_name(int(i)).startswith("System.Collections"))
    (items,) = [
        int(graph.edge_to[e])
        for e in graph.out_edges(the_list)
        if graph.type_name(int(graph.edge_to[e])).endswith("[]")
    ]
    elements = list(graph.out_edges(items))
    assert all(graph.edge_kind[e] == EdgeKind.ELEMENT for e in elements)
    assert sorted(int(graph.edge_name[e]) for e in elements) == list(range(REQUESTS))
    assert {graph.type_name(int(graph.edge_to[e])) for e in elements} == {f"{NAMESPACE}.Request"}
    # Every request is retained by the list's array, except one a stack slot still holds (Mono
    # scans stacks conservatively): its own root then dominates it.
    result = analysis.analyze(graph)
    requests = np.flatnonzero(graph.type == graph.strings.index(f"{NAMESPACE}.Request"))
    rooted = {int(graph.edge_to[e]) for k in range(n + 1, graph.node_count) for e in graph.out_edges(k)}
    held = np.asarray([r for r in requests if int(r) not in rooted])
    assert len(held) >= REQUESTS - 2 and (result.idom[held] == items).all()
    bodies = [int(graph.edge_to[e]) for r in held for e in graph.out_edges(int(r))]
    assert all(graph.edge_label(e) == "+16" for r in requests for e in graph.out_edges(int(r)))
    assert len(set(bodies)) == len(held) and {graph.type_name(b) for b in bodies} == {"System.Byte[]"}
    bodies = [b for b in bodies if b not in rooted]
    assert int(result.retained_size[items]) == int(
        graph.self_size[items] + graph.self_size[held].sum() + graph.self_size[bodies].sum()
    )


def first_buffer(data: bytes) -> int:
    """Where the first buffer starts: after the fixed header and its three length-prefixed strings."""
    at = 38
    for _ in range(3):
        (length,) = struct.unpack_from("<I", data, at)
        at += 4 + length
    return at


def test_a_cut_or_corrupted_file_is_a_format_error_with_the_offset(mlpd: Path, tmp_path: Path) -> None:
    from heapdb.cli import main

    data = mlpd.read_bytes()
    cut = tmp_path / "cut.mlpd"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(FormatError, match="past the end of the file|inside a buffer header") as caught:
        read_graph(cut)
    assert caught.value.offset is not None and caught.value.offset < len(data) * 2 // 3
    result = CliRunner().invoke(main, ["inspect", str(cut)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert str(cut) in result.output and "byte" in result.output

    event = first_buffer(data) + 48  # the first buffer's first event
    bad = bytearray(data)
    bad[event] = 0x0F  # event type 15: no such type
    corrupt = tmp_path / "corrupt.mlpd"
    corrupt.write_bytes(bytes(bad))
    with pytest.raises(FormatError, match="unknown event type") as caught:
        read_graph(corrupt)
    assert caught.value.offset == event
    result = CliRunner().invoke(main, ["analyze", str(corrupt)])
    assert result.exit_code != 0 and "Traceback" not in result.output and f"byte {event}" in result.output

    bad = bytearray(data)
    bad[first_buffer(data)] ^= 0xFF  # the buffer id
    corrupt.write_bytes(bytes(bad))
    with pytest.raises(FormatError, match="buffer id"):
        read_graph(corrupt)
    empty = tmp_path / "header-only.mlpd"
    empty.write_bytes(data[: first_buffer(data)])
    with pytest.raises(FormatError, match="no heapshot"):
        read_graph(empty)


def test_cli_inspect_and_analyze_an_mlpd_file(mlpd: Path) -> None:
    from heapdb.cli import main

    result = CliRunner().invoke(main, ["inspect", str(mlpd), "--top", "60"])
    assert result.exit_code == 0, result.output
    assert "mlpd" in result.output and f"{NAMESPACE}.CacheEntry" in result.output
    result = CliRunner().invoke(main, ["analyze", str(mlpd), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["format"] == "mlpd"


def test_heapdb_s_module_and_the_log_profiler_agree_on_the_same_heap(tmp_path: Path) -> None:
    built = mono.build()
    exe = compile_program(tmp_path / "MlpdLeak.exe", str(built.api), defines=("HEAPDB",))
    out = tmp_path / "both.mlpd"
    argv = mono.mono_command(str(exe), [str(REQUESTS), str(ENTRIES), str(tmp_path)])
    argv.insert(1, log_profile(out))  # both profilers, one run
    done = subprocess.run(argv, env=mono.environment(built), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    for number in (1, 2):
        theirs = read_any(tmp_path / f"capture-{number}.snapbin")
        ours = read_graph(out, heapshot=number)
        # The two producers name each class alike (namespace, nesting, generic arguments, .NET names
        # of the built-in types), so counts and bytes must agree class by class.
        counts = [per_class(graph) for graph in (theirs, ours)]
        assert counts[0] == counts[1]
        assert counts[1][0][f"{NAMESPACE}.Request"] == REQUESTS
        # and file the roots of the statics and of sgen's strong handle tables under the same kinds
        kinds = [
            {graph.node_name(int(i)) for i in graph.edge_to[graph.out_edges(graph.root)]} for graph in (theirs, ours)
        ]
        for kind in ("static", "strong handle"):
            assert root_kind_node_name(kind) in kinds[0] & kinds[1]
