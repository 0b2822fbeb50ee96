"""Owners through a load, on the real Neo4j with the leak program's real V8 snapshots: what the load
stores (each object's ``owner``, the snapshot's table) against the same file worked out in process,
`heapdb owners`, `diff --by owner`, the gate failing on one owner's growth, the type page filtered
by owner, and the "Memory by package" page as a person uses it in headless Chromium (screenshots in
``$HEAPDB_SCREENSHOTS``)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader.owners.table import OTHERS, owners_table
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import browse_pages, pages
from heapdb.service.app import create_app
from tests.support.chromium import ChromiumPage
from tests.support.pages import AXE, IMPACTS, SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import LUAU_FIXTURES, Loaded, load_snapshot

APP = "(app)"  # leak.js is outside any node_modules folder


def test_a_load_stores_the_owners_worked_out_in_process_and_on_each_object(
    database: Database, ask: Questions, leak_loaded: Loaded
) -> None:
    expected = owners_table("", leak_loaded.graph, leak_loaded.result)
    stored = ask.owners(leak_loaded.tag, params.Owners(limit=500))
    assert [lv.level for lv in stored.levels] == ["package", "file"]
    for mine, theirs in zip(stored.levels, expected.levels, strict=True):
        assert [asdict(r) for r in mine.rows] == [asdict(r) for r in theirs.rows]
    # Every counted object carries its first level's owner: the counts per owner are the table's.
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) WHERE o.owner IS NOT NULL "
        "RETURN o.owner AS owner, count(*) AS objects, sum(o.self_size) AS self_size",
        {"tag": leak_loaded.tag},
    )
    by_owner = {r["owner"]: (r["objects"], r["self_size"]) for r in rows}
    assert by_owner == {r.name: (r.objects, r.self_size) for r in stored.levels[0].rows if r.name != OTHERS}
    assert APP in by_owner and "@unknown" in by_owner
    # The CLI's answer is the question's; --level picks one, an unknown one is a clear error.
    result = CliRunner().invoke(main, ["owners", leak_loaded.tag, "--level", "file", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert [lv["level"] for lv in answer["levels"]] == ["file"]
    assert any(r["name"].endswith("leak.js") for r in answer["levels"][0]["rows"])
    result = CliRunner().invoke(main, ["owners", leak_loaded.tag, "--level", "galaxy"])
    assert result.exit_code != 0 and "no owner level 'galaxy'" in result.output and "Traceback" not in result.output


def test_diff_by_owner_and_the_gate_failing_on_one_owners_growth(
    ask: Questions, leak_series_loaded: dict[str, Loaded]
) -> None:
    baseline, final = leak_series_loaded["baseline"], leak_series_loaded["final"]
    before = {r.name: r for r in ask.owners(baseline.tag, params.Owners(limit=500)).levels[0].rows}
    after = {r.name: r for r in ask.owners(final.tag, params.Owners(limit=500)).levels[0].rows}
    diff = ask.diff_groups(baseline.tag, final.tag, params.Diff(by="owner"))
    changes = {c.label: c for c in diff.changes}
    assert set(changes) == set(before) | set(after)
    for name, c in changes.items():
        assert c.size_before == (before[name].self_size if name in before else 0)
        assert c.retained_after == (after[name].retained_size if name in after else 0)
    # The program's own code is what grew most (the leak is in leak.js).
    assert diff.changes[0].label == APP and diff.changes[0].size_delta > 0
    by_file = ask.diff_groups(baseline.tag, final.tag, params.Diff(by="owner", level="file"))
    assert by_file.changes[0].label.endswith("leak.js")
    # The gate fails on the grown owner only when asked to.
    growth = after[APP].retained_size - before[APP].retained_size
    args = ["gate", "--baseline", baseline.tag, "--candidate", final.tag, "--no-record", "--json"]
    plain = CliRunner().invoke(main, [*args, "--fail-on", "new-leaks"])
    assert all(f["kind"] != "owner-growth" for f in json.loads(plain.stdout)["findings"])
    asked = CliRunner().invoke(main, [*args, "--fail-on", "owners", "--max-growth", str(growth - 1)])
    assert asked.exit_code == 1, asked.output
    report = json.loads(asked.stdout)
    grown = [f for f in report["findings"] if f["kind"] == "owner-growth"]
    assert [f["path"] for f in grown if f["fails"]][0] == f"[package] {APP}"
    held = CliRunner().invoke(main, [*args, "--fail-on", "owners", "--max-growth", str(growth)])
    assert all(f["path"] != f"[package] {APP}" for f in json.loads(held.stdout)["findings"])


def test_the_memory_by_package_page_opens_an_owners_types_and_objects_in_chromium(
    client: TestClient, ask: Questions, leak_loaded: Loaded
) -> None:
    tag = leak_loaded.tag
    table = ask.owners(tag, params.Owners(limit=500))
    app_row = next(r for r in table.levels[0].rows if r.name == APP)
    top_type = app_row.types[0].type
    # Without JavaScript: the snapshot page links it, the JSON twin is the answer.
    snapshot_page = client.get(pages.page_path(pages.SNAPSHOT, tag=tag)).text
    assert f'href="{browse_pages.owners_page(tag)}"' in snapshot_page
    twin = client.get(browse_pages.owners_page(tag).replace("/owners", "/owners.json")).json()
    assert twin["owners"]["levels"][0]["rows"][0]["name"] == table.levels[0].rows[0].name
    assert client.get(browse_pages.owners_page(tag, "galaxy")).status_code == 422
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=tag))
        browser.follow(f'#owners-lead a[href="{browse_pages.owners_page(tag)}"]')
        names = browser.evaluate(
            "[...document.querySelectorAll('#owners > tbody > tr > th')]"
            ".map(t => (t.querySelector('summary') || t).textContent.trim())"
        )
        assert names == [r.name for r in table.levels[0].rows]
        # The program's row opens its types; the largest opens the type page filtered to the owner.
        row = f"#owners > tbody > tr:nth-child({table.levels[0].rows.index(app_row) + 1})"
        browser.click(f"{row} details.owner-types > summary")
        browser.wait_for(f"document.querySelector('{row} details.owner-types').open")
        browser.screenshot(SCREENSHOTS / "owners-page.png")
        assert browser.accessibility_violations(AXE, IMPACTS) == []
        browser.follow(f'{row} a[href="{browse_pages.type_page(tag, top_type, owner=APP)}"]')
        assert browser.evaluate("document.querySelector('h1').textContent") == top_type
        note = browser.evaluate("document.querySelector('#page-note').textContent")
        assert f"owned by {APP}" in note
        expected = ask.instances(tag, params.Instances(type=top_type, owner=APP))
        assert f"of {expected.total:,}" in note
        badges = browser.evaluate(
            "[...document.querySelectorAll('#instances tbody .badge.owner')].map(b => b.textContent)"
        )
        assert badges and set(badges) == {APP}
        browser.screenshot(SCREENSHOTS / "type-page-by-owner.png")
        # The file level, from the level links.
        browser.goto(base + browse_pages.owners_page(tag))
        browser.follow(f'p.owner-levels a[href="{browse_pages.owners_page(tag, "file")}"]')
        assert browser.evaluate("document.querySelector('h1').textContent") == "Memory by file"


def test_reanalysing_from_the_store_gives_the_same_owners(
    database: Database, ask: Questions, leak_snapshots: dict[str, Path]
) -> None:
    """The store keeps what owners are read from (V8 locations, a Luau object's category as its
    first owner), so `heapdb reanalyze` works out the same owners as the load did."""
    files = {"v8": leak_snapshots["baseline"]}
    if LUAU_FIXTURES.is_dir():  # (not part of the repository: the V8 half still runs without it)
        files["luau"] = LUAU_FIXTURES / "luau-3-final.json"
    for label, path in files.items():
        loaded = load_snapshot(database, path, f"owners-reanalyze-{label}")
        before = ask.owners(loaded.tag, params.Owners(limit=500))
        assert before.levels and before.levels[0].rows
        result = CliRunner().invoke(main, ["reanalyze", loaded.tag, "--rules", "none", "--json"])
        assert result.exit_code == 0, result.output
        after = Questions(database, timeout=60).owners(loaded.tag, params.Owners(limit=500))
        assert after.levels == before.levels, label
