"""The ``heapdb`` command.

One error path for every subcommand: a :class:`~heapdb.errors.HeapdbError` prints its message and
exits with its code, Ctrl-C exits 130, a closed pipe (``| head``) exits 141 without a word, and
anything unexpected prints one line and exits 2. ``--debug``
lets the traceback through. Subcommands live in sibling modules, each registering on :data:`main`;
:data:`COMMANDS` says which module holds which command, and a module is imported only when one of its
commands runs or shows its own help, so that each command loads only what it needs (``heapdb --help``
none of numpy, numba, pydantic or the Neo4j driver; ``heapdb analyze`` nothing of the database side).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any, NoReturn

import click

from heapdb import __version__
from heapdb.errors import HeapdbError
from heapdb.registry import QUESTIONS

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers
LARGE_BLOCK = 4 << 20  # bytes: blocks this large are mapped on their own, and unmapped when freed
HEAP_KEEP = 32 << 20  # bytes: free memory at the heap's top kept for the next small blocks
SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader closed the pipe


# Every command but the questions': the module that defines it and its one-line summary for
# `heapdb --help`, which lists them without importing any command module. The questions' lines come
# from their declarations (heapdb.registry), which import nothing heavy either. tests/test_startup.py
# checks the table against the commands themselves.
OTHER_COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": (
        "heapdb.cli.analysis_cmd",
        "Dominators, retained sizes and root distances of a snapshot FILE (any format), without Neo4j.",
    ),
    "convert": ("heapdb.cli.formats_cmd", "Rewrite the snapshot SOURCE (any format heapdb reads) as DEST."),
    "cypher": ("heapdb.cli.query_cmd", "Run one read-only Cypher statement against heapdb's Neo4j and print the rows."),
    "drop": (
        "heapdb.cli.load_cmd",
        "Delete a snapshot (and any leftovers of interrupted loads of it) from the database.",
    ),
    "heapgraph": (
        "heapdb.cli.heapgraph_cmd",
        "Where a Luau heap dump's objects hang, by path, exactly as Luau's tools/heapgraph.py says.",
    ),
    "inspect": (
        "heapdb.cli.formats_cmd",
        "Describe a snapshot: format, version, metadata, counts, top types and roots.",
    ),
    "load": (
        "heapdb.cli.load_cmd",
        "Read a snapshot, compute dominators, retained sizes and distances, and store it in Neo4j.",
    ),
    "mcp": ("heapdb.cli.mcp_cmd", "Serve heapdb's questions as Model Context Protocol tools, for agents."),
    "mono": (
        "heapdb.cli.mono_cmd",
        "heapdb's Mono profiler module: captures a .NET heap (Mono 6.8) as snap.bin.",
    ),
    "neo4j": (
        "heapdb.cli.neo4j_cmd",
        "The Neo4j that heapdb installs and runs itself (Community 5.26 LTS from Maven Central).",
    ),
    "prune": (
        "heapdb.cli.prune_cmd",
        "Prune old snapshots to their summaries (type and path groups, signatures): keep the newest N "
        "and tags matching globs full.",
    ),
    "purge": (
        "heapdb.cli.load_cmd",
        "Free the records of dropped snapshots now, in the foreground, with a progress bar.",
    ),
    "queries": (
        "heapdb.cli.query_cmd",
        "List the stored queries and their parameters (run one with `heapdb query NAME`).",
    ),
    "open": (
        "heapdb.cli.open_cmd",
        "Open a snapshot's page in the browser: load FILE if needed, start the service if none runs.",
    ),
    "push": (
        "heapdb.cli.push_cmd",
        "Send the snapshot FILE to a heapdb service, which loads it as TAG in the background.",
    ),
    "query": ("heapdb.cli.query_cmd", "Run a stored query by name and print its rows."),
    "reanalyze": (
        "heapdb.cli.reanalyze_cmd",
        "Analyse a loaded snapshot TAG again (under other rules, or none) from what the database holds.",
    ),
    "receive": (
        "heapdb.cli.receive_cmd",
        "Take a snapshot streamed over a socket as its producer writes it, and load it as `heapdb load` does.",
    ),
    "rebuild": (
        "heapdb.cli.rebuild_cmd",
        "Replace the managed Neo4j's database with a fresh store of the snapshot FILES, imported offline "
        "with neo4j-admin (a backlog of builds, a nightly rebuild).",
    ),
    "rules": ("heapdb.cli.rules_cmd", "Rule sets kept in the database: add, list, show and remove them."),
    "serve": ("heapdb.cli.serve_cmd", "Serve heapdb's questions over HTTP, with OpenAPI docs at /docs."),
    "snapshots": (
        "heapdb.cli.load_cmd",
        "List the snapshots in the database: tag, status, format, counts, sizes, load time.",
    ),
    "tokens": ("heapdb.cli.tokens_cmd", "The service's tokens per team: create, list and revoke them."),
}
QUESTION_MODULE = "heapdb.cli.question_cmd"
COMMANDS: dict[str, tuple[str, str]] = dict(
    sorted({**OTHER_COMMANDS, **{q.name: (QUESTION_MODULE, q.summary) for q in QUESTIONS}}.items())
)


class LazyCommands(MutableMapping[str, click.Command]):
    """``main.commands``: looking a command up imports its module (whose decorators add it here)."""

    def __init__(self) -> None:
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded and name in COMMANDS:
            importlib.import_module(COMMANDS[name][0])
        return self.loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self.loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(COMMANDS.keys() | self.loaded.keys()))

    def __len__(self) -> int:
        return len(COMMANDS.keys() | self.loaded.keys())


class HeapdbGroup(click.Group):
    """A click group that turns heapdb's errors into messages instead of tracebacks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands()

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, made from :data:`COMMANDS`: showing it imports no command module."""
        listed = click.Group(commands=[click.Command(name, help=summary) for name, (_, summary) in COMMANDS.items()])
        listed.format_commands(ctx, formatter)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's entry, and the last flush of what is still buffered for a reader that may be gone."""
        try:
            return super().main(*args, **kwargs)
        finally:
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                closed_pipe(exit_now=True)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        """Parsing ``heapdb``'s own options, where ``--help`` and ``--version`` print and exit."""
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            closed_pipe()

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except HeapdbError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"heapdb: error: {e}", err=True)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("heapdb: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            closed_pipe()
        except Exception as e:  # a bug: say so briefly, keep the traceback behind --debug
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"heapdb: internal error: {type(e).__name__}: {e} (run with --debug for the traceback)",
                err=True,
            )
            ctx.exit(2)


