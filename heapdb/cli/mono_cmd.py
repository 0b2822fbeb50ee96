"""``heapdb mono ...``: build heapdb's Mono profiler module and run .NET programs under it."""

from __future__ import annotations

import os
import sys

import click

from heapdb import mono
from heapdb.cli import main

OPTIONS_HELP = """\b
Profiler options (passed as mono --profile=heapdb:OPTIONS, comma separated):
  output=PATH        where captures go: %p the pid, %n the capture number, tcp:HOST:PORT a socket
                     (default heapdb-%p-%n.snapbin in the working directory)
  signal[=USR1|USR2] capture on that signal (default SIGUSR2): kill -USR2 PID
  every=N            capture after every N-th garbage collection
  names=BYTES        keep this much of each System.String as its name (default 1024; 0: none)
  debug              say on stderr what each capture wrote and where Mono's roots came from
From the program: Heapdb.Capture(path) (reference Heapdb.dll; `heapdb mono build` prints where it is)."""


def _say(message: str) -> None:
    click.echo(message, err=True)


@main.group("mono", epilog=OPTIONS_HELP)
def mono_group() -> None:
    """heapdb's Mono profiler module: captures a .NET heap (Mono 6.8) as snap.bin.

    Without `heapdb mono run`: put the directory `heapdb mono build` prints on LD_LIBRARY_PATH (Mono
    finds libmono-profiler-heapdb.so there) and run `mono --profile=heapdb:OPTIONS prog.exe`.
    """


@mono_group.command()
def build() -> None:
    """Build the profiler module and Heapdb.dll (once per source, in ~/.cache/heapdb/mono) and print
    the directory that holds them."""
    click.echo(str(mono.build(say=_say).directory))


@mono_group.command(context_settings={"ignore_unknown_options": True}, epilog=OPTIONS_HELP)
@click.option("--output", "-o", metavar="PATH", help="Where captures go (%p pid, %n capture number, tcp:HOST:PORT).")
@click.option("--signal", "on_signal", is_flag=True, help="Capture when the program gets SIGUSR2.")
@click.option("--every", type=click.IntRange(min=1), metavar="N", help="Capture after every N-th collection.")
@click.option("--option", "extra", multiple=True, metavar="NAME[=VALUE]", help="Any other profiler option.")
@click.argument("program")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(
    output: str | None, on_signal: bool, every: int | None, extra: tuple[str, ...], program: str, args: tuple[str, ...]
) -> None:
    """Run PROGRAM (a .exe) under Mono with heapdb's profiler: `heapdb mono run -o app-%n.snapbin -- app.exe ARGS`."""
    options = [*([f"output={output}"] if output else []), *(["signal"] if on_signal else [])]
    options += [*([f"every={every}"] if every else []), *extra]
    built = mono.build(say=_say)
    argv = mono.mono_command(program, args, options)
    sys.stdout.flush()
    os.execvpe(argv[0], argv, mono.environment(built))
