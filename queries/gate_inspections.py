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

Each compares what the loads kept (the 100 largest rows of each inspection), so a content or path
below that cut in the baseline counts as absent there. Pure: the answers come in, findings go out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from heapdb.loader.inspections.dom import DetachedDom
from heapdb.loader.inspections.react import UnmountedFibers
from heapdb.loader.inspections.strings import DuplicateStrings
from heapdb.queries.results import GateFinding, ObjectRef

# What each inspection check's findings are called (GateFinding.kind), by the check's name.
INSPECTION_KINDS = {
    "duplicate-strings": "duplicate-string",
    "detached-dom": "detached-dom",
    "unmounted-components": "unmounted-component",
}


@dataclass(frozen=True)
class Held:
    """One row of an inspection, as the gate compares it across builds."""

    key: str | int
    path: str
    type: str
    objects: int
    size: int  # the bytes the check compares
    example_id: int
    signature: int | None = None


def _strings(answer: DuplicateStrings) -> Iterable[Held]:
    for r in answer.rows:
        yield Held(r.key, r.value, "(string)", r.count, r.wasted, r.example_id)


def _dom(answer: DetachedDom) -> Iterable[Held]:
    for g in answer.groups:
        yield Held(g.signature, g.path, g.type, g.trees, g.retained_size, g.example_id, signature=g.signature)


def _components(answer: UnmountedFibers) -> Iterable[Held]:
    for r in answer.rows:
        yield Held(r.component, r.component, r.component, r.fibers, r.retained_size, r.example_id)


_ROWS: dict[str, Callable[[Any], Iterable[Held]]] = {
    "duplicate-strings": _strings,
    "detached-dom": _dom,
    "unmounted-components": _components,
}


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
    rows = _ROWS[check]
    # A component leak is one fiber more; the others are bytes past the floor.
    floor, absent = (1, 1) if check == "unmounted-components" else (min_bytes, noise)
    had = {h.key: h for h in rows(before)}
    found = []
    for h in rows(after):
        old = had.get(h.key)
        size_before = old.size if old is not None else 0
        new = size_before < absent and h.size >= floor
        grew = size_before >= absent and h.size - size_before > growth_bytes
        if not (new or grew):
            continue
        found.append(
            GateFinding(
                kind=INSPECTION_KINDS[check],
                signature=h.signature,
                path=h.path,
                hops=h.path.split(" / ") if h.signature is not None else [h.path],
                type=h.type,
                objects_before=old.objects if old is not None else 0,
                objects_after=h.objects,
                bytes_before=size_before,
                bytes_after=h.size,
                why=ObjectRef(tag, h.example_id),
            )
        )
    return sorted(found, key=lambda f: (-f.growth, f.path))
