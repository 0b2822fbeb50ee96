"""Start-up: each command imports only what it needs, and the command table says what the commands say.

``heapdb --help`` lists the commands from :data:`heapdb.cli.COMMANDS` without importing them; a
command's module is imported when it runs. Each check runs a fresh interpreter and looks at
``sys.modules`` after the command, so an import added at the top of a module that a light command
reaches fails here.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from heapdb.cli import COMMANDS, main
from heapdb.db import Database
from tests.support.snapshots import load_snapshot

# What a light command must not load: the numeric stack, the database driver, the web stack.
NUMERIC = {"numpy", "numba"}
# What a question about a stored snapshot must not load: the loader's compiled kernels.
KERNELS = {"numba", "llvmlite"}
DATABASE_AND_WEB = {"neo4j", "pydantic", "fastapi", "uvicorn", "graphviz"}

RUN = """
import json, sys
from heapdb.cli import main
code = 0
try:
    main(sys.argv[1:], prog_name="heapdb")
except SystemExit as e:
    code = e.code
print(json.dumps([code, sorted({name.partition(".")[0] for name in sys.modules})]), file=sys.stderr)
"""

# Two objects and one reference, the smallest .heapsnapshot `heapdb analyze` reads.
TINY_V8 = {
    "snapshot": {
        "meta": {
            "node_fields": ["type", "name", "id", "self_size", "edge_count"],
            "node_types": [["hidden", "object", "synthetic"]],
            "edge_fields": ["type", "name_or_index", "to_node"],
            "edge_types": [["element", "property"]],
        },
        "node_count": 2,
        "edge_count": 1,
    },
    "nodes": [2, 0, 1, 0, 1, 1, 1, 3, 16, 0],
    "edges": [1, 1, 5],
    "strings": ["", "Foo"],
}


def run_fresh(*argv: str) -> tuple[int | str | None, set[str]]:
    """``heapdb ARGV`` in a fresh interpreter: its exit code and the top-level packages it loaded."""
    done = subprocess.run([sys.executable, "-c", RUN, *argv], capture_output=True, text=True, check=True)
    code, modules = json.loads(done.stderr.strip().splitlines()[-1])
    return code, set(modules)


def imported_by(*argv: str) -> set[str]:
    """The top-level packages loaded after ``heapdb ARGV`` in a fresh interpreter."""
    return run_fresh(*argv)[1]


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version_load_nothing_heavy(argv: list[str]) -> None:
    assert not imported_by(*argv) & (NUMERIC | DATABASE_AND_WEB)


def test_analyze_loads_no_database_or_web_code(tmp_path: Path) -> None:
    path = tmp_path / "tiny.heapsnapshot"
    path.write_text(json.dumps(TINY_V8))
    loaded = imported_by("analyze", "--json", str(path))
    assert loaded >= NUMERIC, "the run must have got as far as the analysis"
    assert not loaded & DATABASE_AND_WEB
    # Its stderr is a pipe here: progress bars are off, and the bar library is not imported.
    assert "tqdm" not in loaded and "heapdb" in loaded


def test_command_table_matches_the_commands() -> None:
    for module in {module for module, _ in COMMANDS.values()}:
        importlib.import_module(module)
    assert set(main.commands) == set(COMMANDS), "a command is missing from heapdb.cli.COMMANDS, or one too many"
    for name, (module, summary) in COMMANDS.items():
        command = main.commands[name]
        assert command.callback is not None and command.callback.__module__ == module, name
        for limit in (20, 45, 60, 1000):
            listed = click.Command(name, help=summary).get_short_help_str(limit)
            assert listed == command.get_short_help_str(limit), (name, limit)


def test_questions_load_no_kernels(database: Database, tmp_path: Path) -> None:
    """Each question about a stored snapshot, run to its answer as a whole CLI process, imports
    neither numba nor LLVM (a quarter of a second and 60 MiB of every question): the loader's
    kernels stay behind lazy imports (heapdb.lazy) until a command reads or analyses a file."""
    path = tmp_path / "tiny.heapsnapshot"
    path.write_text(json.dumps(TINY_V8))
    tag = load_snapshot(database, path, "startup").tag
    try:
        for argv in (
            ["snapshots", "--json"],
            ["why", tag, "3", "--json"],
            ["dominators", tag, "3", "--json"],
            ["object", tag, "3", "--json"],
            ["retains", tag, "3", "--json"],
            ["lifelines", tag, "--type", "Foo", "--json"],
            ["heapdomstats", tag, "--json"],
            ["top", tag, "--json"],
            ["types", tag, "--json"],
            ["suspects", tag, "--json"],
            ["diff", tag, tag, "--json"],
            ["leaks", tag, tag, tag, "--json"],
        ):
            code, loaded = run_fresh(*argv)
            assert code == 0, argv
            assert "neo4j" in loaded, argv
            assert not loaded & KERNELS, argv
    finally:
        code, loaded = run_fresh("drop", tag)
        assert code == 0 and not loaded & KERNELS


def test_service_and_rule_parser_load_no_kernels() -> None:
    """The REST service and the rule parser (the questions' ignore lists) import no kernels either."""
    code = (
        "import sys, heapdb.service.app, heapdb.queries.questions\n"
        "from heapdb.loader.rules import parse_rules\n"
        "from heapdb.loader.store import DroppedReferences, list_snapshots\n"
        "print(sorted({m.partition('.')[0] for m in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "numpy" in done.stdout and not any(repr(k) in done.stdout for k in KERNELS)


def test_lazy_names_resolve() -> None:
    """Every name a package imports on first use is there, and is the defining module's own."""
    from heapdb.loader import rules, store
    from heapdb.loader.rules import compiler
    from heapdb.loader.store import writer

    assert rules.compile is rules.compile_rules is compiler.compile_rules
    assert store.load is writer.load
    for package in (rules, store):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"


EXIT_CHECK = """
import atexit, gc, sys
import heapdb.cli
freezes = []
# Registered before heapdb's own handler, so run after it: what the interpreter is left with.
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0, len(freezes), file=sys.stderr))
freeze = heapdb.cli._freeze
heapdb.cli._freeze = lambda: (freezes.append(1), freeze())
for _ in range(int(sys.argv[1])):
    try:
        heapdb.cli.main(["analyze", "--help"], prog_name="heapdb")
    except SystemExit:
        pass
"""


def exit_check(commands: int) -> tuple[bool, int]:
    """Run ``commands`` heapdb commands in one fresh interpreter: whether its objects were frozen
    when it shut down, and how many times heapdb froze them."""
    done = subprocess.run([sys.executable, "-c", EXIT_CHECK, str(commands)], capture_output=True, text=True, check=True)
    _, frozen, freezes = done.stderr.strip().splitlines()[-1].split()
    return frozen == "True", int(freezes)


def test_exit_skips_the_last_collections() -> None:
    """A command leaves the interpreter's objects where the collector no longer looks at shutdown
    (heapdb.cli.skip_collection_at_exit), once however many commands one process runs."""
    assert exit_check(0) == (False, 0)
    assert exit_check(1) == (True, 1)
    assert exit_check(2) == (True, 1)
