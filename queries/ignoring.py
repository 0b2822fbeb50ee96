"""Rule selectors as a question's ignore list: ``heapdb why TAG ID --ignore 'to.type = "system / Context"'``.

A selector is what a rule file's ``[[ignore]]`` table holds (``from``, ``edge``, ``to``; docs/rules.md,
"Selectors"), written on one line the way a TOML inline table's contents are:
``from.type = "Emitter", edge.name = { glob = "_*" }``. So a question's ignore and a team's rule are
read by the same parser and mean the same references.

One reference only: a ``path`` chain selects a reference by the graph around it, which the stored
answers cannot check hop by hop; chains belong in a rule file (``heapdb reanalyze --rules``).

A selector of exact patterns is checked by the stored query's search itself (:func:`exact_keys`).
The others (a glob, a regex) are checked by the questions that walk stored references
(:mod:`heapdb.queries.single`) on each hop of a path found, in Python with the rule engine's own
patterns, so a regex means what it means in a rule file; :class:`Avoiding` says what the next
search then leaves out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from itertools import product
from typing import Any

from heapdb.errors import ParameterError, RuleError
from heapdb.loader.graph import EDGE_KIND_NAMES
from heapdb.loader.rules import parse_rules
from heapdb.loader.rules.model import IgnoreRule, Match, ObjectSelector, PatternKind, ReferenceSelector
from heapdb.loader.store.listings import DroppedReferences
from heapdb.queries.results import ObjectInfo, Reference

# How the option is named in errors: the CLI's and the REST parameter's name.
OPTION = "--ignore"


@dataclass(frozen=True)
class IgnoreSelector:
    """One ``--ignore`` selector: its text as given and the references it selects."""

    text: str
    references: ReferenceSelector

    def matches(self, holder: ObjectInfo, reference: Reference, target: ObjectInfo) -> bool:
        """Whether the reference from ``holder`` to ``target`` is one the selector names."""
        (step,) = self.references.steps
        return (
            _object_matches(self.references.source, holder)
            and (step.name is None or step.name.matches(reference.name))
            and (step.kind is None or reference.kind in {EDGE_KIND_NAMES[k] for k in step.kind})
            and _object_matches(step.to, target)
        )


def _object_matches(selector: ObjectSelector | None, o: ObjectInfo) -> bool:
    if selector is None:
        return True
    fields = ((selector.type, o.type), (selector.name, o.name), (selector.kind, o.kind))
    return all(match is None or match.matches(value) for match, value in fields)


@lru_cache(maxsize=256)
def parse_ignore(text: str) -> IgnoreSelector:
    """``text`` as one selector; a :class:`~heapdb.errors.ParameterError` says what is wrong with it."""
    if not text.strip():
        raise ParameterError(f"{OPTION}: expected a selector such as 'to.type = \"Foo\"', got an empty text")
    if "\n" in text or "\r" in text:
        raise ParameterError(f"{OPTION} {text!r}: expected one line")
    try:
        rules = parse_rules(f"version = 1\nignore = [{{ {text} }}]\n", OPTION).rules
    except RuleError as e:
        problem = e.problem.removeprefix("ignore: ")
        raise ParameterError(f"{OPTION} {text!r}: {problem}") from None
    # The text sits inside one inline table, so anything that parses is one ignore rule; checked
    # anyway, since a text that closed the table early could otherwise add rules of its own.
    if len(rules) != 1 or not isinstance(rules[0], IgnoreRule):
        raise ParameterError(f"{OPTION} {text!r}: expected the keys of one reference (from, edge, to)")
    references = rules[0].references
    if len(references.steps) != 1:
        raise ParameterError(
            f"{OPTION} {text!r}: a question takes one reference (from, edge, to); "
            "a path chain belongs in a rule file (docs/rules.md)"
        )
    return IgnoreSelector(text, references)


def parse_all(texts: Sequence[str]) -> tuple[IgnoreSelector, ...]:
    return tuple(parse_ignore(t) for t in texts)


def first_match(
    selectors: Sequence[IgnoreSelector], holder: ObjectInfo, reference: Reference, target: ObjectInfo
) -> IgnoreSelector | None:
    return next((s for s in selectors if s.matches(holder, reference, target)), None)


# Searches one question may make, each leaving out what the selectors and the rules named on the
# last path found. Selectors the stored queries can check themselves (below) need none, and one
# search rules out every reference of a kind the selector names by its name, holder or target alone.
MAX_ROUNDS = 64


class Scope(StrEnum):
    """What a selector's verdict on a reference depends on, so that one hit rules out all of its kind."""

    REFERENCE = "reference"  # the reference's kind and name alone: every reference of that kind and name
    HOLDER = "holder"  # the holder alone: every reference out of that object
    TARGET = "target"  # the target alone: every reference into that object
    ALL = "all"  # several: this one reference


