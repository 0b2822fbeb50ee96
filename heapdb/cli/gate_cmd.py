"""``heapdb gate``, ``history`` and ``signatures``: a CI gate on leaks, and leak signatures across builds."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import TABLE_FORMATS, emit, output_options, question_options, render_answer, timeout_option
from heapdb.errors import HeapdbError
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.renderers import ci_report

GATE_FAILED = 1  # the candidate leaks: what a CI step fails on
# Any other error of the gate's own (an unknown tag, a bad threshold), kept apart from GATE_FAILED so
# that a gate that could not run never reads as a leak found. Usage errors stay 2, an unreachable Neo4j 3.
GATE_ERROR = 4

F = TypeVar("F", bound=Callable[..., Any])


def _errors_apart(command: F) -> F:
    """Errors that would exit with GATE_FAILED exit with GATE_ERROR instead (outside the building
    of the parameters, so a bad --max-growth is one of them)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except HeapdbError as e:
            if e.exit_code == GATE_FAILED:
                e.exit_code = GATE_ERROR
            raise

    return wrapper  # type: ignore[return-value]


@main.command(
    epilog="Exit status: 0 the gate passed, 1 it failed (the candidate leaks), 2 a usage error, "
    "3 Neo4j cannot be reached, 4 any other error (an unknown tag, a bad threshold)."
)
@_errors_apart
@click.option("--baseline", required=True, help="The tag of the baseline build's loaded snapshot.")
@click.option("--candidate", required=True, help="The tag of the candidate build's loaded snapshot.")
@question_options(params.Gate)
@click.option(
    "--record/--no-record",
    default=True,
    show_default=True,
    help="Remember both builds and the leak signatures found (see `heapdb history`, `heapdb signatures`).",
)
@click.option(
    "--junit",
    "junit_out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write the report as JUnit XML (one test case per finding) to this file.",
)
@click.option(
    "--markdown",
    "markdown_out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write the report as Markdown (for a CI job summary) to this file.",
)
@output_options(TABLE_FORMATS)
@timeout_option
def gate(
    baseline: str,
    candidate: str,
    p: params.Gate,
    record: bool,
    junit_out: Path | None,
    markdown_out: Path | None,
    fmt: str,
    output: str | None,
    timeout: float,
) -> None:
    """Fail when the CANDIDATE build leaks where the BASELINE build did not: a retainer-path
    signature new in the candidate retaining at least --min-bytes, or a path that grew by more than
    --max-growth (bytes such as 2MB, or a percentage of the baseline's reachable heap such as 5%).

    Thresholds the command line does not give come from the [gate] table of --rules (a rule file
    or a stored rule set's name), else of the rules the candidate was loaded with, else the defaults
    shown (docs/rules.md).

    Compares the two loaded snapshots by retainer path (no stable ids needed). Leaks that the
    candidate's rules mark as known_leak are reported but never fail. With --record (the default)
    both builds and the leak signatures are remembered, so `heapdb history SIGNATURE` shows where
    a leak came and went; a build is named by the snapshot's `--meta build=N`, else its tag.
    """
    rule_file = None
    if p.rules is not None and (os.path.isfile(p.rules) or os.sep in p.rules):
        from heapdb.loader.rules import load_rules  # stored names have no "/": this is a file

        rule_file, p = load_rules(p.rules), p.model_copy(update={"rules": None})
    with db.connect() as database:
        questions = Questions(database, timeout)
        report = questions.gate(baseline, candidate, p, rule_file)
        if record:
            questions.record_gate(report)
    if junit_out is not None:
        junit_out.write_text(ci_report.junit_xml(report), encoding="utf-8")
        click.echo(f"heapdb: wrote {junit_out}", err=True)
    if markdown_out is not None:
        markdown_out.write_text(ci_report.markdown(report), encoding="utf-8")
        click.echo(f"heapdb: wrote {markdown_out}", err=True)
    emit(render_answer(report, fmt, ci_report.gate_text), output)
    if not report.passed:
        raise click.exceptions.Exit(GATE_FAILED)


@main.command()
@click.argument("signature", type=int)
@output_options(TABLE_FORMATS)
@timeout_option
def history(signature: int, fmt: str, output: str | None, timeout: float) -> None:
    """One remembered leak SIGNATURE (as `heapdb gate` prints it) across the recorded builds: its
    status, first and last build it was seen in, the builds where it grew, and its retained bytes
    per build."""
    with db.connect() as database:
        answer = Questions(database, timeout).history(signature)
    emit(render_answer(answer, fmt, ci_report.history_text), output)


@main.command()
@click.option(
    "--since", metavar="BUILD", help="Only signatures first seen in this build (a build name or tag) or later."
)
@output_options(TABLE_FORMATS)
@timeout_option
def signatures(since: str | None, fmt: str, output: str | None, timeout: float) -> None:
    """The leak signatures `heapdb gate` remembered, in the order they first appeared, with their
    status: new, recurring, fixed, or known (a known_leak rule covers it)."""
    with db.connect() as database:
        answers = Questions(database, timeout).signatures(since)
    emit(render_answer(answers, fmt, ci_report.signatures_text), output)
