"""Browsing one snapshot: a type's objects a page at a time, an object's references a level at a
time, and the search, on the real Neo4j with the leak program's real V8 snapshots, each answer
checked against the snapshot's own arrays (brute force over the graph and its analysis)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotFound, ParameterError
from heapdb.loader import store
from heapdb.loader.graph import EdgeKind
from heapdb.loader.store import hubs
from heapdb.loader.store.listings import LISTING_PROPERTIES, TypeListing, pack, unpack
from heapdb.loader.store.schema import STORE_VERSION
from heapdb.queries import browse, catalog, params, results
from heapdb.queries.questions import Questions
from heapdb.renderers.text import instances_text
from heapdb.service.app import create_app
from tests.support import old_versions
from tests.support.snapshots import Loaded, load_snapshot

PAGE = 70  # a page size that does not divide the leak's 600 objects of a type


def members(loaded: Loaded, type_name: str) -> np.ndarray:
    """The nodes of ``type_name`` the root reaches (the root itself aside)."""
    g, r = loaded.graph, loaded.result
    wanted = [i for i, s in enumerate(g.strings) if s == type_name]
    nodes = np.flatnonzero(np.isin(g.type, wanted) & (r.distance >= 0))
    return nodes[nodes != g.root]


def expected_ids(loaded: Loaded, nodes: np.ndarray, sort: str) -> list[int]:
    g, r = loaded.graph, loaded.result
    keys = {
        "retained_size": lambda i: (-int(r.retained_size[i]), int(g.ids[i])),
        "self_size": lambda i: (-int(g.self_size[i]), int(g.ids[i])),
        "distance": lambda i: (int(r.distance[i]), int(g.ids[i])),
    }
    return [int(g.ids[i]) for i in sorted(nodes.tolist(), key=keys[sort])]


def all_pages(ask: Questions, tag: str, **values: object) -> tuple[list[int], set[int]]:
    """Every page of ``instances`` in turn: the ids in order, and each page's total."""
    ids: list[int] = []
    totals: set[int] = set()
    offset = 0
    while True:
        page = ask.instances(tag, params.Instances(offset=offset, limit=PAGE, **values))
        totals.add(page.total)
        assert page.offset == offset and len(page.objects) <= PAGE
        ids += [o.id for o in page.objects]
        if len(page.objects) < PAGE:
            return ids, totals
        offset += PAGE


@pytest.mark.parametrize("sort", ["retained_size", "self_size", "distance"])
def test_a_types_objects_come_a_page_at_a_time_in_each_order(ask: Questions, leak_loaded: Loaded, sort: str) -> None:
    nodes = members(leak_loaded, "LeakedItem")
    assert nodes.size == 600  # leak.js: 100 + 200 + 300 items
    ids, totals = all_pages(ask, leak_loaded.tag, type="LeakedItem", sort=sort)
    assert ids == expected_ids(leak_loaded, nodes, sort)
    assert totals == {nodes.size}


def test_a_name_filter_gives_the_same_objects_from_the_listing_and_from_the_objects(
    ask: Questions, leak_loaded: Loaded
) -> None:
    g = leak_loaded.graph
    nodes = members(leak_loaded, "(string)")
    named = nodes[[g.node_name(int(i)).find("item-") >= 0 for i in nodes]]
    assert named.size > PAGE
    # Largest retained first is a slice of the stored listing; by self size the objects are read.
    by_listing, totals = all_pages(ask, leak_loaded.tag, type="(string)", name_contains="item-")
    assert by_listing == expected_ids(leak_loaded, named, "retained_size") and totals == {named.size}
    by_objects, totals = all_pages(ask, leak_loaded.tag, type="(string)", name_contains="item-", sort="self_size")
    assert by_objects == expected_ids(leak_loaded, named, "self_size") and totals == {named.size}