def scope(selector: IgnoreSelector) -> Scope:
    (step,) = selector.references.steps
    source, named = selector.references.source, step.name is not None or step.kind is not None
    if source is None and step.to is None:
        return Scope.REFERENCE
    if source is None and not named:
        return Scope.TARGET
    if step.to is None and not named:
        return Scope.HOLDER
    return Scope.ALL


@dataclass(frozen=True)
class Avoiding:
    """What a path must avoid. The stored query ``why-alive-avoiding`` checks ``names``, ``kinds``,
    ``kind_names`` (``"kind:name"``), ``types`` and ``ids`` as it searches (the target is exempt from
    ``types`` and ``ids``); ``cut_types`` are types whose every incoming reference a selector
    ignores (on the way the same as ``types``, but a target of one has no path at all). The
    ``selectors`` left, and the references the snapshot's rules drop (``dropped``), are checked on
    each path found (:meth:`learn`)."""

    names: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    ids: tuple[int, ...] = ()
    cut_types: tuple[str, ...] = ()
    selectors: tuple[IgnoreSelector, ...] = ()
    kinds: tuple[str, ...] = ()
    kind_names: tuple[str, ...] = ()
    # Selectors of exact patterns, as the stored query checks them (see :func:`exact_keys`); they
    # stay in ``selectors`` too, for the stored first path and the holders checked in Python.
    templates: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    # The references the snapshot's own rules keep from retaining, checked like the selectors.
    dropped: DroppedReferences | None = field(default=None, compare=False)

    def with_ids(self, ids: Sequence[int]) -> Avoiding:
        return replace(self, ids=(*self.ids, *ids))

    @property
    def searched(self) -> bool:
        """Whether the stored queries must search: lists they check themselves are given."""
        return bool(self.names or self.types or self.ids or self.cut_types or self.kinds or self.kind_names)

    def lists(self, reference: Reference) -> bool:
        """Whether the lists the search checks itself leave this reference out by its kind and name."""
        return (
            reference.name in self.names
            or reference.kind in self.kinds
            or f"{reference.kind}:{reference.name}" in self.kind_names
        )

    def skips(self, holder: ObjectInfo, reference: Reference, target: ObjectInfo) -> IgnoreSelector | bool:
        """Whether a path must not use this reference: the selector that names it, True when the
        rules drop it, else False."""
        if self.dropped is not None and self.dropped.contains(holder.id, target.id):
            return True
        return first_match(self.selectors, holder, reference, target) or False

    def learn(self, objects: Sequence[ObjectInfo], references: Sequence[Reference], hops: Sequence[int]) -> Learned:
        """What the search must leave out next, from the ``hops`` of a path that it must not use:
        everything a selector rules out along with such a hop (see :class:`Scope`), or the one
        reference. ``cut``: the object has no path at all (a target-only selector names a reference
        into it, or a holder-only one a reference out of the root)."""
        kind_names, ids, single = list(self.kind_names), list(self.ids), []
        cut = False
        for i in hops:
            holder, reference, target = objects[i], references[i], objects[i + 1]
            why = self.skips(holder, reference, target)
            kind = scope(why) if isinstance(why, IgnoreSelector) else Scope.ALL
            if kind is Scope.REFERENCE:
                kind_names.append(f"{reference.kind}:{reference.name}")
            elif kind is Scope.HOLDER:
                cut = cut or i == 0  # every reference out of the root: nothing is reached
                ids.append(holder.id)
            elif kind is Scope.TARGET:
                cut = cut or i + 1 == len(objects) - 1
                ids.append(target.id)
            else:
                single.append(i)
        learned = replace(self, kind_names=tuple(dict.fromkeys(kind_names)), ids=tuple(dict.fromkeys(ids)))
        return Learned(learned, single, cut)

    def query_parameters(self) -> dict[str, list[Any]]:
        """The lists the stored query ``retainers`` takes."""
        return {
            "ignore_names": list(self.names),
            "ignore_types": list(dict.fromkeys(self.types + self.cut_types)),
            "ignore_ids": list(self.ids),
        }

    def search_parameters(self) -> dict[str, list[Any]]:
        """The lists the stored query ``why-alive-avoiding`` takes (but ``ignore_refs``)."""
        return {
            **self.query_parameters(),
            "ignore_kinds": list(self.kinds),
            "ignore_kind_names": list(self.kind_names),
            "ignore_templates": list(self.templates),
            "ignore_keys": list(self.keys),
        }


