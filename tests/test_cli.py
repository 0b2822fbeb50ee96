"""The command line itself: help everywhere, a version, and one error path without tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import heapdb
from heapdb.cli import main


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += all_commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


def test_every_command_has_help() -> None:
    runner = CliRunner()
    commands = all_commands(main)
    assert ("neo4j", "start") in commands and ("cypher",) in commands
    for path in commands:
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output
        # Each command says what it is for, not only its usage line.
        assert len(result.output.splitlines()) > 3, path


def test_version() -> None:
    result = subprocess.run([sys.executable, "-m", "heapdb", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert heapdb.__version__ in result.stdout


def test_user_error_has_no_traceback_and_debug_shows_it(tmp_path) -> None:
    env_uri = {"NEO4J_URI": "bogus://nowhere", "NEO4J_PASSWORD": "x"}
    plain = subprocess.run(
        [sys.executable, "-m", "heapdb", "cypher", "RETURN 1"],
        capture_output=True,
        text=True,
        env={**_env(), **env_uri},
    )
    assert plain.returncode == 3
    assert plain.stderr.startswith("heapdb: error: cannot use 'bogus://nowhere' as a Neo4j address")
    assert "Traceback" not in plain.stderr
    debug = subprocess.run(
        [sys.executable, "-m", "heapdb", "--debug", "cypher", "RETURN 1"],
        capture_output=True,
        text=True,
        env={**_env(), **env_uri},
    )
    assert debug.returncode != 0
    assert "Traceback" in debug.stderr


def test_growth_over_two_snapshots_is_a_usage_error() -> None:
    """The core's check (heapdb.queries.compare.check_series), asked before any database is."""
    result = CliRunner().invoke(main, ["growth", "a", "b"])
    assert result.exit_code == 2 and "growth needs at least three snapshots, got 2" in result.output


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command" in result.output


def test_load_names_the_writers_it_knows(tmp_path: Path) -> None:
    """A writer that does not exist is a usage error, found before the file is read or Neo4j asked."""
    from heapdb.loader.store import WRITERS

    snapshot = tmp_path / "never-read.heapsnapshot"
    snapshot.write_text("{}")
    result = CliRunner().invoke(main, ["load", str(snapshot), "--tag", "t", "--writer", "fastest"])
    assert result.exit_code == 2
    assert f"choose one of {', '.join(WRITERS)}" in result.output


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.mark.parametrize("args", [("queries",), ("--help",), ("--version",), ("analyze", "--help")])
def test_a_closed_pipe_ends_quietly(args: tuple[str, ...]) -> None:
    """`heapdb ... | head` when head has stopped reading: no traceback, no "internal error", and the
    status of a process ended by SIGPIPE, as Unix tools give (heapdb's own --help and --version
    included, which click would end with status 1)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before heapdb writes a byte
    try:
        done = subprocess.run(
            [sys.executable, "-m", "heapdb", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""


def test_inspect_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    """The drill itself, through a shell: `heapdb inspect FILE | head -1`."""
    from tests.test_cli_formats import sample

    path = sample(tmp_path / "s.bin", objects=900)
    heapdb = Path(sys.executable).parent / "heapdb"
    script = f"'{heapdb}' inspect --top 1000 '{path}' | head -1; echo \"status=${{PIPESTATUS[0]}}\" >&2"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("file") and done.stdout.count("\n") == 1
    status = done.stderr.strip().splitlines()[-1]
    assert status in ("status=0", "status=141"), done.stderr
    assert done.stderr.strip() == status, done.stderr  # nothing else: no "internal error", no traceback
