"""The dominator treemap page, on the real Neo4j with a real V8 snapshot: its JSON twin's rectangles
against the analysis (sizes, nesting, areas in proportion), descending and coming back up in a real
headless Chromium with the mouse and the keyboard, and screenshots of both views.

Screenshots go to ``$HEAPDB_SCREENSHOTS`` (default ``test-artifacts/screenshots`` in the checkout).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
import pytest
from fastapi.testclient import TestClient

from heapdb.db import Database
from heapdb.service import pages, treemap
from heapdb.service.app import create_app
from tests.support.chromium import ChromiumPage
from tests.support.pages import SCREENSHOTS, loaded_for_pages
from tests.support.serving import served
from tests.support.snapshots import Loaded


@pytest.fixture(scope="module")
def loaded(database: Database, leak_snapshot: Path):
    with loaded_for_pages(database, leak_snapshot, "treemap") as loaded:
        yield loaded


@pytest.fixture(scope="module")
def client(database: Database) -> TestClient:
    return TestClient(create_app(token=""))


def children_in_tree(loaded: Loaded, parent: int) -> np.ndarray:
    r = loaded.result
    return np.flatnonzero((r.idom == parent) & r.reachable & (np.arange(len(r.idom)) != parent))


def check_layout(answer: dict, loaded: Loaded) -> None:
    """Every rectangle against the analysis; siblings fill their parent's inner area in proportion."""
    r = loaded.result
    canvas = answer["canvas"]
    root = answer["root"]
    boxes = answer["rectangles"]
    assert boxes, "nothing drawn"
    area_of = {root["id"]: (0.0, 0.0, float(canvas["width"]), float(canvas["height"]))}
    for b in boxes:
        if b["nested"]:
            area_of[b["id"]] = (
                b["x"] + canvas["pad"],
                b["y"] + canvas["band"],
                b["w"] - 2 * canvas["pad"],
                b["h"] - canvas["band"] - canvas["pad"],
            )
    siblings: dict[int, list[dict]] = {}
    for b in boxes:
        siblings.setdefault(b["parent"], []).append(b)
    assert set(siblings) <= set(area_of)
    eps = 0.01
    for parent, kids in siblings.items():
        x, y, w, h = area_of[parent]
        for b in kids:  # inside the parent's inner area, never overflowing it
            assert b["x"] >= x - eps and b["y"] >= y - eps, (parent, b)
            assert b["x"] + b["w"] <= x + w + eps and b["y"] + b["h"] <= y + h + eps, (parent, b)
            assert b["w"] > 0 and b["h"] > 0
        areas = np.array([b["w"] * b["h"] for b in kids])
        sizes = np.array([b["retained_size"] for b in kids], dtype=float)
        assert areas.sum() == pytest.approx(w * h, rel=1e-4)  # they fill it
        # In proportion (coordinates come rounded to 3 decimals: half a square pixel of slack).
        assert areas == pytest.approx(sizes / sizes.sum() * w * h, rel=1e-3, abs=0.5)
        # What they stand for: the parent's retained size less its self size.
        parent_index = loaded.index(parent)
        assert sizes.sum() == r.retained_size[parent_index] - r.self_size[parent_index]
        # The objects drawn are the parent's largest children in the dominator tree, with their sizes.
        drawn = [b for b in kids if b["id"] is not None]
        tree_children = children_in_tree(loaded, parent_index)
        for b in drawn:
            i = loaded.index(b["id"])
            assert r.idom[i] == parent_index and b["retained_size"] == r.retained_size[i], b
            above = 0 if parent == root["id"] else next(p["depth"] for p in boxes if p["id"] == parent)
            assert b["depth"] == above + 1
        smallest = min((b["retained_size"] for b in drawn), default=0)
        others = [b for b in kids if b["id"] is None]
        assert len(others) <= 1
        if others:
            assert others[0]["others"] == len(tree_children) - len(drawn)
        if drawn and len(drawn) < len(tree_children):  # none left out is larger than one drawn
            assert sorted(r.retained_size[tree_children], reverse=True)[len(drawn)] <= smallest


def test_the_treemap_twin_lays_out_the_dominator_tree_in_proportion(client: TestClient, loaded: Loaded) -> None:
    url = pages.page_path(pages.TREEMAP, tag=loaded.tag)
    answer = client.get(url + pages.JSON_SUFFIX).json()
    root = loaded.id(loaded.result.root)
    assert answer["root"]["id"] == root and [o["id"] for o in answer["chain"]] == [root]
    check_layout(answer, loaded)
    depths = {b["depth"] for b in answer["rectangles"]}
    assert depths >= {1, 2}, depths  # nested
    assert max(depths) <= treemap.DEFAULTS.depth
    per_parent: dict[int, int] = {}
    for b in answer["rectangles"]:
        if b["id"] is not None:
            per_parent[b["parent"]] = per_parent.get(b["parent"], 0) + 1
    assert max(per_parent.values()) <= treemap.DEFAULTS.width
    # Rooted at a drawn object, one level down: the chain grows by it, and its rectangles hold again.
    nested = max((b for b in answer["rectangles"] if b["nested"]), key=lambda b: b["retained_size"])
    down = client.get(url + pages.JSON_SUFFIX, params={"root": nested["id"]}).json()
    assert [o["id"] for o in down["chain"]][-1] == nested["id"] and down["root"]["id"] == nested["id"]
    assert [o["id"] for o in down["chain"]][0] == root
    check_layout(down, loaded)
    # Tighter limits: fewer, and no more than asked.
    narrow = client.get(url + pages.JSON_SUFFIX, params={"depth": 1, "width": 3}).json()
    assert {b["depth"] for b in narrow["rectangles"]} == {1}
    assert len([b for b in narrow["rectangles"] if b["id"] is not None]) <= 3
    check_layout(narrow, loaded)


