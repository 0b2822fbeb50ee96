"""Java and Android leak status: which objects are past their lifecycle, read from their fields.

LeakCanary's Shark labels each object on a leak trace LEAKING, NOT_LEAKING or UNKNOWN, with a
reason, from what it knows of well-known lifecycles (an Activity whose ``mDestroyed`` is true is
leaking; an Application never is). heapdb keeps that knowledge as rules (docs/rules.md): the
``[[lifecycle]]`` rules of the Java runtime's default rule set (``loader/rules/defaults/java.toml``)
and a team's own in its rule file or stored rule set, read after them. Each :class:`Inspector`
applies to the instances of a class and its subclasses, tests their fields, and says leaking, not
leaking or a note. The rule set's ``[[known_leak]]`` rules with a chain of references say which
references a library is known to leak through (LeakCanary's library leaks): a trace that runs
through one is a library leak (:func:`known_leak_on_path`).

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

Why this module is long: one object's status and a path's labels are one
decision read in one place (Shark's, re-expressed), and both the leak list of a graph and the
labels of a stored path call it, so that the two cannot disagree.

A reference field that is null has no reference in the graph, so ``"null"`` tests that no
reference of that name leaves the object; a rule only names fields its class declares, so a missing
field and a null one cannot be told apart and need not be.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from heapdb.loader.graph import EDGE_KIND_NAMES
from heapdb.loader.rules.model import FieldTest, KnownLeakRule, LifecycleRule, ObjectSelector, RuleSet, Step
from heapdb.loader.values import decode

LEAKING, NOT_LEAKING, UNKNOWN = "LEAKING", "NOT_LEAKING", "UNKNOWN"
STATUSES = {"leaking": LEAKING, "not_leaking": NOT_LEAKING, "label": UNKNOWN}  # a rule's word -> a status
CLASS_REFERENCE, SUPER_REFERENCE = "<class>", "<super>"  # the hprof reader's names (docs/analysis.md)
JAVA_RUNTIME = "java"  # the default rule set holding heapdb's own lifecycle rules
MAX_CHAIN = 64  # super classes followed at most: a malformed dump's cycle ends here


@dataclass(frozen=True)
class Inspector:
    """What one ``[[lifecycle]]`` rule says about the instances of ``cls`` (and of its subclasses)
    whose fields pass every test: ``status`` (LEAKING, NOT_LEAKING, or UNKNOWN for a note) for
    ``reason``."""

    cls: str
    status: str
    tests: tuple[FieldTest, ...]
    reason: str
    line: int  # where the rule starts in its file

    @classmethod
    def of(cls, rule: LifecycleRule) -> Inspector:
        return cls(rule.cls, STATUSES[rule.status], rule.tests, rule.reason, rule.line)

    @property
    def names(self) -> set[str]:
        """The reference and field names its tests read."""
        return {name for t in self.tests for name in t.path}


@dataclass(frozen=True)
class LibraryLeak:
    """A known leak a path runs through (a ``[[known_leak]]`` rule's chain of references, matched
    along the path): why, and where (``Holder.field``, the holder named by its class)."""

    reason: str
    reference: str
    link: str | None = None


@dataclass(frozen=True)
class Inspectors:
    """The lifecycle rules of a rule set, in file order (a team's first, then the defaults'), and
    its known leaks that name references (those a path can run through)."""

    rules: tuple[Inspector, ...]
    known_leaks: tuple[KnownLeakRule, ...] = ()

    @classmethod
    def of(cls, rules: RuleSet | None) -> Inspectors:
        """The enabled lifecycle rules and path known leaks of ``rules``; with no rules at all
        (``--rules none``), heapdb's own (:func:`default_inspectors`), as transient root groups
        stay deferred: without them a Java snapshot's leak list would say nothing."""
        if rules is None:
            return default_inspectors()
        return cls(
            tuple(Inspector.of(r) for r in rules.lifecycles),
            tuple(r for r in rules.known_leaks if r.path is not None),
        )

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
        return frozenset({CLASS_REFERENCE, SUPER_REFERENCE}.union(*(r.names for r in self.rules)))


def default_inspectors() -> Inspectors:
    """heapdb's own lifecycle rules and known leaks: the Java runtime's default rules."""
    from heapdb.loader.rules.defaults import default_rules

    return Inspectors.of(default_rules(JAVA_RUNTIME))


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

    def selects(self, selector: ObjectSelector | None, obj: int | None, kind: str) -> bool:
        """Whether a rule's object selector accepts ``obj`` (of node kind ``kind``; None: a root
        group, which only a missing selector or one on its kind and name accepts)."""
        if selector is None:
            return True
        this = None if obj is None else self.get(obj)
        type_name, name = ("", "") if this is None else (this.type, this.name)
        if obj is None and (selector.type is not None or selector.instance_of is not None):
            return False
        return (
            (selector.type is None or selector.type.matches(type_name))
            and (selector.name is None or selector.name.matches(name))
            and (selector.kind is None or selector.kind.matches(kind))
            and (
                selector.instance_of is None
                or obj is not None
                and any(selector.instance_of.matches(c) for c in self.classes(obj) or (type_name,))
            )
        )

    def holds(self, obj: int, test: FieldTest) -> bool:
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


@dataclass(frozen=True)
class PathStep:
    """One reference of a path, as a known leak's chain matches it: its name (an element's index in
    decimal), its kind's name (``property``...) and the node kind of the object it leads to."""

    name: str
    kind: str
    target_kind: str


def known_leaks_on_path(
    evaluation: Evaluation,
    objects: Sequence[int | None],
    first_kind: str,
    steps: Sequence[PathStep],
    holder_names: Sequence[str],
) -> Iterator[tuple[int, LibraryLeak]]:
    """The known leaks along a path: ``steps[i]`` leads from ``objects[i]`` (None for the root and
    root groups, which hold no field) to ``objects[i + 1]``; ``first_kind`` is ``objects[0]``'s node
    kind, ``holder_names`` the objects' class names for the answer. Each as the position where its
    chain starts and the leak, earliest along the path first; at each position the first rule in
    file order."""
    kinds = [first_kind, *(s.target_kind for s in steps)]
    for start in range(len(steps)):
        for rule in evaluation.inspectors.known_leaks:
            assert rule.path is not None
            chain = rule.path.steps
            end = start + len(chain)
            if end > len(steps) or not evaluation.selects(rule.path.source, objects[start], kinds[start]):
                continue
            held = all(
                _step_matches(evaluation, s, steps[start + j], objects[start + j + 1]) for j, s in enumerate(chain)
            )
            if held and evaluation.selects(rule.objects, objects[end], kinds[end]):
                names = "".join(_shown(s.name, s.kind) for s in steps[start:end])
                yield start, LibraryLeak(rule.reason, holder_names[start] + names, rule.link)
                break


def _step_matches(evaluation: Evaluation, rule: Step, step: PathStep, target: int | None) -> bool:
    if rule.name is not None and not rule.name.matches(step.name):
        return False
    if rule.kind is not None and not any(EDGE_KIND_NAMES[int(k)] == step.kind for k in rule.kind):
        return False
    return rule.to is None or evaluation.selects(rule.to, target, step.target_kind)


def _shown(name: str, kind: str) -> str:
    """A reference as a known leak's place names it: ``.field``, or ``[3]`` for an element."""
    return f"[{name}]" if kind in ("element", "hidden") else f".{name}"


def library_note(leak: LibraryLeak) -> str:
    """How a why-alive path notes a known library leak on the object whose field it is."""
    return f"library leak: {leak.reference}: {leak.reason}"


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
