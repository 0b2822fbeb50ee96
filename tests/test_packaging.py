"""The distribution: one import namespace, both install modes, the wheel holds what it should."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(out: Path) -> Path:
    # Build from a copy: an in-tree build/ folder left by an earlier build could leak stale modules.
    source = out / "source"
    for item in ("pyproject.toml", "README.md", "LICENSE", "heapdb", "loader", "service", "queries"):
        source.mkdir(parents=True, exist_ok=True)
        if (ROOT / item).is_dir():
            shutil.copytree(ROOT / item, source / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / item, source / item)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("heapdb-*.whl")
    return wheel


def test_wheel_has_one_namespace_and_the_query_files(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"heapdb", next(t for t in top if t.endswith(".dist-info"))}, top
    for module in (
        "heapdb/cli/__init__.py",
        "heapdb/loader/graph.py",
        "heapdb/loader/formats/__init__.py",
        "heapdb/service/app.py",
        "heapdb/queries/__init__.py",
    ):
        assert module in names, module
    # The Neo4j plugin's sources, which `heapdb neo4j install` builds from the installed package.
    plugin = ROOT / "loader" / "store" / "plugin"
    plugin_sources = sorted(p.relative_to(plugin).as_posix() for p in plugin.rglob("*") if p.is_file())
    shipped = sorted(n.removeprefix("heapdb/loader/store/plugin/") for n in names if "/store/plugin/" in n)
    assert shipped == plugin_sources and "pom.xml" in shipped
    # The pages' templates, style sheet and icon.
    for folder in ("templates", "static"):
        page_files = sorted(p.name for p in (ROOT / "service" / folder).iterdir() if p.is_file())
        shipped_pages = sorted(n.split("/")[-1] for n in names if n.startswith(f"heapdb/service/{folder}/"))
        assert shipped_pages == page_files and page_files
    cypher_sources = sorted(p.name for p in (ROOT / "queries").glob("*.cypher"))
    assert sorted(n.split("/")[-1] for n in names if n.endswith(".cypher")) == cypher_sources
    # The data the inspections read: the global names runtimes define (the held inspection).
    assert "heapdb/loader/inspections/globals.toml" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "heapdb = heapdb.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_non_editable_install_imports_from_the_install(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "wheel")
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    code = "import heapdb, heapdb.loader.graph, heapdb.service.app, heapdb.queries; print(heapdb.__file__)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=tmp_path,  # not the checkout, so only the installed copy can be found first
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip().startswith(str(target))


def test_editable_install_points_at_the_checkout() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import heapdb.loader.graph as g, heapdb.cli as c; print(g.__file__); print(c.__file__)",
        ],
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    graph_file, cli_file = result.stdout.split()
    assert Path(graph_file) == ROOT / "loader" / "graph.py"
    assert Path(cli_file) == ROOT / "heapdb" / "cli" / "__init__.py"
