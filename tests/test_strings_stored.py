"""Duplicate strings stored at load and asked of Neo4j: `heapdb strings`, its REST twin and MCP tool.

A load stores what :func:`heapdb.loader.inspections.strings.stored_strings` computes; every ranking
and limit the question takes must then answer what `heapdb analyze --strings` computes from the same
file (tests/js/dup_strings.js's snapshot and a real Luau dump). A snapshot without them (stored
before they existed, reanalysed from the store, or of a format whose strings heapdb does not read)
gets an answer that says so and what to do, never an error of heapdb's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotComputed
from heapdb.loader.inspections import strings
from heapdb.loader.store import Snapshot
from heapdb.queries import missing, params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from tests.support.chromium import ChromiumPage
from tests.support.pages import SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import LUAU_FIXTURES, Loaded, load_snapshot
from tests.support.v8 import write_duplicate_strings_snapshot
from tests.test_inspections_java_strings import TEXT as JAVA_TEXT
from tests.test_inspections_java_strings import string_dump

LUAU_DUMP = LUAU_FIXTURES / "luau-3-final.json"


@pytest.fixture(scope="module")
def dup(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    path = write_duplicate_strings_snapshot(tmp_path_factory.mktemp("dup-strings"))
    return load_snapshot(database, path, "strings")


@pytest.mark.parametrize("sort", strings.SORTS)
def test_every_ranking_answers_as_the_file_does(database: Database, dup: Loaded, sort: str) -> None:
    questions = Questions(database)
    for limit in (1, 7, strings.KEPT):
        stored = questions.strings(dup.tag, params.Strings(sort=sort, limit=limit))
        from_file = strings.duplicate_strings(dup.graph, dup.result, source=dup.tag, limit=limit, sort=sort)
        assert stored == from_file
    assert stored.rows[0].count == 3000 if sort != "retained_size" else stored.rows[0].length == 1024


def test_a_luau_dump_answers_as_its_file_does(database: Database) -> None:
    loaded = load_snapshot(database, LUAU_DUMP, "strings-luau")
    stored = Questions(database).strings(loaded.tag, params.Strings(limit=50))
    assert stored == strings.duplicate_strings(loaded.graph, loaded.result, source=loaded.tag, limit=50)
    assert stored.strings > 0


def test_the_command_the_rest_twin_and_their_bounds(database: Database, dup: Loaded) -> None:
    answer = Questions(database).strings(dup.tag, params.Strings(limit=3))
    as_json = CliRunner().invoke(main, ["strings", dup.tag, "--limit", "3", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == to_json(answer)
    as_text = CliRunner().invoke(main, ["strings", dup.tag, "--limit", "3"])
    assert as_text.stdout.strip() == strings.duplicate_strings_text(answer)
    assert "RequestContext" in as_text.stdout
    client = TestClient(create_app(token=""))
    rest = client.get(f"/api/snapshots/{dup.tag}/strings", params={"limit": 3})
    assert rest.status_code == 200 and rest.json() == to_json(answer)
    assert client.get(f"/api/snapshots/{dup.tag}/strings", params={"limit": strings.KEPT + 1}).status_code == 422
    assert client.get(f"/api/snapshots/{dup.tag}/strings", params={"sort": "name"}).status_code == 422
    too_many = CliRunner().invoke(main, ["strings", dup.tag, "--limit", str(strings.KEPT + 1)])
    assert too_many.exit_code != 0 and "Traceback" not in too_many.output


def test_a_person_reads_the_waste_first_and_opens_a_copy_in_chromium(database: Database, dup: Loaded) -> None:
    answer = Questions(database).strings(dup.tag, params.Strings(limit=pages.WASTE_ROWS))
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=dup.tag))
        headings = browser.evaluate("[...document.querySelectorAll('main h2')].map(h => h.innerText)")
        assert headings[0] == "What wastes memory here"
        summary = browser.evaluate("document.querySelector('#strings-summary').innerText")
        assert f"{answer.duplicated:,} of {answer.strings:,} strings" in summary
        rows = browser.evaluate(
            "[...document.querySelectorAll('#strings tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))"
        )
        assert len(rows) == len(answer.rows) == pages.WASTE_ROWS
        config = rows[0]
        assert config[0].startswith('{"service":"checkout"') and "1,024 characters" in config[0]
        assert config[1] == "3,000" and config[3].startswith(f"{answer.rows[0].owners[0].copies:,} in RequestContext")
        browser.screenshot(SCREENSHOTS / "snapshot-waste.png")
        example = answer.rows[0].example_id
        reached = browser.follow(f'#strings tbody tr:first-child a[href$="/objects/{example}"]')
        assert reached == base + pages.object_page(dup.tag, example)
        assert f"@{example}" in browser.evaluate("document.querySelector('h1').innerText")
        assert browser.problems == [], browser.problems


def test_a_snapshot_without_them_says_what_to_do(database: Database, dup: Loaded) -> None:
    # The module's snapshot as a load before duplicate strings existed stored it: the property
    # removed for the moment, and put back.
    tag = dup.tag
    saved = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.strings AS strings", {"tag": tag})[0]["strings"]
    database.write("MATCH (s:Snapshot {tag: $tag}) REMOVE s.strings", {"tag": tag})
    try:
        with pytest.raises(NotComputed, match=f"heapdb load FILE --tag {tag} --replace"):
            Questions(database).strings(tag)
        result = CliRunner().invoke(main, ["strings", tag])
        assert result.exit_code == 1 and "not computed" in result.output and "Traceback" not in result.output
        client = TestClient(create_app(token=""))
        rest = client.get(f"/api/snapshots/{tag}/strings")
        assert rest.status_code == 409 and "not computed" in rest.json()["error"]
        page = client.get(pages.page_path(pages.SNAPSHOT, tag=tag))  # the page still answers, and says why
        assert page.status_code == 200 and "Duplicate strings: duplicate strings were not computed" in page.text
    finally:
        database.write("MATCH (s:Snapshot {tag: $tag}) SET s.strings = $strings", {"tag": tag, "strings": saved})
    assert Questions(database).strings(tag).strings > 0


def test_a_reanalysed_snapshot_says_its_names_are_cut(database: Database) -> None:
    loaded = load_snapshot(database, LUAU_DUMP, "strings-reanalysed")
    done = CliRunner().invoke(main, ["reanalyze", loaded.tag, "--rules", "none"])
    assert done.exit_code == 0, done.output
    with pytest.raises(NotComputed, match="reanalysed from the store, whose names are cut"):
        Questions(database).strings(loaded.tag)


def test_a_format_whose_strings_are_not_read_says_so() -> None:
    snapshot = Snapshot.from_properties({"sid": 1, "tag": "other", "format": "unknown", "status": "ready"})
    assert str(missing.STRINGS(snapshot)) == "heapdb does not read the strings of unknown snapshots (snapshot 'other')"


def test_a_java_dump_answers_as_its_file_does(database: Database, tmp_path: Path) -> None:
    # A hand-written dump of three Strings (tests/test_inspections_java_strings.py checks real ones
    # against VisualVM): a LATIN1 and a UTF16 copy of one text, and another text.
    loaded = load_snapshot(database, string_dump(tmp_path, "strings.hprof", jdk8=False), "strings-java")
    answer = strings.duplicate_strings(loaded.graph, loaded.result, source=loaded.tag, limit=10)
    assert answer is not None and [(r.value, r.count) for r in answer.rows] == [(JAVA_TEXT, 2)]
    as_json = CliRunner().invoke(main, ["strings", loaded.tag, "--limit", "10", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == to_json(answer)
    page = TestClient(create_app(token="")).get(pages.page_path(pages.SNAPSHOT, tag=loaded.tag))
    assert page.status_code == 200 and JAVA_TEXT in page.text and "does not read the strings" not in page.text
