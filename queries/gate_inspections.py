"""The CI gate's inspection checks: what a candidate build wastes or leaks that its baseline did not,
from the inspections each load stored (docs/ci.md, "Inspections").

- ``duplicate-strings``: a string content whose copies waste at least ``min_bytes`` in the
  candidate and (nearly) nothing in the baseline, or whose waste grew by more than ``max_growth``.
  Contents are matched by their key (hashes and length), the same in every snapshot that holds them.
- ``detached-dom``: detached DOM trees held by a path (by signature, as the path checks) retaining at
  least ``min_bytes`` new in the candidate, or grown by more than ``max_growth``.
- ``unmounted-components``: a React component with unmounted fibers alive in the candidate and none
  in the baseline, whatever their bytes (a fiber retains little of what it leaks: React nulls its
  links), or whose unmounted fibers' bytes grew by more than ``max_growth``.
- ``duplicate-objects``: an object content (shape and values, or a primitive array's elements) whose
  copies waste at least ``min_bytes`` new in the candidate, or grown by more than ``max_growth``;
  matched by key (hashes and size), as strings are.
- ``collection-fill``: a collection type whose unused capacity (bytes of empty slots, summed over its
  collections) reaches ``min_bytes`` new in the candidate, or grew by more than ``max_growth``.
- ``lifecycle-leaks``: a group of Java objects past their lifecycle (by its suspect references'
  signature) in the candidate and not the baseline, whatever its bytes (one destroyed Activity is
  the leak), or grown by more than ``max_growth``. A group whose trace runs through a known library
  leak is reported apart (its ``known_leak``), as the rules' known leaks are, and never fails.
- ``held``: objects that event listeners, the console or closures alone keep alive, grouped per kind
  of holder by their first path's signature (as detached DOM is), retaining at least ``min_bytes``
  new in the candidate, or grown by more than ``max_growth``. A row is matched by its kind of holder
  and path signature: one path may be held by listeners and by closures, two rows.
- ``global-variables``: a global variable the program added (by its name) whose value retains at
  least ``min_bytes`` new in the candidate, or grown by more than ``max_growth``.
- ``react-hooks``: a React component (by its name) whose fibers retain at least ``min_bytes`` new in
  the candidate, or grown by more than ``max_growth``: memory by component, mounted or not.
- ``owners``: an owner of the first level (an npm package, a Java package, a Luau category...; by
  its name) whose objects retain at least ``min_bytes`` new in the candidate, or more than
  ``max_growth`` more: one package's growth fails the build.

Each compares what the loads kept (the 100 largest rows of each inspection, of each kind of holder
and of the globals, 50 groups of lifecycle leaks, every collection type), so a row below that cut
in the baseline counts as absent there. Each finding carries a signature
(:func:`inspection_signature`; detached DOM its path's), the same in every build that has the row,
by which the gate remembers it across builds. Pure: the answers come in, findings go out; :data:`CHECKS` says how each is asked.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from heapdb.loader.inspections import dom, fill, held, lifecycles, objects, react, react_hooks, strings
from heapdb.loader.inspections.dom import DetachedDom
from heapdb.loader.inspections.fill import CollectionFill
from heapdb.loader.inspections.held import CATEGORIES, TITLES
from heapdb.loader.inspections.held import Held as HeldAnswer
from heapdb.loader.inspections.lifecycles import SUSPECT_SEPARATOR, LifecycleLeaks
from heapdb.loader.inspections.objects import DuplicateObjects
from heapdb.loader.inspections.react import UnmountedFibers
from heapdb.loader.inspections.react_hooks import ComponentHooks
from heapdb.loader.inspections.strings import DuplicateStrings
from heapdb.loader.owners import table as owner_table
from heapdb.loader.owners.table import OTHERS, OwnerTable
from heapdb.queries import params
from heapdb.queries.results import GateFinding, ObjectRef

_MASK63 = (1 << 63) - 1


@dataclass(frozen=True)
class Held:
    """One row of an inspection, as the gate compares it across builds."""

    key: str | int
    path: str
    type: str
    objects: int
    size: int  # the bytes the check compares
    example_id: int | None  # None: no object stands for the row (a collection type without listed members)
    # A retainer path's signature (detached DOM) or a lifecycle leak group's own; None: its key's
    # (inspection_signature)
    signature: int | None = None
    hops: tuple[str, ...] = ()  # the path's hops, where the row is a path; else its path alone
    known_leak: str | None = None  # why it is known (a library leak): reported apart, never fails


def inspection_signature(check: str, key: str | int) -> int:
    """The leak signature of a row of ``check`` matched by ``key`` across builds: a 63-bit hash of
    both, so that a string content and a component of the same text stay apart."""
    digest = hashlib.blake2b(f"{check}\n{key}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK63


def _strings(answer: DuplicateStrings) -> Iterable[Held]:
    for r in answer.rows:
        yield Held(r.key, r.value, "(string)", r.count, r.wasted, r.example_id)


def _dom(answer: DetachedDom) -> Iterable[Held]:
    for g in answer.groups:
        hops = tuple(g.path.split(" / "))
        yield Held(g.signature, g.path, g.type, g.trees, g.retained_size, g.example_id, g.signature, hops)


def _components(answer: UnmountedFibers) -> Iterable[Held]:
    for r in answer.rows:
        yield Held(r.component, r.component, r.component, r.fibers, r.retained_size, r.example_id)


def _objects(answer: DuplicateObjects) -> Iterable[Held]:
    for r in answer.rows:
        yield Held(r.key, f"{r.type} {r.value}", r.type, r.count, r.wasted, r.example_id)


def _fill(answer: CollectionFill) -> Iterable[Held]:
    # A type's example: its member with the most unused bytes, where the load listed one.
    example: dict[str, int] = {}
    for r in answer.rows:
        example.setdefault(r.type, r.id)
    for t in answer.types:
        if t.wasted > 0:
            yield Held(t.type, t.type, t.type, t.count, t.wasted, example.get(t.type))


def _lifecycles(answer: LifecycleLeaks) -> Iterable[Held]:
    for g in answer.groups:
        hops = tuple(g.suspects.split(SUSPECT_SEPARATOR)) if g.suspects else (g.types[0],)
        known = f"known library leak, through {g.library_reference}: {g.library_leak}" if g.library_leak else None
        path = g.suspects or f"{g.types[0]} (no suspect reference)"
        yield Held(g.signature, path, g.types[0], g.objects, g.retained_size, g.example_id, g.signature, hops, known)


def _held(answer: HeldAnswer) -> Iterable[Held]:
    # Keyed by kind of holder and path signature, not the signature alone: the signature of a path
    # that listeners and closures both hold would be two rows' (and the path check's own), so the
    # leak signature is the key's hash and the history reads this inspection, not the :PathGroup.
    for category in CATEGORIES:
        for g in getattr(answer, category).groups:
            hops = tuple(g.path.split(" / "))
            path = f"[{TITLES[category]}] {g.path}"
            yield Held(
                f"{category} {g.signature}", path, g.type, g.outermost, g.retained_size, g.example_id, None, hops
            )


def _globals(answer: HeldAnswer) -> Iterable[Held]:
    # A name two global objects both have (a page and its iframe's window) is one row: their values
    # summed, the largest value its example (the globals come largest first).
    by_name: dict[str, Held] = {}
    for v in answer.globals:
        had = by_name.get(v.name)
        if had is None:
            by_name[v.name] = Held(v.name, v.name, v.type, 1, v.retained_size, v.id)
        else:
            by_name[v.name] = dataclasses.replace(had, objects=had.objects + 1, size=had.size + v.retained_size)
    yield from by_name.values()


def _hooks(answer: ComponentHooks) -> Iterable[Held]:
    for r in answer.rows:  # example 0: no fiber of the component has hooks to show
        yield Held(r.component, r.component, r.component, r.instances, r.retained_size, r.example_id or None)


def _owners(answer: OwnerTable) -> Iterable[Held]:
    level = answer.level(None)
    if level is None:
        return
    for r in level.rows:
        if r.name != OTHERS:  # a sum of the owners past the cut: no one owner's
            yield Held(r.name, f"[{level.level}] {r.name}", r.name, r.objects, r.retained_size, r.example_id)


@dataclass(frozen=True)
class Check:
    """One inspection check: what its findings are called (``GateFinding.kind``), how its stored
    answer is asked (the question's method and its parameters: every row the load kept) and turned
    into rows, and how a row counts as there."""

    kind: str
    question: str  # the method of heapdb.queries.single.SnapshotQuestions that reads the stored answer
    asked: params.Params
    rows: Callable[[Any], Iterable[Held]]
    new_at_one: bool = False  # one object more is the leak, whatever its bytes: its first row fails
    path_rows: bool = False  # its rows are retainer paths, their signature the path's (a :PathGroup)


# Every inspection check by name, in the order the gate and `diff --by inspection` report them.
# ``held`` and ``global-variables`` read one stored answer: the holders' groups and the globals.
CHECKS: dict[str, Check] = {
    "duplicate-strings": Check("duplicate-string", "strings", params.Strings(limit=strings.KEPT), _strings),
    "detached-dom": Check("detached-dom", "dom", params.Dom(limit=dom.KEPT), _dom, path_rows=True),
    "unmounted-components": Check(
        "unmounted-component", "react", params.React(limit=react.KEPT), _components, new_at_one=True
    ),
    "duplicate-objects": Check("duplicate-object", "dup_objects", params.DupObjects(limit=objects.KEPT), _objects),
    "collection-fill": Check("collection-fill", "fill", params.Fill(limit=fill.KEPT), _fill),
    "lifecycle-leaks": Check(
        "lifecycle-leak", "lifecycles", params.Lifecycles(limit=lifecycles.KEPT), _lifecycles, new_at_one=True
    ),
    "held": Check("held", "held", params.Held(limit=held.KEPT), _held),
    "global-variables": Check("global-variable", "held", params.Held(limit=held.KEPT), _globals),
    "react-hooks": Check("component-memory", "react_hooks", params.ReactHooks(limit=react_hooks.KEPT), _hooks),
    "owners": Check("owner-growth", "owners", params.Owners(limit=owner_table.KEPT), _owners),
}


def rows(check: str, answer: Any) -> dict[int, Held]:
    """The rows of ``check``'s stored ``answer`` by their leak signature (see :class:`Held`)."""
    return {signature_of(check, h): h for h in CHECKS[check].rows(answer)}


def signature_of(check: str, held: Held) -> int:
    """A row's leak signature: its path's or its group's where it has one, else its key's hash."""
    return held.signature if held.signature is not None else inspection_signature(check, held.key)


def findings(
    check: str,
    before: Any,
    after: Any,
    *,
    min_bytes: int,
    noise: int,
    growth_bytes: int,
    tag: str,
) -> list[GateFinding]:
    """The findings of one inspection ``check`` between the baseline's answer ``before`` and the
    candidate's ``after`` (each its inspection's stored answer), largest first."""
    # A component or lifecycle leak is one object more (its group present at all); the others are
    # bytes past the floor.
    at_one = CHECKS[check].new_at_one
    had = rows(check, before)
    found = []
    for sig, h in rows(check, after).items():
        old = had.get(sig)
        size_before = old.size if old is not None else 0
        there = (old is not None and old.objects > 0) if at_one else size_before >= noise
        new = not there and (at_one or h.size >= min_bytes)
        grew = there and h.size - size_before > growth_bytes
        if not (new or grew):
            continue
        found.append(
            GateFinding(
                kind=CHECKS[check].kind,
                signature=sig,
                path=h.path,
                hops=list(h.hops or (h.path,)),
                type=h.type,
                objects_before=old.objects if old is not None else 0,
                objects_after=h.objects,
                bytes_before=size_before,
                bytes_after=h.size,
                why=None if h.example_id is None else ObjectRef(tag, h.example_id),
                known_leak=h.known_leak,
            )
        )
    return sorted(found, key=lambda f: (-f.growth, f.path))
