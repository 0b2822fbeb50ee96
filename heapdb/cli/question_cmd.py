"""The questions' commands (``heapdb why``, ``top``, ``diff``, ``gate``...), generated from their
declarations in :mod:`heapdb.registry`.

Each command takes its subject as arguments (a tag, an object id or ``--type``, two or three tags),
its parameters as options built from the question's model (:func:`~heapdb.cli.options.question_options`),
``--format``/``--json``/``-o`` and ``--timeout``; it asks :class:`~heapdb.queries.questions.Questions`
and prints the answer with the question's text renderer, or as JSON or a drawing.

A few commands do more than ask, and say so in :data:`EXTRAS`: ``diff --svg`` writes a flame graph,
``leaks --dot`` a why-alive drawing per cluster, and ``gate`` reads a rule file, records the builds,
writes its CI reports and exits 1 when the candidate leaks.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from heapdb import db
from heapdb.cli import main
from heapdb.cli.options import (
    GRAPH_FORMATS,
    TABLE_FORMATS,
    emit,
    output_options,
    question_options,
    render_answer,
    timeout_option,
    warn,
)
from heapdb.errors import HeapdbError, ParameterError
from heapdb.queries import params
from heapdb.queries.compare import check_series
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff, GateReport, Leaks, ObjectDiff
from heapdb.registry import QUESTIONS, Part, Question
from heapdb.renderers import ci_report, drawing, text

F = TypeVar("F", bound=Callable[..., Any])
Run = Callable[..., Any]  # (question, subject, p, timeout, **the extra options) -> the answer

GATE_FAILED = 1  # the candidate leaks: what a CI step fails on
# Any other error of the gate's own (an unknown tag, a bad threshold), kept apart from GATE_FAILED so
# that a gate that could not run never reads as a leak found. Usage errors stay 2, an unreachable Neo4j 3.
GATE_ERROR = 4


@dataclass(frozen=True)
class Extra:
    """What a command adds to asking its question."""

    options: tuple[Callable[[Any], Any], ...] = ()  # click options, listed after the question's own
    run: Run | None = None  # instead of asking: ask, and write what the options say
    exit_status: Callable[[Any], int] | None = None  # the status an answer exits with (default 0)
    epilog: str | None = None
    wrap: Callable[[Any], Any] | None = None  # around the whole command, the building of parameters too


def ask(question: Question, subject: Sequence[Any], p: Any, timeout: float) -> Any:
    """Connect and ask; an object given by ``--type`` is resolved first."""
    if question.subject.kind == "snapshots" and not (subject[0] == () and getattr(p, "builds", None)):
        try:
            check_series(subject[0])  # before connecting: a usage error should not wait for Neo4j
        except ParameterError as e:
            raise click.UsageError(str(e)) from None
    with db.connect() as database:
        questions = Questions(database, timeout)
        return question.answer(questions, _resolved(questions, question, subject), p)


def _resolved(questions: Questions, question: Question, subject: Sequence[Any]) -> Sequence[Any]:
    if question.subject.kind != "object":
        return subject
    tag, object_id, type_name, name_contains = subject
    if object_id is not None and type_name:
        raise click.UsageError("give either OBJECT or --type, not both")
    if object_id is not None:
        return tag, object_id
    if not type_name:
        raise click.UsageError("give OBJECT (an object id) or --type TYPE [--name-contains TEXT]")
    snapshot = questions.snapshot(tag)
    return snapshot, questions.resolve(snapshot, type_name, name_contains)


def _subject_options(question: Question) -> list[Callable[[F], F]]:
    """The subject as click declarations, in the order they are listed."""
    subject = question.subject
    if subject.kind == "object":
        return [
            click.argument("tag"),
            click.argument("object_id", metavar="[OBJECT]", required=False, type=int),
            click.option(
                "--type", "type_name", help="Pick the largest-retaining object of this type instead of giving OBJECT."
            ),
            click.option(
                "--name-contains",
                default="",
                help="With --type: pick the largest-retaining object whose name contains this.",
            ),
        ]
    return [_part_option(part, as_option=subject.kind == "builds") for part in subject.parts]


def _part_option(part: Part, *, as_option: bool) -> Callable[[F], F]:
    if part.kind == "tags":
        return click.argument(part.name, nargs=-1, required=not part.optional)
    if part.kind in ("signature", "run"):
        return click.argument(part.name, type=int)
    if part.kind == "since":
        return click.option("--" + part.name, metavar="BUILD", help=part.description)
    if as_option:
        return click.option("--" + part.name, required=True, help=part.description)
    return click.argument(part.name)


def _subject_names(question: Question) -> list[str]:
    if question.subject.kind == "object":
        return ["tag", "object_id", "type_name", "name_contains"]
    return [part.name for part in question.subject.parts]


def question_command(question: Question, extra: Extra = Extra()) -> click.Command:
    """The command of ``question``, registered on ``heapdb``."""
    names = _subject_names(question)

    def command(fmt: str, output: str | None, timeout: float, p: Any = None, **values: Any) -> None:
        subject = [values.pop(name) for name in names]
        answer = (extra.run or ask)(question, subject, p, timeout, **values)
        emit(render_answer(answer, fmt, question.render_text), output)
        status = extra.exit_status(answer) if extra.exit_status else 0
        if status:
            raise click.exceptions.Exit(status)

    decorated: Any = command
    decorators = [
        *_subject_options(question),
        *([question_options(question.model)] if question.model else []),
        *extra.options,
        output_options(GRAPH_FORMATS if question.drawings == "graph" else TABLE_FORMATS),
        timeout_option,
    ]
    for decorate in reversed(decorators):  # click lists the outermost first
        decorated = decorate(decorated)
    if extra.wrap:
        decorated = extra.wrap(decorated)
    text = question.summary + (f"\n\n{question.help}" if question.help else "")
    return main.command(name=question.name, help=text, epilog=extra.epilog)(decorated)


# --- what some commands add ----------------------------------------------------------------------


def _diff(question: Question, subject: Sequence[str], p: params.Diff, timeout: float, svg_out: Path | None) -> Any:
    if svg_out is not None and p.by != "path":
        raise click.UsageError("--svg draws retainer paths: use it with --by path")
    answer = ask(question, subject, p, timeout)
    if isinstance(answer, ObjectDiff):
        warn(answer.warnings)
    if svg_out is not None:
        assert isinstance(answer, Diff)
        flame = text.growth_flamegraph(answer)
        before, after = subject
        if flame is None:
            click.echo(f"heapdb: nothing grew from {before} to {after}: no flame graph written", err=True)
        else:
            svg_out.write_text(flame)
            click.echo(f"wrote {svg_out}", err=True)
    return answer


def _leaks(question: Question, subject: Sequence[str], p: params.Leaks, timeout: float, dot_dir: Path | None) -> Leaks:
    with db.connect() as database:
        questions = Questions(database, timeout)
        answer: Leaks = question.answer(questions, subject, p)
        warn(answer.warnings)
        if dot_dir is not None:
            dot_dir.mkdir(parents=True, exist_ok=True)
            for number, cluster in enumerate(answer.clusters, 1):
                why = questions.why_alive(cluster.why.tag, cluster.why.id)
                path = dot_dir / f"leak-{number:02d}-{_file_part(cluster.type)}-{cluster.why.id}.dot"
                path.write_text(drawing.dot(why), encoding="utf-8")
            click.echo(f"heapdb: wrote {len(answer.clusters)} why-alive graphs to {dot_dir}", err=True)
    return answer


def _file_part(text: str) -> str:
    """A type name as a safe piece of a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.")[:40] or "object"


