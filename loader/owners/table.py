"""Memory by owner as a table: what a load stores on its snapshot, what `heapdb owners` answers and
`heapdb analyze --owners` prints, and its text. The types and the text import nothing heavy (the
questions read them); working a table out imports the attribution and its kernels on first use.

A load keeps every level's rows, up to :data:`KEPT` per level (largest retained first); the rest of
a level is summed into one ``(others)`` row, so a level's self sizes still add up to the heap.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from heapdb.units import human_bytes

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis, Figures
    from heapdb.loader.graph import HeapGraph
    from heapdb.loader.owners.attribution import OwnerLevel, Owners

KEPT = 500  # rows per level a load keeps (a Node app has hundreds of files, a JVM hundreds of packages)
TYPES_KEPT = 10  # types kept per owner of the first level (a Luau category's, as heapgraph.py filters one)
OTHERS = "(others)"
TYPES_SHOWN = 3  # types the text shows under each owner (--json: every one kept)


@dataclass(frozen=True)
class OwnerType:
    """One type among one owner's objects: the owner's objects of that type, counted as the owner's are."""

    type: str
    objects: int
    self_size: int
    retained_size: int  # the retained sizes of the owner's outermost objects of the type


@dataclass(frozen=True)
class OwnerRow:
    """One owner: its reached objects and what they hold."""

    name: str
    objects: int
    self_size: int  # its objects' self sizes: each byte of the heap is one owner's per level
    retained_size: int  # its outermost members' retained sizes (no member of it dominates them)
    example_id: int | None  # its member retaining most (None for "(others)"): pass it to `why`
    # The first level only: its TYPES_KEPT types retaining most, largest first (other levels: empty).
    types: tuple[OwnerType, ...] = ()


@dataclass(frozen=True)
class OwnerLevelRows:
    level: str  # "package", "file", "category", "class loader", "namespace", "module", "library"
    owners: int  # how many owners the level has, those summed into "(others)" included
    rows: tuple[OwnerRow, ...]  # largest retained first


@dataclass(frozen=True)
class OwnerTable:
    """Memory by owner of one snapshot, at each level its format gives (none: it names no owner)."""

    source: str
    levels: tuple[OwnerLevelRows, ...]

    def as_stored(self) -> dict[str, Any]:
        return {"levels": [asdict(lv) for lv in self.levels]}

    @classmethod
    def from_stored(cls, source: str, stored: dict[str, Any]) -> OwnerTable:
        levels = tuple(
            OwnerLevelRows(lv["level"], int(lv["owners"]), tuple(_row(r) for r in lv["rows"]))
            for lv in stored.get("levels", [])
        )
        return cls(source, levels)

    def level(self, name: str | None) -> OwnerLevelRows | None:
        """The level called ``name`` (None: the first, coarsest), None where there is no such level."""
        if name is None:
            return self.levels[0] if self.levels else None
        return next((lv for lv in self.levels if lv.level == name), None)

    def limited(self, level: str | None, limit: int) -> OwnerTable:
        """Only ``level`` (None: every level), each with its ``limit`` largest rows."""
        chosen = self.levels if level is None else tuple(lv for lv in self.levels if lv.level == level)
        return OwnerTable(self.source, tuple(OwnerLevelRows(lv.level, lv.owners, lv.rows[:limit]) for lv in chosen))


def _row(stored: dict[str, Any]) -> OwnerRow:
    types = tuple(OwnerType(**t) for t in stored.get("types", ()))
    return OwnerRow(**{**stored, "types": types})


def owners_table(
    source: str,
    graph: HeapGraph,
    result: Analysis,
    rule_bucket: np.ndarray | None = None,
    rule_bucket_names: tuple[str, ...] = (),
) -> OwnerTable:
    """A file's owners worked out and tabled, as `heapdb analyze --owners` shows them (the rules'
    buckets first, where given)."""
    from heapdb.loader.owners.attribution import owners_of

    found = owners_of(graph, result, rule_bucket=rule_bucket, rule_bucket_names=rule_bucket_names)
    return owner_table(source, graph, result, found)


def owner_table(source: str, graph: HeapGraph, result: Analysis, owners: Owners) -> OwnerTable:
    """Every level's rows, as a load keeps them; the first level's with their types."""
    from heapdb.loader.analysis import dominator_tree, group_figures

    if not owners.levels:
        return OwnerTable(source, ())
    tree = dominator_tree(result.idom)
    figures = [group_figures(result, lv.owner, len(lv.names), tree) for lv in owners.levels]
    pairs, keys, width, type_codes = _owner_type_pairs(graph, owners.levels[0])
    types = _owner_types(graph, group_figures(result, pairs, keys.shape[0], tree), keys, width, type_codes)
    return OwnerTable(
        source,
        tuple(
            _level_rows(graph, lv, found, types if k == 0 else {})
            for k, (lv, found) in enumerate(zip(owners.levels, figures, strict=True))
        ),
    )


