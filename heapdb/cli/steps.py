"""The read and analyse steps that several commands share, each behind a progress bar, and the
rule set a command analyses with (:func:`choose_rules`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heapdb.errors import NotFound, RuleError
from heapdb.loader import analysis, formats
from heapdb.loader.graph import HeapGraph
from heapdb.progress import bar

if TYPE_CHECKING:
    from heapdb.db import Database
    from heapdb.loader.rules import RuleSet
    from heapdb.loader.store.rulesets import RuleSetRecord

# ``--rules none``: the plain analysis, the engine's own retention rules only.
NO_RULES = "none"


def read_with_progress(path: str | os.PathLike[str]) -> tuple[str, HeapGraph]:
    """Detect ``path``'s format from its content and read it, with a bar over its bytes.

    Returns the format's name and the graph.
    """
    module = formats.detect(path)
    with bar(f"read {Path(path).name}", total=os.path.getsize(path), unit="B") as b:
        graph = module.read_graph(path, on_bytes=b.update)
    return module.NAME, graph


def analyse_with_progress(graph: HeapGraph, **options: Any) -> analysis.Analysis:
    """:func:`heapdb.loader.analysis.analyze` with a bar over its steps."""
    with bar("analyse", total=len(analysis.STEPS), unit="step", unit_scale=False) as b:

        def step(_name: str) -> None:
            b.update(1)

        return analysis.analyze(graph, on_step=step, **options)


@dataclass(frozen=True)
class RulesChoice:
    """The rule set a command analyses with, and what a snapshot records about it."""

    rule_set: RuleSet
    name: str  # a rule file's absolute path, or a stored rule set's name
    digest: str  # sha256 of the rule text, in hex
    version: int | None = None  # a stored rule set's version; None for a file
    disabled_groups: tuple[str, ...] = ()

    def snapshot_properties(self, ambiguous_objects: int) -> dict[str, Any]:
        """The ``:Snapshot`` properties of a load analysed under these rules."""
        properties: dict[str, Any] = {
            "rules": self.name,
            "rules_digest": self.digest,
            "ambiguous_objects": ambiguous_objects,
        }
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
    """The rule set ``--rules VALUE`` names: None for no value or ``none``; a rule file when VALUE
    is an existing file; otherwise a rule set stored in the database (``heapdb rules add``), read
    through ``connect()`` (a context manager giving a :class:`~heapdb.db.Database`).

    Everything is checked here, before any snapshot is read: a bad or missing rule file, an
    unknown stored name or an unknown group raises :class:`~heapdb.errors.RuleError`.
    """
    from heapdb.loader.rules import load_rules, parse_rules

    if value is None or value == NO_RULES:
        if disabled_groups:
            raise RuleError(None, "--disable-group needs --rules")
        return None
    if os.path.isfile(value):
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
        choice = RulesChoice(
            choice.rule_set.with_groups(disable=disabled_groups),
            choice.name,
            choice.digest,
            choice.version,
            disabled_groups,
        )
    return choice


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
