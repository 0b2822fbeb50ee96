"""Duplicate strings: the string objects of a snapshot grouped by their whole content.

What counts, and how, is memlab's ``string`` analysis (``memlab analyze string``), so that its
answers are ours number for number (``tests/test_inspections_strings.py`` checks every group):

- the objects the format's :class:`~heapdb.loader.formats.protocol.StringKinds` calls plain or
  concatenated strings; not sliced strings, and not strings an object of a code kind dominates
  (the string itself included in the chain);
- a concatenation's content is its ``first`` part's followed by its ``second``'s, however the parts
  are split: ``"ab" + "c"`` and ``"a" + "bc"`` are one value;
- a Java string's content is its value array's characters (:mod:`.java_strings`), and only the
  strings the root reaches count;
- a group's size is the sum of its copies' retained sizes, and what the copies waste is that size
  times (count - 1) / count: all of it but one copy's share.

Contents are compared by hash, never rebuilt: a concatenation's hash is computed from its parts'
(a polynomial hash modulo two primes, with the length, composes over concatenation), so a
megabyte-long cons string costs what its tree does. Two different contents collide with odds of
about one in 2^61 per pair. Only the groups reported get their text, cut to ``chars`` characters.

Why this module is long: besides the strings' own rule it holds what the duplicate objects
(:mod:`.objects`) count the same way, on the same types: grouping by content hash, the rankings a
load keeps and reranks, and the owners of the copies. Apart, the two would each import the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np

from heapdb.loader.formats import StringKinds, named
from heapdb.loader.formats.text import redacted_parts
from heapdb.loader.graph import NAMES_CUT, NUMERIC_NAME_KINDS, HeapGraph
from heapdb.loader.inspections.common import first_targets, string_indexes
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:
    from heapdb.loader.analysis import Analysis


class _Row(Protocol):
    """A stored row of a duplicates report, as :func:`reranked_rows` orders it."""

    @property
    def wasted(self) -> int: ...

    @property
    def example_id(self) -> int: ...


R = TypeVar("R", bound=_Row)

# What a node is to the inspection and its kernels (heapdb.loader.inspections.kernels).
OTHER, PLAIN, CONCATENATED, SLICED = 0, 1, 2, 3


@dataclass(frozen=True)
class StringGroups:
    """The counted strings group by group, and each group's figures (indexed by group number)."""

    nodes: np.ndarray  # int64[c]: the counted strings, group after group, in node order within one
    starts: np.ndarray  # int64[g]: where each group's nodes start
    count: np.ndarray  # int64[g]: copies
    retained_size: np.ndarray  # int64[g]: the copies' retained sizes summed
    length: np.ndarray  # int64[g]: characters of the whole content
    hashes: np.ndarray  # int64[g, 2]: the content's two hashes (heapdb.loader.inspections.kernels)
    first: np.ndarray  # int32[g]: one copy, the node of the group's largest retained size (lowest id on ties)

    def key(self, g: int) -> str:
        """Group ``g``'s content key: equal in any snapshot that holds the same content."""
        return content_key(int(self.hashes[g, 0]), int(self.hashes[g, 1]), int(self.length[g]))

    @property
    def strings(self) -> int:
        """The string objects counted."""
        return int(self.count.sum())

    @property
    def string_bytes(self) -> int:
        """What they retain, summed."""
        return int(self.retained_size.sum())

    def wasted(self) -> np.ndarray:
        """float64[g]: what all copies but one retain, as memlab counts it (its ``dupSize``)."""
        return self.retained_size * (self.count - 1) / self.count

    @property
    def duplicated(self) -> int:
        """Copies beyond the first of each content (memlab's ``dupN``)."""
        return int((self.count - 1).sum())

    def members(self, g: int) -> np.ndarray:
        """The nodes of group ``g``, in node order."""
        return self.nodes[self.starts[g] : self.starts[g] + self.count[g]]


