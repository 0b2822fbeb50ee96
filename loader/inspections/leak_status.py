"""Java and Android leak status: which objects are past their lifecycle, read from their fields.

LeakCanary's Shark labels each object on a leak trace LEAKING, NOT_LEAKING or UNKNOWN, with a
reason, from what it knows of well-known lifecycles (an Activity whose ``mDestroyed`` is true is
leaking; an Application never is). heapdb keeps that knowledge as data
(``lifecycles.toml`` beside this module, and a team's own file of the same form named by
``HEAPDB_LIFECYCLES``): each :class:`Inspector` applies to the instances of a class and its
subclasses, tests their fields, and says leaking, not leaking or a note.

This module is the part that does not care where the objects come from: the rules, the status of
one object (:func:`object_status`, over any :class:`Facts`: the graph of a file being loaded, or
the rows of a stored snapshot), and the labels of a path (:func:`label_path`):

- a status is resolved as Shark resolves it: leaking reasons against not-leaking reasons, the
  not-leaking side winning a conflict except for the leaking object at the end of a leak trace,
  each side's reasons joined by " and ", the losing side's named after "Conflicts with";
- along a path, everything before the last NOT_LEAKING object is not leaking (it holds something
  that is still in use), everything after the first LEAKING object past it is leaking (it is held
  by something past its life), each such label saying which object it follows;
- the references from the last NOT_LEAKING object up to the first LEAKING one are the suspects:
  one of them should have been cleared.

Why this module is long: the rules' format, one object's status and a path's labels are one
decision read in one place (Shark's, re-expressed), and both the leak list of a graph and the
labels of a stored path call it, so that the two cannot disagree.

A reference field that is null has no reference in the graph, so ``"null"`` tests that no
reference of that name leaves the object; a rule only names fields its class declares, so a missing
field and a null one cannot be told apart and need not be.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from typing import Any, Protocol

from heapdb.errors import RuleError
from heapdb.loader.values import decode

LEAKING, NOT_LEAKING, UNKNOWN = "LEAKING", "NOT_LEAKING", "UNKNOWN"
STATUSES = {"leaking": LEAKING, "not_leaking": NOT_LEAKING, "label": UNKNOWN}
CLASS_REFERENCE, SUPER_REFERENCE = "<class>", "<super>"  # the hprof reader's names (docs/analysis.md)
SHIPPED = "lifecycles.toml"
FORMAT_VERSION = 1
MAX_CHAIN = 64  # super classes followed at most: a malformed dump's cycle ends here
COMPARISONS = ("above", "below", "not", "instance_of")


@dataclass(frozen=True)
class Test:
    """One field test: the field path (references to follow, then the field read) and what it must be."""

    path: tuple[str, ...]
    op: str  # "is", "null", "not null", "above", "below", "not", "instance_of"
    value: Any = None

    def describe(self) -> str:
        name = ".".join(self.path)
        if self.op in ("null", "not null"):
            return f"{name} is {self.op}"
        if self.op == "is":
            return f"{name} is {_java(self.value)}"
        words = {"above": "is above", "below": "is below", "not": "is not", "instance_of": "is an instance of"}
        return f"{name} {words[self.op]} {_java(self.value)}"


@dataclass(frozen=True)
class Inspector:
    """What one rule says about the instances of ``cls`` (and of its subclasses) whose fields pass
    every test: ``status`` (LEAKING, NOT_LEAKING, or UNKNOWN for a note) for ``reason``."""

    cls: str
    status: str
    tests: tuple[Test, ...]
    reason: str
    where: str  # the file and line it came from, for messages

    @property
    def names(self) -> set[str]:
        """The reference and field names its tests read."""
        return {name for t in self.tests for name in t.path}


@dataclass(frozen=True)
class LibraryLeak:
    """A reference a library (Android itself) is known to keep too long: ``field`` of ``cls``'s
    instances (and its subclasses'), or ``cls``'s static field when ``static``."""

    cls: str
    field: str
    static: bool
    reason: str
    where: str


@dataclass(frozen=True)
class Inspectors:
    """A set of rules, in file order (the shipped ones first), and the known library leaks."""

    rules: tuple[Inspector, ...]
    library_leaks: tuple[LibraryLeak, ...] = ()

    def of_classes(self, chain: tuple[str, ...]) -> tuple[Inspector, ...]:
        """The rules for an object of the classes ``chain``, in file order (kept per chain: a heap has
        few classes and many objects)."""
        found = self._of_chain.get(chain)
        if found is None:
            names = set(chain)
            found = self._of_chain[chain] = tuple(r for r in self.rules if r.cls in names)
        return found

    @cached_property
    def _of_chain(self) -> dict[tuple[str, ...], tuple[Inspector, ...]]:
        return {}

    @property
    def leaking_classes(self) -> frozenset[str]:
        """The classes some rule can find leaking: a leak list looks at their instances only."""
        return frozenset(r.cls for r in self.rules if r.status == LEAKING)

    @property
    def names(self) -> frozenset[str]:
        """Every reference name an evaluation may follow (a store reads only these)."""
        return frozenset(
            {CLASS_REFERENCE, SUPER_REFERENCE}.union(
                *(r.names for r in self.rules), (k.field for k in self.library_leaks)
            )
        )


@dataclass(frozen=True)
class ObjectFacts:
    """What the rules read of one object: its name (a class object's is the class name), its
    primitive values as stored (hexadecimal, :mod:`heapdb.loader.values`), a class object's field
    layout, and the targets of its named references (the first of each name)."""

    type: str
    name: str
    values: str | None
    layout: str | None
    references: Mapping[str, int]


class Facts(Protocol):
    """Objects' facts by a key (a node of a graph, an id in the store)."""

    def facts(self, objects: Sequence[int]) -> Mapping[int, ObjectFacts]: ...


@dataclass(frozen=True)
class Status:
    """One object's own status, before a path's labels propagate."""

    status: str
    reason: str
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Label:
    """How one object of a path is labelled: its status and why; ``""`` for the root and the root
    groups, which are not objects of the program."""

    status: str
    reason: str
    notes: tuple[str, ...] = ()  # what the rules noted of it (Shark's labels)


@dataclass(frozen=True)
class PathLabels:
    """The labels of a retainer path's objects (one per object, root first) and the indexes of its
    suspect references (those between the last NOT_LEAKING object and the first LEAKING one)."""

    objects: tuple[Label, ...]
    suspects: tuple[int, ...]


# -- the rules as data -------------------------------------------------------------------------


def load_inspectors(extra: Iterable[str | os.PathLike[str]] = ()) -> Inspectors:
    """The shipped rules, then each file of ``extra`` (a team's), in order."""
    rules, library = list(_shipped().rules), list(_shipped().library_leaks)
    for path in extra:
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise RuleError(path, f"cannot read the lifecycle rules: {e}") from None
        parsed = parse_inspectors(text, os.fspath(path))
        rules += parsed.rules
        library += parsed.library_leaks
    return Inspectors(tuple(rules), tuple(library))


def team_inspectors() -> Inspectors:
    """The shipped rules and the team's file that ``HEAPDB_LIFECYCLES`` names, if it does."""
    from heapdb import settings

    team = settings.LIFECYCLES.get()
    return load_inspectors([team] if team else [])


@cache
def _shipped() -> Inspectors:
    text = resources.files(__package__).joinpath(SHIPPED).read_text(encoding="utf-8")
    return parse_inspectors(text, SHIPPED)


def parse_inspectors(text: str, where: str) -> Inspectors:
    """The ``[[lifecycle]]`` rules of a TOML text; :class:`RuleError` naming ``where`` for a bad one."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RuleError(where, f"not valid TOML: {e}") from None
    if data.get("version") != FORMAT_VERSION:
        raise RuleError(where, f"expected version = {FORMAT_VERSION} at the top, got {data.get('version')!r}")
    unknown = set(data) - {"version", "lifecycle", "library_leak"}
    if unknown:
        raise RuleError(where, f"unknown key(s) {sorted(unknown)}: only [[lifecycle]] and [[library_leak]] tables")
    tables, library = data.get("lifecycle", []), data.get("library_leak", [])
    if not isinstance(tables, list) or not isinstance(library, list):
        raise RuleError(where, "lifecycle and library_leak must be arrays of tables: [[lifecycle]], [[library_leak]]")
    return Inspectors(
        tuple(_inspector(t, f"{where}: lifecycle {i + 1}") for i, t in enumerate(tables)),
        tuple(_library_leak(t, f"{where}: library_leak {i + 1}") for i, t in enumerate(library)),
    )


def _library_leak(table: Any, where: str) -> LibraryLeak:
    if not isinstance(table, dict) or set(table) - {"class", "field", "static", "reason"}:
        raise RuleError(None, f"{where}: expected a table of class, field, static and reason")
    cls, name, static, reason = table.get("class"), table.get("field"), table.get("static", False), table.get("reason")
    if not (isinstance(cls, str) and isinstance(name, str) and isinstance(reason, str) and cls and name and reason):
        raise RuleError(None, f"{where}: class, field and reason are text")
    if not isinstance(static, bool):
        raise RuleError(None, f"{where}: static is true or false")
    return LibraryLeak(cls, name, static, reason, where)


def _inspector(table: Any, where: str) -> Inspector:
    if not isinstance(table, dict):
        raise RuleError(None, f"{where}: expected a table")
    unknown = set(table) - {"class", "status", "when", "reason"}
    if unknown:
        raise RuleError(None, f"{where}: unknown key(s) {sorted(unknown)} (class, status, when, reason)")
    cls, status, reason = table.get("class"), table.get("status"), table.get("reason")
    if not isinstance(cls, str) or not cls:
        raise RuleError(None, f'{where}: class must be a class name, e.g. "android.app.Activity"')
    if status not in STATUSES:
        raise RuleError(None, f"{where}: status must be one of {', '.join(STATUSES)}, got {status!r}")
    if reason is not None and not isinstance(reason, str):
        raise RuleError(None, f"{where}: reason must be text")
    when = table.get("when", {})
    if not isinstance(when, dict):
        raise RuleError(None, f"{where}: when must be a table of field tests")
    tests = tuple(_tests(when, (), where))
    if not reason:
        simple = cls.rsplit(".", 1)[-1]
        reason = " and ".join(f"{simple}#{t.describe()}" for t in tests) or f"an instance of {cls}"
    return Inspector(cls, STATUSES[status], tests, reason, where)


def _tests(when: dict[str, Any], prefix: tuple[str, ...], where: str) -> Iterable[Test]:
    for key, value in when.items():
        path = prefix + tuple(key.split("."))
        if not all(path):
            raise RuleError(None, f"{where}: {'.'.join(path)!r} is not a field path")
        if isinstance(value, dict) and value and set(value) <= set(COMPARISONS):
            yield _comparison(path, value, where)
        elif isinstance(value, dict):  # a dotted key written as a nested table
            yield from _tests(value, path, where)
        elif value in ("null", "not null"):
            yield Test(path, value)
        elif isinstance(value, (bool, int, float)):
            yield Test(path, "is", value)
        else:
            raise RuleError(
                None,
                f'{where}: {".".join(path)} = {value!r}: expected true, false, a number, "null", "not null" '
                f"or a table of {', '.join(COMPARISONS)}",
            )


def _comparison(path: tuple[str, ...], value: dict[str, Any], where: str) -> Test:
    if len(value) != 1:
        raise RuleError(None, f"{where}: {'.'.join(path)}: one comparison per test, got {sorted(value)}")
    ((op, operand),) = value.items()
    wanted: tuple[type, ...] = (str,) if op == "instance_of" else (bool, int, float) if op == "not" else (int, float)
    if not isinstance(operand, wanted) or (op in ("above", "below") and isinstance(operand, bool)):
        raise RuleError(
            None, f"{where}: {'.'.join(path)}: {op} takes {'a class name' if wanted == (str,) else 'a number'}"
        )
    return Test(path, op, operand)


# -- one object's status -----------------------------------------------------------------------


@dataclass
class Evaluation:
    """Rules evaluated over one source of facts; facts are read once per object, in batches."""

    inspectors: Inspectors
    source: Facts
    _facts: dict[int, ObjectFacts] = field(default_factory=dict)
    _classes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    _chains: dict[int, tuple[str, ...]] = field(default_factory=dict)  # by class object
    _statuses: dict[tuple[int, bool], Status] = field(default_factory=dict)
    _primitives: dict[int, dict[str, Any]] = field(default_factory=dict)

    def prefetch(self, objects: Iterable[int]) -> None:
        """Read the facts of ``objects`` and of their classes and super classes, a level per batch."""
        wanted = [o for o in dict.fromkeys(objects) if o not in self._facts]
        for _ in range(MAX_CHAIN):
            if not wanted:
                return
            self._facts.update(self.source.facts(wanted))
            following = []
            for o in wanted:
                found = self._facts.get(o)
                if found is None:
                    continue
                for name in (CLASS_REFERENCE, SUPER_REFERENCE):
                    target = found.references.get(name)
                    if target is not None and target not in self._facts:
                        following.append(target)
            wanted = list(dict.fromkeys(following))

    def get(self, obj: int) -> ObjectFacts | None:
        if obj not in self._facts:
            self.prefetch([obj])
        return self._facts.get(obj)

    def classes(self, obj: int) -> tuple[str, ...]:
        """The object's class and its super classes, nearest first; an array's or a class object's
        type alone (``java.lang.Class``); () for an object without facts."""
        if obj in self._classes:
            return self._classes[obj]
        this = self.get(obj)
        chain: list[str] = []
        if this is not None and (this.type.endswith("[]") or CLASS_REFERENCE not in this.references):
            chain = [this.type]  # an array, or a class object (the reader gives it no <class>)
        elif this is not None:
            cls = this.references[CLASS_REFERENCE]
            if cls in self._chains:  # the chain is the class's: walked once per class
                self._classes[obj] = self._chains[cls]
                return self._chains[cls]
            at: int | None = cls
            seen: set[int] = set()
            while at is not None and at not in seen and len(chain) < MAX_CHAIN:
                seen.add(at)
                found = self.get(at)
                if found is None:
                    break
                chain.append(found.name)
                at = found.references.get(SUPER_REFERENCE)
            self._chains[cls] = tuple(chain)
        self._classes[obj] = tuple(chain)
        return self._classes[obj]

    def _field(self, obj: int, name: str) -> tuple[bool, Any]:
        """(found, value) of ``obj``'s field ``name``: a primitive as Python has it, else the target
        of the reference (None: null)."""
        this = self.get(obj)
        if this is None:
            return False, None
        if name in this.references:
            return True, this.references[name]
        primitives = self._primitives.get(obj)
        if primitives is None:  # decoded once per object: a field is the first of its name (its own class's)
            cls = this.references.get(CLASS_REFERENCE)
            layout = None if cls is None else (self.get(cls) or _NO_FACTS).layout
            primitives = {}
            if this.values is not None and layout is not None:
                for type_name, field_name, text in decode(this.values, layout):
                    primitives.setdefault(field_name, _python(type_name, text))
            self._primitives[obj] = primitives
        # Not a primitive: a reference field that is null (or a field this object does not have).
        return True, primitives.get(name)

    def library_leak(self, holder: int, name: str) -> LibraryLeak | None:
        """The known library leak the reference ``name`` from ``holder`` is, if any: a static field of
        a class object named as the rule says, or an instance field of one of the rule's class."""
        this = self.get(holder)
        if this is None:
            return None
        for leak in self.inspectors.library_leaks:
            if leak.field != name:
                continue
            if leak.static and CLASS_REFERENCE not in this.references and this.name == leak.cls:
                return leak
            if not leak.static and leak.cls in self.classes(holder):
                return leak
        return None

    def holds(self, obj: int, test: Test) -> bool:
        at: int | None = obj
        for step in test.path[:-1]:  # the references to follow
            if at is None:
                return False
            this = self.get(at)
            at = None if this is None else this.references.get(step)
        if at is None:
            return False
        last = test.path[-1]
        this = self.get(at)
        is_reference = this is not None and last in this.references
        if test.op in ("null", "not null"):
            return is_reference == (test.op == "not null")
        if test.op == "instance_of":
            return is_reference and this is not None and test.value in self.classes(this.references[last])
        found, value = self._field(at, last)
        if not found or value is None or is_reference:
            return False
        if test.op == "is":
            return bool(value == test.value and isinstance(value, bool) == isinstance(test.value, bool))
        if isinstance(value, bool):
            return test.op == "not" and value != test.value
        if test.op == "above":
            return bool(value > test.value)
        if test.op == "below":
            return bool(value < test.value)
        return bool(value != test.value)

    def status(self, obj: int, *, leaking_wins: bool = False) -> Status:
        """The object's own status: what the rules for its classes say (Shark's resolution). Kept
        once worked out: the traces of a leak list share their first objects."""
        key = (obj, leaking_wins)
        if key not in self._statuses:
            self._statuses[key] = self._status(obj, leaking_wins)
        return self._statuses[key]

    def _status(self, obj: int, leaking_wins: bool) -> Status:
        leaking: list[str] = []
        not_leaking: list[str] = []
        notes: list[str] = []
        for rule in self.inspectors.of_classes(self.classes(obj)):
            if all(self.holds(obj, t) for t in rule.tests):
                {LEAKING: leaking, NOT_LEAKING: not_leaking, UNKNOWN: notes}[rule.status].append(rule.reason)
        return resolve(leaking, not_leaking, notes, leaking_wins=leaking_wins)


_NO_FACTS = ObjectFacts("", "", None, None, {})


def resolve(leaking: list[str], not_leaking: list[str], notes: list[str], *, leaking_wins: bool) -> Status:
    """A status from reasons on both sides: not leaking wins a conflict unless ``leaking_wins``."""
    labels = tuple(dict.fromkeys(notes))
    yes, no = " and ".join(dict.fromkeys(leaking)), " and ".join(dict.fromkeys(not_leaking))
    if yes and no:
        if leaking_wins:
            return Status(LEAKING, f"{yes}. Conflicts with {no}", labels)
        return Status(NOT_LEAKING, f"{no}. Conflicts with {yes}", labels)
    if yes:
        return Status(LEAKING, yes, labels)
    if no:
        return Status(NOT_LEAKING, no, labels)
    return Status(UNKNOWN, "", labels)


# -- a path's labels ---------------------------------------------------------------------------


def label_path(statuses: Sequence[Status | None], names: Sequence[str], *, leak_trace: bool = False) -> PathLabels:
    """The labels of a path's objects from their own ``statuses`` (None for the root and root
    groups, which get no label), ``names`` being their short class names for the reasons.

    ``leak_trace``: the last object is the leaking one (a leak list's trace), so it is LEAKING
    whatever its rules say, as in Shark; a why-alive path ends wherever it was asked to."""
    own = [None if s is None else (s.status, s.reason) for s in statuses]
    last = len(own) - 1
    if leak_trace and last >= 0 and own[last] is not None:
        status, reason = own[last]  # type: ignore[misc]
        if status == UNKNOWN:
            own[last] = (LEAKING, "this is the leaking object")
        elif status == NOT_LEAKING:
            own[last] = (LEAKING, f"this is the leaking object. Conflicts with {reason}")
    objects = [i for i, s in enumerate(own) if s is not None]
    last_not = max((i for i in objects if own[i][0] == NOT_LEAKING), default=-1)  # type: ignore[index]
    first_leaking = min((i for i in objects if i > last_not and own[i][0] == LEAKING), default=None)  # type: ignore[index]
    labelled = list(own)
    for i in objects:
        status, reason = own[i]  # type: ignore[misc]
        if i < last_not:  # holds, through the objects after it, something still in use
            after = next(j for j in objects if j > i and own[j][0] == NOT_LEAKING)  # type: ignore[index]
            held = f"{names[after]}↓ is not leaking"
            labelled[i] = (NOT_LEAKING, _joined(held, status, reason, NOT_LEAKING))
        elif first_leaking is not None and i > first_leaking:  # held by something past its life
            before = max(j for j in objects if j < i and own[j][0] == LEAKING)  # type: ignore[index]
            held = f"{names[before]}↑ is leaking"
            labelled[i] = (LEAKING, _joined(held, status, reason, LEAKING))
    suspects: tuple[int, ...] = ()
    if first_leaking is not None:
        start = max(last_not, objects[0]) if objects else 0
        suspects = tuple(range(start, first_leaking))
    labels = tuple(
        Label("", "") if s is None else Label(s[0], s[1], statuses[i].labels)  # type: ignore[union-attr]
        for i, s in enumerate(labelled)
    )
    return PathLabels(labels, suspects)


def first_library_leak(
    evaluation: Evaluation, holders: Sequence[int | None], references: Sequence[str]
) -> LibraryLeak | None:
    """The first known library leak along a path: ``references[i]`` leads from ``holders[i - 1]``
    (None for the root and root groups, which hold no field) to the object after it."""
    for holder, name in zip(holders, references[1:], strict=False):
        found = None if holder is None else evaluation.library_leak(holder, name)
        if found is not None:
            return found
    return None


def library_note(leak: LibraryLeak) -> str:
    """How a why-alive path notes a known library leak on the object whose field it is."""
    return f"library leak: {leak.cls}.{leak.field}: {leak.reason}"


def _joined(held: str, status: str, reason: str, becomes: str) -> str:
    """A propagated reason: what it follows, then the object's own reason, agreeing or not."""
    if status == UNKNOWN or not reason:
        return held
    if status == becomes:
        return f"{held} and {reason}"
    return f"{held}. Conflicts with {reason}"


def short_name(type_name: str) -> str:
    """A class's simple name, as a propagated reason names it (``com.example.Main$1`` → ``Main$1``)."""
    return type_name.rsplit(".", 1)[-1]


def _python(type_name: str, text: str) -> Any:
    """A decoded value's text (heapdb.loader.values.decode) as Python compares it."""
    if type_name == "boolean":
        return text == "true"
    if type_name in ("byte", "short", "int", "long"):
        return int(text)
    if type_name in ("float", "double"):
        return float(text)
    return None  # a char: no rule compares one


def _java(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