def _level_rows(
    graph: HeapGraph, level: OwnerLevel, figures: Figures, types: dict[int, tuple[OwnerType, ...]]
) -> OwnerLevelRows:
    objects, own, retained, best = figures
    rows = [
        OwnerRow(
            level.names[k],
            int(objects[k]),
            int(own[k]),
            int(retained[k]),
            int(graph.ids[best[k]]),
            types.get(k, ()),
        )
        for k in np.flatnonzero(objects).tolist()
    ]
    rows.sort(key=lambda r: (-r.retained_size, r.name))
    kept, rest = rows[:KEPT], rows[KEPT:]
    if rest:
        # Owners past the cut are summed: objects and self sizes add up; retained sizes may overlap
        # across owners (one's objects can hold another's), so theirs is a sum, not a union.
        kept.append(
            OwnerRow(
                OTHERS,
                sum(r.objects for r in rest),
                sum(r.self_size for r in rest),
                sum(r.retained_size for r in rest),
                None,
            )
        )
    return OwnerLevelRows(level.level, len(rows), tuple(kept))


# Pairs of (owner, type) counted in place up to this many; past it (thousands of packages times
# thousands of classes) they are numbered by a sort first.
_DENSE_PAIRS = 1 << 20


def _owner_type_pairs(graph: HeapGraph, level: OwnerLevel) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Each counted object's (owner, type) pair as a group number (-1 for none), the pairs' keys
    (owner * width + the type's dense number), the width and the types' string positions."""
    member = level.owner >= 0
    # The types present, numbered densely by a table over the string positions (no sort).
    type_codes = np.flatnonzero(np.bincount(graph.type[member], minlength=len(graph.strings)))
    dense = np.zeros(len(graph.strings), dtype=np.int64)
    dense[type_codes] = np.arange(type_codes.shape[0])
    width = type_codes.shape[0]
    pair = np.full(graph.node_count, -1, dtype=np.int64)
    pair[member] = level.owner[member].astype(np.int64) * width + dense[graph.type[member]]
    # (numbered below 2**31 either way: at most _DENSE_PAIRS, else as many as there are objects)
    if len(level.names) * width <= _DENSE_PAIRS:
        return pair, np.arange(len(level.names) * width, dtype=np.int64), width, type_codes
    keys, inverse = np.unique(pair[member], return_inverse=True)
    pair[member] = inverse.reshape(-1)
    return pair, keys, width, type_codes


def _owner_types(
    graph: HeapGraph, figures: Figures, keys: np.ndarray, width: int, type_codes: np.ndarray
) -> dict[int, tuple[OwnerType, ...]]:
    """Per owner, its TYPES_KEPT types retaining most, counted as owners are (outermost members)."""
    objects, own, retained, _best = figures
    found: dict[int, list[OwnerType]] = {}
    for g in np.flatnonzero(objects).tolist():
        owner, t = divmod(int(keys[g]), width)
        found.setdefault(owner, []).append(
            OwnerType(graph.strings[int(type_codes[t])], int(objects[g]), int(own[g]), int(retained[g]))
        )
    return {k: tuple(sorted(v, key=lambda t: (-t.retained_size, t.type))[:TYPES_KEPT]) for k, v in found.items()}


def owners_text(answer: OwnerTable) -> str:
    """The table as `heapdb owners` and `heapdb analyze --owners` print it: each level, largest first."""
    if not answer.levels:
        return f"Memory by owner in {answer.source}: its format names no owners"
    lines = [f"Memory by owner in {answer.source}"]
    for lv in answer.levels:
        lines.append(f"  by {lv.level} ({lv.owners:,} owners):")
        lines.append(f"  {'retained':>10}  {'self':>10}  {'objects':>10}  {lv.level}")
        for r in lv.rows:
            lines.append(_line(r.retained_size, r.self_size, r.objects, r.name))
            lines.extend(_line(t.retained_size, t.self_size, t.objects, f"  {t.type}") for t in r.types[:TYPES_SHOWN])
    return "\n".join(lines)


def _line(retained: int, self_size: int, objects: int, label: str) -> str:
    return f"  {human_bytes(retained):>10}  {human_bytes(self_size):>10}  {objects:>10,}  {label}"