@dataclass(frozen=True)
class Contents:
    """Each object's part in its format's strings, and for a string, its whole content's two
    hashes and length in characters (zero for other objects)."""

    role: np.ndarray  # int8[n]: OTHER, PLAIN, CONCATENATED or SLICED
    h1: np.ndarray  # int64[n]
    h2: np.ndarray  # int64[n]
    length: np.ndarray  # int64[n]


def contents(graph: HeapGraph, kinds: StringKinds) -> Contents:
    """The content hashes of ``graph``'s strings, a concatenation's composed from its parts'."""
    if kinds.instances:  # Java: the characters are in value arrays, not in names
        from heapdb.loader.inspections.java_strings import java_contents

        return java_contents(graph, kinds)
    from heapdb.loader.inspections import kernels  # numba: only when a graph is inspected

    role = _roles(graph, kinds)
    first, second, parent = _parts(graph, role)
    needed = np.flatnonzero(role != OTHER)
    # A mask, not np.union1d: numpy's hashed unique took 0.7 s of a second on a 2.6M-node snapshot.
    named = np.zeros(graph.node_count, dtype=np.bool_)
    for nodes in (needed, first[first >= 0], second[second >= 0], parent[parent >= 0]):
        named[nodes] = True
    h1, h2, length = _name_hashes(graph, np.flatnonzero(named))
    h1, h2, length = kernels.content_hashes(role, first, second, parent, h1, h2, length)
    return Contents(role, h1, h2, length)


def content_key(h1: int, h2: int, length: int) -> str:
    """A content's key: equal in any snapshot that holds the same content."""
    return f"{h1:08x}{h2:08x}-{length}"


def key_parts(key: str) -> tuple[int, int, int]:
    """:func:`content_key`'s (h1, h2, length)."""
    hashes, _, length = key.partition("-")
    return int(hashes[:8], 16), int(hashes[8:], 16), int(length)


def string_groups(
    graph: HeapGraph, result: Analysis, kinds: StringKinds | None = None, found: Contents | None = None
) -> StringGroups | None:
    """Group ``graph``'s strings by content. None when its format declares no strings (``kinds``
    overrides the format's declaration; ``found``: their contents, when computed already)."""
    kinds = kinds or _kinds(graph)
    if kinds is None:
        return None
    from heapdb.loader.analysis import spread_down  # the kernels load numba: only when a graph is inspected

    found = found or contents(graph, kinds)
    role, h1, h2, length = found.role, found.h1, found.h2, found.length

    code = np.zeros(len(graph.node_kinds), dtype=np.bool_)
    code[_kind_indexes(graph, kinds.code)] = True
    under_code = spread_down(result, np.where(code[graph.kind], 0, -1).astype(np.int32)) >= 0
    counted = np.flatnonzero(((role == PLAIN) | (role == CONCATENATED)) & ~under_code)
    if kinds.instances:
        # Only what the root reaches, as the duplicate objects count (heapdb.loader.inspections.objects):
        # a Java dump's unreachable objects are garbage, not waste (V8's analysis hangs every object
        # below the root, and the other formats' strings stay counted as they were).
        counted = counted[result.reachable[counted]]
    return content_groups(counted, h1[counted], h2[counted], length[counted], result)


def content_groups(
    counted: np.ndarray, h1: np.ndarray, h2: np.ndarray, length: np.ndarray, result: Analysis
) -> StringGroups:
    """The objects ``counted`` grouped by their contents' hashes and lengths (``h1``, ``h2`` and
    ``length``: each object's, in the order of ``counted``): the strings here, and the duplicate
    objects (:mod:`.objects`) the same way."""
    # Both hashes in one key (h1 < 2^31, h2 < 2^30): a sort on two keys, not three, is half the time.
    order = np.lexsort((length, h1 * (1 << 30) + h2))
    counted, h1, h2, length = counted[order], h1[order], h2[order], length[order]
    new_key = np.ones(counted.size, dtype=np.bool_)
    new_key[1:] = (np.diff(length) != 0) | (np.diff(h1) != 0) | (np.diff(h2) != 0)
    starts = np.flatnonzero(new_key)
    number = (np.cumsum(new_key) - 1).astype(np.int32)
    retained = result.retained_size[counted]
    largest = _largest_per_group(number, retained, result.ids[counted])
    return StringGroups(
        nodes=counted,
        starts=starts,
        count=np.diff(np.append(starts, counted.size)).astype(np.int64),
        retained_size=np.add.reduceat(retained, starts) if counted.size else np.zeros(0, dtype=np.int64),
        length=length[starts],
        hashes=np.stack([h1[starts], h2[starts]], axis=1),
        first=counted[largest].astype(np.int32),
    )


