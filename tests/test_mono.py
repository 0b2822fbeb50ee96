"""heapdb's Mono profiler module (heapdb/mono): a real C# program with a planted leak, run under
``mono --profile=heapdb``, captured three times through ``Heapdb.Capture``, read back by heapdb.

The program (tests/dotnet/Leak.cs) prints what it holds after each phase: the counts the captures
must show. The loop bounds are this file's arguments, not answers written into the tests.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from heapdb import mono
from heapdb.db import Database
from heapdb.errors import HeapdbError
from heapdb.loader import analysis
from heapdb.loader.formats import read_graph
from heapdb.loader.formats.snapbin.writer import SnapbinWriter
from heapdb.loader.graph import EdgeKind, HeapGraph, root_kind_node_name
from heapdb.loader.owners.attribution import owner_totals, owners_of
from heapdb.loader.paths import describe_path, first_paths
from heapdb.queries import params
from heapdb.queries.questions import Questions
from tests.support.snapshots import load_snapshot

PROGRAM = Path(__file__).parent / "dotnet" / "Leak.cs"
TRIGGERS = Path(__file__).parent / "dotnet" / "Triggers.cs"
MARKERS = 321  # objects the trigger program holds
PHASES = (40, 90, 150)  # requests (and cache entries) each phase adds
FINALIZABLE = 25  # objects waiting for their finalizer through every capture
HEAPDB = Path(sys.executable).parent / "heapdb"
NAMESPACE = "LeakDemo"
LINE = re.compile(r"phase (\d+) requests (\d+) cache (\d+) objects (\d+) weakalive (\d+)")


@dataclass(frozen=True)
class Phase:
    path: Path
    requests: int
    cache: int
    objects: int  # what Heapdb.Capture returned: the objects the module wrote
    weak_alive: bool  # whether the object only a weak handle held was still there afterwards


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> list[Phase]:
    built = mono.build()
    work = tmp_path_factory.mktemp("mono")
    exe = work / "Leak.exe"
    subprocess.run(["mcs", "-nologo", f"-r:{built.api}", f"-out:{exe}", str(PROGRAM)], check=True, capture_output=True)
    argv = mono.mono_command(str(exe), [str(work), *map(str, PHASES), str(FINALIZABLE)])
    done = subprocess.run(argv, env=mono.environment(built), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    phases = [
        Phase(work / f"capture-{m[1]}.snapbin", int(m[2]), int(m[3]), int(m[4]), m[5] == "1")
        for m in LINE.finditer(done.stdout)
    ]
    assert len(phases) == len(PHASES)
    return phases


def counts(graph: HeapGraph) -> Counter[str]:
    synthetic = graph.synthetic_nodes()
    return Counter(graph.type_name(i) for i in range(graph.node_count) if not synthetic[i])


def nodes_of(graph: HeapGraph, type_name: str) -> np.ndarray:
    return np.flatnonzero(np.array([graph.type_name(i) == type_name for i in range(graph.node_count)]))


def test_counts_per_class_equal_what_the_program_made(captures: list[Phase]) -> None:
    made = 0
    for phase, added in zip(captures, PHASES):
        made += added
        graph = read_graph(phase.path)
        found = counts(graph)
        assert phase.requests == phase.cache == made
        assert found[f"{NAMESPACE}.Request"] == phase.requests
        assert found[f"{NAMESPACE}.CacheEntry"] == phase.cache
        # each request's handler is a delegate (one more: the multicast delegate the event holds)
        assert found["System.EventHandler"] == phase.requests + 1
        assert found[f"{NAMESPACE}.HandleTarget"] == 1  # held by a strong GC handle only
        assert sum(found.values()) == phase.objects  # the file holds what the module says it wrote
        assert graph.meta["runtime"] == "dotnet" and graph.meta["pointer_size"] == 8
        assert graph.meta["walked_bytes"] == int(graph.self_size[~graph.synthetic_nodes()].sum())
        # a string's contents are its name (what the duplicate strings inspection groups by)
        request = nodes_of(graph, f"{NAMESPACE}.Request")[0]
        path_edge = next(e for e in graph.out_edges(request) if graph.edge_label(e) == "Path")
        assert graph.node_name(int(graph.edge_to[path_edge])).startswith("/orders/")
        assert graph.node_kinds[int(graph.kind[graph.edge_to[path_edge]])] == "string"


def test_why_names_the_static_fields(captures: list[Phase]) -> None:
    graph = read_graph(captures[-1].path)
    paths = first_paths(graph, analysis.analyze(graph).retaining)
    whys = Counter(describe_path(graph, paths, int(i)) for i in nodes_of(graph, f"{NAMESPACE}.Request"))
    # Each request is held by its handler on the static event; the last three also by Recent, nearer.
    event = f"(root) / (static roots) / {NAMESPACE}.Program.ConfigChanged → System.EventHandler"
    by_event = sum(
        n for why, n in whys.items() if why.startswith(event) and why.endswith(f"m_target → {NAMESPACE}.Request")
    )
    assert by_event == captures[-1].requests - 3
    recent = f"(root) / (static roots) / {NAMESPACE}.Program.Recent → {NAMESPACE}.Request[] / [] → {NAMESPACE}.Request"
    on_stack = f"(root) / (stack roots) / thread # → {NAMESPACE}.Request"  # the loop's variable, nearer
    assert whys[recent] + whys[on_stack] == 3 and whys[recent] >= 2
    entry = nodes_of(graph, f"{NAMESPACE}.CacheEntry")[-1]
    assert f"(static roots) / {NAMESPACE}.Program.Cache → " in describe_path(graph, paths, int(entry))
    held = nodes_of(graph, f"{NAMESPACE}.HandleTarget")[0]
    assert describe_path(graph, paths, int(held)).startswith("(root) / (strong handle roots) / ")


def test_the_planted_leak_ranks_first_across_the_three_captures(captures: list[Phase], database: Database) -> None:
    """`heapdb leaks --by path` over the three captures, loaded: the handlers on the static event,
    each holding its request, grew most; the never-evicted cache is among the next. By path, as
    for every moving collector: sgen compacts, so an object's address (its id) is not stable."""
    tags = [load_snapshot(database, phase.path, f"mono-{i}").tag for i, phase in enumerate(captures)]
    baseline, target, final = tags
    answer = Questions(database, timeout=60).leaks(baseline, target, final, params.Leaks(by="path", limit=10))
    ranked = [c.path for c in answer.clusters]
    assert ranked[0].startswith(f"(root) / (static roots) / {NAMESPACE}.Program.ConfigChanged → ")
    assert ranked[0].endswith("→ System.EventHandler")  # the handlers, each holding its request
    assert answer.clusters[0].counts is not None
    assert answer.clusters[0].counts[-1] - answer.clusters[0].counts[0] == captures[-1].requests - captures[0].requests
    assert any(f"{NAMESPACE}.Program.Cache → " in path for path in ranked[1:4])


