"""Retention: `heapdb prune` keeps old snapshots as their summaries.

Three real snapshots of one Node process (tests/js/leak.js) are loaded and pruned step by step: the
group questions (types, diff by type and path, growth, leaks by path) must answer the same before and
after, the object questions refuse with a clear error (CLI and REST), and the objects are really
gone while the groups stay. Interruption and the service's schedule use small synthetic heaps.
Every prune keeps the snapshots these tests did not load (exact-tag globs), so that it can share
the session's database with other tests.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb import config, db
from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ConfigError, ParameterError, SummaryOnly
from heapdb.loader import analysis, store
from heapdb.loader.store import prune
from heapdb.loader.store.snapshots import Snapshot
from heapdb.neo4j_server import free_port
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.units import human_bytes
from heapgen.synth import synth_graph
from tests.support.chromium import ChromiumPage
from tests.support.pages import SCREENSHOTS
from tests.support.purging import kill_the_purger, no_purger_at_work, wait_until
from tests.support.serving import served

PREFIX = "test-prune-"


def others(database: Database, mine: str) -> list[str]:
    """Globs matching exactly the ready snapshots these tests did not load (kept by every prune)."""
    return [glob.escape(s.tag) for s in store.list_snapshots(database) if not s.tag.startswith(mine)]


def keep_others(database: Database, mine: str) -> list[str]:
    return [arg for pattern in others(database, mine) for arg in ("--keep-tags-matching", pattern)]


def counts(database: Database, sid: int) -> dict[str, int]:
    """The records of one snapshot: objects, their references, and its groups."""
    return database.read(
        "CALL () { MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL RETURN count(o) AS objects } "
        "CALL () { MATCH (o:Object {sid: $sid})-[r]->() WHERE o.id IS NOT NULL RETURN count(r) AS references } "
        "CALL () { MATCH (g:TypeGroup {sid: $sid}) WHERE g.type IS NOT NULL RETURN count(g) AS types, "
        "          count(CASE WHEN any(name IN keys(g) WHERE name STARTS WITH 'listing_') THEN 1 END) AS listings } "
        "CALL () { MATCH (g:PathGroup {sid: $sid}) WHERE g.sig IS NOT NULL RETURN count(g) AS paths } "
        "CALL () { MATCH (s:Snapshot {sid: $sid}) RETURN count(s) AS snapshots } "
        "RETURN objects, references, types, listings, paths, snapshots",
        {"sid": sid},
    )[0]


def load_synthetic(database: Database, tag: str, objects: int = 3000, references: int = 12000) -> Snapshot:
    graph = synth_graph(objects, references, seed=objects)
    store.load(database, store.LoadInput.from_analysis(graph, analysis.analyze(graph)), tag)
    return store.get_snapshot(database, tag)


def record(tag: str, sid: int, **fields: Any) -> Snapshot:
    return Snapshot(sid=sid, tag=tag, status="ready", **fields)


# --- choosing, without a database


def test_choose_keeps_the_newest_and_the_matching_tags() -> None:
    listed = [
        record("release-1", 1),
        record("nightly-2", 2),
        record("nightly-3", 3, summary=True, pruned_at="2026-01-01T00:00:00+00:00"),
        record("nightly-4", 4),
        record("v2.0", 5),
        record("nightly-6", 6),
        record("nightly-7", 7),
        Snapshot(sid=8, tag="failed-8", status="failed"),
    ]
    plan = prune.choose(listed, 2, ["release-*", "v?.*"])
    assert [s.tag for s in plan.pruned] == ["nightly-2", "nightly-4"]
    why = {s.tag: reason for s, reason in plan.kept}
    assert why == {
        "release-1": "tag matches 'release-*'",
        "nightly-3": "pruned already, on 2026-01-01T00:00:00+00:00",
        "v2.0": "tag matches 'v?.*'",
        "nightly-6": "one of the newest 2",
        "nightly-7": "one of the newest 2",
    }
    # Load order is the sid's, whatever order the records come in; no glob keeps only the newest.
    assert [s.tag for s in prune.choose(list(reversed(listed)), 6).pruned] == ["release-1"]
    # A snapshot still writing its references is never pruned.
    writing = [record("a", 1, references_ready=False), record("b", 2)]
    assert prune.choose(writing, 1).pruned == ()


def test_keep_last_below_one_is_refused() -> None:
    with pytest.raises(ParameterError, match="at least 1"):
        prune.choose([record("a", 1)], 0)
    result = CliRunner().invoke(main, ["prune", "--keep-last", "0"])
    assert result.exit_code == 1
    assert "--keep-last must be at least 1 (got 0)" in result.stderr


# --- three real snapshots, pruned step by step


@pytest.fixture(scope="module")
def loaded(database: Database, leak_snapshots: dict[str, Path]) -> Iterator[tuple[str, dict[str, str]]]:
    run = uuid.uuid4().hex[:8]
    mine = f"{PREFIX}{run}-"
    tags = {}
    for label in ("baseline", "target", "final"):
        tags[label] = f"{mine}{label}"
        result = CliRunner().invoke(main, ["load", str(leak_snapshots[label]), "--tag", tags[label]])
        assert result.exit_code == 0, result.output
    yield mine, tags
    for tag in tags.values():
        store.drop(database, tag)


def group_answers(ask: Questions, tags: dict[str, str]) -> dict[str, Any]:
    """Every answer that reads only the stored groups, for the three snapshots."""
    baseline, target, final = tags["baseline"], tags["target"], tags["final"]
    answers: dict[str, Any] = {}
    for by in ("type", "path"):
        answers[f"diff {by}"] = ask.diff(baseline, final, params.Diff(by=by, limit=1000))
        answers[f"diff {by} target"] = ask.diff(target, final, params.Diff(by=by, limit=1000))
        answers[f"growth {by}"] = ask.growth([baseline, target, final], params.Growth(by=by, limit=1000))
    answers["types"] = {tag: ask.types(tag, params.Types(limit=1000)) for tag in tags.values()}
    answers["leaks path"] = ask.leaks(baseline, target, final, params.Leaks(by="path", limit=1000))
    return answers


def test_prune_keeps_the_summaries_and_frees_the_objects(
    database: Database, loaded: tuple[str, dict[str, str]]
) -> None:
    mine, tags = loaded
    ask = Questions(database)
    sids = {label: store.get_snapshot(database, tag).sid for label, tag in tags.items()}
    before = group_answers(ask, tags)
    assert before["diff type"].changes and before["growth path"].tags == list(tags.values())
    sizes = {label: counts(database, sid) for label, sid in sids.items()}
    object_count = store.get_snapshot(database, tags["baseline"]).object_count
    assert all(c["objects"] > 1000 and c["references"] > 1000 and c["listings"] > 0 for c in sizes.values())

    # A dry run lists what would go and changes nothing.
    keep = keep_others(database, mine)
    dry = CliRunner().invoke(main, ["prune", "--keep-last", "1", *keep, "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.stdout)
    assert planned["dry_run"] is True
    assert [s["tag"] for s in planned["pruned"]] == [tags["baseline"], tags["target"]]
    assert {sid: counts(database, sid) for sid in sids.values()} == {sids[k]: sizes[k] for k in sids}
    assert not any(s.summary for s in store.list_snapshots(database))

    # Keep the target by its tag: only the baseline goes, freed here (--wait).
    result = CliRunner().invoke(
        main, ["prune", "--keep-last", "1", "--keep-tags-matching", "*-tar?et", *keep, "--wait", "--json"]
    )
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert [s["tag"] for s in done["pruned"]] == [tags["baseline"]]
    kept = {s["tag"]: s["why"] for s in done["kept"]}
    assert kept[tags["target"]] == "tag matches '*-tar?et'" and kept[tags["final"]] == "one of the newest 1"

    after = counts(database, sids["baseline"])
    full = sizes["baseline"]
    # The objects, their references and the type listings are gone; the groups and the node stay.
    assert after == {**full, "objects": 0, "references": 0, "listings": 0}
    records_before = full["objects"] + full["references"] + full["types"] + full["paths"]
    records_after = after["types"] + after["paths"]
    print(f"baseline: {records_before:,} nodes and relationships before the prune, {records_after:,} after")
    assert records_after * 10 < records_before  # "a fraction of the size"
    assert counts(database, sids["target"]) == sizes["target"]
    assert counts(database, sids["final"]) == sizes["final"]

    baseline = store.get_snapshot(database, tags["baseline"])
    assert baseline.status == "ready" and baseline.summary and baseline.pruned_at and baseline.purged
    assert baseline.references_ready and baseline.object_count == object_count  # the file's count, as loaded
    assert group_answers(Questions(database), tags) == before

    # The target too, as a prune interrupted before its purger ran: marked, its objects still there.
    assert prune.mark(database, [sids["target"]]) == [sids["target"]]
    assert counts(database, sids["target"])["objects"] == sizes["target"]["objects"]
    assert group_answers(Questions(database), tags) == before  # answers as a summary at once
    purged = CliRunner().invoke(main, ["purge"])
    assert purged.exit_code == 0, purged.output
    assert counts(database, sids["target"]) == {**sizes["target"], "objects": 0, "references": 0, "listings": 0}
    assert group_answers(Questions(database), tags) == before

    # Pruning again prunes nothing more.
    again = CliRunner().invoke(main, ["prune", "--keep-last", "1", *keep])
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("nothing to prune")
    assert counts(database, sids["final"]) == sizes["final"]


def test_object_questions_refuse_a_summary(database: Database, loaded: tuple[str, dict[str, str]]) -> None:
    _mine, tags = loaded
    pruned, full = tags["baseline"], tags["final"]
    assert store.get_snapshot(database, pruned).summary, "runs after the prune above"
    ask = Questions(database)
    for question in (
        lambda: ask.top(pruned),
        lambda: ask.why_alive(pruned, 1),
        lambda: ask.find(pruned, params.Find(type="Object")),
        lambda: ask.suspects(pruned),
        lambda: ask.diff(pruned, full, params.Diff(by="object")),
        lambda: ask.diff(full, pruned, params.Diff(by="dominator")),
        lambda: ask.leaks(pruned, tags["target"], full, params.Leaks(by="id")),
        lambda: ask.leaks(full, full, pruned, params.Leaks(by="path")),  # final's objects name the clusters
    ):
        with pytest.raises(SummaryOnly, match=f"snapshot {pruned!r} was pruned on 20"):
            question()
    assert ask.top(full)  # a full snapshot answers as before

    # CLI: exit code 1 and a message naming the snapshot, the date and what still works.
    for args in (["top", pruned], ["why", pruned, "1"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        assert f"snapshot {pruned!r} was pruned on 20" in result.stderr
        assert prune.SUMMARY_ANSWERS in result.stderr
        assert "Traceback" not in result.output
    types = CliRunner().invoke(main, ["types", pruned])
    assert types.exit_code == 0, types.output

    listed = CliRunner().invoke(main, ["snapshots", "--json"])
    assert listed.exit_code == 0, listed.output
    by_tag = {s["tag"]: s for s in json.loads(listed.stdout)}
    assert by_tag[pruned]["summary"] is True and by_tag[pruned]["pruned_at"].startswith("20")
    assert by_tag[full]["summary"] is False and "pruned_at" not in by_tag[full]
    text = CliRunner().invoke(main, ["snapshots"])
    assert text.stdout.splitlines()[0].split()[2] == "graph"
    line = {ln.split()[0]: ln.split() for ln in text.stdout.splitlines()[1:]}
    assert line[pruned][2] == "summary" and line[full][2] == "full"

    # REST: 410 Gone for object questions, answers for group questions; pages render.
    client = TestClient(create_app())
    segment = pruned  # the test tags are plain
    for url in (f"/api/snapshots/{segment}/top", f"/api/snapshots/{segment}/objects/1/why"):
        response = client.get(url)
        assert response.status_code == 410, response.text
        assert "was pruned on" in response.json()["error"]
    assert client.get(f"/api/snapshots/{segment}/types").status_code == 200
    assert client.get(f"/api/snapshots/{segment}").json()["summary"] is True
    assert client.get(f"/api/diff/{pruned}/{full}", params={"by": "path"}).status_code == 200
    api_listed = {s["tag"]: s for s in client.get("/api/snapshots").json()}
    assert api_listed[pruned]["summary"] is True and api_listed[full]["summary"] is False
    page = client.get(f"/snapshots/{segment}")
    assert page.status_code == 200 and "Summary only" in page.text and "/objects/" not in page.text
    assert client.get(f"/snapshots/{segment}/objects/1").status_code == 410
    assert client.get(f"/snapshots/{segment}/treemap").status_code == 410
    listing = client.get("/")
    assert listing.status_code == 200 and "summary (pruned 20" in listing.text
    # Read back for `heapdb reanalyze`: refused the same way.
    result = CliRunner().invoke(main, ["reanalyze", pruned])
    assert result.exit_code == 1 and "was pruned on" in result.stderr, result.output


def test_a_person_in_chromium_sees_a_pruned_snapshot_as_its_summary(database: Database) -> None:
    """The summary-only page in a real headless Chromium: the notice, the types with their sizes,
    nothing that needs objects, and no link on it that leads to a 410."""
    no_purger_at_work(database)
    mine = f"{PREFIX}{uuid.uuid4().hex[:8]}-"
    old = load_synthetic(database, f"{mine}summary-page")
    newer = load_synthetic(database, f"{mine}newer")
    try:
        plan = prune.prune(database, 1, others(database, mine), wait=True)
        assert [s.tag for s in plan.pruned] == [old.tag]
        assert counts(database, old.sid)["objects"] == 0
        pruned = store.get_snapshot(database, old.tag)
        assert pruned.summary and pruned.pruned_at
        types = Questions(database).types(old.tag, params.Types())
        assert types, "a pruned snapshot keeps its types"
        page = pages.page_path(pages.SNAPSHOT, tag=old.tag)
        with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
            base = f"http://127.0.0.1:{port}"
            # From the list, as a person gets there: the row says summary, its tag links the page.
            browser.goto(base + "/")
            row = browser.evaluate(
                f"[...document.querySelectorAll('tbody tr')].find(tr => tr.querySelector('th').innerText === {old.tag!r})"
                ".innerText"
            )
            assert f"summary (pruned {pruned.pruned_at})" in row, row
            assert browser.evaluate(f"document.querySelectorAll('a[href=\"{page}\"]').length") == 1
            # Opened by its URL, not clicked: in the default 780 px window the list squeezes the tag
            # column so that the link wraps over 14 lines and follow() clicks beside it.
            browser.goto(base + page)
            text = browser.evaluate("document.querySelector('main').innerText")
            assert f"Summary only: this snapshot was pruned on {pruned.pruned_at}." in text, text
            assert f"so it still answers {prune.SUMMARY_ANSWERS}." in text, text
            assert f"To ask about its objects, load its file again: {prune.load_again(pruned.source, old.tag)}." in text
            assert browser.evaluate("document.querySelector('[role=note] strong').innerText") == "Summary only"
            # The types table, as the stored groups answer it: names and sizes, largest self size first.
            rows = browser.evaluate(
                "[...document.querySelectorAll('section[aria-labelledby=types-title] tbody tr')]"
                ".map(tr => [...tr.cells].map(c => c.innerText))"
            )
            assert rows == [
                [
                    t.type,
                    f"{t.count:,}",
                    human_bytes(t.self_size),
                    human_bytes(t.retained_size),
                    human_bytes(t.max_retained_size),
                ]
                for t in types
            ]
            assert all(r[2] != "0 B" for r in rows[:3]), rows
            # Nothing that needs objects: no top retainers, no root, no treemap, no object links.
            headings = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.innerText)")
            assert headings == ["Types"], headings
            assert "What retains most" not in text and "Dominator treemap" not in text
            hrefs: list[str] = browser.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
            assert not [h for h in hrefs if "/objects/" in h or "/treemap" in h], hrefs
            browser.screenshot(SCREENSHOTS / "snapshot-summary.png")
            # Every link left on the page answers (none leads to a 410 error page).
            assert {h: httpx.get(h).status_code for h in hrefs} == dict.fromkeys(hrefs, 200)
            # Sorting the types still works on a summary.
            sorted_url = browser.follow('a[href^="?sort=count"]')
            assert "sort=count" in sorted_url and browser.evaluate("!!document.querySelector('[aria-sort]')")
            assert browser.problems == [], browser.problems
            # A bookmarked treemap (a page that needs objects) explains itself with the 410 page.
            browser.goto(base + pages.treemap_page(old.tag))
            gone = browser.evaluate("document.querySelector('main').innerText")
            assert gone.startswith("410") and f"snapshot {old.tag!r} was pruned on {pruned.pruned_at}" in gone, gone
            assert [p for p in browser.problems if "410" not in p] == [], browser.problems
    finally:
        for tag in (old.tag, newer.tag):
            store.drop(database, tag, wait=True)


# --- interruption and the schedule, on synthetic heaps


def test_a_prune_whose_purger_is_killed_finishes_at_the_next_command(database: Database) -> None:
    no_purger_at_work(database)
    mine = f"{PREFIX}{uuid.uuid4().hex[:8]}-"
    old = load_synthetic(database, f"{mine}old", objects=20_000, references=80_000)
    load_synthetic(database, f"{mine}new")
    full = counts(database, old.sid)
    plan = prune.prune(database, 1, others(database, mine))  # in the background
    assert [s.tag for s in plan.pruned] == [old.tag]
    kill_the_purger(database)
    assert counts(database, old.sid)["objects"] > 0, "the purger finished before it could be killed"
    assert store.get_snapshot(database, old.tag).summary  # answers as a summary meanwhile

    said: list[str] = []
    with db.connect(say=said.append, start_managed=False):
        pass
    assert said == ["freeing the objects of 1 pruned snapshot in the background"]
    wait_until(lambda: counts(database, old.sid)["objects"] == 0)
    wait_until(lambda: bool(store.get_snapshot(database, old.tag).purged))
    assert counts(database, old.sid) == {**full, "objects": 0, "references": 0, "listings": 0}
    for tag in (old.tag, f"{mine}new"):
        store.drop(database, tag, wait=True)
    # Dropping a pruned snapshot frees it whole: groups and node too.
    assert counts(database, old.sid) == dict.fromkeys(full, 0)


def test_the_service_prunes_on_its_schedule(database: Database) -> None:
    no_purger_at_work(database)
    mine = f"{PREFIX}{uuid.uuid4().hex[:8]}-"
    first = load_synthetic(database, f"{mine}first")
    pinned = load_synthetic(database, f"{mine}release-1")
    last = load_synthetic(database, f"{mine}last")
    env = {
        **os.environ,
        "HEAPDB_PROGRESS": "0",
        config.PRUNE_KEEP_LAST: "1",
        config.PRUNE_KEEP_TAGS: ",".join([*others(database, mine), "*release-*"]),
        config.PRUNE_EVERY: "1",
    }
    port = free_port()
    service = subprocess.Popen(
        [sys.executable, "-m", "heapdb", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_until(lambda: store.get_snapshot(database, first.tag).summary or service.poll() is not None, timeout=120)
        assert service.poll() is None, "the service stopped"
        wait_until(lambda: counts(database, first.sid)["objects"] == 0)
    finally:
        service.terminate()
        _, stderr = service.communicate(timeout=30)
    assert "pruning every 1 s: keeping the newest 1 full snapshots" in stderr
    assert f"pruned 1 snapshot(s) to summaries: {first.tag!r}" in stderr
    assert not store.get_snapshot(database, pinned.tag).summary
    assert not store.get_snapshot(database, last.tag).summary
    for tag in (first.tag, pinned.tag, last.tag):
        store.drop(database, tag, wait=True)


def test_the_schedule_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.PRUNE_KEEP_LAST, raising=False)
    assert config.prune_schedule() is None
    monkeypatch.setenv(config.PRUNE_KEEP_LAST, "3")
    monkeypatch.setenv(config.PRUNE_KEEP_TAGS, "release-*, v* ,")
    monkeypatch.setenv(config.PRUNE_EVERY, "90")
    assert config.prune_schedule() == config.PruneSchedule(3, ("release-*", "v*"), 90.0)
    for keep, every in (("0", "90"), ("x", "90"), ("3", "0"), ("3", "soon")):
        monkeypatch.setenv(config.PRUNE_KEEP_LAST, keep)
        monkeypatch.setenv(config.PRUNE_EVERY, every)
        with pytest.raises(ConfigError, match="HEAPDB_PRUNE_KEEP_LAST"):
            config.prune_schedule()