def _kinds(graph: HeapGraph) -> StringKinds | None:
    """The strings ``graph``'s format declares; None for none, and for a graph read back from the
    store, whose names are cut (:data:`heapdb.loader.graph.NAMES_CUT`)."""
    declared = named(graph.meta.get("format"))
    return None if declared is None or graph.meta.get(NAMES_CUT) else declared.strings


def text_of(graph: HeapGraph, nodes: Sequence[int], chars: int | Sequence[int], kinds: StringKinds) -> list[str]:
    """The contents of the strings ``nodes``, each cut to ``chars`` characters (one number for all,
    or one per node)."""
    cuts = [chars] * len(nodes) if isinstance(chars, int) else chars
    if kinds.instances:
        from heapdb.loader.inspections.java_strings import java_texts

        return java_texts(graph, kinds, nodes, cuts)
    role = _roles(graph, kinds)
    return [_text(graph, role, int(node), int(cut)) for node, cut in zip(nodes, cuts, strict=True)]


def _text(graph: HeapGraph, role: np.ndarray, node: int, chars: int) -> str:
    """One string's content: a concatenation's parts are walked in order (iteratively: cons trees
    can be deep) until ``chars`` characters are found."""
    parts: list[str] = []
    have = 0
    stack = [node]
    # Parts may be shared (a + a), so nothing marks a node seen; a malformed file's cycle would
    # never end, so the walk stops after as many steps as a well-formed tree could take.
    steps = 2 * (graph.node_count + chars)
    while stack and have < chars and steps > 0:
        steps -= 1
        v = stack.pop()
        if role[v] in (CONCATENATED, SLICED):
            names = ("parent",) if role[v] == SLICED else ("second", "first")  # pushed right first
            for name in names:
                child = _named_edge(graph, v, name)
                if child >= 0:
                    stack.append(child)
            continue
        text = graph.strings[graph.name[v]]
        parts.append(text[: chars - have])
        have += len(parts[-1])
    return "".join(parts)


# --- the report ---------------------------------------------------------------------------------

VALUE_CHARS = 200  # characters of a duplicated content a report shows (and a load stores)
# What a report ranks its groups by, the default first: what all copies but one retain, what all of
# them retain (memlab's "top duplicated strings in size"), the number of copies (its "in count").
SORTS = ("wasted", "retained_size", "count")
OWNERS_SHOWN = 3  # a group's owner types listed, most copies first
KEPT = 100  # contents a load stores of each ranking: the stored question's largest limit


@dataclass(frozen=True)
class StringOwner:
    """The objects of one type that own copies of one content (the copies' immediate dominators:
    what would free them)."""

    type: str
    copies: int
    example_id: int  # the owner of most of those copies (lowest id on ties)


@dataclass(frozen=True)
class DuplicateString:
    """One content held in more than one string object."""

    key: str  # the content's hashes and length: the same in every snapshot that holds this content
    value: str  # cut to VALUE_CHARS characters
    length: int  # characters of the whole content
    count: int
    retained_size: int  # the copies' retained sizes summed
    wasted: int  # what all copies but one retain (count - 1 of count shares, rounded)
    example_id: int  # the largest copy: ask `why` about it
    owners: tuple[StringOwner, ...]  # the objects that own most copies


@dataclass(frozen=True)
class DuplicateStrings:
    """The duplicate strings of one snapshot: the totals over all its strings, and the most
    wasteful duplicated contents."""

    source: str
    strings: int  # string objects counted
    string_bytes: int  # what they retain
    duplicated: int  # copies beyond the first of each content
    wasted: int  # what those copies retain
    values: int  # distinct contents held more than once
    sort: str
    rows: tuple[DuplicateString, ...]


