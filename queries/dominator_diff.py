"""What grew along the dominator tree between two builds (``heapdb diff A B --by dominator``).

Objects of two snapshots are matched by their place in the dominator tree, not by id: an object's
*signature* is the sequence of types along its chain of immediate dominators, from the root's child
down to the object itself (the root left out). Objects with one signature form a *group*; a group's
members all lie at the same depth of the tree, so no member dominates another and their subtrees
are disjoint: the group retains the sum of its members' retained sizes, each byte once. Two builds'
groups with the same signature are the same place of the tree, whatever the objects' ids.

The groups form a tree of their own (a group's parent is the group of its members' dominators), and
the answer walks it level by level: the child groups of one group (the root's at first), before and
after, largest retained growth first, each with its largest members in the newer build; a row's key
drills into it. The one-line answer follows the child that grew most while it carries most of its
parent's growth (:func:`concentration`).

Each snapshot is read once as columns (stored query ``dominator-columns``) and grouped here with
numpy by path keys worked out for every object at once (:func:`path_keys_of`, by pointer jumping,
so a tree a million levels deep costs some twenty passes, not a million), checked to be exact
(:meth:`DominatorGroups.build`); the service keeps the groups, so drilling further reads nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heapdb.errors import ParameterError
from heapdb.queries.results import ObjectRef, Sample

PATH_SEPARATOR = " > "  # between the types of a group's path, as a person writes it for --under
KEY_DIGITS = 16  # a group's key: 64 bits of its path, as hex
_KEY = re.compile(rf"[0-9a-f]{{{KEY_DIGITS}}}")
# A path's key is a polynomial in its types' hashes, mod 2**64 (uint64 arithmetic wraps): a child's
# key is its parent's times this odd number plus its own type's hash.
_BASE = np.uint64(0x9E3779B97F4A7C15)


def _type_hash(name: str) -> int:
    """A type name's 64 bits, the same in every process (Python's ``hash`` of a str is salted)."""
    return int.from_bytes(hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def path_key(hops: Sequence[str]) -> str:
    """The key of the group with this path (the root's: the empty path), as :class:`DominatorGroups` gives it."""
    key = 0
    for name in hops:
        key = (key * int(_BASE) + _type_hash(name)) % 2**64
    return f"{key:0{KEY_DIGITS}x}"


@dataclass(frozen=True)
class DominatorColumns:
    """A snapshot's dominator tree as arrays: every object the root reaches, the root included.
    ``type`` indexes ``type_names``; ``parent`` is the index of the immediate dominator, -1 at the root."""

    ids: np.ndarray
    type: np.ndarray
    type_names: list[str]
    parent: np.ndarray
    self_size: np.ndarray
    retained_size: np.ndarray

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[object]]) -> DominatorColumns:
        """From ``[id, type, dom, self_size, retained_size]`` rows (stored query ``dominator-columns``),
        where the root names itself as its dominator."""
        ids, types, doms, self_sizes, retained = zip(*rows) if rows else ((), (), (), (), ())
        code: dict[object, int] = {}
        type_codes = np.fromiter((code.setdefault(t, len(code)) for t in types), dtype=np.int64, count=len(types))
        return cls.from_arrays(
            np.array(ids, dtype=np.int64),
            type_codes,
            [str(t) for t in code],
            np.array(doms, dtype=np.int64),
            np.array(self_sizes, dtype=np.int64),
            np.array(retained, dtype=np.int64),
        )

    @classmethod
    def from_arrays(
        cls,
        ids: np.ndarray,
        types: np.ndarray,
        type_names: list[str],
        dom: np.ndarray,
        self_size: np.ndarray,
        retained_size: np.ndarray,
    ) -> DominatorColumns:
        """From ids and immediate dominators' ids (the root's its own)."""
        if ids.size == 0:
            raise ParameterError("by dominator: the snapshot has no dominator tree (no object is reached)")
        order = np.argsort(ids, kind="stable")
        at = order[np.minimum(np.searchsorted(ids[order], dom), ids.size - 1)]
        if not np.array_equal(ids[at], dom):
            raise ParameterError("by dominator: the stored dominator tree names a dominator it does not hold")
        parent = np.where(at == np.arange(ids.size), -1, at)
        if int((parent < 0).sum()) != 1:
            raise ParameterError("by dominator: the stored dominator tree does not have exactly one root")
        return cls(ids, types, type_names, parent, self_size, retained_size)

    @property
    def nbytes(self) -> int:
        return (
            self.ids.nbytes + self.type.nbytes + self.parent.nbytes + self.self_size.nbytes + self.retained_size.nbytes
        )


