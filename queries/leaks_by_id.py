"""memlab's leak candidates (matched by id) on snapshots of millions of objects, in seconds.

The stored query ``leaks`` answers the question alone, as the Neo4j Browser runs it: for every
object of the final snapshot, one index seek into the target and one into the baseline. On three
snapshots of 0.9, 1.7 and 2.5 million objects that is past a minute. Here the work is split where
each side is fast:

1. each snapshot's ids are read from the per-type listings the load stored for ``find``
   (``id-listings``: 8 bytes an object, every object of every type that has a ``:TypeGroup``);
2. the final snapshot's objects are matched against the other two in process, by
   :func:`~heapdb.queries.matching.pair`'s rule (same id and same type): *new* means present in the
   target and absent from the baseline. The few objects whose type has no listing in one of the
   snapshots (all its objects there unreachable) are looked up one by one, so the rule is the
   stored query's exactly;
3. Neo4j is asked about the new objects only (``leak-candidates``), and they are clustered here by
   the stored query's rule: a candidate whose holder is itself new is part of that one's leak (on
   loads that look through internal objects), members whose dominator shares their retainer path
   add no retained size, clusters ranked by retained size, then objects, then signature.

A cluster's samples are its largest members (by retained size, then lowest id), and its type,
verdict and locations are those of its largest member; the stored query takes them from whichever
member it meets first. ``tests/test_compare.py`` checks both give the same clusters.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from heapdb.loader.store import Snapshot
from heapdb.queries.matching import ObjectColumns, pair

READS = 2  # candidate reads run side by side (see Candidates.read)
SAMPLES = 5  # example objects per cluster, as the stored query gives
NONE = np.iinfo(np.int64).min  # in an id or signature column: null (no dominator, no holder, no signature)

Run = Callable[..., list[dict[str, Any]]]  # a stored query by name, with its parameters


def listed_objects(run: Run, snapshot: Snapshot) -> ObjectColumns | None:
    """Every object of ``snapshot`` whose type has a listing, as ids and types (sizes not read: zero);
    None when the snapshot was stored without listings."""
    return ObjectColumns.from_listings(run("id-listings", tag=snapshot.tag), snapshot.store_version)


def new_objects(run: Run, base: Snapshot, middle: Snapshot, last: Snapshot, columns: list[ObjectColumns]) -> np.ndarray:
    """The ids of ``last``'s listed objects that ``middle`` has and ``base`` has not (same id and type)."""
    old, mid, final = columns
    found = [_present(run, snapshot, them, final) for snapshot, them in ((base, old), (middle, mid))]
    in_base, in_middle = found
    return final.ids[in_middle & ~in_base]


def _present(run: Run, snapshot: Snapshot, listed: ObjectColumns, final: ObjectColumns) -> np.ndarray:
    """Per object of ``final``: whether ``snapshot`` has an object with its id and type. Listings hold
    every object of a listed type; an object of a type ``snapshot`` did not list is asked for."""
    _candidate, _same_id, same = pair(listed, final)
    unlisted = ~np.isin(np.array(final.type_names, dtype=object), np.array(listed.type_names, dtype=object))
    ask = np.flatnonzero(unlisted[final.type]) if unlisted.any() else np.zeros(0, dtype=np.int64)
    if ask.size:
        rows = run("objects-brief", tag=snapshot.tag, ids=final.ids[ask].tolist())
        there = {(r["object"]["id"], r["object"]["type"]) for r in rows}
        names = final.type_names
        same[ask] = [(int(i), names[int(t)]) in there for i, t in zip(final.ids[ask], final.type[ask])]
    return same


@dataclass(frozen=True)
class Candidates:
    """New objects that may lead a cluster (stored query ``leak-candidates``), as columns."""

    ids: np.ndarray
    sig: np.ndarray  # the first retainer path's signature
    self_size: np.ndarray
    retained_size: np.ndarray
    dom: np.ndarray  # NONE: none (the root)
    holder: np.ndarray  # the holder when internal objects are looked through, else the dominator
    known_leak: np.ndarray  # the known_leak rule's reason, "" for none (object array)

    @classmethod
    def read(cls, run: Run, final: Snapshot, new: np.ndarray) -> Candidates:
        # Ascending ids, so the index seeks walk the (sid, id) index in order, in READS parts at once:
        # Neo4j runs each query on one core, and this side decodes one part while another is read.
        parts = np.array_split(np.sort(new), READS)
        with ThreadPoolExecutor(READS) as pool:
            found = list(pool.map(lambda ids: run("leak-candidates", final=final.tag, ids=ids.tolist()), parts))
        rows = [row for answer in found for row in answer[0]["objects"]]
        ids, sig, self_size, retained, dom, holder, known = zip(*rows) if rows else ((),) * 7

        def ints(values: tuple[Any, ...]) -> np.ndarray:
            return np.array([NONE if v is None else v for v in values], dtype=np.int64)

        return cls(
            ids=np.array(ids, dtype=np.int64),
            sig=ints(sig),
            self_size=np.array(self_size, dtype=np.int64),
            retained_size=np.array(retained, dtype=np.int64),
            dom=ints(dom),
            holder=ints(holder),
            known_leak=np.array(["" if k is None else k for k in known], dtype=object),
        )


