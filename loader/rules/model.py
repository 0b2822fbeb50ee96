"""The parsed form of a rule file: frozen records, no graph in sight.

A :class:`RuleSet` holds every rule of a file in file order, each with the line it starts on and the
group it belongs to. :mod:`.parse` builds them from TOML; :mod:`.compiler` turns the enabled ones into
arrays over one graph. docs/rules.md describes the file format these records mirror.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property

from heapdb.errors import RuleError
from heapdb.gatecheck import GateCheck
from heapdb.loader.graph import EdgeKind

FORMAT_VERSION = 1

# The group a rule without ``group = "..."`` belongs to. It cannot be switched off.
DEFAULT_GROUP = ""

# Group names are bare TOML keys without dots, so ``[groups.NAME]`` needs no quoting.
GROUP_NAME = re.compile(r"[A-Za-z0-9_-]+")


class PatternKind(StrEnum):
    EXACT = "exact"  # a plain TOML string: the whole text, character for character
    GLOB = "glob"  # { glob = "..." }: shell wildcards * ? [...] over the whole text
    REGEX = "regex"  # { regex = '...' }: a Python regular expression over the whole text


@dataclass(frozen=True)
class Pattern:
    """One text pattern. Every kind matches the *whole* text (a regex is anchored at both ends)."""

    kind: PatternKind
    text: str

    @cached_property
    def compiled(self) -> re.Pattern[str]:
        if self.kind is PatternKind.EXACT:
            return re.compile(re.escape(self.text), re.DOTALL)
        if self.kind is PatternKind.GLOB:
            return re.compile(fnmatch.translate(self.text), re.DOTALL)
        return re.compile(self.text)

    def matches(self, text: str) -> bool:
        if self.kind is PatternKind.EXACT:
            return text == self.text
        affix = self._affix
        if affix is not None:  # "*suffix" or "prefix*": a string method, not a backtracking regex
            return text.endswith(affix[1]) if affix[0] else text.startswith(affix[1])
        return self.compiled.fullmatch(text) is not None

    @cached_property
    def _affix(self) -> tuple[bool, str] | None:
        """(True, suffix) for a glob ``*suffix``, (False, prefix) for ``prefix*``, where the rest has
        no wildcard; else None."""
        if self.kind is not PatternKind.GLOB or len(self.text) < 2:
            return None
        if self.text[0] == "*" and not any(c in self.text[1:] for c in "*?["):
            return True, self.text[1:]
        if self.text[-1] == "*" and not any(c in self.text[:-1] for c in "*?["):
            return False, self.text[:-1]
        return None

    def __str__(self) -> str:
        return repr(self.text) if self.kind is PatternKind.EXACT else f"{self.kind.value}:{self.text!r}"


@dataclass(frozen=True)
class Match:
    """Any of its patterns (a TOML list of patterns; a single pattern is a list of one)."""

    patterns: tuple[Pattern, ...]

    def matches(self, text: str) -> bool:
        return any(p.matches(text) for p in self.patterns)

    def __str__(self) -> str:
        return " | ".join(str(p) for p in self.patterns)


@dataclass(frozen=True)
class ObjectSelector:
    """Objects whose type, name and node kind all match (a missing field matches anything).

    ``kind`` matches the runtime's coarse node kinds (``graph.node_kinds``: ``"closure"``,
    ``"hidden"``, ``"synthetic"``...).
    """

    type: Match | None = None
    name: Match | None = None
    kind: Match | None = None
    # Java: instances of a class whose name matches, or of any of its subclasses (hprof's <class> and
    # <super> references); where a format shows no class hierarchy, the object's type.
    instance_of: Match | None = None


@dataclass(frozen=True)
class Step:
    """One reference of a chain: its name (element and hidden references are named by their index
    in decimal), its kind (a set of :class:`EdgeKind`) and what it points to. ``None`` = any."""

    name: Match | None = None
    kind: frozenset[EdgeKind] | None = None
    to: ObjectSelector | None = None


@dataclass(frozen=True)
class ReferenceSelector:
    """References: a chain of ``steps`` starting at an object ``source`` selects (None = any object).

    A rule applies to the *last* reference of each matching chain. One step with ``source`` only is
    "every reference out of a type"; one step with ``to`` only, "every reference into a type".
    """

    source: ObjectSelector | None
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Rule:
    """What every rule has: where it starts in the file and its group."""

    line: int
    group: str


@dataclass(frozen=True)
class IgnoreRule(Rule):
    """The references never retain and never appear on a retainer path."""

    references: ReferenceSelector


@dataclass(frozen=True)
class WeakRule(Rule):
    """The references yield to any other reference into the same object (weight -1)."""

    references: ReferenceSelector


@dataclass(frozen=True)
class OwnsRule(Rule):
    """The references own their targets with ``weight`` 1..127; the highest weight into an object wins."""

    references: ReferenceSelector
    weight: int = 1


@dataclass(frozen=True)
class BucketRule(Rule):
    """Objects (selected directly or as targets of references) belong to the bucket ``bucket``.

    An object gets the bucket of the first enabled rule, in file order, that selects it. ``[[tag]]``
    is another spelling of ``[[bucket]]``.
    """

    bucket: str
    objects: ObjectSelector | None = None
    references: ReferenceSelector | None = None


@dataclass(frozen=True)
class InternalRule(Rule):
    """Objects the runtime made for its own bookkeeping (a closure's context, a backing store).

    They change no dominator and no size. Answers that name the objects a program made (leak
    clusters, top retainers) look through them to the program's objects they hold.
    """

    objects: ObjectSelector


@dataclass(frozen=True)
class TransientRule(Rule):
    """Objects that record the moment a snapshot was taken rather than the program (V8's transient
    root groups: a compiler's handles, the handle scopes of running code).

    They change no dominator and no size. Breadth-first searches from the root (first retainer
    paths, distances) follow their references only after every other reference, so the same
    program keeps the same retainer paths from build to build. V8's built-in set
    (:data:`heapdb.loader.graph.TRANSIENT_ROOT_GROUPS`) always applies; these rules add to it.
    """

    objects: ObjectSelector


@dataclass(frozen=True)
class KnownLeakRule(Rule):
    """Objects (and/or a retainer path pattern) that leak for a known reason, reported apart.

    A load marks the objects it selects and their dominator subtrees (``known_leak``); leak
    answers report their clusters apart, with the reason and link.
    """

    reason: str
    objects: ObjectSelector | None = None
    path: ReferenceSelector | None = None
    link: str | None = None


# What a lifecycle rule's ``status`` says of the objects it holds for (the file's words).
LIFECYCLE_STATUSES = ("leaking", "not_leaking", "label")
FIELD_COMPARISONS = ("above", "below", "not", "instance_of")


@dataclass(frozen=True)
class FieldTest:
    """One test of a lifecycle rule on an object's fields: the field path (references to follow,
    then the field read) and what it must be."""

    path: tuple[str, ...]
    op: str  # "is", "null", "not null", "above", "below", "not", "instance_of"
    value: bool | int | float | str | None = None

    def describe(self) -> str:
        name = ".".join(self.path)
        if self.op in ("null", "not null"):
            return f"{name} is {self.op}"
        if self.op == "is":
            return f"{name} is {_java(self.value)}"
        words = {"above": "is above", "below": "is below", "not": "is not", "instance_of": "is an instance of"}
        return f"{name} {words[self.op]} {_java(self.value)}"


def _java(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class LifecycleRule(Rule):
    """What heapdb knows of the lifecycle of the instances of ``cls`` and its subclasses (Java): when
    their fields pass every test, they are ``status`` (leaking, not_leaking, or label: a note) for
    ``reason``. Read by the leak list of objects past their lifecycle and the labels of ``why``
    (:mod:`heapdb.loader.inspections.leak_status`); they change no analysis."""

    cls: str
    status: str  # one of LIFECYCLE_STATUSES
    tests: tuple[FieldTest, ...]
    reason: str


@dataclass(frozen=True)
class VerdictRule(Rule):
    """A note shown wherever a type or path signature appears ("expected: pool of 64").

    A load marks the objects it selects (``verdict``); object answers and leak clusters show it.
    """

    note: str
    objects: ObjectSelector | None = None
    path: ReferenceSelector | None = None


@dataclass(frozen=True)
class RedactRule(Rule):
    """What a redacting load, convert or push replaces before anything is stored or written
    (:mod:`heapdb.loader.redaction`): the contents of the string objects ``strings`` matches (and
    references named by a matching text), and with ``values`` every primitive value (a Java
    object's fields, a primitive array's elements). Types, field names and code stay."""

    strings: Match | None = None
    names: Match | None = None  # reference names covered (a map keyed by e-mail addresses)
    values: bool = False


@dataclass(frozen=True)
class Group:
    """A named set of rules that can be switched off as a whole."""

    name: str
    enabled: bool = True
    description: str = ""
    line: int | None = None  # where ``[groups.NAME]`` is, None when only rules name the group


@dataclass(frozen=True)
class GateThresholds:
    """A rule file's ``[gate]`` table: the team's thresholds for ``heapdb gate``; None where the
    table leaves a threshold to the gate's own default."""

    line: int
    max_growth: str | None = None  # as written: "10%", "2MB", "1048576"
    min_bytes: int | None = None
    fail_on: tuple[GateCheck, ...] | None = None

    def given(self) -> dict[str, object]:
        """The thresholds the table sets, by the gate parameter's name."""
        values = {"max_growth": self.max_growth, "min_bytes": self.min_bytes, "fail_on": self.fail_on}
        return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class RuleSet:
    """Every rule of one rule file, in file order, the groups they belong to, and its gate thresholds."""

    version: int
    rules: tuple[Rule, ...]
    groups: tuple[Group, ...] = ()
    path: str | None = None
    text: str = field(default="", repr=False)
    gate: GateThresholds | None = None

    @property
    def group_names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.groups)

    def enabled_rules(self) -> tuple[Rule, ...]:
        """The rules of enabled groups (rules outside any group are always enabled)."""
        off = {g.name for g in self.groups if not g.enabled}
        return tuple(r for r in self.rules if r.group not in off)

    def with_groups(self, *, enable: Sequence[str] = (), disable: Sequence[str] = ()) -> RuleSet:
        """A copy with the named groups switched on or off; ``"*"`` names every group.

        Raises :class:`~heapdb.errors.RuleError` for a group the file does not have.
        """
        known = set(self.group_names)
        for name in (*enable, *disable):
            if name != "*" and name not in known:
                have = ", ".join(sorted(known)) or "none"
                raise RuleError(self.path, f"no rule group named {name!r} (the file's groups: {have})")

        def state(g: Group) -> bool:
            if g.name in disable or "*" in disable:
                return g.name in enable
            return g.enabled or g.name in enable or "*" in enable

        return replace(self, groups=tuple(replace(g, enabled=state(g)) for g in self.groups))

    def followed_by(self, other: RuleSet) -> RuleSet:
        """This rule set's rules, then ``other``'s (default rules after a team's), under this one's
        path and text. A group both declare is an error: its rules could not be told apart."""
        shared = set(self.group_names) & set(other.group_names)
        if shared:
            raise RuleError(self.path, f"group {sorted(shared)[0]!r} is already a group of {other.path}: rename it")
        return replace(self, rules=self.rules + other.rules, groups=self.groups + other.groups)

    def of_kind(self, cls: type[Rule]) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if isinstance(r, cls))

    @property
    def known_leaks(self) -> tuple[KnownLeakRule, ...]:
        return tuple(r for r in self.enabled_rules() if isinstance(r, KnownLeakRule))

    @property
    def lifecycles(self) -> tuple[LifecycleRule, ...]:
        return tuple(r for r in self.enabled_rules() if isinstance(r, LifecycleRule))

    @property
    def verdicts(self) -> tuple[VerdictRule, ...]:
        return tuple(r for r in self.enabled_rules() if isinstance(r, VerdictRule))

    @property
    def redactions(self) -> tuple[RedactRule, ...]:
        return tuple(r for r in self.enabled_rules() if isinstance(r, RedactRule))
