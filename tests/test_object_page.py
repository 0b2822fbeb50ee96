"""The object page's views, on the real Neo4j with a real V8 snapshot (tests/js/leak.js): ignoring
retainers on the why-alive path (state in the URL, JSON twin alike), the retained subtree as nested
``<details>``, the references shown a page at a time, bad parameters; and a real headless Chromium
that ignores a holder, comes back, opens the tree and follows it, as a person would.

Screenshots go to ``$HEAPDB_SCREENSHOTS`` (default ``test-artifacts/screenshots`` in the checkout).
"""

from __future__ import annotations

import json
import re
import uuid
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from heapdb.db import Database
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import links, pages
from heapdb.service.app import create_app
from tests.support.chromium import ChromiumPage
from tests.support.pages import LINKED_ID, SCREENSHOTS, loaded_for_pages
from tests.support.serving import served
from tests.support.snapshots import Loaded

NOTHING_ELSE = "Nothing else holds it."


@pytest.fixture(scope="module")
def loaded(database: Database, leak_snapshot: Path):
    # A tag with a slash: one percent-encoded path segment in every link the page builds.
    with loaded_for_pages(database, leak_snapshot, "object-page", f"objects/{uuid.uuid4().hex[:6]}") as loaded:
        yield loaded


def deepest(loaded: Loaded, type_name: str) -> int:
    """The id of the object of ``type_name`` farthest from the root (as tests/test_pages.py picks it)."""
    g, r = loaded.graph, loaded.result
    node = max(
        (i for i in range(g.node_count) if g.type_name(i) == type_name and r.distance[i] > 0),
        key=lambda i: (int(r.distance[i]), -i),
    )
    return loaded.id(node)


def section(html: str, title_id: str) -> str:
    start = html.index(f'id="{title_id}"')
    return html[start : html.index("</section>", start)]


def drawn_ids(html: str) -> set[int]:
    """The objects the why-alive drawing links to (empty when nothing is drawn)."""
    why = section(html, "why-title")
    if "<svg" not in why:
        return set()
    svg = why[why.index("<svg") : why.index("</svg>")]
    return {int(m) for m in re.findall(LINKED_ID, svg)}


def listed_path(html: str) -> list[int]:
    """The ids of the path's list, in order."""
    why = section(html, "why-title")
    if '<ol class="path">' not in why:
        return []
    steps = why[why.index('<ol class="path">') : why.index("</ol>")]
    return [int(m) for m in re.findall(r'<span class="id">@(-?\d+)</span>', steps)]