@dataclass(frozen=True)
class Cluster:
    """One cluster's figures and path, before its largest member's details are read."""

    sig: int
    path: str
    hops: list[str]
    known_leak: str | None
    objects: int
    self_size: int
    retained_size: int
    sample_ids: list[int]


def clusters(run: Run, last: Snapshot, found: Candidates, new: np.ndarray, *, known: bool, limit: int) -> list[Cluster]:
    """The first ``limit`` clusters of the candidates (those a known_leak rule covers when ``known``),
    ranked as the stored query ranks them, among those whose signature has a ``:PathGroup``."""
    held = np.isin(found.holder, new) if last.look_through else np.zeros(found.ids.size, dtype=bool)
    keep = ~held & ((found.known_leak != "") == known)
    ids, sig, dom = found.ids[keep], found.sig[keep], found.dom[keep]
    if not ids.size:
        return []
    # Nested: a member whose dominator has its retainer path is retained by that one (or by its kind).
    dom_sig = _signatures(run, last, found, dom)
    nested = (dom_sig == sig) & (sig != NONE)  # null = null is not true in Cypher either
    counted = np.where(nested, 0, found.retained_size[keep])
    reasons = found.known_leak[keep]
    reason_codes, reason = np.unique(reasons, return_inverse=True)
    # Members by cluster (signature, reason), each cluster's largest retained first, then lowest id.
    order = np.lexsort((ids, -found.retained_size[keep], reason, sig))
    key_sig, key_reason = sig[order], reason[order]
    starts = np.flatnonzero(np.r_[True, (key_sig[1:] != key_sig[:-1]) | (key_reason[1:] != key_reason[:-1])])
    counts = np.diff(np.r_[starts, order.size])
    sums = [np.add.reduceat(column[order], starts) for column in (found.self_size[keep], counted)]
    rank = np.lexsort((key_sig[starts], -counts, -sums[1]))
    paths = {r["sig"]: r for r in run("path-groups", tag=last.tag, sigs=np.unique(key_sig[starts]).tolist())}
    out: list[Cluster] = []
    for c in rank.tolist():
        s = int(key_sig[starts[c]])
        if s not in paths:
            continue  # as the stored query's MATCH on :PathGroup drops it
        members = order[starts[c] : starts[c] + min(int(counts[c]), SAMPLES)]
        text = str(reason_codes[key_reason[starts[c]]])
        out.append(
            Cluster(
                sig=s,
                path=paths[s]["path"],
                hops=list(paths[s]["hops"] or []),
                known_leak=text or None,
                objects=int(counts[c]),
                self_size=int(sums[0][c]),
                retained_size=int(sums[1][c]),
                sample_ids=ids[members].tolist(),
            )
        )
        if len(out) == limit:
            break
    return out


def _signatures(run: Run, last: Snapshot, found: Candidates, objects: np.ndarray) -> np.ndarray:
    """The path signatures of ``objects`` (ids, NONE for none; NONE where there is no signature):
    from the candidates read, else asked."""
    order = np.argsort(found.ids)
    place = np.minimum(np.searchsorted(found.ids[order], objects), max(found.ids.size - 1, 0))
    known = found.ids[order][place] == objects if found.ids.size else np.zeros(objects.size, dtype=bool)
    out = np.full(objects.size, NONE, dtype=np.int64)
    out[known] = found.sig[order][place[known]]
    ask = np.unique(objects[~known & (objects != NONE)])
    if ask.size:
        rows = run("path-signatures", tag=last.tag, ids=ask.tolist())[0]["signatures"]
        asked = {int(i): (NONE if s is None else int(s)) for i, s in rows}
        out[~known] = [asked.get(int(i), NONE) for i in objects[~known]]
    return out
