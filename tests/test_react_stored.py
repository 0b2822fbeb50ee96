"""Unmounted React components stored at load and asked of Neo4j: `heapdb react`, its REST twin, MCP
tool and the snapshot page, on the React app of tests/test_inspections_react.py; and a snapshot stored
before the page inspections (unmounted components, detached DOM, collections holding them) existed."""

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
from heapdb.loader.inspections import collections, dom, react, react_hooks
from heapdb.loader.paths import first_paths
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from heapdb.service.question_pages import ask_page
from tests.support.chromium import REACT_PANELS, ChromiumPage
from tests.support.pages import SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded


@pytest.fixture(scope="module")
def app(react_loaded: dict[str, Loaded]) -> Loaded:
    return react_loaded["unmounted"]


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


def test_memory_by_component_answers_as_the_file_does_through_every_front_end(database: Database, app: Loaded) -> None:
    questions = Questions(database)
    for limit in (2, react_hooks.KEPT):
        expected = react_hooks.component_hooks(app.graph, app.result, source=app.tag, limit=limit)
        assert questions.react_hooks(app.tag, params.ReactHooks(limit=limit)) == expected
    answer = questions.react_hooks(app.tag, params.ReactHooks(limit=2))
    assert answer.rows and any(r.hooks for r in questions.react_hooks(app.tag).rows)
    as_json = CliRunner().invoke(main, ["react-hooks", app.tag, "--limit", "2", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == to_json(answer)
    as_text = CliRunner().invoke(main, ["react-hooks", app.tag, "--limit", "2"])
    assert as_text.stdout.strip() == react_hooks.component_hooks_text(answer)
    client = TestClient(create_app(token=""))
    rest = client.get(f"/api/snapshots/{app.tag}/react-hooks", params={"limit": 2})
    assert rest.status_code == 200 and rest.json() == to_json(answer)
    assert (
        client.get(f"/api/snapshots/{app.tag}/react-hooks", params={"limit": react_hooks.KEPT + 1}).status_code == 422
    )
    asked = client.get(ask_page("react-hooks", tag=app.tag, limit=2))
    assert asked.status_code == 200 and answer.rows[0].component in asked.text
    twin = client.get(ask_page("react-hooks", tag=app.tag, limit=2).replace("?", ".json?", 1))
    assert twin.status_code == 200 and twin.json()["rows"] == to_json(answer)["rows"]


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
        by_component = Questions(database).react_hooks(app.tag, params.ReactHooks(limit=pages.WASTE_ROWS))
        hooks = browser.evaluate(
            "[...document.querySelectorAll('#react-hooks tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))"
        )
        assert [row[0] for row in hooks] == [r.component for r in by_component.rows]
        catalog = next(row for row in hooks if row[0] == "Catalog")
        assert "useState" in catalog[4] and "useMemo" in catalog[4] and "useRef" in catalog[4]
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
    assert Questions(database).react_hooks(leak_loaded.tag) == react_hooks.ComponentHooks(leak_loaded.tag, 0, 0, ())
    result = CliRunner().invoke(main, ["react", leak_loaded.tag])
    assert result.exit_code == 0 and "none (0 fibers" in result.stdout
    shown = TestClient(create_app(token="")).get(pages.page_path(pages.SNAPSHOT, tag=leak_loaded.tag))
    assert shown.status_code == 200 and 'id="react-summary"' not in shown.text


def test_a_snapshot_stored_before_says_to_reanalyse_and_reanalysing_answers(database: Database, app: Loaded) -> None:
    """The React app as a load before the page inspections existed stored it (loaded again, their
    properties and groups removed): each of the three says to reanalyse, through the API, the
    command, REST and the page; reanalysing answers as the file does. The app after its panels
    closed has all three to show: unmounted fibers, a detached tree, and a collection holding them."""
    tag = f"test-page-old-{uuid.uuid4().hex[:8]}"
    store.load(database, store.LoadInput.from_analysis(app.graph, app.result), tag)
    database.write("MATCH (s:Snapshot {tag: $tag}) REMOVE s.react, s.hooks, s.dom, s.stale", {"tag": tag})
    for label in ("FiberGroup", "DetachedGroup"):
        database.write(f"MATCH (s:Snapshot {{tag: $tag}}) MATCH (g:{label} {{sid: s.sid}}) DELETE g", {"tag": tag})
    questions = Questions(database)
    client = TestClient(create_app(token=""))
    asked = (
        ("react", questions.react),
        ("react-hooks", questions.react_hooks),
        ("dom", questions.dom),
        ("stale", questions.stale),
    )
    for name, ask in asked:
        with pytest.raises(NotComputed, match=f"heapdb reanalyze {tag}"):
            ask(tag)
        said = CliRunner().invoke(main, [name, tag])
        assert said.exit_code == 1 and "not computed" in said.output and "Traceback" not in said.output, name
        rest = client.get(f"/api/snapshots/{tag}/{name}")
        assert rest.status_code == 409 and "not computed" in rest.json()["error"], name
    shown = client.get(pages.page_path(pages.SNAPSHOT, tag=tag))  # the page still answers, and says why
    assert shown.status_code == 200
    assert "Unmounted React components: the unmounted-components inspection was not" in shown.text
    assert "Detached DOM: the detached-DOM inspection was not computed" in shown.text

    done = CliRunner().invoke(main, ["reanalyze", tag, "--rules", "none"])
    assert done.exit_code == 0, done.output
    paths = first_paths(app.graph, app.result.retaining, app.result.transient)
    again, expected = questions.react(tag), from_file(app, react.KEPT)
    assert (again.fibers, again.mounted, again.retained_size) == (
        expected.fibers,
        expected.mounted,
        expected.retained_size,
    )
    assert [(r.component, r.fibers) for r in again.rows] == [(r.component, r.fibers) for r in expected.rows]
    by_component = react_hooks.component_hooks(app.graph, app.result, source=tag)
    assert by_component is not None and by_component.rows
    assert questions.react_hooks(tag) == by_component
    # What the store keeps of a detached tree is all the inspection needs, except which objects are
    # attached (the store marks only detached ones), and the order of references, which picks one
    # first path among equally short ones: the paths end alike.
    trees, file_trees = questions.dom(tag), dom.detached_dom(app.graph, app.result, paths, source=tag)
    assert file_trees is not None and file_trees.objects > 0
    assert (trees.objects, trees.retained_size, trees.largest) == (
        file_trees.objects,
        file_trees.retained_size,
        file_trees.largest,
    )

    def held(answer: dom.DetachedDom) -> list[tuple[list[str], int, int]]:
        return [(g.path.split(" / ")[-2:], g.trees, g.objects) for g in answer.groups]

    assert held(trees) == held(file_trees)
    marked = dom.detached(app.graph), react.unmounted(app.graph, app.result)
    assert marked[0] is not None and marked[1] is not None
    holding = collections.stale_collections(app.graph, app.result, paths, marked[0] | marked[1], source=tag)
    assert holding.collections > 0 and questions.stale(tag).collections == holding.collections
    assert [(r.type, r.stale, r.stale_size) for r in questions.stale(tag).rows] == [
        (r.type, r.stale, r.stale_size) for r in holding.rows
    ]