def test_new_since_an_earlier_snapshot_is_what_it_had_no_object_of_that_id_and_type_for(
    ask: Questions, leak_series_loaded: dict[str, Loaded]
) -> None:
    baseline, final = leak_series_loaded["baseline"], leak_series_loaded["final"]
    nodes = members(final, "LeakedItem")
    before = {(int(baseline.graph.ids[i]), baseline.graph.type_name(int(i))) for i in range(baseline.graph.node_count)}
    new = nodes[[(int(final.graph.ids[i]), "LeakedItem") not in before for i in nodes]]
    assert 0 < new.size < nodes.size
    ids, totals = all_pages(ask, final.tag, type="LeakedItem", since=baseline.tag)
    assert ids == expected_ids(final, new, "retained_size") and totals == {new.size}
    # No page is detached in a Node process's heap; every one is attached.
    assert ask.instances(final.tag, params.Instances(type="LeakedItem", detached=True)).total == 0
    assert ask.instances(final.tag, params.Instances(type="LeakedItem", detached=False)).total == nodes.size
    with pytest.raises(NotFound, match="no snapshot tagged 'nowhere'"):
        ask.instances(final.tag, params.Instances(type="LeakedItem", since="nowhere"))
    # A type the snapshot has not: an empty page, not an error.
    assert ask.instances(final.tag, params.Instances(type="NoSuchType")).total == 0


@pytest.mark.parametrize("direction", ["in", "out"])
def test_an_objects_references_come_a_level_and_a_page_at_a_time(
    ask: Questions, leak_loaded: Loaded, direction: str
) -> None:
    g, r = leak_loaded.graph, leak_loaded.result
    # The object with the most references that way, of a type the leak makes many of: an array.
    sources = g.edge_sources()
    ends = sources if direction == "in" else g.edge_to
    counts = np.bincount(g.edge_to if direction == "in" else sources, minlength=g.node_count)
    node = int(np.argmax(np.where(r.distance >= 0, counts, -1)))
    assert counts[node] > 2 * PAGE
    object_id = int(g.ids[node])
    seen: list[tuple[int, str]] = []
    offset = 0
    while True:
        level = ask.references(
            leak_loaded.tag, object_id, params.References(direction=direction, offset=offset, limit=PAGE)
        )
        assert level.object.id == object_id and level.total == counts[node] and level.direction == direction
        seen += [(n.object.id, n.reference.name) for n in level.references]
        if len(level.references) < PAGE:
            break
        offset += PAGE
    edges = np.flatnonzero((g.edge_to if direction == "in" else sources) == node)
    expected = sorted((int(g.ids[ends[e]]), g.edge_label(int(e))) for e in edges)
    assert sorted(seen) == expected
    # In order: holders nearest the root first, what it references largest first.
    levels = [ask.references(leak_loaded.tag, object_id, params.References(direction=direction, limit=1000))]
    found = levels[0].references
    if direction == "in":
        distances = [n.object.distance for n in found]
        assert distances == sorted(distances, key=lambda d: (d is None, d or 0))
    else:
        sizes = [n.object.retained_size for n in found]
        assert sizes == sorted(sizes, reverse=True)
    with pytest.raises(NotFound):
        ask.references(leak_loaded.tag, -12345, params.References(direction=direction))
    # A V8 snapshot keeps numbers and strings as objects of their own: no object holds values.
    assert ask.object(leak_loaded.tag, object_id).values == []


def test_weak_references_are_listed_and_marked(ask: Questions, leak_loaded: Loaded) -> None:
    g, r = leak_loaded.graph, leak_loaded.result
    weak = np.flatnonzero(g.edge_kind == EdgeKind.WEAK)
    assert weak.size
    sources = g.edge_sources()
    edge = int(weak[np.argmax(r.distance[sources[weak]] >= 0)])
    holder, target = int(g.ids[sources[edge]]), int(g.ids[g.edge_to[edge]])
    level = ask.references(leak_loaded.tag, holder, params.References(direction="out", limit=1000))
    marked = [n for n in level.references if n.object.id == target and n.reference.name == g.edge_label(edge)]
    assert marked and all(n.reference.weak for n in marked)


