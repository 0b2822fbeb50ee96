"""memlab's view of real V8 heap snapshots, for tests that need an independent oracle; and the
Node programs of :mod:`heapgen.node`, declared to need the ``node`` tier (tests/support/tiers.py).

``memlab_oracle.js`` (in ``tests/js``) parses a snapshot with memlab and writes its per-node results.

Typical use::

    from tests.support.v8 import write_leak_snapshots, run_memlab_oracle

    snapshots = write_leak_snapshots(tmp_path, sizes=(100, 200, 300))   # {"baseline": Path, ...}
    oracle = run_memlab_oracle(snapshots["final"])                       # a MemlabOracle
    oracle.retained_size[i]                                              # node index i, as heapdb numbers them

Session-scoped pytest fixtures wrapping these are in :mod:`tests.support.v8_fixtures`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heapdb.loader import analysis, formats
from heapdb.loader.analysis import Analysis
from heapdb.loader.graph import HeapGraph, csr_from_coo
from heapgen import node
from heapgen.node import JS_DIR, NodeToolsError, node_environment, run_node
from tests.support.tiers import needs

__all__ = [
    "JS_DIR",
    "MemlabOracle",
    "NodeToolsError",
    "ensure_node_tools",
    "load_memlab_oracle",
    "node_environment",
    "run_memlab_oracle",
    "run_memlab_nodes",
    "run_memlab_objects",
    "run_memlab_strings",
    "write_closure_cache_snapshots",
    "write_duplicate_objects_snapshot",
    "write_duplicate_strings_snapshot",
    "write_known_leaks_snapshot",
    "write_secrets_snapshot",
    "write_leak_snapshot",
    "write_leak_snapshots",
]

ORACLE_SCRIPT = JS_DIR / "memlab_oracle.js"
STRINGS_SCRIPT = JS_DIR / "memlab_strings.js"
NODES_SCRIPT = JS_DIR / "memlab_nodes.js"
OBJECTS_SCRIPT = JS_DIR / "memlab_objects.js"
REACT_HOOKS_SCRIPT = JS_DIR / "memlab_react_hooks.js"

ensure_node_tools = needs("node")(node.ensure_node_tools)
write_leak_snapshots = needs("node")(node.write_leak_snapshots)
write_leak_snapshot = needs("node")(node.write_leak_snapshot)
write_closure_cache_snapshots = needs("node")(node.write_closure_cache_snapshots)
write_duplicate_strings_snapshot = needs("node")(node.write_duplicate_strings_snapshot)
write_duplicate_objects_snapshot = needs("node")(node.write_duplicate_objects_snapshot)
write_secrets_snapshot = needs("node")(node.write_secrets_snapshot)
write_known_leaks_snapshot = needs("node")(node.write_known_leaks_snapshot)


@dataclass
class MemlabOracle:
    """memlab's view of a snapshot; every array is indexed by node index (snapshot order)."""

    memlab_version: str
    node_count: int
    edge_count: int
    ids: np.ndarray  # int64
    self_size: np.ndarray  # int64
    retained_size: np.ndarray  # int64
    dominator_id: np.ndarray  # int64, the immediate dominator's node id (the root's is its own)
    path_length: np.ndarray  # int64, edges on memlab's retainer path from a root; -1 when none
    detached: np.ndarray  # bool, memlab's detached-DOM flag

    def dominator_index(self) -> np.ndarray:
        """Immediate dominators as node indexes (int64), mapped through the ids."""
        order = np.argsort(self.ids)
        return order[np.searchsorted(self.ids, self.dominator_id, sorter=order)]


def load_memlab_oracle(path: str | os.PathLike[str]) -> MemlabOracle:
    """Read the file ``memlab_oracle.js`` writes (a JSON header line, then float64 columns)."""
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        if header.get("format") != "heapdb-memlab-oracle" or header.get("version") != 1:
            raise ValueError(f"{path}: not a memlab oracle file (header {header!r})")
        n = int(header["nodeCount"])
        data = np.fromfile(f, dtype="<f8")
    names = header["columns"]
    if data.shape[0] != n * len(names):
        raise ValueError(f"{path}: expected {n * len(names)} values, found {data.shape[0]}")
    column = {name: data[i * n : (i + 1) * n] for i, name in enumerate(names)}
    as_int = {name: column[name].astype(np.int64) for name in names}
    return MemlabOracle(
        memlab_version=header["memlab"],
        node_count=n,
        edge_count=int(header["edgeCount"]),
        ids=as_int["id"],
        self_size=as_int["selfSize"],
        retained_size=as_int["retainedSize"],
        dominator_id=as_int["dominatorId"],
        path_length=as_int["pathLength"],
        detached=column["detached"] != 0,
    )


