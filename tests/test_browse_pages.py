"""Walking one snapshot through the pages, on the real Neo4j with the leak program's real V8
snapshots: a type's objects, the object page's retainers and containment trees, one tree level, the
search. First without JavaScript (what the server renders, the links each view is made of, the JSON
twins), then in a real headless Chromium as a person clicks, types and presses keys through it:
Summary → a type → an instance → its retainers opened three levels → a holder's page; a search; the
comparison view. Screenshots go to ``$HEAPDB_SCREENSHOTS`` (default ``test-artifacts/screenshots``).
"""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import numpy as np
from fastapi.testclient import TestClient

from heapdb.loader.graph import EdgeKind
from heapdb.queries import params, results
from heapdb.queries.questions import Questions
from heapdb.service import browse_pages, compare_pages, pages, trees
from heapdb.service.app import create_app
from tests.support.chromium import ChromiumPage
from tests.support.pages import AXE, IMPACTS, SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded

LEAKED = "LeakedItem"  # leak.js: 600 of them in the final snapshot, 100 in the baseline
ROW_ID = re.compile(r'<li class="node" data-open="(?:in|out):[-0-9.]+"')


def level_ids(html: str, direction: str, path: tuple[int, ...]) -> list[int]:
    """The objects of the rows one level below ``path`` in the page's tree, in order."""
    prefix = f"{direction}:{'.'.join(map(str, path))}." if path else f"{direction}:"
    found = re.findall(rf'data-open="{re.escape(prefix)}(-?\d+)"', html)
    return [int(i) for i in found]


def a_leaked_item(ask: Questions, loaded: Loaded) -> int:
    return ask.instances(loaded.tag, params.Instances(type=LEAKED, limit=1)).objects[0].id


def test_a_types_page_lists_its_objects_a_page_at_a_time_with_its_filters_in_the_url(
    client: TestClient, ask: Questions, leak_series_loaded: dict[str, Loaded]
) -> None:
    baseline, final = leak_series_loaded["baseline"], leak_series_loaded["final"]
    # The snapshot page's types table opens each type's page.
    snapshot_page = client.get(pages.page_path(pages.SNAPSHOT, tag=final.tag)).text
    url = browse_pages.type_page(final.tag, LEAKED)
    assert f'href="{url}"' in snapshot_page
    for query, expected in (
        ({}, params.Instances(type=LEAKED)),
        ({"sort": "distance", "offset": "70"}, params.Instances(type=LEAKED, sort="distance", offset=70)),
        (
            {"since": baseline.tag, "sort": "self_size"},
            params.Instances(type=LEAKED, since=baseline.tag, sort="self_size"),
        ),
        # A form's "any" choices come as empty values: no filter.
        ({"detached": "", "bucket": "", "since": ""}, params.Instances(type=LEAKED)),
    ):
        answer = ask.instances(final.tag, expected)
        page = client.get(url, params=query)
        assert page.status_code == 200
        ids = [int(i) for i in re.findall(r'<th scope="row"><a href="[^"]*/objects/(-?\d+)"', page.text)]
        assert ids == [o.id for o in answer.objects]
        shown = len(answer.objects)
        note = f"Objects {answer.offset + 1:,}–{answer.offset + shown:,} of {answer.total:,}"
        assert note in unescape(page.text)
        twin = client.get(url + ".json", params=query).json()
        assert twin["instances"]["total"] == answer.total
        assert [o["id"] for o in twin["instances"]["objects"]] == ids
        assert twin["type"]["count"] == 600
    # The pager: "next" goes on where the page ends, keeping the sort and filters.
    html = client.get(url, params={"since": baseline.tag}).text
    following = unescape(re.findall(r'<a rel="next" href="([^"]+)"', html)[0])
    assert parse_qs(urlsplit(following).query) == {"since": [baseline.tag], "offset": ["50"]}
    # A bad value is a 422 page naming it; an unknown snapshot for "since" a 404.
    bad = client.get(url, params={"sort": "colour"})
    assert bad.status_code == 422 and "sort" in bad.text and "<html" in bad.text
    assert client.get(url, params={"since": "no such tag"}).status_code == 404


