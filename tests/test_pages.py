"""The HTML pages, on the real Neo4j with a real V8 snapshot: what they show against the API's own
answers, their JSON twins, links and errors, signing in with a token, and a real headless Chromium
that follows links as a person would and writes a screenshot of every page type.

Screenshots go to ``$HEAPDB_SCREENSHOTS`` (default ``test-artifacts/screenshots`` in the checkout).
"""

from __future__ import annotations

import re
import uuid
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from heapdb.db import Database
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import browse_pages, links, pages
from heapdb.service.app import create_app
from tests.support.chromium import ChromiumPage
from tests.support.pages import LINKED_ID, SCREENSHOTS, loaded_for_pages
from tests.support.serving import served
from tests.support.snapshots import Loaded

BUILD = {"build": "123", "commit": "abc1234"}  # what `heapdb load --meta` records, shown in the list


@pytest.fixture(scope="module")
def loaded(database: Database, leak_snapshot: Path):
    # A tag with a slash and a `.json` end: one path segment, and never taken for a JSON twin.
    tag = f"release/{uuid.uuid4().hex[:6]}.json"
    with loaded_for_pages(database, leak_snapshot, "pages", tag, meta=BUILD) as loaded:
        yield loaded


class Anchors(HTMLParser):
    """Every link of a page (HTML ``a href`` and SVG ``xlink:href``/``href``), and its visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links += [v for k, v in attrs if k in ("href", "xlink:href") and v]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Anchors:
    anchors = Anchors()
    anchors.feed(html)
    return anchors


def test_the_snapshot_page_shows_the_api_answers_and_links_each_object(
    client: TestClient, database: Database, loaded: Loaded
) -> None:
    ask = Questions(database, timeout=60)
    url = pages.page_path(pages.SNAPSHOT, tag=loaded.tag)
    assert url.endswith("%2Ejson") and url.count("/") == 2  # one segment, its last dot encoded
    html = client.get(url)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    found = parse(html.text)
    top = ask.top(loaded.tag, params.Top(limit=pages.TOP_ROWS))
    object_links = [link for link in found.links if "/objects/" in link]
    root = pages.object_page(loaded.tag, loaded.id(loaded.result.root))
    assert object_links[0] == root  # the totals name the root first
    top_section = html.text[html.text.index('id="top-title"') : html.text.index('id="suspects-title"')]
    top_links = [link for link in parse(top_section).links if "/objects/" in link]
    assert top_links == [pages.object_page(loaded.tag, o.id) for o in top]  # the top retainers in order
    # The twin: the same data as the API's answers.
    twin = client.get(url + pages.JSON_SUFFIX).json()
    api = client.get(links.path(links.SNAPSHOT, tag=loaded.tag) + "/top", params={"limit": pages.TOP_ROWS}).json()
    assert twin["top"] == api and twin["snapshot"]["tag"] == loaded.tag
    assert client.get(url, headers={"accept": "application/json"}).json() == twin
    # The leak suspects: the API's, each linked, with where its memory piles up.
    suspects = ask.suspects(loaded.tag)
    assert twin["suspects"] == client.get(links.path(links.SNAPSHOT, tag=loaded.tag) + "/suspects").json()
    section = html.text[html.text.index('id="suspects-title"') : html.text.index('id="types-title"')]
    section_links = parse(section).links
    for s in suspects.objects:
        assert pages.object_page(loaded.tag, s.object.id) in section_links
        assert pages.object_page(loaded.tag, s.accumulation.object.id) in section_links or s.accumulation.depth == 0
    if not suspects.objects:
        assert "No single object retains" in section
    assert all(f"<strong>{escape(t.type)}</strong>" in section for t in suspects.types)
    # Sorting the types by a column: the API's order for that sort.
    for sort in ("count", "self_size", "retained_size"):
        html_text = client.get(url, params={"sort": sort, "limit": 10}).text
        section = html_text[html_text.index('id="types-title"') :]
        linked = re.findall(r'<th scope="row"><a href="([^"]*)">(.*?)</a></th>', section)
        expected = [t.type for t in ask.types(loaded.tag, params.Types(sort=sort, limit=10))]
        assert [unescape(name) for _, name in linked] == expected, sort
        # Each type opens its objects' page.
        assert [unescape(href) for href, _ in linked] == [browse_pages.type_page(loaded.tag, t) for t in expected]


def test_the_object_page_draws_why_alive_with_every_box_a_link(client: TestClient, loaded: Loaded) -> None:
    g, r = loaded.graph, loaded.result
    deep = max(
        (i for i in range(g.node_count) if g.type_name(i) == "LeakedItem" and r.distance[i] > 0),
        key=lambda i: (int(r.distance[i]), -i),
    )
    object_id = loaded.id(deep)
    url = pages.object_page(loaded.tag, object_id)
    page = client.get(url)
    assert page.status_code == 200
    why = client.get(links.path(links.WHY, tag=loaded.tag, object_id=object_id)).json()
    path_ids = [o["id"] for o in why["paths"][0]["objects"]]
    assert len(path_ids) == int(r.distance[deep]) + 1
    found = parse(page.text)
    # The drawing is inline SVG whose boxes link to the objects' pages, the root's included.
    svg = page.text[page.text.index("<svg") : page.text.index("</svg>")]
    drawn = {int(m) for m in re.findall(LINKED_ID, svg)}
    assert set(path_ids) <= drawn
    for object_link in found.links:
        if "/objects/" in object_link:
            assert object_link.startswith(pages.page_path(pages.SNAPSHOT, tag=loaded.tag) + "/objects/")
    twin = client.get(url + pages.JSON_SUFFIX).json()
    assert [o["id"] for o in twin["why"]["paths"][0]["objects"]] == path_ids
    assert twin["dominators"]["chain"][-1]["id"] == object_id


def test_missing_pages_are_html_errors_and_twins_json_ones(client: TestClient, loaded: Loaded) -> None:
    page = client.get(pages.page_path(pages.SNAPSHOT, tag="no such tag"))
    assert (
        page.status_code == 404
        and "no snapshot tagged" in page.text
        and page.headers["content-type"].startswith("text/html")
    )
    twin = client.get(pages.page_path(pages.SNAPSHOT, tag="no such tag") + pages.JSON_SUFFIX)
    assert twin.status_code == 404 and "no snapshot tagged" in twin.json()["error"]
    gone = client.get(pages.object_page(loaded.tag, -12345))
    assert gone.status_code == 404 and "no object with id -12345" in gone.text


def test_with_a_token_pages_ask_to_sign_in_and_keep_the_token_in_a_cookie(database: Database, loaded: Loaded) -> None:
    client = TestClient(create_app(token="s3cret"), follow_redirects=False)
    url = pages.page_path(pages.SNAPSHOT, tag=loaded.tag)
    first = client.get(url)
    assert first.status_code == 303 and first.headers["location"].startswith(pages.LOGIN + "?next=")
    assert client.get(url + pages.JSON_SUFFIX).status_code == 401
    assert client.get("/static/heapdb.css").status_code == 200
    wrong = client.post(pages.LOGIN, data={"token": "guess", "next": url})
    assert wrong.status_code == 401 and pages.TOKEN_COOKIE not in wrong.cookies
    elsewhere = client.post(pages.LOGIN, data={"token": "s3cret", "next": "//elsewhere.example/x"})
    assert elsewhere.headers["location"] == "/"  # never sent to another site
    signed = client.post(pages.LOGIN, data={"token": "s3cret", "next": url})
    assert signed.status_code == 303 and signed.headers["location"] == url
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get(url).status_code == 200
    assert client.get(url, headers={"authorization": "Bearer s3cret"}, cookies={}).status_code == 200


def test_a_person_in_chromium_goes_from_the_list_to_an_object_and_along_its_path(
    database: Database, loaded: Loaded
) -> None:
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + "/")
        assert loaded.tag in browser.evaluate("document.body.innerText")
        row = f"[...document.querySelectorAll('tbody tr')].find(tr => tr.querySelector('th').innerText === {loaded.tag!r})"
        assert browser.evaluate(f"{row}.querySelector('td.meta').innerText") == "build 123, commit abc1234"
        browser.screenshot(SCREENSHOTS / "snapshots.png")
        snapshot_url = browser.follow(f'a[href="{pages.page_path(pages.SNAPSHOT, tag=loaded.tag)}"]')
        assert unquote(snapshot_url).endswith(loaded.tag)
        assert browser.evaluate("document.querySelectorAll('table')[0].rows.length") > 5
        browser.screenshot(SCREENSHOTS / "snapshot.png")
        sorted_url = browser.follow('a[href^="?sort=count"]')
        assert "sort=count" in sorted_url and browser.evaluate("!!document.querySelector('[aria-sort]')")
        object_url = browser.follow('section[aria-labelledby="top-title"] table a[href*="/objects/"]')
        assert "/objects/" in object_url
        assert browser.evaluate("document.querySelectorAll('figure.graph svg a').length") >= 2
        browser.screenshot(SCREENSHOTS / "object.png")
        # A box of the why-alive drawing (the root's, not this object's own) leads to that object's page.
        target = browser.evaluate(
            "(() => { const here = location.pathname;"
            " const boxes = [...document.querySelectorAll('figure.graph svg a')];"
            " const other = boxes.find(a => (a.getAttribute('xlink:href') || a.getAttribute('href')) !== here);"
            " other.id = 'other-box'; return other.getAttribute('xlink:href') || other.getAttribute('href'); })()"
        )
        reached = browser.follow("#other-box")
        assert reached == base + target
        assert httpx.get(reached).status_code == 200
        assert browser.problems == [], browser.problems
