"""Duplicate objects stored at load and asked of Neo4j: `heapdb dup-objects`, its REST twin, its page
and the snapshot page's "What wastes memory here".

A load stores what :func:`heapdb.loader.inspections.objects.stored_objects` computes; every ranking
and limit the question takes must then answer what `heapdb analyze --dup-objects` computes from the
same file (tests/js/dup_objects.js's snapshot). A snapshot without them (stored before they
existed, reanalysed from the store, or of a format whose objects heapdb does not compare) gets an
answer that says so and what to do, never an error of heapdb's own.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotComputed
from heapdb.loader.inspections import objects
from heapdb.loader.store import Snapshot
from heapdb.queries import missing, params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from heapdb.service.question_pages import ask_page
from tests.support.chromium import ChromiumPage
from tests.support.pages import SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded, load_snapshot
from tests.support.v8 import write_duplicate_objects_snapshot


@pytest.fixture(scope="module")
def dup(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    path = write_duplicate_objects_snapshot(tmp_path_factory.mktemp("dup-objects"))
    return load_snapshot(database, path, "objects")


@pytest.mark.parametrize("sort", objects.SORTS)
def test_every_ranking_answers_as_the_file_does(database: Database, dup: Loaded, sort: str) -> None:
    questions = Questions(database)
    for limit in (1, 7, objects.KEPT):
        stored = questions.dup_objects(dup.tag, params.DupObjects(sort=sort, limit=limit))
        from_file = objects.duplicate_objects(dup.graph, dup.result, source=dup.tag, limit=limit, sort=sort)
        assert stored == from_file
    assert stored.rows[0].count == 2000


def test_the_command_the_rest_twin_the_pages_and_their_bounds(database: Database, dup: Loaded) -> None:
    answer = Questions(database).dup_objects(dup.tag, params.DupObjects(limit=3))
    as_json = CliRunner().invoke(main, ["dup-objects", dup.tag, "--limit", "3", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == to_json(answer)
    as_text = CliRunner().invoke(main, ["dup-objects", dup.tag, "--limit", "3"])
    assert as_text.stdout.strip() == objects.duplicate_objects_text(answer)
    client = TestClient(create_app(token=""))
    rest = client.get(f"/api/snapshots/{dup.tag}/dup-objects", params={"limit": 3})
    assert rest.status_code == 200 and rest.json() == to_json(answer)
    assert client.get(f"/api/snapshots/{dup.tag}/dup-objects", params={"limit": objects.KEPT + 1}).status_code == 422
    too_many = CliRunner().invoke(main, ["dup-objects", dup.tag, "--limit", str(objects.KEPT + 1)])
    assert too_many.exit_code != 0 and "Traceback" not in too_many.output
    asked = client.get(ask_page("dup-objects", tag=dup.tag, limit=3))
    assert asked.status_code == 200 and "db.internal.example" in asked.text
    twin = client.get(ask_page("dup-objects", tag=dup.tag, limit=3).replace("?", ".json?", 1))
    assert twin.status_code == 200 and twin.json()["rows"][0]["count"] == 2000
    page = client.get(pages.page_path(pages.SNAPSHOT, tag=dup.tag))
    first = Questions(database).dup_objects(dup.tag, params.DupObjects(limit=pages.WASTE_ROWS))
    assert page.status_code == 200 and 'id="dup-objects-summary"' in page.text
    assert f"{first.duplicated:,} of {first.objects:,} objects are copies" in page.text
    assert page.text.count('<tr>\n    <th scope="row">Object <span class="name">') >= 1
    assert f"/objects/{first.rows[0].example_id}" in page.text


def test_a_snapshot_without_them_says_what_to_do(database: Database, dup: Loaded) -> None:
    # The module's snapshot as a load before duplicate objects existed stored it: the property
    # removed for the moment, and put back.
    tag = dup.tag
    saved = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.objects AS objects", {"tag": tag})[0]["objects"]
    database.write("MATCH (s:Snapshot {tag: $tag}) REMOVE s.objects", {"tag": tag})
    try:
        with pytest.raises(NotComputed, match=f"heapdb load FILE --tag {tag} --replace"):
            Questions(database).dup_objects(tag)
        result = CliRunner().invoke(main, ["dup-objects", tag])
        assert result.exit_code == 1 and "not computed" in result.output and "Traceback" not in result.output
        client = TestClient(create_app(token=""))
        rest = client.get(f"/api/snapshots/{tag}/dup-objects")
        assert rest.status_code == 409 and "not computed" in rest.json()["error"]
        page = client.get(pages.page_path(pages.SNAPSHOT, tag=tag))  # the page still answers, and says why
        assert page.status_code == 200 and "Duplicate objects: duplicate objects were not computed" in page.text
    finally:
        database.write("MATCH (s:Snapshot {tag: $tag}) SET s.objects = $objects", {"tag": tag, "objects": saved})
    assert Questions(database).dup_objects(tag).objects > 0


def test_a_format_whose_objects_are_not_compared_says_so() -> None:
    snapshot = Snapshot.from_properties({"sid": 1, "tag": "lua", "format": "luau", "status": "ready"})
    assert str(missing.OBJECTS(snapshot)) == "heapdb does not compare the objects of luau snapshots (snapshot 'lua')"


def test_a_person_reads_the_copies_and_the_unused_room_and_opens_one_in_chromium(
    database: Database, dup: Loaded
) -> None:
    questions = Questions(database)
    copies = questions.dup_objects(dup.tag, params.DupObjects(limit=pages.WASTE_ROWS))
    room = questions.fill(dup.tag, params.Fill(limit=pages.WASTE_ROWS))
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=dup.tag))
        summary = browser.evaluate("document.querySelector('#dup-objects-summary').innerText")
        assert (
            f"{copies.duplicated:,} of {copies.objects:,} objects are copies of {copies.contents:,} contents" in summary
        )
        rows = browser.evaluate(
            "[...document.querySelectorAll('#dup-objects tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))"
        )
        assert len(rows) == len(copies.rows)
        assert [r[1] for r in rows] == [f"{r.count:,}" for r in copies.rows]
        filled = browser.evaluate("document.querySelector('#fill-summary').innerText")
        assert f"of {room.collections:,} collections, {room.empty:,} are empty" in filled
        shown = browser.evaluate("[...document.querySelectorAll('#fill tbody tr')].map(tr => tr.cells[1].innerText)")
        assert shown == [f"{r.size:,} of {r.capacity:,}" for r in room.rows]
        browser.screenshot(SCREENSHOTS / "snapshot-duplicate-objects.png")
        example = copies.rows[0].example_id
        reached = browser.follow(f'#dup-objects tbody tr:first-child a[href$="/objects/{example}"]')
        assert reached == base + pages.object_page(dup.tag, example)
        assert f"@{example}" in browser.evaluate("document.querySelector('h1').innerText")
        assert browser.problems == [], browser.problems
