"""Every third-party module the code imports is a declared dependency of the right group in
pyproject.toml, and pinned in constraints.txt.

The package (its folders, as pyproject.toml maps them) may import only the runtime dependencies;
tests/ also the ``test`` extra, benchmarks/ also the ``benchmark`` extra, heapgen/ (which both
import) only what both extras declare, and scripts/ also the ``check`` extra. A module that is there only because another dependency pulls it
in (pydantic through fastapi) is still declared when heapdb imports it itself: the other package
may drop it, or change the major version heapdb was written against.

Tests and benchmarks do not import each other: what both need (generated snapshots, the Node and
Chromium drivers, the fuzzer) is in heapgen/, which imports neither (docs/decisions.md says why).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
FIRST_PARTY = set(PYPROJECT["tool"]["ruff"]["lint"]["isort"]["known-first-party"])  # heapdb, heapgen, tests, benchmarks


def normalise(distribution: str) -> str:
    """A distribution's name as PEP 503 compares them (``PyYAML`` is ``pyyaml``, ``a_b`` is ``a-b``)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def requirement_names(requirements: list[str]) -> set[str]:
    """The distribution names of PEP 508 requirement strings (``"httpx>=0.27"`` -> ``httpx``)."""
    names = set()
    for requirement in requirements:
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert match, requirement
        names.add(normalise(match.group()))
    return names


def declared(*extras: str) -> set[str]:
    """The runtime dependencies and those of ``extras``."""
    optional = PYPROJECT["project"]["optional-dependencies"]
    return requirement_names(PYPROJECT["project"]["dependencies"] + [r for e in extras for r in optional.get(e, [])])


def package_folders() -> list[Path]:
    """The folders the package is installed from (heapdb/, loader/, service/, queries/)."""
    folders = {REPO / folder for folder in PYPROJECT["tool"]["setuptools"]["package-dir"].values()}
    return [folder for folder in folders if not any(other in folder.parents for other in folders)]


# Each group of code, the folders it lives in and the dependency groups it may import from.
GROUPS = {
    "the package": (package_folders(), declared()),
    "tests": ([REPO / "tests"], declared("test")),
    "benchmarks": ([REPO / "benchmarks"], declared("benchmark")),
    "heapgen": ([REPO / "heapgen"], declared("test") & declared("benchmark")),
    "scripts": ([REPO / "scripts"], declared("check")),
}


def imported_top_levels(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports (also inside functions and under
    ``TYPE_CHECKING``); relative imports are the code's own and left out."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def third_party_imports(folders: list[Path]) -> dict[str, list[str]]:
    """Each third-party top-level name imported under ``folders``, with the files importing it."""
    found: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            for name in imported_top_levels(path):
                if name not in sys.stdlib_module_names and name not in FIRST_PARTY and name != "__future__":
                    found.setdefault(name, []).append(path.relative_to(folder.parent).as_posix())
    return found


def undeclared(imports: dict[str, list[str]], allowed: set[str]) -> list[str]:
    """What in ``imports`` comes from no distribution in ``allowed``, one line each."""
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for name, files in sorted(imports.items()):
        providers = {normalise(d) for d in distributions.get(name, [])}
        if not providers & allowed:
            provided_by = ", ".join(sorted(providers)) or "no installed distribution"
            missing.append(f"{name} ({provided_by}), imported by {', '.join(files[:3])}")
    return missing


@pytest.mark.parametrize("group", GROUPS)
def test_every_third_party_import_is_declared_in_its_group(group: str) -> None:
    folders, allowed = GROUPS[group]
    imports = third_party_imports(folders)
    missing = undeclared(imports, allowed)
    assert not missing, f"{group} imports what pyproject.toml does not declare for it:\n" + "\n".join(missing)


def test_the_check_reports_an_import_no_group_declares(tmp_path: Path) -> None:
    (tmp_path / "uses_yaml.py").write_text("def f():\n    import yaml.constructor\n")
    (tmp_path / "uses_own.py").write_text("from . import sibling\nimport heapdb.units\nimport os\n")
    imports = third_party_imports([tmp_path])
    assert set(imports) == {"yaml"}
    assert undeclared(imports, declared()) == [f"yaml (pyyaml), imported by {tmp_path.name}/uses_yaml.py"]
    assert undeclared(imports, declared("test")) == []


def test_every_declared_dependency_is_pinned_in_constraints() -> None:
    lines = (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pinned = {normalise(line.split("==")[0]) for line in lines if "==" in line and not line.startswith("#")}
    optional = PYPROJECT["project"]["optional-dependencies"]
    everything = declared(*optional)
    assert everything - pinned == set(), "declared but not pinned (refresh constraints.txt as its header says)"


# Who may not import whom, by first-party top-level name. A test of a benchmark's own code imports
# the benchmark it tests: that is its subject, not a helper borrowed from the other side.
FORBIDDEN = {"tests": {"benchmarks"}, "benchmarks": {"tests"}, "heapgen": {"tests", "benchmarks"}}
TESTS_OF_BENCHMARKS = {"tests/test_footprint_models.py": {"benchmarks"}}


def crossings(folder: Path, forbidden: set[str], allowed: dict[str, set[str]]) -> list[str]:
    """Each file under ``folder`` importing a name of ``forbidden`` that ``allowed`` does not grant it."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        name = path.relative_to(folder.parent).as_posix()
        crossed = imported_top_levels(path) & forbidden - allowed.get(name, set())
        found += [f"{name} imports {other}" for other in sorted(crossed)]
    return found


def test_tests_and_benchmarks_do_not_import_each_other() -> None:
    found = [line for top, other in FORBIDDEN.items() for line in crossings(REPO / top, other, TESTS_OF_BENCHMARKS)]
    assert not found, "move what both need to heapgen/:\n" + "\n".join(found)


def test_the_check_finds_a_test_importing_a_benchmark(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_x.py").write_text("def test_x():\n    from benchmarks.synth import synth_graph\n")
    (tests / "test_y.py").write_text("from heapgen.synth import synth_graph\n")
    assert crossings(tests, FORBIDDEN["tests"], {}) == ["tests/test_x.py imports benchmarks"]
    assert crossings(tests, FORBIDDEN["tests"], {"tests/test_x.py": {"benchmarks"}}) == []
