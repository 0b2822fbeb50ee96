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

# What a light command must not load: the numeric stack, the database driver, the web stack.
NUMERIC = {"numpy", "numba"}
DATABASE_AND_WEB = {"neo4j", "pydantic", "fastapi", "uvicorn", "graphviz"}

RUN = """
import json, sys
from heapdb.cli import main
try:
    main(sys.argv[1:], prog_name="heapdb")
except SystemExit:
    pass
print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})), file=sys.stderr)
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


def imported_by(*argv: str) -> set[str]:
    """The top-level packages loaded after ``heapdb ARGV`` in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", RUN, *argv], capture_output=True, text=True, check=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version_load_nothing_heavy(argv: list[str]) -> None:
    assert not imported_by(*argv) & (NUMERIC | DATABASE_AND_WEB)


def test_analyze_loads_no_database_or_web_code(tmp_path: Path) -> None:
    path = tmp_path / "tiny.heapsnapshot"
    path.write_text(json.dumps(TINY_V8))
    loaded = imported_by("analyze", "--json", str(path))
    assert loaded >= NUMERIC, "the run must have got as far as the analysis"
    assert not loaded & DATABASE_AND_WEB


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