def path_keys_of(columns: DominatorColumns) -> np.ndarray:
    """Every object's path key (:func:`path_key` of its signature), by pointer jumping: log2(height)
    passes over the arrays rather than one step per level of the tree. ``jump`` is an ancestor of
    each object, ``key`` the key of the steps from below ``jump`` down to the object, ``power`` the
    base to the number of those steps."""
    parent = columns.parent
    root = int(np.flatnonzero(parent < 0)[0])
    hashes = np.array([_type_hash(t) for t in columns.type_names], dtype=np.uint64)
    key = hashes[columns.type]
    key[root] = 0  # the root is no step of a path
    power = np.full(parent.size, _BASE, dtype=np.uint64)
    power[root] = 1
    jump = np.where(parent < 0, root, parent)
    for _ in range(64):  # each pass doubles the steps covered: 64 cover any tree, a cycle never ends
        if np.all(jump == root):
            return key
        key = key + power * key[jump]
        power = power * power[jump]
        jump = jump[jump]
    raise ParameterError("by dominator: the stored dominator tree has a cycle")


def _classes(*columns: np.ndarray) -> np.ndarray:
    """Per row, a number shared by exactly the rows equal in every column (0, 1, 2... in sorted order)."""
    order = np.lexsort(columns[::-1])
    differs = np.zeros(order.size, dtype=bool)
    for column in columns:
        differs[1:] |= column[order][1:] != column[order][:-1]
    out = np.empty(order.size, dtype=np.int64)
    out[order] = np.cumsum(differs)
    return out


@dataclass(frozen=True)
class DominatorGroups:
    """A snapshot's objects grouped by signature, and the groups' tree. ``order`` lists the groups
    by (parent, type), and ``ranks`` holds ``parent * len(type_names) + type`` in that order: a
    group's children are one slice of it, found by a binary search."""

    columns: DominatorColumns
    root: int  # the root's group (the root alone)
    group: np.ndarray  # per object: its group
    parent: np.ndarray  # per group: its parent group (-1 for the root's)
    type: np.ndarray  # per group: its members' type (an index of columns.type_names)
    key: np.ndarray  # per group: its path's key (uint64, see path_key)
    order: np.ndarray
    ranks: np.ndarray
    objects: np.ndarray
    self_size: np.ndarray
    retained_size: np.ndarray
    type_code: dict[str, int] = field(repr=False)

    @classmethod
    def build(cls, columns: DominatorColumns) -> DominatorGroups:
        """Objects with one path key are one group, unless two paths' keys collide: then refining the
        groups until every member of one has the same type and its parent in the same group (the
        root's parent: none) splits them, so that a group is exactly a signature, whatever the keys.
        Without a collision the first check finds every group whole, in one pass over the objects."""
        keys = path_keys_of(columns)
        group = np.unique(keys, return_inverse=True)[1].reshape(-1)
        has_parent = columns.parent >= 0
        while True:
            count = int(group.max()) + 1
            member = np.empty(count, dtype=np.int64)
            member[group] = np.arange(group.size)  # any member stands for its group
            above = np.where(has_parent, group[columns.parent], -1)  # the parent's group
            stands = member[group]
            if np.array_equal(columns.type, columns.type[stands]) and np.array_equal(above, above[stands]):
                break
            group = _classes(group, columns.type, above)
        parent = above[member]
        kind = columns.type[member]
        types = max(len(columns.type_names), 1)
        order = np.lexsort((kind, parent))
        return cls(
            columns=columns,
            root=int(group[np.flatnonzero(~has_parent)[0]]),
            group=group,
            parent=parent,
            type=kind,
            key=keys[member],
            order=order,
            ranks=parent[order] * types + kind[order],
            objects=np.bincount(group, minlength=count),
            self_size=_sums(group, columns.self_size, count),
            retained_size=_sums(group, columns.retained_size, count),
            type_code={name: i for i, name in enumerate(columns.type_names)},
        )

    @property
    def nbytes(self) -> int:
        """What the groups hold in memory, columns included, for a cache's byte budget."""
        arrays = (self.group, self.parent, self.type, self.key, self.order, self.ranks)
        sums = (self.objects, self.self_size, self.retained_size)
        return self.columns.nbytes + sum(a.nbytes for a in (*arrays, *sums))

    def children(self, g: int) -> np.ndarray:
        """The groups whose parent is ``g``."""
        types = max(len(self.columns.type_names), 1)
        low, high = np.searchsorted(self.ranks, [g * types, (g + 1) * types])
        return self.order[low:high]

    def child(self, g: int, type_name: str) -> int | None:
        """The child group of ``g`` of this type, if there is one."""
        code = self.type_code.get(type_name)
        if code is None:
            return None
        types = max(len(self.columns.type_names), 1)
        at = int(np.searchsorted(self.ranks, g * types + code))
        return int(self.order[at]) if at < self.ranks.size and int(self.ranks[at]) == g * types + code else None

    def find(self, hops: Sequence[str]) -> int | None:
        """The group with this path, if the snapshot has it (the root's: the empty path)."""
        g: int | None = self.root
        for name in hops:
            g = self.child(g, name) if g is not None else None
        return g

    def hops(self, g: int) -> list[str]:
        """The group's path: its types from the root's child down to its own."""
        out = []
        while self.parent[g] >= 0:
            out.append(self.columns.type_names[int(self.type[g])])
            g = int(self.parent[g])
        return out[::-1]

    def with_key(self, key: str) -> int | None:
        found = np.flatnonzero(self.key == np.uint64(int(key, 16)))
        return int(found[0]) if found.size else None

    def largest(self, g: int, count: int) -> np.ndarray:
        """Up to ``count`` members of the group retaining most (ties by id), as object indices."""
        members = np.flatnonzero(self.group == g)
        c = self.columns
        return members[np.lexsort((c.ids[members], -c.retained_size[members]))][:count]