def test_weak_handles_do_not_retain(captures: list[Phase], tmp_path: Path) -> None:
    graph = read_graph(captures[-1].path)
    # The object only a weak handle held is gone (the program saw its handle empty); the one a list
    # holds too is there, reached from the weak handle by a weak edge, and held by the list.
    assert not captures[-1].weak_alive
    (kept,) = nodes_of(graph, f"{NAMESPACE}.WeakTarget")
    weak_node = nodes_of(graph, root_kind_node_name("weak handle"))[0]
    edges = [e for e in graph.out_edges(weak_node) if graph.edge_to[e] == kept]
    assert edges and all(graph.edge_kind[e] == EdgeKind.WEAK for e in edges)
    result = analysis.analyze(graph)
    assert result.idom[kept] != weak_node and result.retained_size[weak_node] == 0
    # And what only a weak handle root holds is unreachable: a file written to say so.
    path = tmp_path / "weak.snapbin"
    with SnapbinWriter(path, compress=False) as w:
        w.add_object(1, "Held", 16)
        w.add_object(2, "OnlyWeak", 24)
        w.add_root("static", "Program.held", 1)
        w.add_root("weak handle", "GCHandle (Weak)", 2)
    small = read_graph(path)
    reached = analysis.analyze(small).reachable
    assert reached[0] and not reached[1]