def test_the_trees_open_by_url_level_by_level_and_mark_weak_references_and_cycles(
    client: TestClient, ask: Questions, leak_loaded: Loaded
) -> None:
    tag = leak_loaded.tag
    item = a_leaked_item(ask, leak_loaded)
    url = pages.object_page(tag, item)
    page = client.get(url).text
    first = ask.references(tag, item, params.References(direction="in", limit=pages.NEIGHBOURS))
    assert level_ids(page, "in", ()) == [n.object.id for n in first.references]
    # Three levels of retainers open at once, from the URL alone: each level is the question's answer.
    path: tuple[int, ...] = ()
    for _ in range(3):
        holder = path[-1] if path else item
        rows = ask.references(tag, holder, params.References(direction="in", limit=trees.LEVEL_ROWS)).references
        path = (*path, rows[0].object.id)
    opened = client.get(url, params={"open": trees.open_value("in", path)}).text
    for depth in range(3):
        holder = path[depth - 1] if depth else item
        rows = ask.references(tag, holder, params.References(direction="in", limit=trees.LEVEL_ROWS)).references
        assert level_ids(opened, "in", path[:depth]) == [n.object.id for n in rows]
    # The open row's toggle closes it (and keeps its holder open); a closed row's opens it.
    closing = unescape(
        re.findall(
            rf'data-open="in:{re.escape(".".join(map(str, path)))}"[^>]*>\s*<span class="row"><a class="toggle" href="([^"]+)"',
            opened,
        )[0]
    )
    assert parse_qs(urlsplit(closing).query)["open"] == [trees.open_value("in", path[:2])]
    # One level as its own page, and its rows alone for the pages' client, and its JSON twin.
    level_url = browse_pages.tree_page(tag, item, "in", path[:1])
    assert level_ids(client.get(level_url).text, "in", path[:1]) == level_ids(opened, "in", path[:1])
    fragment = client.get(browse_pages.tree_page(tag, item, "in", path[:1], fragment=True)).text
    assert "<html" not in fragment and level_ids(fragment, "in", path[:1]) == level_ids(opened, "in", path[:1])
    twin = client.get(level_url.replace("/tree?", "/tree.json?")).json()
    assert [n["object"]["id"] for n in twin["level"]["references"]] == level_ids(opened, "in", path[:1])

    # Containment: an object that references an object that references it back is a cycle there.
    g = leak_loaded.graph
    sources = g.edge_sources()
    reachable = leak_loaded.result.distance >= 0
    degree = np.diff(g.edge_start)  # a's row must be on b's first level, b's on a's first 1,000
    pairs = {(int(a), int(b)) for a, b in zip(sources, g.edge_to, strict=True) if a != b}
    a, b = next(
        (a, b)
        for a, b in sorted(pairs)
        if (b, a) in pairs and reachable[a] and reachable[b] and degree[b] <= trees.LEVEL_ROWS and degree[a] <= 1000
    )
    a_id, b_id = int(g.ids[a]), int(g.ids[b])
    cyclic = client.get(pages.object_page(tag, a_id), params={"open": f"out:{b_id}", "limit": "1000"}).text
    row = re.search(rf'<li class="node" data-open="out:{b_id}\.{a_id}">.*?</li>', cyclic, re.S)
    assert row is not None and 'class="badge cycle"' in row.group(0) and 'class="toggle"' not in row.group(0)
    # A weak reference is listed in the containment tree, and marked.
    weak = np.flatnonzero((g.edge_kind == EdgeKind.WEAK) & reachable[sources] & (degree[sources] <= 1000))
    holder, target = int(g.ids[sources[weak[0]]]), int(g.ids[g.edge_to[weak[0]]])
    held = client.get(pages.object_page(tag, holder), params={"limit": "1000"}).text
    row = re.search(rf'<li class="node" data-open="out:{target}"[^>]*>.*?</li>', held, re.S)
    assert row is not None and 'class="badge weak"' in row.group(0)
    # Bad tree state is a 422 page, never a 500.
    for query in ({"open": "in:12;drop"}, {"open": ["in:1"] * (trees.MAX_OPEN + 1)}):
        assert client.get(url, params=query).status_code == 422
    assert client.get(level_url.replace("path=", "path=x")).status_code == 422