class Tree(HTMLParser):
    """The retains tree: each entry's id and the id of the entry whose list item it is nested in."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[int | None] = []  # per open <li>: its entry's object
        self.details = 0  # how many <details> are open around here
        self.link: str | None = None
        self.parent: dict[int, int | None] = {}
        self.order: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "li":
            self.items.append(None)
        elif tag == "details":
            self.details += 1
        elif tag == "a":
            self.link = dict(attrs).get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self.items.pop()
        elif tag == "details":
            self.details -= 1
        elif tag == "a":
            self.link = None

    def handle_data(self, data: str) -> None:
        if self.link is None or not data.startswith("@"):
            return  # only an entry's own link reads "@id"; "see what ... retains" links do not
        object_id = int(data[1:])
        assert self.link.endswith(f"/objects/{object_id}") and self.items[-1] is None
        around = [o for o in self.items[:-1] if o is not None]
        self.parent[object_id] = around[-1] if around else None
        assert self.details == len(around)  # each level below the first is inside its parent's <details>
        self.items[-1] = object_id
        self.order.append(object_id)


def retains_tree(html: str) -> Tree:
    tree = Tree()
    tree.feed(section(html, "retains-title"))
    return tree


def test_ignoring_each_holder_gives_the_api_answer_and_a_path_that_avoids_it(
    client: TestClient, ask: Questions, loaded: Loaded
) -> None:
    outcomes = []
    for type_name in ("LeakedItem", "Array"):
        object_id = deepest(loaded, type_name)
        url = pages.object_page(loaded.tag, object_id)
        first = ask.why_alive(loaded.tag, object_id).paths[0]
        assert listed_path(client.get(url).text) == [o.id for o in first.objects]
        holders = [o.id for o in first.objects[1:-1]]
        assert len(holders) >= 3
        for holder in holders:
            page = client.get(url, params={"ignore_id": holder})
            assert page.status_code == 200, page.text
            twin = client.get(url + pages.JSON_SUFFIX, params={"ignore_id": holder}).json()
            answer = ask.why_alive(loaded.tag, object_id, params.Why(ignore_id=(holder,)))
            assert twin["why"] == links.to_json(answer)
            assert twin["view"]["ignore_id"] == [holder]
            ignored = section(page.text, "why-title")
            # The ignored holder is listed with a link back to the page without it.
            assert f'href="{url}#why-title" class="unignore"' in ignored
            if answer.paths:
                path = listed_path(page.text)
                assert path == [o.id for o in answer.paths[0].objects] and holder not in path
                assert holder not in drawn_ids(page.text) and set(path) <= drawn_ids(page.text)
                assert NOTHING_ELSE not in page.text
                outcomes.append("another path")
            else:
                assert NOTHING_ELSE in page.text and not drawn_ids(page.text) and not listed_path(page.text)
                outcomes.append("nothing else")
    # leak.js's items are held by the cache's map alone; other objects have more than one way in.
    assert {"another path", "nothing else"} <= set(outcomes)


def test_ignores_add_up_in_the_url_and_each_one_comes_off_alone(
    client: TestClient, ask: Questions, loaded: Loaded
) -> None:
    object_id = deepest(loaded, "Array")
    url = pages.object_page(loaded.tag, object_id)
    page = client.get(url).text
    holders = listed_path(page)[1:-1]
    first_ignore = re.search(rf'href="([^"#]*)#why-title" class="ignore" data-ignore="{holders[0]}"', page)
    assert first_ignore is not None
    once = client.get(first_ignore.group(1).replace("&amp;", "&")).text
    path_once = listed_path(once)
    assert holders[0] not in path_once
    # An "ignore" on the new path keeps the first one in the URL: the ignores accumulate.
    second = re.search(r'href="([^"#]*)#why-title" class="ignore" data-ignore="(-?\d+)"', once)
    assert second is not None
    href2, holder2 = second.group(1).replace("&amp;", "&"), int(second.group(2))
    assert parse_qs(urlsplit(href2).query)["ignore_id"] == [str(holders[0]), str(holder2)]
    both = client.get(href2)
    twin = client.get(urlsplit(href2).path + pages.JSON_SUFFIX + "?" + urlsplit(href2).query).json()
    answer = ask.why_alive(loaded.tag, object_id, params.Why(ignore_id=(holders[0], holder2)))
    assert twin["why"] == links.to_json(answer) and twin["view"]["ignore_id"] == [holders[0], holder2]
    assert not {holders[0], holder2} & set(listed_path(both.text))
    # Un-ignoring one keeps the other; "clear all" drops both.
    why = section(both.text, "why-title")
    unignore = re.findall(r'href="([^"#]*)#why-title" class="unignore"', why)
    assert [parse_qs(urlsplit(u.replace("&amp;", "&")).query).get("ignore_id") for u in unignore] == [
        [str(holder2)],
        [str(holders[0])],
    ]
    clear = re.search(r'href="([^"#]*)#why-title" class="clear-ignores"', why)
    assert clear is not None and clear.group(1) == url
    assert listed_path(client.get(clear.group(1)).text) == listed_path(page)


def test_the_retains_tree_is_the_questions_answer_nested_under_each_dominator(
    client: TestClient, ask: Questions, loaded: Loaded
) -> None:
    for type_name in ("LeakedItem", "LeakyCache"):
        object_id = deepest(loaded, type_name)
        page = client.get(pages.object_page(loaded.tag, object_id)).text
        answer = ask.retains(
            loaded.tag, object_id, params.Retains(depth=pages.RETAINS_DEPTH, limit=pages.RETAINS_LIMIT)
        )
        tree = retains_tree(page)
        assert len(answer.objects) > 2
        assert sorted(tree.order) == sorted(o.id for o in answer.objects[1:])  # each once, the target not
        expected = {child: (None if parent == object_id else parent) for parent, child in answer.edges}
        assert tree.parent == expected
        # Largest first among siblings, as the question lists them.
        sizes = {o.id: o.retained_size for o in answer.objects}
        for parent in {*expected.values()}:
            siblings = [c for c in tree.order if tree.parent[c] == parent]
            assert [sizes[c] for c in siblings] == sorted((sizes[c] for c in siblings), reverse=True)
        twin = client.get(pages.object_page(loaded.tag, object_id) + pages.JSON_SUFFIX).json()
        assert twin["retains"] == links.to_json(answer)
        cut = "some are left out" in section(page, "retains-title")
        assert cut == answer.truncated


def test_references_come_a_page_at_a_time_up_to_the_limit(client: TestClient, ask: Questions, loaded: Loaded) -> None:
    table = ask.why_alive(loaded.tag, deepest(loaded, "LeakedItem")).paths[0].objects[-2].id  # the map's entries
    url = pages.object_page(loaded.tag, table)
    page = client.get(url).text
    details = ask.object(loaded.tag, table, params.ObjectDetails(limit=pages.NEIGHBOURS))
    assert details.outgoing_count > 4 * pages.NEIGHBOURS
    holds = section(page, "containment-title")
    assert f"first {pages.NEIGHBOURS} of {details.outgoing_count:,}" in holds
    more = re.search(r'<a href="([^"#]*)#containment-title">Show the first ([\d,]+)</a>', holds)
    assert more is not None and more.group(2) == f"{4 * pages.NEIGHBOURS:,}"
    assert parse_qs(urlsplit(more.group(1)).query) == {"limit": [str(4 * pages.NEIGHBOURS)]}
    bigger = client.get(more.group(1)).text
    rows = re.findall(r'data-open="out:(-?\d+)"', section(bigger, "containment-title"))
    wider = ask.object(loaded.tag, table, params.ObjectDetails(limit=4 * pages.NEIGHBOURS))
    assert [int(r) for r in rows] == [n.object.id for n in wider.outgoing]
    twin = client.get(url + pages.JSON_SUFFIX, params={"limit": 4 * pages.NEIGHBOURS}).json()
    assert twin["details"] == links.to_json(wider) and twin["view"]["limit"] == 4 * pages.NEIGHBOURS
    # At the bound there is no link to more; past it, a 422.
    top = client.get(url, params={"limit": params.MAX_LIMIT}).text
    assert "Show the first" not in top
    assert client.get(url, params={"limit": params.MAX_LIMIT + 1}).status_code == 422


@pytest.mark.parametrize("query", ["ignore_id=abc", "k=0", "limit=0", "ignore_id=1&ignore_id=x"])
def test_bad_parameters_are_a_422_page_and_a_json_error_for_the_twin(
    client: TestClient, loaded: Loaded, query: str
) -> None:
    url = pages.object_page(loaded.tag, deepest(loaded, "LeakedItem"))
    page = client.get(f"{url}?{query}")
    assert page.status_code == 422 and page.headers["content-type"].startswith("text/html")
    assert "<h1>422</h1>" in page.text and query.split("=")[0] in page.text
    twin = client.get(f"{url}{pages.JSON_SUFFIX}?{query}")
    assert twin.status_code == 422 and query.split("=")[0] in twin.json()["error"]


def test_a_person_in_chromium_ignores_a_holder_comes_back_and_walks_the_retains_tree(
    ask: Questions, loaded: Loaded
) -> None:
    object_id = deepest(loaded, "LeakedItem")
    path = [o.id for o in ask.why_alive(loaded.tag, object_id).paths[0].objects]
    holder = path[-2]  # the nearest holder: the map's entries
    avoiding = ask.why_alive(loaded.tag, object_id, params.Why(ignore_id=(holder,)))
    drawn = (
        "[...document.querySelectorAll('figure.graph svg a')]"
        ".map(a => a.getAttribute('xlink:href') || a.getAttribute('href'))"
    )
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        url = base + pages.object_page(loaded.tag, object_id)
        browser.goto(url)
        before = {int(h.rsplit("/", 1)[1]) for h in browser.evaluate(drawn)}
        assert set(path) <= before
        ignored_url = browser.follow(f'a.ignore[data-ignore="{holder}"]')
        assert parse_qs(urlsplit(ignored_url).query) == {"ignore_id": [str(holder)]}
        after = {int(h.rsplit("/", 1)[1]) for h in browser.evaluate(drawn)}
        text = browser.evaluate("document.querySelector('section[aria-labelledby=why-title]').innerText")
        assert f"@{holder}" in text and "un-ignore" in text  # listed as ignored
        if avoiding.paths:
            assert after and holder not in after and after != before
        else:
            assert after == set() and NOTHING_ELSE in text
        browser.screenshot(SCREENSHOTS / "object-ignored.png")
        back = browser.follow("a.unignore")
        assert back.split("#")[0] == url
        assert {int(h.rsplit("/", 1)[1]) for h in browser.evaluate(drawn)} == before
        # Ignore again, then "clear all" comes back too.
        browser.follow(f'a.ignore[data-ignore="{path[-3]}"]')
        assert "ignore_id" in browser.evaluate("location.search")
        assert browser.follow("a.clear-ignores").split("#")[0] == url
        assert browser.problems == [], browser.problems
        # The retains tree: a closed entry opens with the keyboard (Enter on its summary) and shows
        # its children (taking room on the page), whose links lead to their pages.
        closed = "document.querySelector('ul.retains details:not([open])')"
        browser.evaluate(f"{closed}.id = 'opened'; document.querySelector('#opened > summary').focus()")
        height = "document.querySelector('#opened').parentElement.getBoundingClientRect().height"
        shut = browser.evaluate(height)
        browser.press("Enter")
        browser.wait_for("document.querySelector('#opened').open")
        assert browser.evaluate(height) > shut  # its children now take room on the page
        child = browser.evaluate(
            "(() => { const a = document.querySelector('#opened > ul a'); a.id = 'child-link';"
            " return a.checkVisibility() ? a.getAttribute('href') : null; })()"
        )
        assert child is not None and "/objects/" in child
        browser.screenshot(SCREENSHOTS / "object-retains.png")
        reached = browser.follow("#child-link")
        assert reached == base + child
        child_id = int(child.rsplit("/", 1)[1])
        assert browser.evaluate("document.querySelector('h1 .id').textContent") == f"@{child_id}"
        chain = ask.dominators(loaded.tag, child_id).chain
        assert any(o.id == object_id for o in chain)  # it was in the tree because the object dominates it
        assert browser.problems == [], json.dumps(browser.problems)


def test_a_rule_selector_in_the_url_is_listed_avoided_and_can_be_taken_back(
    client: TestClient, ask: Questions, loaded: Loaded
) -> None:
    object_id = deepest(loaded, "LeakedItem")
    url = pages.object_page(loaded.tag, object_id)
    first = ask.why_alive(loaded.tag, object_id).paths[0]
    selector = f'from.type = "{first.objects[-2].type}"'
    page = client.get(url, params={"ignore": selector})
    assert page.status_code == 200, page.text
    answer = ask.why_alive(loaded.tag, object_id, params.Why(ignore=(selector,)))
    twin = client.get(url + pages.JSON_SUFFIX, params={"ignore": selector}).json()
    assert twin["why"] == links.to_json(answer) and twin["view"]["ignore"] == [selector]
    ignored = section(page.text, "why-title")
    assert "from.type = &#34;" in ignored and f'href="{url}#why-title" class="unignore"' in ignored
    if answer.paths:
        assert listed_path(page.text) == [o.id for o in answer.paths[0].objects]
        assert first.objects[-2].type not in [o.type for o in answer.paths[0].objects[:-1]]
    else:
        assert NOTHING_ELSE in page.text
    assert client.get(url, params={"ignore": 'path = ["a", "b"]'}).status_code == 422
