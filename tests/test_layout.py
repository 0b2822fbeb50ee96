"""The code's layout follows the data: file -> arrays -> analysis -> database -> questions ->
renderers -> CLI and service. A module may import its own stage and earlier ones, never a later one,
so each stage can be read (and tested) without the ones after it. docs/decisions.md says why each
package sits where it does; a new module must be given a stage here."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Longest prefix wins: an entry stands for its module and, for a package, every module below it,
# except the top-level "heapdb", which stands for the module `heapdb` alone (else it would give every
# module a stage and none could be missing one). Stage numbers only order the stages.
TOP = "heapdb"
STAGES = {
    TOP: 0,  # the version
    "heapdb.errors": 0,
    "heapdb.units": 0,
    "heapdb.progress": 0,
    "heapdb.config": 0,
    "heapdb.gatecheck": 0,  # what can fail the CI gate, read by rule files and the gate's parameters
    "heapdb.settings": 0,  # every environment variable and config-file key, declared once
    "heapdb.scopes": 0,  # which tags a token per team reads and writes (the rule; the tokens are stored later)
    "heapdb.docblock": 0,  # generated parts of the docs
    "heapdb.lazy": 0,
    "heapdb.processes": 0,  # whether a process lives  # package attributes imported on first use
    "heapdb.loader": 1,  # the package's docstring only
    "heapdb.loader.graph": 1,  # the arrays every stage shares
    "heapdb.loader.sources": 1,  # source locations and allocation stacks the graph carries
    "heapdb.loader.values": 1,  # the primitive values the graph carries
    "heapdb.loader.formats": 1,  # files <-> arrays
    "heapdb.capture": 1,  # a Python heap -> a snap.bin file
    "heapdb.mono": 1,  # a .NET heap (Mono's profiler module, built from C) -> a snap.bin file
    "heapdb.loader.analysis": 2,
    "heapdb.loader.rules": 2,  # rule files -> per-reference weights and per-object buckets the analysis takes
    "heapdb.loader.paths": 2,
    "heapdb.loader.luau_heapgraph": 2,
    "heapdb.loader.pathtree": 2,
    "heapdb.loader.views": 2,  # lifelines and heapdomstats, from an analysis or from stored rows
    "heapdb.loader.inspections": 2,  # what wastes memory: duplicate strings, detached DOM, React
    "heapdb.loader.owners": 2,  # who owns the memory: package, file, category... from program structure
    "heapdb.loader.report": 2,
    "heapdb.loader.redaction": 2,  # secrets out of a graph before it is stored or written
    "heapdb.neo4j_server": 3,
    "heapdb.db": 3,
    "heapdb.loader.store": 3,
    "heapdb.queries": 4,
    "heapdb.renderers": 5,  # answers as text, dot and SVG, flame graphs, gate reports, treemaps, charts
    "heapdb.registry": 5,  # every question declared once: its method, parameters, renderers
    "heapdb.cli": 6,
    "heapdb.service": 6,
    "heapdb.__main__": 6,
}


def stage_entry(module: str) -> str | None:
    """The entry of STAGES that gives ``module`` its stage, if any."""
    return max(
        (prefix for prefix in STAGES if module == prefix or (prefix != TOP and module.startswith(prefix + "."))),
        key=len,
        default=None,
    )


def stage(module: str) -> int:
    entry = stage_entry(module)
    assert entry is not None, f"{module} has no stage in tests/test_layout.py: add it where it belongs in the pipeline"
    return STAGES[entry]


def modules() -> dict[str, Path]:
    """Every module of every package pyproject.toml installs (folders map onto packages there, so a
    walk of ``heapdb/`` alone would miss loader/, queries/ and service/)."""
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {}
    for package in packages:
        imported_package = importlib.import_module(package)
        found[package] = Path(imported_package.__file__ or "")
        for info in pkgutil.iter_modules(imported_package.__path__, package + "."):
            assert not info.ispkg or info.name in packages, f"{info.name} is missing from pyproject.toml's packages"
            if not info.ispkg:
                spec = importlib.util.find_spec(info.name)
                assert spec is not None and spec.origin is not None, info.name
                found[info.name] = Path(spec.origin)
    return found


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """heapdb modules that ``name`` imports anywhere (also inside functions)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                out.add(candidate if candidate in known else base)
    return {m for m in out if m == "heapdb" or m.startswith("heapdb.")}


def test_an_entry_stands_for_its_package_but_the_top_level_only_for_itself() -> None:
    assert stage_entry("heapdb.loader.formats.v8.scan") == "heapdb.loader.formats"
    assert stage_entry("heapdb") == TOP
    assert stage_entry("heapdb.nowhere") is None
    with pytest.raises(AssertionError, match="heapdb.nowhere has no stage"):
        stage("heapdb.nowhere")


def test_every_module_has_a_stage_and_imports_only_backwards() -> None:
    found = modules()
    assert len(found) > 30  # the walk found the mapped folders (loader/, queries/, service/) too
    unstaged = sorted(name for name in found if stage_entry(name) is None)
    assert not unstaged, "modules without a stage (add each where it belongs in the pipeline):\n" + "\n".join(unstaged)
    backwards = []
    for name, path in sorted(found.items()):
        for target in sorted(imported(name, path, set(found))):
            if stage(target) > stage(name):
                backwards.append(f"{name} (stage {stage(name)}) imports {target} (stage {stage(target)})")
    assert not backwards, "imports pointing forward in the pipeline:\n" + "\n".join(backwards)


def test_no_module_is_long_without_saying_why() -> None:
    long = []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > 500 and "Why this module is long" not in text[:3000]:
            long.append(f"{name}: {lines} lines")
    assert not long, "modules over 500 lines need a 'Why this module is long' note in their docstring:\n" + "\n".join(
        long
    )