@needs("node")
def run_memlab_oracle(
    snapshot: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, timeout: float = 1800
) -> MemlabOracle:
    """Parse ``snapshot`` with memlab and load its results (written to ``out``, default beside it)."""
    ensure_node_tools()
    snapshot = Path(snapshot)
    out_path = Path(out) if out is not None else snapshot.with_name(snapshot.name + ".memlab")
    run_node([str(ORACLE_SCRIPT), str(snapshot), str(out_path)], f"memlab_oracle.js on {snapshot}", timeout)
    return load_memlab_oracle(out_path)


@needs("node")
def run_memlab_strings(snapshot: str | os.PathLike[str], out: str | os.PathLike[str], timeout: float = 600) -> dict:
    """memlab's ``string`` analysis of ``snapshot``, as ``memlab_strings.js`` writes it to ``out``:
    its top lists, pattern statistics and every string value's group."""
    return _run_json_oracle(STRINGS_SCRIPT, snapshot, out, timeout)


@needs("node")
def run_memlab_objects(snapshot: str | os.PathLike[str], out: str | os.PathLike[str], timeout: float = 600) -> dict:
    """memlab's ``object-shallow`` analysis of ``snapshot``, as ``memlab_objects.js`` writes it to
    ``out``: its top lists, pattern statistics and every object content's group."""
    return _run_json_oracle(OBJECTS_SCRIPT, snapshot, out, timeout)


def _run_json_oracle(
    script: Path, snapshot: str | os.PathLike[str], out: str | os.PathLike[str], timeout: float
) -> dict:
    """Run one of memlab's analyses through ``script``, which writes its answer to ``out`` as JSON."""
    ensure_node_tools()
    run_node([str(script), str(snapshot), str(out)], f"{script.name} on {snapshot}", timeout)
    with open(out, encoding="utf-8") as f:
        answer: dict = json.load(f)
    return answer


@needs("node")
def run_memlab_nodes(snapshot: str | os.PathLike[str], out: str | os.PathLike[str], timeout: float = 600) -> dict:
    """memlab's ``detached-DOM`` and ``unmounted-fiber-node`` analyses of ``snapshot``, as
    ``memlab_nodes.js`` writes them to ``out``: for each, its own list and every node its predicate
    accepts."""
    return _run_json_oracle(NODES_SCRIPT, snapshot, out, timeout)


def run_memlab_react_hooks(snapshot: str | os.PathLike[str], out: str | os.PathLike[str], timeout: float = 600) -> dict:
    """memlab's ``react-hooks`` analysis of ``snapshot``, as ``memlab_react_hooks.js`` writes it to
    ``out``: as memlab runs it, and over every fiber with heapdb's naming."""
    return _run_json_oracle(REACT_HOOKS_SCRIPT, snapshot, out, timeout)


def assert_ranked_as_memlab(
    ours: Sequence[tuple[object, ...]], theirs: Sequence[tuple[object, ...]], figure: int
) -> None:
    """A top list of ours against memlab's (rows as tuples, ranked by the ``figure``-th value): the
    same figures in order, and the same rows but those tied on the figure at the cut, which may be
    others of equal rank."""
    assert [row[figure] for row in ours] == [row[figure] for row in theirs]
    cut = theirs[-1][figure]
    assert {row for row in ours if row[figure] != cut} == {row for row in theirs if row[figure] != cut}


def read_beside_memlab(
    path: Path, memlab: Callable[[Path, Path], dict], out: Path
) -> tuple[Path, HeapGraph, Analysis, dict]:
    """A snapshot read and analysed by heapdb, and one of memlab's analyses of it (``memlab``, one
    of the ``run_memlab_*`` above, writing to ``out``): what the inspections' tests compare."""
    graph = formats.read_graph(path)
    return path, graph, analysis.analyze(graph), memlab(path, out)


def v8_graph(
    node_kinds: list[str],
    kind: list[int],
    name: list[int],
    self_size: list[int],
    edges: list[tuple[int, int, int, int]],
    table: list[str],
) -> HeapGraph:
    """A small V8 graph for brute-force tests: nodes of ``node_kinds``, node 0 its root, ids 2, 4,
    6..., with ``edges`` as (source, target, kind, name index)."""
    n = len(kind)
    src, dst, kinds, names = (np.array([e[i] for e in edges], dtype=np.int64) for i in range(4))
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(n, src, dst, kinds, names)
    graph = HeapGraph(
        ids=np.arange(1, n + 1, dtype=np.int64) * 2,
        kind=np.array(kind, dtype=np.uint8),
        type=np.zeros(n, dtype=np.int32),
        name=np.array(name, dtype=np.int32),
        self_size=np.array(self_size, dtype=np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=table,
        node_kinds=node_kinds,
        root=0,
        meta={"format": "v8"},
    )
    graph.validate()
    return graph