def test_a_search_finds_types_an_id_and_strings_as_the_snapshot_holds_them(ask: Questions, leak_loaded: Loaded) -> None:
    g = leak_loaded.graph
    strings = members(leak_loaded, "(string)")
    names = {int(i): g.node_name(int(i)) for i in strings}
    for mode, test in (
        ("contains", lambda s: "item-1" in s),
        ("prefix", lambda s: s.startswith("item-1")),
        ("exact", lambda s: s == "item-1"),
    ):
        found = ask.search(leak_loaded.tag, params.Search(text="item-1", mode=mode, limit=1000))
        expected = expected_ids(leak_loaded, np.array([i for i, s in names.items() if test(s)]), "retained_size")
        assert [o.id for o in found.strings] == expected and found.string_total == len(expected), mode
    # Types by name, ignoring case, most retained first; the totals say how many in all.
    leaked = ask.search(leak_loaded.tag, params.Search(text="leaked", limit=1))
    every_type = {t.type for t in ask.types(leak_loaded.tag, params.Types(limit=10_000))}
    matching = sorted(t for t in every_type if "leaked" in t.lower())
    assert leaked.type_total == len(matching) >= 2 and len(leaked.types) == 1
    assert leaked.types[0].type in matching
    exact = ask.search(leak_loaded.tag, params.Search(text="leakeditem", mode="exact"))
    assert [t.type for t in exact.types] == ["LeakedItem"] and exact.types[0].count == 600
    # An id, with or without its @; a number no object has finds none.
    object_id = int(g.ids[members(leak_loaded, "LeakedItem")[0]])
    for text in (str(object_id), f"@{object_id}"):
        assert ask.search(leak_loaded.tag, params.Search(text=text)).object.id == object_id  # type: ignore[union-attr]
    assert ask.search(leak_loaded.tag, params.Search(text="99999999999999999999")).object is None
    with pytest.raises(ParameterError, match="text"):
        params.Search(text="")


def test_the_cli_and_rest_answer_the_same_pages(leak_loaded: Loaded) -> None:
    client = TestClient(create_app(token=""))
    tag = leak_loaded.tag
    for command, route, query in (
        (
            ["instances", tag, "--type", "LeakedItem", "--offset", "5", "--limit", "7"],
            f"/api/snapshots/{tag}/instances",
            {"type": "LeakedItem", "offset": "5", "limit": "7"},
        ),
        (
            ["search", tag, "--text", "item-2", "--mode", "prefix"],
            f"/api/snapshots/{tag}/search",
            {"text": "item-2", "mode": "prefix"},
        ),
    ):
        result = CliRunner().invoke(main, [*command, "--format", "json"])
        assert result.exit_code == 0, result.stderr
        rest = client.get(route, params=query)
        assert rest.status_code == 200
        assert json.loads(result.stdout) == rest.json()
    bad = client.get(f"/api/snapshots/{tag}/instances", params={"type": "LeakedItem", "sort": "colour"})
    assert bad.status_code == 422


def test_the_listing_and_the_objects_give_the_same_pages_and_old_loads_are_read_object_by_object(
    ask: Questions, database: Database, leak_series_loaded: dict[str, Loaded]
) -> None:
    baseline, final = leak_series_loaded["baseline"], leak_series_loaded["final"]
    for sort in ("retained_size", "self_size", "distance"):
        # From the listing in process, and (a filter only the objects answer: every object of a
        # Node heap is attached) from the objects.
        listed = ask.instances(
            final.tag, params.Instances(type="LeakedItem", sort=sort, since=baseline.tag, limit=1000)
        )
        read = ask.instances(
            final.tag, params.Instances(type="LeakedItem", sort=sort, since=baseline.tag, detached=False, limit=1000)
        )
        assert [o.id for o in listed.objects] == [o.id for o in read.objects] and listed.total == read.total == 500
    # A load from before the listings held sizes and distances: the same page, read object by object.
    where = "MATCH (s:Snapshot {tag: $tag}) MATCH (t:TypeGroup {sid: s.sid, type: 'LeakedItem'}) "
    saved = database.read(
        where + "RETURN t.listing_self_sizes AS sizes, t.listing_distances AS distances", {"tag": final.tag}
    )[0]
    expected = ask.instances(final.tag, params.Instances(type="LeakedItem", sort="distance", offset=100))
    database.write(where + "REMOVE t.listing_self_sizes, t.listing_distances", {"tag": final.tag})
    try:
        older = ask.instances(final.tag, params.Instances(type="LeakedItem", sort="distance", offset=100))
    finally:
        database.write(
            where + "SET t.listing_self_sizes = $sizes, t.listing_distances = $distances",
            {"tag": final.tag, **saved},
        )
    assert [o.id for o in older.objects] == [o.id for o in expected.objects] and older.total == expected.total


