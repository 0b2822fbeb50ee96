"""The ``heapdb`` command.

One error path for every subcommand: a :class:`~heapdb.errors.HeapdbError` prints its message and
exits with its code, Ctrl-C exits 130, a closed pipe (``| head``) exits 141 without a word, and
anything unexpected prints one line and exits 2. ``--debug``
lets the traceback through. Subcommands live in sibling modules, each registering on :data:`main`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from heapdb import __version__
from heapdb.errors import HeapdbError

SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader closed the pipe


class HeapdbGroup(click.Group):
    """A click group that turns heapdb's errors into messages instead of tracebacks."""

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
            # The reader went away (`heapdb ... | head`): stop quietly, as Unix tools do, with the
            # status of a process ended by SIGPIPE. Later writes go nowhere, so that Python's own
            # flush at exit does not fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(SIGPIPE_STATUS)
        except Exception as e:  # a bug: say so briefly, keep the traceback behind --debug
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"heapdb: internal error: {type(e).__name__}: {e} (run with --debug for the traceback)",
                err=True,
            )
            ctx.exit(2)


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


def _register() -> None:
    # Imported for their side effect: each module adds its commands to `main`.
    from heapdb.cli import (  # noqa: F401
        analysis_cmd,
        compare_cmd,
        formats_cmd,
        heapgraph_cmd,
        load_cmd,
        neo4j_cmd,
        query_cmd,
        serve_cmd,
    )


_register()


def run() -> None:  # pragma: no cover - console entry for `python -m heapdb`
    sys.exit(main())