def _sums(group: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    # bincount's float64 sums are exact up to 2**53 bytes, far beyond any heap.
    return np.rint(np.bincount(group, weights=values, minlength=count)).astype(np.int64)


@dataclass(frozen=True)
class DominatorGroup:
    """One place of the dominator tree in both builds: the objects whose chain of immediate dominators,
    from the root down to themselves, passes these types (``hops``)."""

    key: str  # the path's key: give it to --under to list the groups below this one
    hops: list[str]  # the types from the root's child down to the group's own (empty: the root)
    label: str  # the hops as text (joined by " > "), what --under also takes
    objects_before: int
    objects_after: int
    self_before: int  # the members' own sizes
    self_after: int
    retained_before: int  # what the members retain, each byte once (their subtrees are disjoint)
    retained_after: int
    below: int  # groups directly below it, in either build: 0 when there is nothing to drill into
    samples: list[Sample] = field(default_factory=list)  # its members retaining most, in the newer build
    objects_delta: int = field(init=False)
    self_delta: int = field(init=False)
    retained_delta: int = field(init=False)

    def __post_init__(self) -> None:
        # Stored fields rather than properties, so that the JSON form carries them too.
        object.__setattr__(self, "objects_delta", self.objects_after - self.objects_before)
        object.__setattr__(self, "self_delta", self.self_after - self.self_before)
        object.__setattr__(self, "retained_delta", self.retained_after - self.retained_before)


@dataclass(frozen=True)
class DominatorDiff:
    """A diff by dominator: the groups below one group (``under``), largest retained growth first."""

    before: str
    after: str
    by: str  # "dominator"
    under: DominatorGroup  # the group drilled into (at first the root, whose path is empty)
    trail: list[str]  # the keys of under's path, one per hop: the way back up
    changes: list[DominatorGroup]
    # Where the growth concentrates: from ``under`` down, the group below that grew most, while it
    # carries at least half its parent's growth (empty when no group below ``under`` does).
    concentration: list[DominatorGroup]
    split: list[DominatorGroup]  # where it stops: the groups below the last step (or ``under``) that grew most


@dataclass(frozen=True)
class Side:
    """One group's place in one snapshot (``g`` None where that snapshot has no such group)."""

    groups: DominatorGroups
    g: int | None

    def figures(self) -> tuple[int, int, int]:
        """Its objects, self size and retained size (zeros where the snapshot has no such group)."""
        if self.g is None:
            return 0, 0, 0
        return (
            int(self.groups.objects[self.g]),
            int(self.groups.self_size[self.g]),
            int(self.groups.retained_size[self.g]),
        )

    def by_type(self) -> dict[str, int]:
        """The groups directly below it, by type."""
        if self.g is None:
            return {}
        names = self.groups.columns.type_names
        return {names[int(self.groups.type[c])]: int(c) for c in self.groups.children(self.g)}


Pair = tuple[list[str], Side, Side]  # a group's path, and the group before and after


def resolve(old: DominatorGroups, new: DominatorGroups, under: str | None) -> list[str]:
    """The path ``under`` names: a group's key (from either build) or its types joined by " > "."""
    if under is None or under == path_key([]):
        return []
    if _KEY.fullmatch(under.lower()):
        for groups in (new, old):
            if (g := groups.with_key(under.lower())) is not None:
                return groups.hops(g)
    hops = under.split(PATH_SEPARATOR)
    if new.find(hops) is not None or old.find(hops) is not None:
        return hops
    raise ParameterError(
        f"by dominator: no group {under!r} in either snapshot: give a row's key, or its path of types joined by "
        f"{PATH_SEPARATOR.strip()!r}, from `heapdb diff BEFORE AFTER --by dominator`"
    )


def growth(pair: Pair) -> int:
    """How much more the group retains after than before."""
    return pair[2].figures()[2] - pair[1].figures()[2]


def place(old: DominatorGroups, new: DominatorGroups, hops: list[str]) -> Pair:
    return hops, Side(old, old.find(hops)), Side(new, new.find(hops))


def below(here: Pair, limit: int) -> list[Pair]:
    """The groups below ``here``, paired by type, largest retained growth first (then the larger
    count growth, then by type), at most ``limit``."""
    hops, a, b = here
    before, after = a.by_type(), b.by_type()
    rows = [
        ([*hops, t], Side(a.groups, before.get(t)), Side(b.groups, after.get(t)))
        for t in dict.fromkeys([*after, *before])
    ]
    rows.sort(key=lambda r: (-growth(r), -(r[2].figures()[0] - r[1].figures()[0]), r[0][-1]))
    return rows[:limit]


def concentration(here: Pair) -> list[Pair]:
    """From ``here`` down, where the growth concentrates: each step the group below that grew most,
    as long as it grew and carries at least half its parent's growth."""
    chain: list[Pair] = []
    while (largest := below(here, 1)) and growth(largest[0]) > 0 and 2 * growth(largest[0]) >= growth(here):
        here = largest[0]
        chain.append(here)
    return chain


def path_keys(hops: Sequence[str]) -> list[str]:
    """The keys of each step of a path: the way back up from its last group."""
    return [path_key(hops[: i + 1]) for i in range(len(hops))]


# A group's members' details (source location, allocation stack), by id: one read for every sample.
Details = Callable[[list[int]], dict[int, dict[str, Any]]]
SPLIT = 3  # groups named where the growth stops concentrating


def diff(
    before: str,
    after: str,
    old: DominatorGroups,
    new: DominatorGroups,
    under: str | None,
    limit: int,
    samples: int,
    details: Details,
) -> DominatorDiff:
    """The answer of ``diff --by dominator``: the groups below ``under``, where the growth
    concentrates, and where it splits."""
    here = place(old, new, resolve(old, new, under))
    rows = below(here, limit)
    chain = concentration(here)
    split = [r for r in below(chain[-1] if chain else here, SPLIT) if growth(r) > 0]
    picks = {tuple(r[0]): r[2].groups.largest(r[2].g, samples) for r in [*rows, *chain] if r[2].g is not None}
    c = new.columns
    found = details(sorted({int(c.ids[i]) for picked in picks.values() for i in picked}))

    def sample(i: int) -> Sample:
        known = found.get(int(c.ids[i]), {})
        return Sample(
            int(c.ids[i]),
            c.type_names[int(c.type[i])],
            int(c.self_size[i]),
            int(c.retained_size[i]),
            ObjectRef(after, int(c.ids[i])),
            location=known.get("location"),
            allocated_at=known.get("allocated_at"),
        )

    def group(pair: Pair) -> DominatorGroup:
        hops, a, b = pair
        (objects_before, self_before, retained_before), (objects_after, self_after, retained_after) = (
            a.figures(),
            b.figures(),
        )
        return DominatorGroup(
            key=path_key(hops),
            hops=hops,
            label=PATH_SEPARATOR.join(hops),
            objects_before=objects_before,
            objects_after=objects_after,
            self_before=self_before,
            self_after=self_after,
            retained_before=retained_before,
            retained_after=retained_after,
            below=len(a.by_type().keys() | b.by_type().keys()),
            samples=[sample(int(i)) for i in picks.get(tuple(hops), [])],
        )

    return DominatorDiff(
        before=before,
        after=after,
        by="dominator",
        under=group(here),
        trail=path_keys(here[0]),
        changes=[group(r) for r in rows],
        concentration=[group(r) for r in chain],
        split=[group(r) for r in split],
    )
