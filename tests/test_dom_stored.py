"""Detached DOM stored at load and asked of Neo4j: `heapdb dom`, its REST twin, MCP tool and page.

A load stores what :func:`heapdb.loader.inspections.dom.detached_dom` computes from a real Chromium
page's snapshot (heapgen.chromium's ``DETACHED_DOM_PAGE``); every limit the question takes must
then answer what the file gives. A Node snapshot has no detached DOM and says so; a format without
a DOM says that. (A snapshot stored before the inspection existed, and its reanalysis: in
tests/test_react_stored.py, for the three inspections of a page at once.)
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader.inspections import collections, dom, react
from heapdb.loader.paths import first_paths
from heapdb.loader.store import Snapshot
from heapdb.queries import missing, params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from tests.support.chromium import DETACHED_DOM_HOLDERS, ChromiumPage
from tests.support.pages import SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded


@pytest.fixture(scope="module")
def page(dom_page_loaded: Loaded) -> Loaded:
    return dom_page_loaded


def from_file(loaded: Loaded, limit: int) -> dom.DetachedDom:
    paths = first_paths(loaded.graph, loaded.result.retaining, loaded.result.transient)
    found = dom.detached_dom(loaded.graph, loaded.result, paths, source=loaded.tag, limit=limit)
    assert found is not None
    return found


def test_every_limit_answers_as_the_file_does(database: Database, page: Loaded) -> None:
    questions = Questions(database)
    for limit in (1, 2, dom.KEPT):
        assert questions.dom(page.tag, params.Dom(limit=limit)) == from_file(page, limit)
    answer = questions.dom(page.tag)
    assert answer.paths == len(DETACHED_DOM_HOLDERS) and answer.objects > 0
    # Every object the inspection counts is marked in the store, for Cypher of one's own.
    marked = database.read(
        "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) WHERE o.detached RETURN count(o) AS n",
        {"tag": page.tag},
    )
    assert marked[0]["n"] == answer.objects


def test_the_command_the_rest_twin_and_their_bounds(database: Database, page: Loaded) -> None:
    answer = Questions(database).dom(page.tag, params.Dom(limit=2))
    as_json = CliRunner().invoke(main, ["dom", page.tag, "--limit", "2", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == to_json(answer)
    as_text = CliRunner().invoke(main, ["dom", page.tag, "--limit", "2"])
    assert as_text.stdout.strip() == dom.detached_dom_text(answer)
    assert "closedPanels → Array" in as_text.stdout and "… 1 more paths" in as_text.stdout
    client = TestClient(create_app(token=""))
    rest = client.get(f"/api/snapshots/{page.tag}/dom", params={"limit": 2})
    assert rest.status_code == 200 and rest.json() == to_json(answer)
    assert client.get(f"/api/snapshots/{page.tag}/dom", params={"limit": dom.KEPT + 1}).status_code == 422
    schema = client.get("/openapi.json").json()
    documented = schema["paths"]["/api/snapshots/{tag}/dom"]["get"]["responses"]["200"]
    assert "groups" in json.dumps(schema["components"]["schemas"]) and documented["content"]
    too_many = CliRunner().invoke(main, ["dom", page.tag, "--limit", str(dom.KEPT + 1)])
    assert too_many.exit_code != 0 and "Traceback" not in too_many.output


def test_a_person_reads_what_holds_the_detached_trees_in_chromium(database: Database, page: Loaded) -> None:
    answer = Questions(database).dom(page.tag, params.Dom(limit=pages.WASTE_ROWS))
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=page.tag))
        summary = browser.evaluate("document.querySelector('#dom-summary').innerText")
        assert f"{answer.objects:,} objects no document holds, in {answer.trees:,} detached trees" in summary
        rows = browser.evaluate(
            "[...document.querySelectorAll('#dom tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))"
        )
        assert len(rows) == len(DETACHED_DOM_HOLDERS)
        panels = rows[0]
        assert "closedPanels → Array" in panels[0] and panels[1] == f"{DETACHED_DOM_HOLDERS['closedPanels']:,}"
        assert any("dialog → Detached <div>" in row[0] for row in rows)
        browser.screenshot(SCREENSHOTS / "snapshot-detached-dom.png")
        example = answer.groups[0].example_id
        reached = browser.follow(f'#dom tbody tr:first-child a[href$="/objects/{example}"]')
        assert reached == base + pages.object_page(page.tag, example)
        assert f"@{example}" in browser.evaluate("document.querySelector('h1').innerText")
        assert browser.problems == [], browser.problems


def test_a_node_snapshot_answers_as_its_file_does(database: Database, leak_loaded: Loaded) -> None:
    # Node marks some of its own native objects detached (``Node / BindingData``), and memlab counts
    # them (tests/test_inspections_dom.py checks that against memlab): they answer as the file does.
    answer = Questions(database).dom(leak_loaded.tag)
    assert answer == from_file(leak_loaded, params.Dom().limit)
    assert not any(o.type.startswith("Detached <") for o in answer.largest)  # no element of a page
    shown = TestClient(create_app(token="")).get(pages.page_path(pages.SNAPSHOT, tag=leak_loaded.tag))
    assert shown.status_code == 200 and 'id="dom-summary"' in shown.text


def test_a_format_without_dom_says_so() -> None:
    snapshot = Snapshot.from_properties({"sid": 1, "tag": "java", "format": "hprof", "status": "ready"})
    assert str(missing.DOM(snapshot)) == "hprof snapshots hold no DOM (snapshot 'java')"


def test_the_stored_query_is_there_for_ones_own_cypher(page: Loaded) -> None:
    shown = CliRunner().invoke(main, ["query", "detached-dom", "--param", f"tag={page.tag}", "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert [r["path"] for r in rows] == [g.path for g in from_file(page, dom.KEPT).groups]


def test_the_collections_holding_them_answer_as_the_file_does(database: Database, page: Loaded) -> None:
    paths = first_paths(page.graph, page.result.retaining, page.result.transient)
    marked = dom.detached(page.graph), react.unmounted(page.graph, page.result)
    assert marked[0] is not None and marked[1] is not None
    expected = collections.stale_collections(page.graph, page.result, paths, marked[0] | marked[1], source=page.tag)
    assert Questions(database).stale(page.tag, params.Stale(limit=collections.KEPT)) == expected
    one = Questions(database).stale(page.tag, params.Stale(limit=1))
    assert one.rows == expected.rows[:1] and one.collections == expected.collections == 2
    as_json = CliRunner().invoke(main, ["stale", page.tag, "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == to_json(expected)
    client = TestClient(create_app(token=""))
    assert client.get(f"/api/snapshots/{page.tag}/stale").json() == to_json(expected)
    shown = client.get(pages.page_path(pages.SNAPSHOT, tag=page.tag))
    assert 'id="stale-summary"' in shown.text and "closedPanels → Array" in shown.text
