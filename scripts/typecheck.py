"""mypy over every module of heapdb under its installed name, plus the tests and benchmarks.

Why a tree of links: pyproject's package-dir installs loader/ as heapdb.loader, service/ as
heapdb.service and so on. mypy run on the folders would see `loader.graph` instead of
`heapdb.loader.graph`, and the editable install is an import hook mypy cannot follow. So this builds,
under .mypy_cache/, a tree shaped like the installed package whose files are links to the sources,
runs mypy there (the links keep mypy's cache valid from run to run), and rewrites the paths it
reports back to the repository's.

Every .py file under a folder the package maps must be checked: a file in a folder missing from
pyproject's `packages` would not be installed nor checked, so it fails the check by name, and the
modules mypy reports checking (its line-count report) must include every file linked.

Usage: python scripts/typecheck.py [extra mypy arguments]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / ".mypy_cache" / "package-tree"
# Top-level folders whose own names are their import names (no package-dir mapping).
PLAIN_PACKAGES = ("tests", "benchmarks", "heapgen")
SKIP_DIRS = {"__pycache__", "node_modules", "js"}


def package_dirs() -> dict[str, Path]:
    """Each package pyproject installs, with its source folder (package-dir, as setuptools reads it)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = setuptools.get("package-dir", {})
    result = {}
    for package in setuptools["packages"]:
        # setuptools takes the longest mapped prefix of the package's name and appends the rest.
        parts = package.split(".")
        for cut in range(len(parts), -1, -1):
            prefix = ".".join(parts[:cut])
            if prefix in mapping or (cut == 0 and "" in mapping):
                base = mapping.get(prefix, "")
                result[package] = ROOT / base / Path(*parts[cut:]) if parts[cut:] else ROOT / base
                break
        else:
            result[package] = ROOT / Path(*parts)
    return result


def python_files(folder: Path, recursive: bool) -> list[Path]:
    if not recursive:
        return sorted(folder.glob("*.py"))
    found = []
    for directory, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS and not d.startswith("."))
        found += [Path(directory) / name for name in sorted(files) if name.endswith(".py")]
    return found


def build_tree() -> tuple[dict[str, Path], list[Path]]:
    """Links in TREE; returns {path in the tree: source file} and the files no package covers."""
    if TREE.exists():
        shutil.rmtree(TREE)
    links: dict[str, Path] = {}
    packages = package_dirs()
    for package, folder in packages.items():
        for source in python_files(folder, recursive=False):
            links[f"{package.replace('.', '/')}/{source.name}"] = source
    for name in PLAIN_PACKAGES:
        for source in python_files(ROOT / name, recursive=True):
            links[source.relative_to(ROOT).as_posix()] = source
    for relative, source in links.items():
        link = TREE / relative
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(source)
    linked = set(links.values())
    roots = set(packages.values())
    missed = sorted({f for root in roots for f in python_files(root, recursive=True)} - linked)
    return links, missed


def main(argv: list[str]) -> int:
    links, missed = build_tree()
    for source in missed:
        where = source.relative_to(ROOT)
        print(f"{where}: error: in no package of pyproject.toml's `packages`, so neither installed nor checked")
    top_level = sorted({relative.split("/")[0] for relative in links})
    report = TREE.parent / "package-tree-report"
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    command += ["--cache-dir", str(ROOT / ".mypy_cache"), "--linecount-report", str(report), *argv]
    for name in top_level:
        command += ["-p", name]
    done = subprocess.run(command, cwd=TREE, capture_output=True, text=True, env={**os.environ, "MYPYPATH": ""})
    # mypy names files by their path in the tree; a longest-first alternation maps each back.
    back = {relative: source.relative_to(ROOT).as_posix() for relative, source in links.items()}
    pattern = re.compile("|".join(re.escape(k) for k in sorted(back, key=len, reverse=True)))
    sys.stdout.write(pattern.sub(lambda m: back[m.group(0)], done.stdout + done.stderr))
    # The line-count report lists every module mypy checked (one per line after the total).
    lines = (report / "linecount.txt").read_text().splitlines() if (report / "linecount.txt").exists() else []
    checked = {line.split()[-1] for line in lines[1:]}
    expected = {module_name(relative): source for relative, source in links.items()}
    unchecked = sorted(set(expected) - checked)
    for module in unchecked:
        print(f"{expected[module].relative_to(ROOT)}: error: mypy did not check {module}")
    print(f"typecheck: mypy checked {len(set(expected) & checked)} of {len(expected)} modules ({', '.join(top_level)})")
    return 1 if missed or unchecked else done.returncode


def module_name(relative: str) -> str:
    """``heapdb/loader/__init__.py`` → ``heapdb.loader``; ``heapdb/db.py`` → ``heapdb.db``."""
    return relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
