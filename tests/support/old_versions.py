"""A loaded snapshot rewritten as an older heapdb stored it, to check that such snapshots still
answer, and answer the same."""

from __future__ import annotations

from typing import Any

from heapdb.db import Database
from heapdb.loader.store.listings import LISTING_PROPERTIES, PACKED_LISTINGS_VERSION, TypeListing
from heapdb.loader.store.schema import STORE_VERSION

# The tag's ready load only: one it replaced keeps the tag until the purger has freed it.
_SNAPSHOT = "MATCH (s:Snapshot {tag: $tag, status: 'ready'}) "
_TYPES = _SNAPSHOT + "MATCH (t:TypeGroup {sid: s.sid}) WHERE t.listing_ids IS NOT NULL "


def stored_listings(database: Database, tag: str) -> list[dict[str, Any]]:
    """Each listed type of ``tag`` and its listing's properties, as stored."""
    fields = ", ".join(f".{name}" for name in LISTING_PROPERTIES)
    return database.read(_TYPES + f"RETURN t.type AS type, t {{{fields}}} AS stored", {"tag": tag})


def raw_listing(listing: TypeListing) -> dict[str, Any]:
    """``listing``'s properties as a load before PACKED_LISTINGS_VERSION stored them."""
    assert listing.self_sizes is not None and listing.distances is not None and listing.path_sigs is not None
    return {
        "listing_ids": listing.ids.astype("<i8").tobytes(),
        "listing_names": listing.names,
        "listing_name_ends": listing.ends.astype("<i8").tobytes(),
        "listing_self_sizes": listing.self_sizes.astype("<i8").tobytes(),
        "listing_distances": listing.distances.astype("<i4").tobytes(),
        "listing_path_sigs": listing.path_sigs.astype("<i8").tobytes(),
    }


def store_as(database: Database, tag: str, version: int) -> list[dict[str, Any]]:
    """Rewrite the snapshot ``tag`` (stored at STORE_VERSION) as store ``version`` (4 or 5) held it:
    raw listings, and at 4 no children lists. Returns its listings as they were, for
    :func:`restore_listings`."""
    assert version in (4, 5) and PACKED_LISTINGS_VERSION == STORE_VERSION == 6
    saved = stored_listings(database, tag)
    rows = []
    for row in saved:
        stored = row["stored"]
        listing = TypeListing.from_properties(STORE_VERSION, *(stored[name] for name in LISTING_PROPERTIES))
        rows.append({"type": row["type"], "raw": raw_listing(listing)})
    database.write(
        _TYPES + "WITH s, t, [r IN $rows WHERE r.type = t.type][0] AS r SET t += r.raw, s.store_version = $version",
        {"tag": tag, "rows": rows, "version": version},
    )
    if version < 5:
        database.write(_SNAPSHOT + "MATCH (o:Object {sid: s.sid}) REMOVE o.dominated_order", {"tag": tag})
    return saved


def restore_listings(database: Database, tag: str, saved: list[dict[str, Any]]) -> None:
    """Put back the listings :func:`store_as` took, and the current store version."""
    database.write(
        _TYPES + "WITH s, t, [r IN $rows WHERE r.type = t.type][0] AS r SET t += r.stored, s.store_version = $version",
        {"tag": tag, "rows": saved, "version": STORE_VERSION},
    )
