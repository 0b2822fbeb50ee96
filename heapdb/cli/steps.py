"""The read and analyse steps that several commands share, each behind a progress bar, the rule
set a command analyses with (:func:`choose_rules`, with its options :func:`rules_options`; what
compiled rules give the analysis, :func:`analysis_options`), and the analysis of a graph about to
be stored (:func:`analyse_for_store`).

The analysis is imported inside the functions that run it: it loads numba, and the commands that
share a module with this one but only ask the database (`heapdb snapshots`, `heapdb drop`) must
start without it (tests/test_startup.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import numpy as np

from heapdb.errors import NotFound, RuleError
from heapdb.loader import formats
from heapdb.loader.graph import HeapGraph
from heapdb.progress import bar

if TYPE_CHECKING:
    from heapdb.db import Database
    from heapdb.loader import analysis
    from heapdb.loader.redaction import Redaction
    from heapdb.loader.rules import CompiledRules, RuleSet
    from heapdb.loader.store import LoadInput
    from heapdb.loader.store.rulesets import RuleSetRecord

# ``--rules none``: the plain analysis, the engine's own retention rules only.
NO_RULES = "none"
AMBIGUOUS_EXAMPLES = 5  # objects of ambiguous ownership a warning names
NOTHING_TO_DISABLE = "--disable-group has no rules to switch off with --rules none"

F = TypeVar("F", bound=Callable[..., Any])


def rules_options(command: F) -> F:
    """``--rules FILE|NAME|none`` (the command receives ``rules``) and ``--disable-group``
    (``disabled``), as :func:`choose_rules` takes them."""
    command = click.option(
        "--disable-group",
        "disabled",
        multiple=True,
        metavar="NAME",
        help="Switch off a group of the rules or of the runtime's default rules (v8-internals, "
        "v8-closures, ...; '*' for all); repeatable.",
    )(command)
    return click.option(
        "--rules",
        "rules",
        default=None,
        metavar="FILE|NAME|none",
        help="Analyse under rules (docs/rules.md): a rule file, or the name of a rule set stored with "
        "`heapdb rules add`, followed by the runtime's default rules. Without it, the default rules "
        "alone; 'none' for the plain analysis with no rules at all.",
    )(command)


def redact_option(command: F) -> F:
    """``--redact`` (the command receives ``redact``): see :mod:`heapdb.loader.redaction`."""
    return click.option(
        "--redact",
        is_flag=True,
        help="Replace string contents and primitive values by their length and a keyed hash before "
        "anything is stored or written (what the rules' [[redact]] rules cover, else everything; "
        "docs/rules.md). HEAPDB_REDACT=always makes it the default.",
    )(command)


def redact_rules_option(command: F) -> F:
    """``--rules FILE`` for the commands that only redact (``convert``, ``push``): the command
    receives ``rules``; :func:`file_redaction` reads it."""
    return click.option(
        "--rules",
        "rules",
        type=click.Path(exists=True, dir_okay=False),
        metavar="FILE",
        help="A rule file whose [[redact]] rules say what --redact covers (its other rules do not apply here).",
    )(command)


def file_redaction(redact: bool, rules: str | None) -> Redaction | None:
    """What ``convert`` and ``push`` redact (:func:`heapdb.loader.redaction.chosen`), from
    ``--redact`` and ``--rules FILE``."""
    from heapdb.loader.redaction import chosen
    from heapdb.loader.rules import load_rules

    return chosen(redact, None if rules is None else load_rules(rules))


def refuse_groups_without_rules(rules: str | None, disabled: tuple[str, ...]) -> None:
    """``--disable-group`` with ``--rules none``: a usage error (exit 2), before anything is read."""
    if disabled and rules == NO_RULES:
        raise click.UsageError(NOTHING_TO_DISABLE)


def read_with_progress(path: str | os.PathLike[str]) -> tuple[str, HeapGraph]:
    """Detect ``path``'s format from its content and read it, with a bar over its bytes.

    Returns the format's name and the graph.
    """
    declared = formats.detect(path)
    with bar(f"read {Path(path).name}", total=os.path.getsize(path), unit="B") as b:
        graph = declared.read_graph(path, on_bytes=b.update)
    return declared.name, graph


def analyse_with_progress(graph: HeapGraph, **options: Any) -> analysis.Analysis:
    """:func:`heapdb.loader.analysis.analyze` with a bar over its steps."""
    from heapdb.loader import analysis

    with bar("analyse", total=len(analysis.STEPS), unit="step", unit_scale=False) as b:

        def step(_name: str) -> None:
            b.update(1)

        return analysis.analyze(graph, on_step=step, **options)


@dataclass(frozen=True)
class RulesChoice:
    """The rules a command analyses with, and what a snapshot records about them.

    ``rule_set`` is the team's rule file or stored rule set (None: the runtime's default rules
    alone); the default rules of the snapshot's runtime follow it unless ``defaults`` is off
    (``--rules none``, which leaves nothing: then the choice is None altogether).
    """

    rule_set: RuleSet | None = None
    name: str | None = None  # a rule file's absolute path, or a stored rule set's name
    digest: str | None = None  # sha256 of the rule text, in hex
    version: int | None = None  # a stored rule set's version; None for a file
    disabled_groups: tuple[str, ...] = ()

    def for_graph(self, graph: HeapGraph) -> tuple[RuleSet | None, str | None]:
        """The rules to apply to ``graph`` (the team's, then the runtime's defaults, groups switched
        off), and the runtime whose defaults are among them."""
        from heapdb.loader.rules.defaults import with_defaults

        rules, runtime = with_defaults(self.rule_set, graph)
        if rules is not None and self.disabled_groups:
            # Checked against every group by choose_rules; here only this runtime's are present.
            present = set(rules.group_names)
            off = [g for g in self.disabled_groups if g == "*" or g in present]
            rules = rules.with_groups(disable=off)
        return rules, runtime

    def snapshot_properties(self, ambiguous_objects: int, runtime: str | None) -> dict[str, Any]:
        """The ``:Snapshot`` properties of a load analysed under these rules."""
        properties: dict[str, Any] = {"ambiguous_objects": ambiguous_objects}
        if self.name is not None:
            properties["rules"] = self.name
            properties["rules_digest"] = self.digest
        if runtime is not None:
            properties["default_rules"] = runtime
        if self.version is not None:
            properties["rules_version"] = self.version
        if self.disabled_groups:
            properties["rules_disabled_groups"] = list(self.disabled_groups)
        return properties


def text_digest(text: str) -> str:
    """sha256 of a rule text (UTF-8), in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def choose_rules(
    value: str | None,
    *,
    disabled_groups: tuple[str, ...] = (),
    connect: Callable[[], Any] | None = None,
) -> RulesChoice | None:
    """The rules ``--rules VALUE`` names: None for ``none``; the runtime's default rules alone for
    no value; a rule file when VALUE is an existing file; otherwise a rule set stored in the database
    (``heapdb rules add``), read through ``connect()`` (a context manager giving a
    :class:`~heapdb.db.Database`). The default rules follow the latter two.

    Everything is checked here, before any snapshot is read: a bad or missing rule file, an
    unknown stored name or an unknown group raises :class:`~heapdb.errors.RuleError`.
    """
    from heapdb.loader.rules import load_rules, parse_rules
    from heapdb.loader.rules.defaults import default_group_names

    if value == NO_RULES:
        if disabled_groups:
            raise RuleError(None, NOTHING_TO_DISABLE)
        return None
    if value is None:
        choice = RulesChoice()
    elif os.path.isfile(value):
        rule_set = load_rules(value)
        choice = RulesChoice(rule_set, os.path.abspath(value), text_digest(rule_set.text))
    elif os.path.exists(value) or connect is None or os.sep in value:
        # A path that is not a file (a directory, a missing file in a folder): stored names have no /.
        raise RuleError(value, "no such rule file")
    else:
        with connect() as database:
            stored = _stored_rule_set(database, value)
        text = stored.text or ""
        rule_set = parse_rules(text, f"{stored.name} (stored, version {stored.version})")
        choice = RulesChoice(rule_set, stored.name, text_digest(text), version=int(stored.version))
    if disabled_groups:
        own = set() if choice.rule_set is None else set(choice.rule_set.group_names)
        for name in disabled_groups:
            if name != "*" and name not in own | default_group_names():
                have = ", ".join(sorted(own | default_group_names()))
                raise RuleError(choice.name, f"no rule group named {name!r} (the groups: {have})")
        choice = replace(choice, disabled_groups=disabled_groups)
    return choice


