"""Accessibility of every page type, checked by axe-core (pinned in tests/js/package.json) in a real
headless Chromium: no violation of impact "serious" or "critical" on the snapshots, one snapshot,
one object (its trees opened), the treemap, a type's objects, a tree level, the search, a question, the rule sets, signing in
(with and without a token to ask for) and an error page."""

from __future__ import annotations

import httpx
import pytest

from heapdb.db import Database
from heapdb.service import browse_pages, pages, question_pages, rule_pages
from heapdb.service.app import create_app
from tests.support.chromium import ChromiumPage
from tests.support.pages import AXE, IMPACTS
from tests.support.serving import served
from tests.support.snapshots import Loaded


@pytest.fixture(scope="module")
def loaded(leak_loaded: Loaded) -> Loaded:
    return leak_loaded


def test_every_page_type_passes_axe(database: Database, loaded: Loaded) -> None:
    assert AXE.is_file(), f"{AXE} is missing: run scripts/bootstrap.sh (npm ci in tests/js)"
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=90) as browser:
        base = f"http://127.0.0.1:{port}"
        snapshot = pages.page_path(pages.SNAPSHOT, tag=loaded.tag)
        top = httpx.get(base + snapshot + pages.JSON_SUFFIX).json()["top"][0]["id"]
        details = httpx.get(base + pages.object_page(loaded.tag, top) + pages.JSON_SUFFIX).json()["details"]
        holder = details["incoming"][0]["object"]["id"]
        held = details["outgoing"][0]["object"]["id"]
        treemap = pages.page_path(pages.TREEMAP, tag=loaded.tag)
        seen: dict[str, list[str]] = {}
        for name, url in {
            "snapshots": "/",
            "snapshot": snapshot,
            "object": pages.object_page(loaded.tag, top),
            "treemap": treemap,
            "treemap descended": pages.treemap_page(loaded.tag, top),
            "object, trees open": pages.object_page(loaded.tag, top) + f"?open=in:{holder}&open=out:{held}",
            "type": browse_pages.type_page(loaded.tag, "LeakedItem", sort="distance", offset=50),
            "tree level": browse_pages.tree_page(loaded.tag, top, "out", (held,)),
            "search": browse_pages.search_page(loaded.tag, "item-1"),
            "a question": question_pages.ask_page("lifelines", tag=loaded.tag, type="LeakedItem"),
            "rule sets": rule_pages.RULES,
            "login": pages.LOGIN,
            "error": pages.page_path(pages.SNAPSHOT, tag="no such tag"),
        }.items():
            browser.goto(base + url)
            seen[name] = browser.accessibility_violations(AXE, IMPACTS)
        problems = [p for p in browser.problems if "404" not in p]  # the error page's own status
    with served(create_app(token="s3cret")) as port, ChromiumPage("about:blank", timeout=90) as browser:
        browser.goto(f"http://127.0.0.1:{port}{pages.LOGIN}")
        seen["login form"] = browser.accessibility_violations(AXE, IMPACTS)
    found = [f"{name}: {violation}" for name, violations in seen.items() for violation in violations]
    assert not found, "\n".join(found)
    assert problems == []