def _gate(
    question: Question,
    subject: Sequence[str],
    p: params.Gate,
    timeout: float,
    record: bool,
    junit_out: Path | None,
    markdown_out: Path | None,
) -> GateReport:
    baseline, candidate = subject
    rule_file = None
    if p.rules is not None and (os.path.isfile(p.rules) or os.sep in p.rules):
        from heapdb.loader.rules import load_rules  # stored names have no "/": this is a file

        rule_file, p = load_rules(p.rules), p.model_copy(update={"rules": None})
    with db.connect() as database:
        questions = Questions(database, timeout)
        report = questions.gate(baseline, candidate, p, rule_file)
        if record:
            run = questions.record_gate(report)
            click.echo(f"heapdb: recorded as gate run {run.id} (`heapdb gate-run {run.id}`)", err=True)
    if junit_out is not None:
        junit_out.write_text(ci_report.junit_xml(report), encoding="utf-8")
        click.echo(f"heapdb: wrote {junit_out}", err=True)
    if markdown_out is not None:
        markdown_out.write_text(ci_report.markdown(report), encoding="utf-8")
        click.echo(f"heapdb: wrote {markdown_out}", err=True)
    return report


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


EXTRAS = {
    "diff": Extra(
        options=(
            click.option(
                "--svg",
                "svg_out",
                type=click.Path(dir_okay=False, writable=True, path_type=Path),
                help="With --by path: a flame graph of the growth (width = bytes).",
            ),
        ),
        run=_diff,
    ),
    "leaks": Extra(
        options=(
            click.option(
                "--dot",
                "dot_dir",
                type=click.Path(file_okay=False, path_type=Path),
                help="Write why-alive of each cluster's first sample, in FINAL, as a GraphViz file in this directory.",
            ),
        ),
        run=_leaks,
    ),
    "gate": Extra(
        options=(
            click.option(
                "--record/--no-record",
                default=True,
                show_default=True,
                help="Remember both builds, the leak signatures found and the run itself (see `heapdb history`, "
                "`heapdb signatures`, `heapdb gate-runs`).",
            ),
            click.option(
                "--junit",
                "junit_out",
                type=click.Path(dir_okay=False, writable=True, path_type=Path),
                help="Also write the report as JUnit XML (one test case per finding) to this file.",
            ),
            click.option(
                "--markdown",
                "markdown_out",
                type=click.Path(dir_okay=False, writable=True, path_type=Path),
                help="Also write the report as Markdown (for a CI job summary) to this file.",
            ),
        ),
        run=_gate,
        exit_status=lambda report: 0 if report.passed else GATE_FAILED,
        epilog="Exit status: 0 the gate passed, 1 it failed (the candidate leaks), 2 a usage error, "
        "3 Neo4j cannot be reached, 4 any other error (an unknown tag, a bad threshold).",
        wrap=_errors_apart,
    ),
}

for _question in QUESTIONS:
    question_command(_question, EXTRAS.get(_question.name, Extra()))