def analysis_options(compiled: CompiledRules) -> dict[str, Any]:
    """The keywords of :func:`heapdb.loader.analysis.analyze` that compiled rules give, the same for
    `heapdb load`, `reanalyze` and `analyze`: the references' weights, only when some reference has
    one (rules with no weights, such as the default rule sets', leave the plain analysis exactly as
    it is), and the objects ``[[transient]]`` rules select (followed last by distances and first
    paths, besides V8's transient root groups)."""
    options: dict[str, Any] = {}
    if compiled.weighted:
        options["edge_weight"] = compiled.edge_weight
    if compiled.transient is not None:
        options["transient"] = compiled.transient
    return options


def analyse_for_store(
    graph: HeapGraph, choice: RulesChoice | None, say: Callable[[str], None], *, redact: bool = False
) -> tuple[LoadInput, dict[str, Any] | None]:
    """Analyse ``graph`` (under ``choice``'s rules, if any) for a load: what the writer stores, and
    the ``:Snapshot`` properties that record the rules (None for the plain analysis). The stored
    references (:REF, :WEAK_REF) follow the runtime's own rules either way. Warnings go to ``say``.
    What is stored is redacted (:mod:`heapdb.loader.redaction`) when ``redact`` (``--redact``), the
    rules' ``[[redact]]`` rules or ``HEAPDB_REDACT=always`` say so."""
    from heapdb.loader import analysis
    from heapdb.loader.inspections.leak_status import Inspectors
    from heapdb.loader.redaction import chosen
    from heapdb.loader.rules import compile_rules
    from heapdb.loader.store import LoadInput

    rule_set, runtime = (None, None) if choice is None else choice.for_graph(graph)
    redaction = chosen(redact, rule_set)
    if choice is None or rule_set is None:
        return LoadInput.from_analysis(graph, analyse_with_progress(graph), redaction=redaction), None
    compiled = compile_rules(rule_set, graph)
    result = analyse_with_progress(graph, **analysis_options(compiled))
    # Under weights, :REF and :WEAK_REF still record the runtime's own rules.
    retaining = analysis.retaining_edges(graph, result.semantics) if compiled.weighted else result.retaining
    data = LoadInput.from_analysis(
        graph,
        result,
        retaining=retaining,
        bucket=compiled.bucket if compiled.bucket_names else None,
        bucket_names=compiled.bucket_names,
        look_through=None if compiled.internal is None else analysis.look_through(result, compiled.internal),
        redaction=redaction,
        lifecycle_rules=Inspectors.of(rule_set),
        **_notes(result, compiled),
    )
    _warn_about_rules(graph, result, compiled, say)
    properties = choice.snapshot_properties(len(result.ambiguous), runtime)
    if data.look_through is not None:
        properties["look_through"] = True  # leak clusters look through `through` objects
    matched = [r for r, hits in zip(compiled.rules, compiled.hits, strict=True) if hits and r in compiled.known_leaks]
    if matched:
        # What leak answers show beside a known leak's reason (the objects store the reason only).
        # Only the rules that matched: the default rules' catalogue of known leaks is long, and a
        # snapshot none of it covers answers as one loaded without it.
        properties["known_leaks"] = json.dumps([{"reason": r.reason, "link": r.link, "line": r.line} for r in matched])
    return data, properties