# The figures of DuplicateStrings over all strings (a load stores them on the :Snapshot).
STRING_TOTALS = ("strings", "string_bytes", "duplicated", "wasted", "values")


def duplicate_strings(
    graph: HeapGraph, result: Analysis, *, source: str, limit: int, sort: str = SORTS[0], found: Contents | None = None
) -> DuplicateStrings | None:
    """The ``limit`` duplicated contents first by ``sort`` (one of :data:`SORTS`), then by what they
    waste, then by example id; None when the format declares no strings (``found``: as
    :func:`stored_strings`)."""
    grouped = string_groups(graph, result, found=found)
    if grouped is None:
        return None
    return _report(graph, result, grouped, ranked(grouped, result.ids, sort)[:limit], source, sort)


def string_contents(graph: HeapGraph) -> Contents | None:
    """The contents of ``graph``'s strings as its format declares them (None: it declares none),
    for the inspections that read them: these, and the duplicate objects' values (:mod:`.objects`)."""
    kinds = _kinds(graph)
    return None if kinds is None else contents(graph, kinds)


def stored_strings(graph: HeapGraph, result: Analysis, found: Contents | None = None) -> DuplicateStrings | None:
    """What a load stores (:func:`reranked` answers from it): the totals, and the :data:`KEPT` first
    contents of every ranking, most wasted first (``found``: :func:`string_contents`, when computed
    already)."""
    grouped = string_groups(graph, result, found=found)
    if grouped is None:
        return None
    return _report(graph, result, grouped, kept_groups(grouped, result.ids), "", SORTS[0])


def kept_groups(grouped: StringGroups, ids: np.ndarray) -> np.ndarray:
    """The groups a load keeps: the :data:`KEPT` first of every ranking, most wasted first."""
    rankings = [ranked(grouped, ids, sort) for sort in SORTS]  # the first is by waste
    kept = np.isin(rankings[0], np.concatenate([ranking[:KEPT] for ranking in rankings]))
    return rankings[0][kept]


def reranked(stored: DuplicateStrings, *, source: str, limit: int, sort: str) -> DuplicateStrings:
    """A stored answer's first ``limit`` rows by ``sort``, in the order :func:`duplicate_strings`
    gives a file's (exact for a ``limit`` up to :data:`KEPT`)."""
    return dataclasses.replace(stored, source=source, sort=sort, rows=reranked_rows(stored.rows, limit, sort))


def reranked_rows(rows: Sequence[R], limit: int, sort: str) -> tuple[R, ...]:
    """Stored rows (with ``wasted``, ``example_id`` and the ``sort`` figure) in a ranking's order."""
    return tuple(sorted(rows, key=lambda r: (-getattr(r, sort), -r.wasted, r.example_id))[:limit])


def ranked(grouped: StringGroups, ids: np.ndarray, sort: str) -> np.ndarray:
    """The duplicated groups by ``sort``, then by what they waste (rounded, as a row says it), then
    by example id, so that a file's and a stored answer's orders agree."""
    duplicated = np.flatnonzero(grouped.count > 1)
    wasted = np.round(grouped.wasted()[duplicated])
    figure = {"wasted": wasted, "retained_size": grouped.retained_size[duplicated], "count": grouped.count[duplicated]}[
        sort
    ]
    return duplicated[np.lexsort((ids[grouped.first[duplicated]], -wasted, -figure))]