def test_the_search_page_finds_types_an_id_and_strings(client: TestClient, ask: Questions, leak_loaded: Loaded) -> None:
    tag = leak_loaded.tag
    answer = ask.search(tag, params.Search(text="item-1"))
    page = client.get(browse_pages.search_page(tag, "item-1")).text
    strings = [int(i) for i in re.findall(r'/objects/(-?\d+)"><span class="name">', page)]
    assert strings == [o.id for o in answer.strings] and answer.string_total > len(strings)
    assert f"(1–{len(strings)} of {answer.string_total:,})" in unescape(page)
    item = a_leaked_item(ask, leak_loaded)
    by_id = client.get(browse_pages.SEARCH + ".json", params={"tag": tag, "text": f"@{item}"}).json()
    assert by_id["results"]["object"]["id"] == item
    types = client.get(browse_pages.search_page(tag, "leaked", "prefix")).text
    assert f'href="{browse_pages.type_page(tag, LEAKED)}"' in types
    # Every page's header has the box, searching the page's snapshot.
    assert f'name="tag" value="{tag}"' in client.get(pages.object_page(tag, item)).text
    assert client.get(browse_pages.SEARCH, params={"tag": tag, "text": "x" * 1001}).status_code == 422


def test_a_person_walks_from_the_summary_to_a_holder_searches_and_compares_in_chromium(
    ask: Questions, leak_series_loaded: dict[str, Loaded]
) -> None:
    baseline, final = leak_series_loaded["baseline"], leak_series_loaded["final"]
    tag = final.tag
    rows_shown = "[...document.querySelectorAll('#instances tbody tr')].length"
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        # Summary: the snapshot page's types table; LeakedItem opens its objects.
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=tag))
        browser.follow(f'a[href="{browse_pages.type_page(tag, LEAKED)}"]')
        assert browser.evaluate("document.querySelector('h1').textContent") == LEAKED
        everything = ask.instances(tag, params.Instances(type=LEAKED))
        assert browser.evaluate("document.querySelector('#page-note').textContent").startswith("Objects 1–50 of 600")
        assert browser.evaluate(rows_shown) == 50
        # Sorted by distance, nearest first, by the column's header.
        browser.follow("#instances thead a[href*='sort=distance']")
        by_distance = ask.instances(tag, params.Instances(type=LEAKED, sort="distance"))
        first_id = "document.querySelector('#instances tbody th .id').textContent"
        assert browser.evaluate(first_id) == f"@{by_distance.objects[0].id}"
        # Only what is new since the baseline: choose it in the form and filter.
        browser.evaluate(f"document.querySelector('select[name=since]').value = {baseline.tag!r}")
        browser.follow("form.filters button[type=submit]")
        new = ask.instances(tag, params.Instances(type=LEAKED, sort="distance", since=baseline.tag))
        assert new.total == 500 and new.total < everything.total
        assert f"of {new.total}" in browser.evaluate("document.querySelector('#page-note').textContent")
        assert browser.evaluate(first_id) == f"@{new.objects[0].id}"
        browser.screenshot(SCREENSHOTS / "type-page.png")
        assert browser.accessibility_violations(AXE, IMPACTS) == []
        # An instance's page; its retainers tree opened three levels by clicking, in place.
        item = new.objects[0].id
        browser.follow("#instances tbody th a")
        assert browser.evaluate("document.querySelector('h1 .id').textContent") == f"@{item}"
        path: tuple[int, ...] = ()
        for depth in range(3):
            holder = path[-1] if path else item
            expected = ask.references(tag, holder, params.References(direction="in", limit=trees.LEVEL_ROWS))
            row = f'ul.reftree.retainers li[data-open="{trees.open_value("in", (*path, expected.references[0].object.id))}"]'
            if depth:  # the level just opened lists the holder's holders
                shown = browser.evaluate(
                    f"[...document.querySelectorAll('li[data-open=\"{trees.open_value('in', path)}\"] > ul > li.node')]"
                    ".map(li => li.dataset.open.split('.').pop().replace(/^in:/, ''))"
                )
                assert [int(i) for i in shown] == [n.object.id for n in expected.references]
            path = (*path, expected.references[0].object.id)
            if depth < 2:
                browser.click(f"{row} > .row > a.toggle")
            else:  # the third by keyboard: focus the row, arrow right opens it
                browser.evaluate(f"document.querySelector('{row}').focus()")
                browser.press("ArrowRight")
            browser.wait_for(f"document.querySelector('{row}').getAttribute('aria-expanded') === 'true'")
            browser.wait_for(f"document.querySelector('{row} > ul > li') !== null")
        # The address bar holds the open rows: the same URL opens the same tree without a script.
        assert parse_qs(urlsplit(browser.evaluate("location.href")).query)["open"] == [trees.open_value("in", path)]
        deepest = ask.references(tag, path[-1], params.References(direction="in", limit=1)).references[0].object
        shown_sizes = browser.evaluate(
            f"document.querySelector('li[data-open=\"{trees.open_value('in', path)}\"] > ul > li .retained').textContent"
        )
        assert shown_sizes == pages.human_bytes(deepest.retained_size)
        # Arrow down moves into the level just opened; Enter follows its object's link.
        browser.press("ArrowDown")
        assert browser.evaluate("document.activeElement.dataset.open") == trees.open_value("in", (*path, deepest.id))
        browser.screenshot(SCREENSHOTS / "object-retainers-tree.png")
        assert browser.accessibility_violations(AXE, IMPACTS) == []
        before = browser.evaluate("location.href")
        browser.press("Enter")
        browser.wait_for(f"location.href !== {before!r} && document.readyState === 'complete'")
        assert browser.evaluate("document.querySelector('h1 .id').textContent") == f"@{deepest.id}"
        # A search from the header: "/" goes to the box; typing and Enter search this snapshot.
        browser.press("/")
        assert browser.evaluate("document.activeElement.id") == "search-text"
        browser.type_text("item-1")
        before = browser.evaluate("location.href")
        browser.press("Enter")
        browser.wait_for(f"location.href !== {before!r} && document.readyState === 'complete'")
        found = ask.search(tag, params.Search(text="item-1"))
        heading = browser.evaluate("document.querySelector('#found-strings').textContent")
        assert f"of {found.string_total}" in heading
        links = browser.evaluate("[...document.querySelectorAll('#strings-found th a')].map(a => a.textContent)")
        assert links == [o.name for o in found.strings]
        # Only the exact content: one string.
        browser.click("input[name=mode][value=exact]")
        browser.follow("form.filters button[type=submit]")
        exact = ask.search(tag, params.Search(text="item-1", mode="exact"))
        assert (
            browser.evaluate("document.querySelectorAll('#strings-found tbody tr').length") == len(exact.strings) == 1
        )
        browser.screenshot(SCREENSHOTS / "search.png")
        # The comparison view: a type's row opens its objects new since the earlier snapshot.
        browser.goto(base + compare_pages.compare_page(baseline.tag, tag))
        browser.follow(f'a[href="{browse_pages.type_page(tag, LEAKED, since=baseline.tag)}"]')
        assert f"of {new.total}" in browser.evaluate("document.querySelector('#page-note').textContent")
        # The same by retainer path: the leak's path opens the objects new on it.
        browser.goto(base + compare_pages.compare_page(baseline.tag, tag, by="path"))
        by_path = ask.diff(baseline.tag, tag, params.Diff(by="path"))
        assert isinstance(by_path, results.Diff)
        grown = next(c for c in by_path.changes if c.type == LEAKED)
        link = browse_pages.type_page(tag, LEAKED, since=baseline.tag, path=grown.signature)
        browser.follow(f'table.compare a[href="{link}"]')
        on_path = ask.instances(tag, params.Instances(type=LEAKED, since=baseline.tag, path=grown.signature))
        note = browser.evaluate("document.querySelector('#page-note').textContent")
        assert f"of {on_path.total}," in note and grown.label in note and on_path.total == grown.count_delta
        assert browser.evaluate(rows_shown) == len(on_path.objects)
        browser.screenshot(SCREENSHOTS / "compare-path-objects.png")
        assert browser.problems == [], browser.problems