def test_a_name_filter_in_the_listings_order_counts_up_to_a_bound(
    ask: Questions, leak_loaded: Loaded, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = ask.instances(leak_loaded.tag, params.Instances(type="(string)", name_contains="item-", limit=1000))
    assert everything.counted_to is not None and everything.total < everything.counted_to  # counted all
    monkeypatch.setattr(browse, "COUNT_MATCHES", 5)
    bounded = ask.instances(leak_loaded.tag, params.Instances(type="(string)", name_contains="item-", limit=10))
    assert bounded.counted_to == bounded.total == 15 < everything.total
    assert [o.id for o in bounded.objects] == [o.id for o in everything.objects[:10]]
    assert "1-10 of 15 or more" in instances_text(bounded)


def test_a_snapshot_stored_with_raw_listings_answers_the_same(
    database: Database, leak_series_loaded: dict[str, Loaded]
) -> None:
    """Store version 6 packs the type listings; a snapshot stored at version 5 holds them raw (the
    values' little-endian bytes, the names as a string). Rewritten that way, the series gives the same
    find, pages, filters and leaks by id as packed."""
    tags = [leak_series_loaded[name].tag for name in ("baseline", "target", "final")]
    final = tags[-1]

    def answers() -> tuple[Any, ...]:
        ask = Questions(database)  # no cache: each listing is read afresh
        pages = {
            sort: ask.instances(final, params.Instances(type="LeakedItem", sort=sort, since=tags[0], limit=1000))
            for sort in ("retained_size", "self_size", "distance")
        }
        return (
            pages,
            ask.instances(final, params.Instances(type="(string)", name_contains="item-", limit=1000)),
            ask.find(final, params.Find(type="(string)", name_contains="item-1", limit=100)),
            ask.find(final, params.Find(type="LeakedItem", limit=1000)),
            ask.leaks(tags[0], tags[1], tags[2], params.Leaks(by="id")),
        )

    packed = answers()
    assert packed[0]["retained_size"].total == 500 and len(packed[3]) == 600 and packed[4].clusters
    saved = {}
    try:
        for tag in tags:
            saved[tag] = old_versions.store_as(database, tag, 5)
            leaked = [r["stored"] for r in saved[tag] if r["type"] == "LeakedItem"][0]
            raw = old_versions.stored_listings(database, tag)
            raw_leaked = [r["stored"] for r in raw if r["type"] == "LeakedItem"][0]
            # 600 objects: packed, a fraction of the raw bytes (the names: compressed, against a string).
            assert isinstance(leaked["listing_names"], bytes) and isinstance(raw_leaked["listing_names"], str)
            assert all(len(raw_leaked[k]) > 3 * len(leaked[k]) for k in LISTING_PROPERTIES if k != "listing_names")
        assert answers() == packed
    finally:
        for tag, listings in saved.items():
            old_versions.restore_listings(database, tag, listings)


def test_a_packed_listing_column_unpacks_to_its_values() -> None:
    rng = np.random.default_rng(11)
    for dtype in (np.dtype("<i8"), np.dtype("<i4")):
        info = np.iinfo(dtype)
        for values in (
            np.zeros(0, dtype),
            np.array([info.min, -1, 0, 1, info.max], dtype),
            rng.integers(info.min, info.max, 10_001, dtype=dtype),
            rng.integers(0, 300, 10_001).astype(dtype),
        ):
            packed = pack(values)
            assert np.array_equal(unpack(packed, dtype), values) and unpack(packed, dtype).dtype == dtype
    small = rng.integers(0, 1 << 20, 100_000).astype("<i8")
    assert len(pack(small)) < small.nbytes / 2  # the high bytes are zeros: regrouped, they pack away
    with pytest.raises(ValueError, match="does not hold 8-byte values"):
        unpack(pack(np.zeros(3, "<i4")), np.dtype("<i8"))
    # A whole listing, with names that are not ASCII: the ends count characters, not UTF-8 bytes.
    names = ["é", "", "日本", "item-1", "ü" * 300]
    listing = TypeListing(
        np.arange(5, dtype=np.int64) * 7,
        "".join(names),
        np.cumsum([len(n) for n in names]),
        np.array([16, 0, 32, 8, 1 << 40]),
        np.array([3, -1, 1, 2, 7], dtype=np.int32),
        np.array([-(1 << 62), 0, 5, 5, 1 << 62]),
    )
    back = TypeListing.from_properties(STORE_VERSION, *(listing.properties()[name] for name in LISTING_PROPERTIES))
    for field in ("ids", "ends", "self_sizes", "distances", "path_sigs"):
        assert np.array_equal(getattr(back, field), getattr(listing, field)), field
    assert back.names == listing.names and back.places("日", 5).tolist() == [2]


@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_listing_finds_names_as_brute_force_does(ascii_only: bool) -> None:
    """Names that are empty, hold the text twice, run into the next name, or (not ASCII) are
    compared by characters: each mode's places equal a test of every name in turn."""
    rng = np.random.default_rng(7)
    alphabet = list("ab-e") + ([] if ascii_only else ["é", "日"])
    names = ["".join(rng.choice(alphabet, size=rng.integers(0, 6))) for _ in range(3000)]
    ends = np.cumsum([len(n) for n in names], dtype=np.int64)
    listing = TypeListing(np.arange(len(names), dtype=np.int64) * 3, "".join(names), ends)
    tests = {
        "contains": lambda name, text: text in name,
        "prefix": lambda name, text: name.startswith(text),
        "exact": lambda name, text: name == text,
    }
    for text in ("e", "ab", "b-", "aaaa", *alphabet[-2:]):
        for mode, test in tests.items():
            expected = [k for k, name in enumerate(names) if test(name, text)]
            assert listing.places(text, len(names), mode).tolist() == expected, (text, mode)
            assert listing.places(text, 5, mode).tolist() == expected[:5], (text, mode)
            assert listing.matching(text, 2, mode).tolist() == [3 * k for k in expected[:2]], (text, mode)


def test_a_hubs_levels_are_read_from_its_stored_order_and_equal_the_sorted_ones(
    ask: Questions, database: Database, leak_snapshot: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Objects with more than HUB_REFERENCES references one way get their order written at load;
    every page read from it equals the page Neo4j sorts, once the orders are removed."""
    monkeypatch.setattr(hubs, "HUB_REFERENCES", 150)  # the leak's hubs hold hundreds, not 10,000s
    loaded = load_snapshot(database, leak_snapshot, "hubs")
    g = loaded.graph
    where = "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) "
    for direction, ends, prop in (("in", g.edge_to, "holders"), ("out", g.edge_sources(), "held")):
        degree = np.bincount(ends, minlength=g.node_count)
        stored = database.read(where + f"WHERE o.{prop}_order IS NOT NULL RETURN o.id AS id", {"tag": loaded.tag})
        assert sorted(r["id"] for r in stored) == sorted(g.ids[degree > 150].tolist()) != []
        chosen = [int(g.ids[i]) for i in np.argsort(-degree, kind="stable")[:3]]

        count = {i: int(degree[loaded.index(i)]) for i in chosen}
        from_order = {i: _pages(ask, loaded.tag, i, direction, count[i]) for i in chosen}
        database.write(where + f"REMOVE o.{prop}_order, o.{prop}_nth", {"tag": loaded.tag})
        for object_id, found in from_order.items():
            assert found == _pages(ask, loaded.tag, object_id, direction, count[object_id]), (direction, object_id)
            assert sum(len(p) for p in found) == count[object_id]


def test_a_snapshot_stored_before_children_were_listed_answers_the_same(
    database: Database, leak_snapshot: Path
) -> None:
    """Every object lists its children in the dominator tree, largest first, as the analysis orders
    them. A snapshot as store version 4 stored it (no lists but a hub's, version 4) finds them in the
    dominator index instead, which the schema keeps exactly while such a snapshot is stored: every
    question that walks the tree answers as before."""
    loaded = load_snapshot(database, leak_snapshot, "version-4")
    g, result = loaded.graph, loaded.result
    where = "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) "
    below = np.flatnonzero(result.idom >= 0)
    expected: dict[int, list[int]] = {}
    for child in sorted(below.tolist(), key=lambda c: (-int(result.retained_size[c]), int(g.ids[c]))):
        expected.setdefault(int(g.ids[result.idom[child]]), []).append(int(g.ids[child]))
    stored = database.read(
        where + "WHERE o.dominated_order IS NOT NULL RETURN o.id AS id, o.dominated_order AS children",
        {"tag": loaded.tag},
    )
    assert {r["id"]: r["children"] for r in stored} == expected

    widest = sorted(expected, key=lambda p: -len(expected[p]))[:4]
    parents = [*widest, int(g.ids[g.root])]

    def answers() -> tuple[Any, ...]:
        ask = Questions(database)  # no cache: each answer is asked afresh
        return (
            {p: ask.retains(loaded.tag, p, params.Retains(depth=3, limit=1000)) for p in parents},
            ask.dominated_largest(loaded.tag, parents, 20, [0, 0, 0, 1000, 0]),
            ask.suspects(loaded.tag, params.Suspects(share=0.01)),
            ask.heapdomstats(loaded.tag, params.HeapDomStats()),
        )

    def indexes() -> set[str]:
        return {r["name"] for r in database.read("SHOW INDEXES YIELD name RETURN name")}

    now = answers()
    assert now[2].objects and now[3].rows and len(expected[widest[0]]) > 50
    assert store.schema.DOMINATOR_INDEX not in indexes()
    # Without the index, the version-4 branches stay unread: no query scans the objects.
    for name, values in (
        ("dominated", {"ids": parents, "limit": 1000}),
        ("dominated", {"ids": expected[widest[0]], "limit": 1000}),
        ("dominated-largest", {"ids": parents, "width": 20}),
        ("suspects", {"min_retained": 1, "limit": 20}),
        ("heapdomstats", {}),
    ):
        assert _scanned(database, name, {"tag": loaded.tag, **values}) == 0, name
    old_versions.store_as(database, loaded.tag, 4)
    try:
        store.ensure_schema(database)
        assert store.schema.DOMINATOR_INDEX in indexes()
        assert answers() == now
    finally:
        store.drop(database, loaded.tag)
        store.ensure_schema(database)
    assert store.schema.DOMINATOR_INDEX not in indexes()


def _scanned(database: Database, name: str, values: dict[str, Any]) -> int:
    """The database hits of the operators that scan every object (or node) in the stored query
    ``name``'s profile."""
    query = catalog.get(name)
    with database.session() as session:
        plan = session.run("PROFILE " + query.cypher, query.bind(values)).consume().profile
    assert plan is not None
    hits, stack = 0, [plan]
    while stack:
        step = stack.pop()
        if "Scan" in step["operatorType"] and "Index" not in step["operatorType"]:
            hits += step.get("dbHits", 0)
        stack.extend(step.get("children", []))
    return hits


def _pages(ask: Questions, tag: str, object_id: int, direction: str, count: int) -> list[list[tuple[int, str, str]]]:
    """Every page of an object's references one way: each row's other end, kind and name."""
    found = []
    for offset in range(0, count + PAGE, PAGE):
        level = ask.references(tag, object_id, params.References(direction=direction, offset=offset, limit=PAGE))
        found.append([(n.object.id, n.reference.kind, n.reference.name) for n in level.references])
    return found


def test_a_paths_new_objects_are_those_held_that_way_and_new_since_the_earlier_snapshot(
    ask: Questions, database: Database, leak_series_loaded: dict[str, Loaded]
) -> None:
    """The compare by path's rows open their objects: the type page filtered by the path's signature
    and "new since", equal to the objects brute force finds on that path; old loads, whose listings
    have no signatures, answer the same object by object."""
    baseline, final = leak_series_loaded["baseline"], leak_series_loaded["final"]
    diff = ask.diff(baseline.tag, final.tag, params.Diff(by="path", limit=1000))
    assert isinstance(diff, results.Diff)
    grown = next(c for c in diff.changes if c.type == "LeakedItem" and c.count_delta > 0)
    g = final.graph
    signature = store.LoadInput.from_analysis(g, final.result).paths.signature
    old = set(baseline.graph.ids[members(baseline, "LeakedItem")].tolist())
    held = members(final, "LeakedItem")
    held = held[(signature[held] == grown.signature) & ~np.isin(g.ids[held], list(old))]
    assert held.size == grown.count_delta  # the leak only adds objects on that path
    values = {"type": "LeakedItem", "path": grown.signature, "since": baseline.tag, "limit": 1000}
    page = ask.instances(final.tag, params.Instances(**values))
    assert [o.id for o in page.objects] == expected_ids(final, held, "retained_size") and page.total == held.size
    assert page.path == grown.label
    assert grown.label in instances_text(page)
    # Every object of the path, new or not: the group's count.
    whole = ask.instances(final.tag, params.Instances(type="LeakedItem", path=grown.signature, limit=1000))
    assert whole.total == grown.count_after
    where = "MATCH (s:Snapshot {tag: $tag}) MATCH (t:TypeGroup {sid: s.sid, type: 'LeakedItem'}) "
    saved = database.read(where + "RETURN t.listing_path_sigs AS sigs", {"tag": final.tag})[0]["sigs"]
    database.write(where + "REMOVE t.listing_path_sigs", {"tag": final.tag})
    try:
        older = ask.instances(final.tag, params.Instances(**values))
    finally:
        database.write(where + "SET t.listing_path_sigs = $sigs", {"tag": final.tag, "sigs": saved})
    assert [o.id for o in older.objects] == [o.id for o in page.objects] and older.total == page.total
