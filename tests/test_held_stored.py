"""What listeners, the console and closures hold, stored at load and asked of Neo4j: `heapdb held`,
its REST twin and the snapshot page's "What holds memory here", on the Chromium page the
detached-DOM tests load (no load of its own). The inspection itself is checked against its oracles
in tests/test_inspections_held.py.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotComputed
from heapdb.loader.inspections import held
from heapdb.loader.paths import first_paths
from heapdb.loader.store import Snapshot
from heapdb.queries import missing, params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from tests.support.chromium import ChromiumPage
from tests.support.pages import SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded


def from_file(loaded: Loaded, limit: int) -> held.Held:
    paths = first_paths(loaded.graph, loaded.result.retaining, loaded.result.transient)
    found = held.held(loaded.graph, loaded.result, paths, source=loaded.tag, limit=limit)
    assert found is not None
    return found


def found_globals(data: object) -> list[dict[str, object]]:
    """The ``globals`` list wherever a page's JSON twin puts the answer."""
    if isinstance(data, dict):
        if isinstance(data.get("globals"), list):
            return data["globals"]
        return next((found for v in data.values() if (found := found_globals(v))), [])
    return []


def test_the_stored_answer_is_the_files(database: Database, dom_page_loaded: Loaded) -> None:
    page = dom_page_loaded
    questions = Questions(database)
    for limit in (1, held.KEPT):
        assert questions.held(page.tag, params.Held(limit=limit)) == from_file(page, limit)
    expected = from_file(page, params.Held().limit)
    assert {v.name for v in expected.globals} == {"closedPanels", "rowCache", "tree", "ready"}
    as_json = CliRunner().invoke(main, ["held", page.tag, "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == to_json(expected)
    client = TestClient(create_app(token=""))
    assert client.get(f"/api/snapshots/{page.tag}/held").json() == to_json(expected)
    asked = client.get(f"/ask/held?tag={page.tag}&limit=2")
    assert asked.status_code == 200 and "closedPanels" in asked.text
    twin = client.get(f"/ask/held.json?tag={page.tag}&limit=2")
    assert twin.status_code == 200 and [g["name"] for g in found_globals(twin.json())] == [
        v.name for v in expected.globals[:2]
    ]
    too_many = CliRunner().invoke(main, ["held", page.tag, "--limit", str(held.KEPT + 1)])
    assert too_many.exit_code != 0 and "Traceback" not in too_many.output
    # A snapshot stored before the inspection existed says what to run.
    before = replace(questions.snapshot(page.tag), held=None)
    with pytest.raises(NotComputed, match=f"run `heapdb reanalyze {page.tag}`"):
        questions.held(before)


def test_a_format_without_listeners_says_so() -> None:
    snapshot = Snapshot.from_properties({"sid": 1, "tag": "java", "format": "hprof", "status": "ready"})
    assert "hprof snapshots hold no JavaScript listeners or closures" in str(missing.HELD(snapshot))


def test_a_person_reads_what_holds_memory_in_chromium(database: Database, dom_page_loaded: Loaded) -> None:
    page = dom_page_loaded
    answer = Questions(database).held(page.tag, params.Held(limit=pages.WASTE_ROWS))
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=page.tag))
        rows = browser.evaluate(
            "[...document.querySelectorAll('#held tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))"
        )
        assert [r[0] for r in rows] == ["event listeners", "the console", "closures"]
        assert (
            rows[0][2] == f"{answer.listeners.objects:,}" and f"@{answer.listeners.groups[0].example_id}" in rows[0][4]
        )
        names = browser.evaluate("[...document.querySelectorAll('#globals tbody th')].map(th => th.innerText)")
        assert names == [v.name for v in answer.globals]
        browser.screenshot(SCREENSHOTS / "snapshot-held.png")
        example = answer.listeners.groups[0].example_id
        reached = browser.follow(f'#held tbody tr:first-child a[href$="/objects/{example}"]')
        assert reached == base + pages.object_page(page.tag, example)
        assert browser.problems == [], browser.problems
