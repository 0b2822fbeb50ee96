"""Unmounted React components stored at load and asked of Neo4j: `heapdb react`, its REST twin, MCP
tool and the snapshot page, on the React app of tests/test_inspections_react.py."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotComputed
from heapdb.loader import store
from heapdb.loader.inspections import react
from heapdb.loader.paths import first_paths
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from tests.support.chromium import REACT_PANELS, ChromiumPage, write_react_snapshots
from tests.support.pages import SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded, load_snapshot


@pytest.fixture(scope="module")
def app(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    paths = write_react_snapshots(tmp_path_factory.mktemp("react-stored"))
    return load_snapshot(database, paths["unmounted"], "react")


def from_file(loaded: Loaded, limit: int) -> react.UnmountedFibers:
    paths = first_paths(loaded.graph, loaded.result.retaining, loaded.result.transient)
    found = react.unmounted_fibers(loaded.graph, loaded.result, paths, source=loaded.tag, limit=limit)
    assert found is not None
    return found


def test_every_limit_answers_as_the_file_does_through_every_front_end(database: Database, app: Loaded) -> None:
    questions = Questions(database)
    for limit in (1, react.KEPT):
        assert questions.react(app.tag, params.React(limit=limit)) == from_file(app, limit)
    answer = questions.react(app.tag, params.React(limit=2))
    as_json = CliRunner().invoke(main, ["react", app.tag, "--limit", "2", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == to_json(answer)
    as_text = CliRunner().invoke(main, ["react", app.tag, "--limit", "2"])
    assert as_text.stdout.strip() == react.unmounted_fibers_text(answer)
    client = TestClient(create_app(token=""))
    rest = client.get(f"/api/snapshots/{app.tag}/react", params={"limit": 2})
    assert rest.status_code == 200 and rest.json() == to_json(answer)
    assert client.get(f"/api/snapshots/{app.tag}/react", params={"limit": react.KEPT + 1}).status_code == 422
    rows = CliRunner().invoke(main, ["query", "unmounted-components", "--param", f"tag={app.tag}", "--json"])
    assert rows.exit_code == 0, rows.output
    assert [r["component"] for r in json.loads(rows.stdout)] == [r.component for r in from_file(app, 20).rows]


def test_a_person_finds_the_leaking_component_on_the_snapshot_page(database: Database, app: Loaded) -> None:
    answer = Questions(database).react(app.tag, params.React(limit=pages.WASTE_ROWS))
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=app.tag))
        summary = browser.evaluate("document.querySelector('#react-summary').innerText")
        assert f"{answer.fibers:,} fibers of {answer.components:,} components" in summary
        rows = browser.evaluate(
            "[...document.querySelectorAll('#react tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))"
        )
        assert rows[0][0] == "LeakyPanel" and rows[0][1] == f"{REACT_PANELS:,}" and "setUpdates" in rows[0][3]
        browser.screenshot(SCREENSHOTS / "snapshot-react.png")
        example = answer.rows[0].example_id
        reached = browser.follow(f'#react tbody tr:first-child a[href$="/objects/{example}"]')
        assert reached == base + pages.object_page(app.tag, example)
        assert browser.problems == [], browser.problems


def test_a_node_snapshot_has_no_fibers_and_its_page_says_nothing_of_react(
    database: Database, leak_loaded: Loaded
) -> None:
    answer = Questions(database).react(leak_loaded.tag)
    assert answer.fibers == answer.mounted == 0 and answer.rows == ()
    result = CliRunner().invoke(main, ["react", leak_loaded.tag])
    assert result.exit_code == 0 and "none (0 fibers" in result.stdout
    shown = TestClient(create_app(token="")).get(pages.page_path(pages.SNAPSHOT, tag=leak_loaded.tag))
    assert shown.status_code == 200 and 'id="react-summary"' not in shown.text


def test_a_snapshot_stored_before_says_to_reanalyse_and_reanalysing_answers(database: Database, app: Loaded) -> None:
    tag = f"test-react-old-{uuid.uuid4().hex[:8]}"
    store.load(database, store.LoadInput.from_analysis(app.graph, app.result), tag)
    database.write(
        "MATCH (s:Snapshot {tag: $tag}) REMOVE s.react WITH s MATCH (g:FiberGroup {sid: s.sid}) DELETE g",
        {"tag": tag},
    )
    with pytest.raises(NotComputed, match=f"heapdb reanalyze {tag}"):
        Questions(database).react(tag)
    client = TestClient(create_app(token=""))
    assert client.get(f"/api/snapshots/{tag}/react").status_code == 409
    shown = client.get(pages.page_path(pages.SNAPSHOT, tag=tag))
    assert (
        shown.status_code == 200
        and "Unmounted React components: the unmounted-components inspection was not" in shown.text
    )
    done = CliRunner().invoke(main, ["reanalyze", tag, "--rules", "none"])
    assert done.exit_code == 0, done.output
    again, expected = Questions(database).react(tag), from_file(app, react.KEPT)
    assert (again.fibers, again.mounted, again.retained_size) == (
        expected.fibers,
        expected.mounted,
        expected.retained_size,
    )
    assert [(r.component, r.fibers) for r in again.rows] == [(r.component, r.fibers) for r in expected.rows]
