"""Writing a snapshot's group nodes (``:PathGroup``, ``:TypeGroup``, and the inspections'
``:StringGroup``, ``:ObjectGroup``, ``:DetachedGroup`` and ``:FiberGroup``) and its types' listings.

Shared by a load (:mod:`.writer`: the groups before the snapshot answers, the listings after) and
``heapdb rebuild`` (:mod:`.rebuild`: both after the offline import). docs/data-model.md says what
each group and listing holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from heapdb import progress
from heapdb.db import Database
from heapdb.loader.store.batches import DEFAULT_BATCH, chunks, run_batches
from heapdb.loader.store.listings import LISTING_PROPERTIES, DroppedReferences, TypeListing

CREATE_PATH_GROUPS = """
UNWIND $rows AS r
CREATE (:PathGroup {sid: $sid, sig: r[0], path: r[1], hops: r[2], objects: r[3], self_size: r[4], retained_size: r[5],
                    max_retained_size: r[6], samples: r[7], held: r[8]})
"""

CREATE_TYPE_GROUPS = """
UNWIND $rows AS r
CREATE (:TypeGroup {sid: $sid, type: r[0], objects: r[1], self_size: r[2], retained_size: r[3], max_retained_size: r[4]})
"""

CREATE_STRING_GROUPS = """
UNWIND $rows AS r
CREATE (:StringGroup {sid: $sid, key: r[0], value: r[1], length: r[2], count: r[3], retained_size: r[4], wasted: r[5],
                      example_id: r[6], owner_types: r[7], owner_copies: r[8], owner_example_ids: r[9]})
"""

CREATE_OBJECT_GROUPS = """
UNWIND $rows AS r
CREATE (:ObjectGroup {sid: $sid, key: r[0], type: r[1], value: r[2], size: r[3], count: r[4], retained_size: r[5],
                      wasted: r[6], example_id: r[7], owner_types: r[8], owner_copies: r[9], owner_example_ids: r[10]})
"""

CREATE_DETACHED_GROUPS = """
UNWIND $rows AS r
CREATE (:DetachedGroup {sid: $sid, signature: r[0], path: r[1], type: r[2], trees: r[3], objects: r[4], attached: r[5],
                        retained_size: r[6], example_id: r[7]})
"""

CREATE_FIBER_GROUPS = """
UNWIND $rows AS r
CREATE (:FiberGroup {sid: $sid, component: r[0], fibers: r[1], retained_size: r[2], example_id: r[3], path: r[4]})
"""

CREATE_SHAPE_GROUPS = """
UNWIND $rows AS r
CREATE (:ShapeGroup {sid: $sid, shape: r[0], objects: r[1], retained_size: r[2], example_id: r[3]})
"""


@dataclass(frozen=True)
class GroupKind:
    """One kind of group node a snapshot has."""

    label: str
    key: str  # the property that tells a snapshot's groups of this kind apart (never null)
    create: str  # the statement that writes a batch of rows ($rows, $sid)
    shown: str  # what the progress bar calls them


# Every kind of group node, in the order a load writes them; LoadInput.group_rows gives their rows.
GROUP_KINDS = (
    GroupKind("PathGroup", "sig", CREATE_PATH_GROUPS, "path groups"),
    GroupKind("TypeGroup", "type", CREATE_TYPE_GROUPS, "type groups"),
    GroupKind("StringGroup", "key", CREATE_STRING_GROUPS, "string groups"),
    GroupKind("ObjectGroup", "key", CREATE_OBJECT_GROUPS, "duplicate object groups"),
    GroupKind("DetachedGroup", "signature", CREATE_DETACHED_GROUPS, "detached DOM groups"),
    GroupKind("FiberGroup", "component", CREATE_FIBER_GROUPS, "unmounted component groups"),
    GroupKind("ShapeGroup", "shape", CREATE_SHAPE_GROUPS, "shape groups"),
)

SET_TYPE_LISTINGS = f"""
UNWIND $rows AS r
MATCH (t:TypeGroup {{sid: $sid, type: r.type}})
SET {", ".join(f"t.{name} = r.{name}" for name in LISTING_PROPERTIES)}
"""
# Type listings go in transactions of about this many bytes (a listing holds about 20 bytes per
# object of its type): a few transactions for millions of objects, rather than one per type.
LISTING_BATCH_BYTES = 4_000_000


def write_groups(
    database: Database,
    sid: int,
    rows: Mapping[str, list[list[Any]]],
    batch_size: int = DEFAULT_BATCH,
    workers: int = 2,
    dropped: DroppedReferences | None = None,
) -> None:
    """A snapshot's group nodes, from their rows by label (:class:`LoadInput`'s ``group_rows``), and
    on its root object, the references its rules keep from retaining (``dropped``, from
    ``dropped_references``)."""
    if dropped is not None:
        database.write(
            "MATCH (o:Root {sid: $sid}) SET o += $properties", {"sid": sid, "properties": dropped.properties()}
        )
    for kind in GROUP_KINDS:
        groups = rows.get(kind.label, [])

        def send_groups(batch: list[list[Any]], statement: str = kind.create) -> int:
            database.write(statement, {"rows": batch, "sid": sid})
            return len(batch)

        with progress.bar(f"write {kind.shown}", total=len(groups), unit="group") as bar:
            run_batches(send_groups, (groups[lo:hi] for lo, hi in chunks(len(groups), batch_size)), bar, workers)


def write_listings(
    database: Database,
    sid: int,
    type_listings: Iterator[tuple[str, TypeListing]],
    count: int,
    batch_size: int = DEFAULT_BATCH,
    workers: int = 2,
) -> None:
    """The ``count`` listings of a snapshot's types (:class:`LoadInput`'s ``type_listings``), on the
    ``:TypeGroup`` nodes :func:`write_groups` wrote."""

    def send_listings(rows: list[dict[str, Any]]) -> int:
        database.write(SET_TYPE_LISTINGS, {"sid": sid, "rows": rows})
        return len(rows)

    with progress.bar("write type listings", total=count, unit="type") as bar:
        run_batches(send_listings, _listing_batches(type_listings, batch_size), bar, workers)


def _listing_batches(listings: Iterator[tuple[str, TypeListing]], most: int) -> Iterator[list[dict[str, Any]]]:
    """The listings as rows of SET_TYPE_LISTINGS, about LISTING_BATCH_BYTES (and at most ``most`` types) a batch."""
    rows: list[dict[str, Any]] = []
    size = 0
    for type_name, listing in listings:
        rows.append({"type": type_name, **listing.properties()})
        size += listing.nbytes
        if size >= LISTING_BATCH_BYTES or len(rows) >= most:
            yield rows
            rows, size = [], 0
    if rows:
        yield rows