def _report(
    graph: HeapGraph, result: Analysis, grouped: StringGroups, order: np.ndarray, source: str, sort: str
) -> DuplicateStrings:
    kinds = _kinds(graph)
    assert kinds is not None  # string_groups found strings
    wasted = grouped.wasted()
    owners = owners_of(grouped, result, graph, order)
    values = text_of(graph, grouped.first[order].tolist(), VALUE_CHARS, kinds)
    rows = tuple(
        _as_redacted(
            DuplicateString(
                key=grouped.key(int(g)),
                value=values[i],
                length=int(grouped.length[g]),
                count=int(grouped.count[g]),
                retained_size=int(grouped.retained_size[g]),
                wasted=round(float(wasted[g])),
                example_id=int(graph.ids[grouped.first[g]]),
                owners=owners[i],
            )
        )
        for i, g in enumerate(order)
    )
    duplicated = grouped.count > 1
    return DuplicateStrings(
        source=source,
        strings=grouped.strings,
        string_bytes=grouped.string_bytes,
        duplicated=grouped.duplicated,
        wasted=round(float(wasted[duplicated].sum())),
        values=int(np.count_nonzero(duplicated)),
        sort=sort,
        rows=rows,
    )


def _as_redacted(row: DuplicateString) -> DuplicateString:
    """A row whose content is a redaction's placeholder (a file redacted before it was read) gets
    the length and hash the placeholder keeps: the figures a redacting load of the original gives."""
    parts = redacted_parts(row.value)
    if parts is None:
        return row
    length, digest = parts
    return dataclasses.replace(row, key=f"{digest}-{length}", length=length)


def owners_of(
    grouped: StringGroups, result: Analysis, graph: HeapGraph, groups: np.ndarray
) -> list[tuple[StringOwner, ...]]:
    """Per group of ``groups``, the types of its copies' immediate dominators with the most copies."""
    found = []
    for g in groups:
        idom = result.idom[grouped.members(int(g))]
        owners, copies = np.unique(idom[idom >= 0], return_counts=True)
        order = np.lexsort((graph.ids[owners], -copies))
        owners, copies = owners[order], copies[order]  # so that each type's first owner owns most
        # Per type in arrays: a group of 100,000 empty objects can have as many owners.
        types, first, inverse = np.unique(graph.type[owners], return_index=True, return_inverse=True)
        per_type = np.bincount(inverse, weights=copies).astype(np.int64)
        cut = np.sort(per_type)[-OWNERS_SHOWN] if per_type.size > OWNERS_SHOWN else 0
        named = [(-int(per_type[t]), graph.strings[int(types[t])], t) for t in np.flatnonzero(per_type >= cut).tolist()]
        found.append(
            tuple(
                StringOwner(type=name, copies=-minus, example_id=int(graph.ids[owners[first[t]]]))
                for minus, name, t in sorted(named)[:OWNERS_SHOWN]
            )
        )
    return found


def duplicate_strings_text(answer: DuplicateStrings) -> str:
    """The report as ``heapdb analyze --strings`` and ``heapdb strings`` print it."""
    share = answer.wasted / answer.string_bytes if answer.string_bytes else 0.0
    lines = [
        f"Duplicate strings in {answer.source}: {answer.duplicated:,} of {answer.strings:,} strings are copies "
        f"of {answer.values:,} contents, wasting {human_bytes(answer.wasted)} ({share:.1%} of "
        f"{human_bytes(answer.string_bytes)} of strings)",
        f"  {'wasted':>10}  {'copies':>8}  {'length':>8}  {'example':>10}  content; owners",
    ]
    for r in answer.rows:
        lines.append(
            f"  {human_bytes(r.wasted):>10}  {r.count:>8,}  {r.length:>8,}  {'@' + str(r.example_id):>10}  "
            f"{short_name(repr(r.value) if r.value.strip() != r.value or not r.value else r.value, 60)}; "
            f"{owners_text(r.owners)}"
        )
    if answer.values > len(answer.rows):
        lines.append(f"  … {answer.values - len(answer.rows):,} more duplicated contents")
    return "\n".join(lines)


def owners_text(owners: Sequence[StringOwner]) -> str:
    """A duplicates row's owner types, as the text reports list them."""
    return ", ".join(f"{o.copies:,} in {short_name(o.type, 40)} (e.g. @{o.example_id})" for o in owners)


# --- the parts ----------------------------------------------------------------------------------


def _kind_indexes(graph: HeapGraph, names: frozenset[str]) -> np.ndarray:
    return np.array([i for i, k in enumerate(graph.node_kinds) if k in names], dtype=graph.kind.dtype)


