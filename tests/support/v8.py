"""Real V8 heap snapshots and memlab, for tests that need an independent oracle.

The Node tools live in ``tests/js`` (``package.json`` + ``package-lock.json`` pin memlab):

- ``leak.js`` grows deliberate leaks and writes ``baseline`` / ``target`` / ``final`` snapshots;
- ``memlab_oracle.js`` parses a snapshot with memlab and writes its per-node results.

Typical use::

    from tests.support.v8 import ensure_node_tools, write_leak_snapshots, run_memlab_oracle

    snapshots = write_leak_snapshots(tmp_path, sizes=(100, 200, 300))   # {"baseline": Path, ...}
    oracle = run_memlab_oracle(snapshots["final"])                       # a MemlabOracle
    oracle.retained_size[i]                                              # node index i, as heapdb numbers them

Session-scoped pytest fixtures wrapping these are in :mod:`tests.support.v8_fixtures`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.support.tiers import needs

JS_DIR = Path(__file__).resolve().parent.parent / "js"
LEAK_SCRIPT = JS_DIR / "leak.js"
ORACLE_SCRIPT = JS_DIR / "memlab_oracle.js"
NPM_CI = ["npm", "ci", "--no-audit", "--no-fund"]

# Node's default old-space limit is too small for memlab on the larger snapshots.
NODE_MEMORY_FLAG = "--max-old-space-size=8192"


class NodeToolsError(RuntimeError):
    """node/npm are missing, the install failed, or a Node script exited with an error."""


def node_environment() -> dict[str, str]:
    """The environment for npm and node: never download a browser for puppeteer (memlab's dependency)."""
    return {**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1"}


@needs("node")
def ensure_node_tools() -> Path:
    """Install ``tests/js``'s locked npm dependencies if they are missing; return ``tests/js``.

    Runs ``PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund`` once; a file lock makes concurrent
    test processes wait for one install instead of racing.
    """
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise NodeToolsError(f"{tool} is not on PATH; the V8 tests need Node.js 18+ and npm")
    marker = JS_DIR / "node_modules" / "memlab" / "package.json"
    if marker.exists():
        return JS_DIR
    # The lock lives outside tests/js: npm ci empties node_modules, and the repo should stay clean.
    lock_path = Path(tempfile.gettempdir()) / f"heapdb-npm-{hashlib.sha1(str(JS_DIR).encode()).hexdigest()[:12]}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            done = subprocess.run(NPM_CI, cwd=JS_DIR, env=node_environment(), capture_output=True, text=True)
            if done.returncode != 0:
                raise NodeToolsError(f"{' '.join(NPM_CI)} failed in {JS_DIR}:\n{done.stderr[-4000:]}")
    return JS_DIR


@needs("node")
def _run_node(args: Sequence[str], what: str, timeout: float) -> str:
    done = subprocess.run(
        ["node", NODE_MEMORY_FLAG, *args],
        cwd=JS_DIR,
        env=node_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise NodeToolsError(f"{what} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


@needs("node")
def write_leak_snapshots(
    out_dir: str | os.PathLike[str], sizes: Sequence[int] = (200,), timeout: float = 600
) -> dict[str, Path]:
    """Run ``leak.js`` and return its snapshots by label.

    Each size grows the leaks by that many units before the next snapshot; the labels are
    ``baseline``, ``target``, ``final`` (then ``step-3``...). A unit is one cached class instance with
    a closure, one event listener holding a buffer and one registry entry: about 1.6 KB of snapshot
    file, so 135,000 units give a ~210 MB snapshot (on Node 20).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stdout = _run_node([str(LEAK_SCRIPT), str(out), *(str(int(s)) for s in sizes)], "leak.js", timeout)
    snapshots = {}
    for line in stdout.splitlines():
        record = json.loads(line)
        snapshots[record["label"]] = Path(record["path"])
    return snapshots


@needs("node")
def write_closure_cache_snapshots(out_dir: str | os.PathLike[str], first: int, leaked: int) -> dict[str, Path]:
    """Run ``closure_cache.js``: ``leaked`` Session instances held by closures in a cache, between
    a baseline of ``first`` and a final snapshot that leaks nothing more. Snapshots by label."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    script = LEAK_SCRIPT.with_name("closure_cache.js")
    stdout = _run_node([str(script), str(out), str(int(first)), str(int(leaked))], "closure_cache.js", 120)
    return {record["label"]: Path(record["path"]) for record in map(json.loads, stdout.splitlines())}


@needs("node")
def write_leak_snapshot(out_dir: str | os.PathLike[str], size: int = 200) -> Path:
    """One leak snapshot (``baseline``) with ``size`` leak units."""
    return write_leak_snapshots(out_dir, (size,))["baseline"]


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
    _run_node([str(ORACLE_SCRIPT), str(snapshot), str(out_path)], f"memlab_oracle.js on {snapshot}", timeout)
    return load_memlab_oracle(out_path)