def closed_pipe(*, exit_now: bool = False) -> NoReturn:
    """The reader went away (`heapdb ... | head`): stop quietly, as Unix tools do, with the status of
    a process ended by SIGPIPE. Later writes go nowhere, so that Python's own flush at exit does not
    fail again and print "Exception ignored"."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    if exit_now:
        raise SystemExit(SIGPIPE_STATUS)
    raise click.exceptions.Exit(SIGPIPE_STATUS)


@click.group(cls=HeapdbGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="heapdb")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """heapdb: keep heap snapshots in Neo4j and ask why objects are still alive.

    Connection settings come from NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD, then from the config
    file; with neither, heapdb uses the Neo4j it manages itself (see `heapdb neo4j --help`).
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    return_large_frees()
    skip_collection_at_exit()


def return_large_frees() -> None:
    """Have glibc hand large freed blocks (4 MiB and more: a big snapshot's arrays) straight back to
    the system.

    By default glibc raises its mmap threshold to the size of each large block freed (up to 32
    MiB), so that later arrays up to that size come from the heap, where freed ones stay resident.
    Reading and analysing a snapshot allocates and frees many such arrays, and the process's peak
    grows by what the heap keeps: 17 MiB (3.5%) for `heapdb analyze` on a 220 MB V8 snapshot.
    Setting the threshold stops that adjustment. It stops the trim threshold's too, which then
    stays at 128 KiB: every slice-sized temporary freed at the heap's top would go back to the
    system and the next one fault its pages in again (a page fault costs microseconds, in a virtual
    machine more). Keeping up to :data:`HEAP_KEEP` there makes `heapdb analyze` on that snapshot 8%
    faster (2.23 s to 1.99 s, 0.63 s to 0.44 s of system time) for 4 MiB more at its peak. Does
    nothing without glibc.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK)
    mallopt(M_TRIM_THRESHOLD, HEAP_KEEP)


def skip_collection_at_exit() -> None:
    """Spare the interpreter's last garbage collections: at exit, every object tracked so far is
    moved where the collector no longer looks.

    While the interpreter shuts down it runs the cyclic collector several times over every module,
    function and class numba, numpy and the Neo4j driver brought in; after `heapdb analyze` on a
    220 MB V8 snapshot that took 0.15 s of its 2 s. Memory is the system's again a moment later,
    and objects are still released as their modules are torn down; only cycles that exist at exit
    are left uncollected, which the process ending frees anyway. Registered once, however many
    commands one process runs (the tests run many).
    """
    atexit.unregister(_freeze)
    atexit.register(_freeze)


def _freeze() -> None:
    # heapdb's own name for it, which tests/test_startup.py wraps to count the calls at exit.
    gc.freeze()


def run() -> None:  # pragma: no cover - console entry for `python -m heapdb`
    sys.exit(main())