def _roles(graph: HeapGraph, kinds: StringKinds) -> np.ndarray:
    role = np.zeros(len(graph.node_kinds), dtype=np.int8)
    for value, names in ((PLAIN, kinds.plain), (CONCATENATED, kinds.concatenated), (SLICED, kinds.sliced)):
        role[_kind_indexes(graph, names)] = value
    role = role[graph.kind]
    # A redaction names a concatenation by its whole content's placeholder, which its parts'
    # placeholders, joined, are not: it is then a plain string (in any format: V8's own files, a
    # redacted one among them, have no place to say they were redacted).
    joined = np.flatnonzero(role == CONCATENATED)
    if joined.size:
        texts = np.unique(graph.name[joined])
        placeholders = texts[[redacted_parts(graph.strings[i]) is not None for i in texts.tolist()]]
        role[joined[np.isin(graph.name[joined], placeholders)]] = PLAIN
    return role


_PART_NAMES = ("first", "second", "parent")
_NAMES_PER_BLOCK = 20_000  # names hashed per buffer of code points


def _parts(graph: HeapGraph, role: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int32[n] each: the target of a concatenation's first ``first`` and ``second`` reference and
    of a sliced string's first ``parent`` reference; -1 where there is none."""
    sources = np.flatnonzero((role == CONCATENATED) | (role == SLICED))
    at = string_indexes(graph, _PART_NAMES) if sources.size else {}
    empty = np.zeros(0, dtype=np.int64)
    first, second, parent = (first_targets(graph, sources, at.get(name, empty)) for name in _PART_NAMES)
    return first, second, parent


def _named_edge(graph: HeapGraph, v: int, name: str) -> int:
    for e in range(int(graph.edge_start[v]), int(graph.edge_start[v + 1])):
        if graph.edge_kind[e] not in NUMERIC_NAME_KINDS and graph.strings[graph.edge_name[e]] == name:
            return int(graph.edge_to[e])
    return -1


def _name_hashes(graph: HeapGraph, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hash and length of each of ``nodes``' names (zero elsewhere), each distinct name hashed once."""
    h1 = np.zeros(graph.node_count, dtype=np.int64)
    h2 = np.zeros(graph.node_count, dtype=np.int64)
    length = np.zeros(graph.node_count, dtype=np.int64)
    if not nodes.size:
        return h1, h2, length
    used = np.zeros(len(graph.strings), dtype=np.bool_)
    used[graph.name[nodes]] = True
    names = np.flatnonzero(used)
    which = (np.cumsum(used) - 1)[graph.name[nodes]]
    n1, n2, lengths = text_hashes([graph.strings[i] for i in names.tolist()])
    h1[nodes], h2[nodes], length[nodes] = n1[which], n2[which], lengths[which]
    return h1, h2, length


def text_hashes(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each text's two content hashes and its length in characters (int64 arrays)."""
    from heapdb.loader.inspections import kernels

    n1 = np.zeros(len(texts), dtype=np.int64)
    n2 = np.zeros(len(texts), dtype=np.int64)
    lengths = np.zeros(len(texts), dtype=np.int64)
    # A buffer of code points per block of names, so that the buffer stays small; lone surrogates
    # (JSON allows them) pass as themselves.
    for lo in range(0, len(texts), _NAMES_PER_BLOCK):
        block_texts = texts[lo : lo + _NAMES_PER_BLOCK]
        block = np.fromiter((len(t) for t in block_texts), dtype=np.int64, count=len(block_texts))
        points = np.frombuffer("".join(block_texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        hi = lo + len(block_texts)
        n1[lo:hi], n2[lo:hi] = kernels.polynomial_hashes(points, np.cumsum(block))
        lengths[lo:hi] = block
    return n1, n2, lengths


def _largest_per_group(number: np.ndarray, retained: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Per group, the position (in the grouped order) of its largest copy, lowest id on ties."""
    order = np.lexsort((ids, -retained, number))
    firsts = np.flatnonzero(np.concatenate(([True], np.diff(number[order]) != 0))) if order.size else order
    return order[firsts]
