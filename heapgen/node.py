"""Real V8 heap snapshots from Node programs that leak on purpose.

The programs and their locked npm dependencies live in ``tests/js`` (``package.json`` +
``package-lock.json`` pin memlab, which the tests use as an oracle); this module only runs them:

- ``leak.js`` grows deliberate leaks and writes ``baseline`` / ``target`` / ``final`` snapshots;
- ``closure_cache.js`` leaks class instances held by closures in a cache.

Typical use::

    from heapgen.node import write_leak_snapshots

    snapshots = write_leak_snapshots(tmp_path, sizes=(100, 200, 300))   # {"baseline": Path, ...}

Tests use these through :mod:`tests.support.v8`, which declares that they need the ``node`` tier.
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
from pathlib import Path

JS_DIR = Path(__file__).resolve().parent.parent / "tests" / "js"
LEAK_SCRIPT = JS_DIR / "leak.js"
NPM_CI = ["npm", "ci", "--no-audit", "--no-fund"]

# Node's default old-space limit is too small for memlab on the larger snapshots.
NODE_MEMORY_FLAG = "--max-old-space-size=8192"


class NodeToolsError(RuntimeError):
    """node/npm are missing, the install failed, or a Node script exited with an error."""


def node_environment() -> dict[str, str]:
    """The environment for npm and node: never download a browser for puppeteer (memlab's dependency)."""
    return {**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1"}


def ensure_node_tools() -> Path:
    """Install ``tests/js``'s locked npm dependencies if they are missing; return ``tests/js``.

    Runs ``PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund`` once; a file lock makes concurrent
    test processes wait for one install instead of racing.
    """
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise NodeToolsError(f"{tool} is not on PATH; the V8 tests need Node.js 18+ and npm")

    def installed() -> bool:  # every package tests/js/package.json names
        with open(JS_DIR / "package.json") as f:
            wanted = json.load(f)["dependencies"]
        return all((JS_DIR / "node_modules" / name / "package.json").exists() for name in wanted)

    if installed():
        return JS_DIR
    # The lock lives outside tests/js: npm ci empties node_modules, and the repo should stay clean.
    lock_path = Path(tempfile.gettempdir()) / f"heapdb-npm-{hashlib.sha1(str(JS_DIR).encode()).hexdigest()[:12]}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed():
            done = subprocess.run(NPM_CI, cwd=JS_DIR, env=node_environment(), capture_output=True, text=True)
            if done.returncode != 0:
                raise NodeToolsError(f"{' '.join(NPM_CI)} failed in {JS_DIR}:\n{done.stderr[-4000:]}")
    return JS_DIR


def run_node(args: Sequence[str], what: str, timeout: float) -> str:
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
    stdout = run_node([str(LEAK_SCRIPT), str(out), *(str(int(s)) for s in sizes)], "leak.js", timeout)
    snapshots = {}
    for line in stdout.splitlines():
        record = json.loads(line)
        snapshots[record["label"]] = Path(record["path"])
    return snapshots


def write_closure_cache_snapshots(out_dir: str | os.PathLike[str], first: int, leaked: int) -> dict[str, Path]:
    """Run ``closure_cache.js``: ``leaked`` Session instances held by closures in a cache, between
    a baseline of ``first`` and a final snapshot that leaks nothing more. Snapshots by label."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    script = LEAK_SCRIPT.with_name("closure_cache.js")
    stdout = run_node([str(script), str(out), str(int(first)), str(int(leaked))], "closure_cache.js", 120)
    return {record["label"]: Path(record["path"]) for record in map(json.loads, stdout.splitlines())}


def write_duplicate_strings_snapshot(out_dir: str | os.PathLike[str]) -> Path:
    """Run ``dup_strings.js``: 3,000 copies of one 1.6 kB configuration text, and equal greetings
    built by differently shaped concatenations. The snapshot's path."""
    return _write_one_snapshot(out_dir, "dup_strings.js", "dup-strings.heapsnapshot")


def write_duplicate_objects_snapshot(out_dir: str | os.PathLike[str]) -> Path:
    """Run ``dup_objects.js``: 2,000 copies of one settings object, and objects equal or not by
    memlab's object-shallow rule (property order, heap numbers, concatenations, dictionaries). The
    snapshot's path."""
    return _write_one_snapshot(out_dir, "dup_objects.js", "dup-objects.heapsnapshot")


def write_known_leaks_snapshot(out_dir: str | os.PathLike[str]) -> Path:
    """Run ``known_leaks.js``: request contexts kept by pooled connections' timers through Node's
    AsyncLocalStorage (a known library leak) and sessions kept in the program's own list. The
    snapshot's path."""
    return _write_one_snapshot(out_dir, "known_leaks.js", "known-leaks.heapsnapshot")


def _write_one_snapshot(out_dir: str | os.PathLike[str], script_name: str, file_name: str) -> Path:
    """Run the program ``script_name`` (beside leak.js), which writes one snapshot to its argument
    and prints {"path"}; the snapshot's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    script = LEAK_SCRIPT.with_name(script_name)
    stdout = run_node(["--expose-gc", str(script), str(out / file_name)], script_name, 120)
    return Path(json.loads(stdout)["path"])


def write_secrets_snapshot(out_dir: str | os.PathLike[str]) -> tuple[Path, list[str]]:
    """Run ``secrets.js``: a heap holding an API key (in 40 copies of a configuration text and in
    concatenated bearer tokens), an e-mail address (also as a map's key) and a password, all made
    at run time. The snapshot's path and the secrets."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    script = LEAK_SCRIPT.with_name("secrets.js")
    answer = json.loads(run_node(["--expose-gc", str(script), str(out / "secrets.heapsnapshot")], "secrets.js", 120))
    return Path(answer["path"]), list(answer["secrets"])


def write_leak_snapshot(out_dir: str | os.PathLike[str], size: int = 200) -> Path:
    """One leak snapshot (``baseline``) with ``size`` leak units."""
    return write_leak_snapshots(out_dir, (size,))["baseline"]