@dataclass(frozen=True)
class Learned:
    avoiding: Avoiding
    single: list[int]  # hops to leave out one by one (by the reference's element id)
    cut: bool  # the path's last object has no path at all


def avoiding(
    names: Sequence[str],
    types: Sequence[str],
    ids: Sequence[int],
    texts: Sequence[str],
    dropped: DroppedReferences | None = None,
) -> Avoiding:
    """The ignore lists and selectors of a question. Selectors of exact reference names, of edge
    kinds, or of both, alone, and of exact target types alone (a cut type, see :class:`Avoiding`)
    become lists the stored query checks itself. The rest are checked on each path found."""
    names, cut, kinds, kind_names, rest = list(names), [], [], [], []
    templates: list[str] = []
    keys: list[str] = []
    for s in parse_all(texts):
        (step,) = s.references.steps
        bare = s.references.source is None and step.to is None
        edge_kinds = [] if step.kind is None else sorted(EDGE_KIND_NAMES[k] for k in step.kind)
        if bare and step.kind is None and _exact(step.name):
            assert step.name is not None
            names += [p.text for p in step.name.patterns]
        elif bare and step.name is None and edge_kinds:
            kinds += edge_kinds
        elif bare and edge_kinds and _exact(step.name):
            assert step.name is not None
            kind_names += [f"{k}:{p.text}" for k in edge_kinds for p in step.name.patterns]
        elif scope(s) is Scope.TARGET and step.to is not None and _type_only(step.to):
            assert step.to.type is not None
            cut += [p.text for p in step.to.type.patterns]
        else:
            rest.append(s)
            exact = exact_keys(s)
            if exact is not None:
                templates.append(exact[0])
                keys += exact[1]
    return Avoiding(
        names=tuple(dict.fromkeys(names)),
        types=tuple(types),
        ids=tuple(ids),
        cut_types=tuple(dict.fromkeys(cut)),
        selectors=tuple(rest),
        kinds=tuple(dict.fromkeys(kinds)),
        kind_names=tuple(dict.fromkeys(kind_names)),
        templates=tuple(dict.fromkeys(templates)),
        keys=tuple(dict.fromkeys(keys)),
        dropped=dropped,
    )


# The parts of a reference a selector names, in the order the stored query ``why-alive-avoiding``
# joins them into a key (``template`` + KEY_SEPARATOR + the parts' values, each after a separator).
KEY_PARTS = ("from.type", "from.name", "from.kind", "edge.name", "edge.kind", "to.type", "to.name", "to.kind")
KEY_SEPARATOR = "\x1f"  # the query's '\u001F': a character no type, name or kind holds
MAX_KEYS = 10_000  # keys of one selector (one per combination of its patterns); past it, checked hop by hop


def exact_keys(selector: IgnoreSelector) -> tuple[str, list[str]] | None:
    """A selector of exact patterns as its template (the parts it names, joined by ",") and the
    keys of the references it selects; None when a pattern is a glob or a regex, or for too many keys.

    The stored query builds the same key from each reference it follows and leaves out those in
    the list, so such a selector is checked during the search, whatever it names."""
    (step,) = selector.references.steps
    source, to = selector.references.source, step.to
    parts: dict[str, Match | None] = {"edge.name": step.name}
    for end, objects in (("from", source), ("to", to)):
        if objects is not None:
            parts |= {f"{end}.type": objects.type, f"{end}.name": objects.name, f"{end}.kind": objects.kind}
    values: dict[str, list[str]] = {}
    for part, match in parts.items():
        if match is None:
            continue
        if not _exact(match):
            return None
        values[part] = [p.text for p in match.patterns]
    if step.kind is not None:
        values["edge.kind"] = sorted(EDGE_KIND_NAMES[k] for k in step.kind)
    named = [part for part in KEY_PARTS if part in values]
    if not named or math.prod(len(values[part]) for part in named) > MAX_KEYS:
        return None
    template = ",".join(named)
    keys = [KEY_SEPARATOR.join((template, *combination)) for combination in product(*(values[p] for p in named))]
    return template, keys


def _type_only(selector: ObjectSelector) -> bool:
    return selector.name is None and selector.kind is None and _exact(selector.type)


def _exact(match: Match | None) -> bool:
    return match is not None and all(p.kind is PatternKind.EXACT for p in match.patterns)