def test_the_treemap_page_links_each_rectangle_and_names_it(client: TestClient, loaded: Loaded) -> None:
    url = pages.page_path(pages.TREEMAP, tag=loaded.tag)
    snapshot_page = client.get(pages.page_path(pages.SNAPSHOT, tag=loaded.tag)).text
    assert f'href="{url}"' in snapshot_page
    page = client.get(url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    svg = page.text[page.text.index("<svg") : page.text.index("</svg>")]
    boxes = re.findall(r'<a href="([^"]+)" aria-label="([^"]+)"', svg)
    answer = client.get(url + pages.JSON_SUFFIX).json()
    objects = [b for b in answer["rectangles"] if b["id"] is not None]
    assert len(boxes) == len(objects)
    for (href, name), b in zip(boxes, objects, strict=True):
        assert parse_qs(urlsplit(unquote(href)).query)["root"] == [str(b["id"])]
        assert re.fullmatch(r".+, \d+(\.\d)? (B|KiB|MiB|GiB)", name), name
        assert name.startswith(b["type"])
    # An object that is not there: the HTML error page; bad limits: refused.
    assert client.get(url, params={"root": -12345}).status_code == 404
    assert client.get(url, params={"depth": 9}).status_code == 422


def test_a_person_descends_the_treemap_and_comes_back_up(database: Database, loaded: Loaded) -> None:
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=loaded.tag))
        top_url = browser.follow('a[href$="/treemap"]')
        assert urlsplit(top_url).path.endswith("/treemap")
        crumbs = "document.querySelectorAll('nav.breadcrumb li').length"
        assert browser.evaluate(crumbs) == 1
        assert browser.evaluate("document.querySelectorAll('figure.treemap svg a').length") >= 3
        browser.screenshot(SCREENSHOTS / "treemap.png")
        # With the mouse: a rectangle without children drawn inside leads to that object's view.
        target = browser.evaluate(
            "(() => { const a = document.querySelector('figure.treemap svg a.depth-1:not(.nested)')"
            " || document.querySelector('figure.treemap svg a.depth-1');"
            " a.id = 'chosen'; return a.getAttribute('href'); })()"
        )
        down_url = browser.follow("#chosen")
        assert down_url == base + target and "root=" in down_url
        assert browser.evaluate(crumbs) == 2
        # The breadcrumb's first link goes back up to the snapshot's root.
        up_url = browser.follow("nav.breadcrumb li:first-child a")
        assert up_url == top_url and browser.evaluate(crumbs) == 1
        # With the keyboard: Tab reaches a rectangle, shows a ring, Enter follows it.
        focused = "document.activeElement && document.activeElement.closest('figure.treemap') !== null"
        for _ in range(40):
            browser.press("Tab")
            if browser.evaluate(focused):
                break
        assert browser.evaluate(focused), "Tab never reached the treemap"
        name = browser.evaluate("document.activeElement.getAttribute('aria-label')")
        assert re.fullmatch(r".+, \d+(\.\d)? (B|KiB|MiB|GiB)", name), name
        ring = browser.evaluate("getComputedStyle(document.activeElement.querySelector('rect')).strokeWidth")
        assert ring == "3px", ring
        browser.screenshot(SCREENSHOTS / "treemap-focus.png", full_page=False)
        href = browser.evaluate("document.activeElement.getAttribute('href')")
        browser.press("Enter")
        browser.wait_for(f"location.href === {base + href!r} && document.readyState === 'complete'")
        assert browser.evaluate(crumbs) >= 2
        browser.screenshot(SCREENSHOTS / "treemap-descended.png")
        assert browser.problems == [], browser.problems


def test_treemap_server_time_is_reported(client: TestClient, loaded: Loaded) -> None:
    """Not asserted: printed (``pytest -s``) for the notes, warm, over a few requests."""
    url = pages.page_path(pages.TREEMAP, tag=loaded.tag)
    started = time.perf_counter()
    assert client.get(url, params={"width": 23}).status_code == 200  # limits no other test asked for
    cold = time.perf_counter() - started
    times = []
    for _ in range(5):
        started = time.perf_counter()
        assert client.get(url).status_code == 200
        times.append(time.perf_counter() - started)
    print(
        f"treemap page on {loaded.graph.node_count:,} objects: {cold * 1000:.0f} ms cold,"
        f" median {sorted(times)[2] * 1000:.0f} ms warm (answers cached)"
    )