def test_a_cut_off_capture_gets_a_clear_error(captures: list[Phase], tmp_path: Path) -> None:
    data = captures[0].path.read_bytes()
    cut = tmp_path / "cut.snapbin"
    cut.write_bytes(data[: len(data) * 2 // 3])
    for command in ("inspect", "analyze"):
        proc = subprocess.run([str(HEAPDB), command, str(cut)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert str(cut) in proc.stderr and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_the_finalizer_queue_is_a_transient_root(captures: list[Phase]) -> None:
    """What waits for its finalizer is alive (it is in the file, strongly held) but held by no root
    of the program's: its path starts at the finalizer queue, a group paths take last."""
    graph = read_graph(captures[0].path)
    waiting = nodes_of(graph, f"{NAMESPACE}.Finalizable")
    assert waiting.size == FINALIZABLE  # one may be in the finalizer thread's hands, on its stack
    queue = nodes_of(graph, root_kind_node_name("finalizer queue"))[0]
    assert graph.transient_root_groups()[queue]
    paths = first_paths(graph, analysis.analyze(graph).retaining)
    starts = [describe_path(graph, paths, int(i)).startswith("(root) / (finalizer queue roots) / ") for i in waiting]
    assert sum(starts) >= FINALIZABLE - 1


@pytest.fixture(scope="module")
def triggers(tmp_path_factory: pytest.TempPathFactory) -> tuple[mono.Build, Path]:
    built = mono.build()
    exe = tmp_path_factory.mktemp("triggers") / "Triggers.exe"
    subprocess.run(["mcs", "-nologo", f"-r:{built.api}", f"-out:{exe}", str(TRIGGERS)], check=True, capture_output=True)
    return built, exe


def markers_in(path: Path) -> int:
    return counts(read_graph(path))["Marker"]


def test_a_capture_streams_over_a_socket(triggers: tuple[mono.Build, Path]) -> None:
    built, exe = triggers
    server = socket.create_server(("127.0.0.1", 0))
    received = bytearray()

    def take() -> None:
        connection, _ = server.accept()
        with connection:
            while chunk := connection.recv(1 << 16):
                received.extend(chunk)

    taker = threading.Thread(target=take)
    taker.start()
    port = server.getsockname()[1]
    argv = mono.mono_command(str(exe), ["call", str(MARKERS)], [f"output=tcp:127.0.0.1:{port}"])
    subprocess.run(argv, env=mono.environment(built), check=True, capture_output=True, timeout=60)
    taker.join(30)
    server.close()
    path = exe.parent / "received.snapbin"
    path.write_bytes(received)
    assert markers_in(path) == MARKERS


def run_until_captured(triggers: tuple[mono.Build, Path], mode: str, options: list[str], expected: list[str]) -> None:
    """Run the trigger program in ``mode``. For each capture in ``expected`` (a path, ``{pid}`` for
    the pid), in order: once the program is ready, signal it (mode "signal"), wait until the capture
    is complete, and let the program go on."""
    built, exe = triggers
    argv = mono.mono_command(str(exe), [mode, str(MARKERS)], options)
    proc = subprocess.Popen(argv, env=mono.environment(built), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    paths = []
    for pattern in expected:
        assert proc.stdout.readline().strip() == "ready"
        if mode == "signal":
            proc.send_signal(signal.SIGUSR2)
        path = Path(pattern.format(pid=proc.pid))
        deadline = time.monotonic() + 60
        while not (path.exists() and markers_found(path)) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.stdin.write("\n")
        proc.stdin.flush()
        paths.append(path)
    proc.stdin.close()
    assert proc.wait(30) == 0
    assert all(markers_in(p) == MARKERS for p in paths)


def test_a_signal_and_every_n_collections_capture(triggers: tuple[mono.Build, Path], tmp_path: Path) -> None:
    signalled = [f"output={tmp_path}/signal-%p-%n.snapbin", "signal"]
    run_until_captured(triggers, "signal", signalled, [f"{tmp_path}/signal-{{pid}}-1.snapbin"])
    every = [f"output={tmp_path}/every-%n.snapbin", "every=2"]
    run_until_captured(triggers, "every", every, [f"{tmp_path}/every-1.snapbin", f"{tmp_path}/every-2.snapbin"])
    assert sorted(p.name for p in tmp_path.glob("every-*")) == ["every-1.snapbin", "every-2.snapbin"]


def markers_found(path: Path) -> bool:
    """Whether the capture at ``path`` is complete (the module writes it while we poll)."""
    try:
        return markers_in(path) >= 0
    except HeapdbError:
        return False


def test_boxed_values_and_arrays_of_references_read_as_what_they_are(captures: list[Phase]) -> None:
    graph = read_graph(captures[0].path)
    statics = nodes_of(graph, root_kind_node_name("static"))[0]
    held = {graph.edge_label(e): int(graph.edge_to[e]) for e in graph.out_edges(statics)}
    boxed = held[f"{NAMESPACE}.Program.Boxed"]
    assert graph.type_name(boxed) == "System.Int32" and graph.node_kinds[int(graph.kind[boxed])] == "boxed"
    recent = held[f"{NAMESPACE}.Program.Recent"]
    assert graph.type_name(recent) == f"{NAMESPACE}.Request[]" and graph.node_kinds[int(graph.kind[recent])] == "array"
    elements = {int(graph.edge_name[e]): graph.type_name(int(graph.edge_to[e])) for e in graph.out_edges(recent)}
    assert elements == dict.fromkeys(range(3), f"{NAMESPACE}.Request")
    assert all(graph.edge_kind[e] == EdgeKind.ELEMENT for e in graph.out_edges(recent))


def test_the_namespace_level_names_the_program_s_namespace_and_the_framework_s(captures: list[Phase]) -> None:
    last = captures[-1]
    graph = read_graph(last.path)
    result = analysis.analyze(graph)
    level = owners_of(graph, result).level("namespace")
    assert level is not None

    def owner(type_name: str) -> set[str]:
        return {level.names[level.owner[v]] for v in nodes_of(graph, type_name).tolist()}

    assert owner(f"{NAMESPACE}.Request") == {NAMESPACE}
    assert owner(f"System.Collections.Generic.List<{NAMESPACE}.WeakTarget>") == {"System.Collections.Generic"}
    rows = {row.name: row for row in owner_totals(result, level)}
    assert rows[NAMESPACE].objects >= last.requests + last.cache