def _notes(result: analysis.Analysis, compiled: CompiledRules) -> dict[str, Any]:
    """The known leaks (spread down the dominator tree) and verdicts of a load, for LoadInput."""
    from heapdb.loader import analysis

    reasons = tuple(r.reason for r in compiled.known_leaks)
    known = None if compiled.known_leak is None else analysis.spread_down(result, compiled.known_leak)
    verdict = compiled.verdict
    if verdict is not None:
        verdict = np.where(verdict >= 0, verdict + len(reasons), -1).astype(np.int16)
    return {"known_leak": known, "verdict": verdict, "notes": reasons + tuple(v.note for v in compiled.verdicts)}


def _warn_about_rules(
    graph: HeapGraph, result: analysis.Analysis, compiled: CompiledRules, say: Callable[[str], None]
) -> None:
    """What `heapdb analyze --rules` warns about too: ambiguous ownership, rules that match nothing."""
    if len(result.ambiguous):
        examples = ", ".join(
            f"{graph.type_name(int(i))} @{int(graph.ids[int(i)])}" for i in result.ambiguous[:AMBIGUOUS_EXAMPLES]
        )
        say(f"warning: {len(result.ambiguous):,} objects of ambiguous ownership (two owners of one weight): {examples}")
    unmatched = compiled.unmatched()
    if unmatched:
        lines = ", ".join(str(r.line) for r in unmatched)
        say(f"warning: rules that match nothing in this snapshot, at lines {lines}")


def _stored_rule_set(database: Database, name: str) -> RuleSetRecord:
    """The newest version of the rule set stored as ``name`` (``heapdb rules add``), with its text."""
    from heapdb.loader.store.rulesets import get_rule_set

    try:
        stored = get_rule_set(database, name)
    except NotFound as e:
        raise RuleError(name, f"not a rule file, and {e}") from None
    if stored.text is None:  # get_rule_set always reads the text; a listing record would lack it
        raise RuleError(name, f"the stored rule set {name!r} has no text")
    return stored
