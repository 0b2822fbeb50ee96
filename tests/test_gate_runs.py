"""The CI gate's recorded runs: what each run decided and why, kept and shown.

Two runs of `heapdb gate` over the leak program's real V8 snapshots are recorded through the CLI, as
a CI job records them: one that passes (thresholds no finding reaches) and one that fails. The
questions `gate-runs` and `gate-run` answer them from the CLI, REST and Python alike, the failing
run's report as `gate` decided it; an unknown run is a clean "not found" everywhere; and a person
walks from the header's "Gate runs" link to the failing run's page in a real headless Chromium.
The reading back of a stored report is also checked on its own, without a database.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from html import unescape

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import GateFinding, GateReport, GateRun, GateRuns, ObjectRef, from_data, to_data
from heapdb.renderers import ci_report
from heapdb.service import gate_run_pages, links, pages
from heapdb.service.app import create_app
from heapdb.service.question_pages import ask_page
from tests.support.chromium import ChromiumPage
from tests.support.pages import AXE, IMPACTS, SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded

RECORDED = re.compile(r"recorded as gate run (\d+)")
# Thresholds: no path of the leak program reaches the first; any growth of the leak passes the second.
LENIENT = ["--min-bytes", str(1 << 40), "--max-growth", "100GB"]
STRICT = ["--min-bytes", "1024", "--max-growth", "1KB"]
UNKNOWN = 2**62


# --- without a database ---------------------------------------------------------------------------


def a_report(passed: bool) -> GateReport:
    finding = GateFinding(
        kind="new-leak",
        signature=42,
        path="(GC roots) / cache / [#]",
        hops=["(GC roots)", "cache", "[#]"],
        type="LeakedItem",
        objects_before=0,
        objects_after=500,
        bytes_before=0,
        bytes_after=1 << 20,
        why=ObjectRef("release/1.2", 4711),
        verdict="held by the cache",
    )
    known = dataclasses.replace(finding, signature=7, known_leak="the cache is meant to grow", fails=False)
    return GateReport(
        baseline="release/1.1",
        candidate="release/1.2",
        passed=passed,
        fail_on=["new-leaks", "growth"],
        min_bytes=1024,
        max_growth="5%",
        growth_bytes=5000,
        reachable_before=100_000,
        reachable_after=1_200_000,
        findings=[] if passed else [finding],
        known=[known],
        thresholds_from="min_bytes from the command; the rest heapdb's defaults",
        notes=["detached-dom not checked: not computed"],
    )


def test_a_stored_report_reads_back_as_the_report_it_was() -> None:
    for report in (a_report(True), a_report(False)):
        stored = json.loads(json.dumps(to_data(report, dataclasses.asdict)))
        assert from_data(GateReport, stored) == report
        run = from_data(GateRun, {**stored, "id": 3, "recorded_at": "2026-01-02T03:04:05+00:00"})
        assert (run.id, run.recorded_at, run.failures) == (3, "2026-01-02T03:04:05+00:00", report.failures)
        # A run answers as the gate did, with its number and time besides.
        assert {k: v for k, v in links.to_json(run).items() if k not in ("id", "recorded_at")} == links.to_json(report)


def test_the_runs_text_says_each_verdict_and_where_more_runs_are() -> None:
    empty = ci_report.gate_runs_text(GateRuns(total=0, offset=0, runs=[]))
    assert "no gate run is recorded" in empty
    run = from_data(GateRun, {**to_data(a_report(False), dataclasses.asdict), "id": 9, "recorded_at": "now"})
    text = ci_report.gate_run_text(run)
    assert text.startswith("gate run 9, recorded now\ngate FAILED: release/1.2 against release/1.1")


# --- recorded through the CLI, on the real Neo4j ----------------------------------------------------


def gate(baseline: str, candidate: str, thresholds: list[str]) -> tuple[int, dict, int]:
    """`heapdb gate ... --json` as a CI job runs it (recording, the default): exit status, report, run id."""
    result = CliRunner().invoke(main, ["gate", "--baseline", baseline, "--candidate", candidate, *thresholds, "--json"])
    found = RECORDED.search(result.stderr)
    assert found, (result.exit_code, result.stderr)
    return result.exit_code, json.loads(result.stdout), int(found.group(1))


@pytest.fixture(scope="module")
def runs(database: Database, leak_series_loaded: dict[str, Loaded]) -> Iterator[dict]:
    """The two recorded runs: the passing one (baseline -> target), then the failing one (baseline -> final)."""
    baseline, target, final = (leak_series_loaded[k].tag for k in ("baseline", "target", "final"))
    passed_status, passed_report, passed_id = gate(baseline, target, LENIENT)
    failed_status, failed_report, failed_id = gate(baseline, final, STRICT)
    assert (passed_status, failed_status) == (0, 1)
    assert failed_id > passed_id
    yield {
        "tags": (baseline, target, final),
        "passed": (passed_id, passed_report),
        "failed": (failed_id, failed_report),
    }
    # Recording also remembered builds and signatures of these snapshots: the gate tests start from none.
    database.write("MATCH (n) WHERE n:Build OR n:Signature OR n:SignatureObservation OR n:GateRun DETACH DELETE n")


def test_the_runs_are_listed_newest_first_and_each_answers_its_report(ask: Questions, runs: dict) -> None:
    baseline, target, final = runs["tags"]
    passed_id, passed_report = runs["passed"]
    failed_id, failed_report = runs["failed"]
    newest = ask.gate_runs(params.GateRuns(limit=2))
    assert [r.id for r in newest.runs] == [failed_id, passed_id]
    failing, passing = newest.runs
    assert (failing.baseline, failing.candidate, failing.passed) == (baseline, final, False)
    assert (passing.baseline, passing.candidate, passing.passed, passing.failing) == (baseline, target, True, 0)
    # A page further, and one candidate's runs only.
    assert ask.gate_runs(params.GateRuns(offset=1, limit=1)).runs == [passing]
    of_final = ask.gate_runs(params.GateRuns(candidate=final))
    assert of_final.total == 1 and of_final.runs == [failing]
    # The failing run answers the report the gate gave, findings and all, with its number and time.
    run = ask.gate_run(failed_id)
    decided = ask.gate(baseline, final, params.Gate(min_bytes=1024, max_growth="1KB"))
    assert not run.passed and run.failures and failing.failing == len(run.failures)
    assert run.findings == decided.findings and run.known == decided.known
    assert run.thresholds_from == decided.thresholds_from and "from the command" in run.thresholds_from
    assert {k: v for k, v in links.to_json(run).items() if k not in ("id", "recorded_at")} == failed_report
    assert links.to_json(ask.gate_run(passed_id))["passed"] is True and passed_report["passed"] is True
    assert run.recorded_at.endswith("+00:00") and run.id == failed_id


def test_the_cli_and_rest_agree_and_an_unknown_run_is_not_found(client: TestClient, runs: dict) -> None:
    failed_id, _ = runs["failed"]
    listing = CliRunner().invoke(main, ["gate-runs", "--limit", "2", "--json"])
    assert listing.exit_code == 0, listing.output
    rest = client.get(links.GATE_RUNS, params={"limit": 2})
    assert rest.status_code == 200 and json.loads(listing.stdout) == rest.json()
    one = CliRunner().invoke(main, ["gate-run", str(failed_id), "--json"])
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout) == client.get(links.path(links.GATE_RUN, id=failed_id)).json()
    text = CliRunner().invoke(main, ["gate-run", str(failed_id)])
    assert text.stdout.startswith(f"gate run {failed_id}, recorded ") and "gate FAILED" in text.stdout
    # Unknown: a non-zero exit and a 404, each saying so.
    missing = CliRunner().invoke(main, ["gate-run", str(UNKNOWN)])
    assert missing.exit_code != 0 and f"no gate run {UNKNOWN} is recorded" in missing.stderr
    gone = client.get(links.path(links.GATE_RUN, id=UNKNOWN))
    assert gone.status_code == 404 and f"no gate run {UNKNOWN} is recorded" in gone.json()["error"]
    page = client.get(gate_run_pages.gate_run_page(UNKNOWN))
    assert page.status_code == 404 and f"no gate run {UNKNOWN} is recorded" in page.text
    assert client.get(gate_run_pages.gate_run_page(UNKNOWN) + links.JSON_SUFFIX).status_code == 404
    assert client.get(links.GATE_RUNS_PAGE + "/seven").status_code == 422


def test_the_pages_and_their_twins(client: TestClient, runs: dict) -> None:
    baseline, _target, final = runs["tags"]
    passed_id, _ = runs["passed"]
    failed_id, failed_report = runs["failed"]
    listing = client.get(gate_run_pages.gate_runs_page(limit=2))
    assert listing.status_code == 200
    linked = re.findall(r'<a href="/gate-runs/(\d+)">run \d+</a>', listing.text)
    assert linked == [str(failed_id), str(passed_id)]
    list_twin = client.get(links.GATE_RUNS_PAGE + links.JSON_SUFFIX, params={"limit": 2})
    assert list_twin.json() == client.get(links.GATE_RUNS, params={"limit": 2}).json()
    twin = client.get(links.GATE_RUNS_PAGE + links.JSON_SUFFIX, params={"candidate": final})
    assert [r["id"] for r in twin.json()["runs"]] == [failed_id]
    page = client.get(gate_run_pages.gate_run_page(failed_id))
    assert page.status_code == 200
    html = unescape(page.text)
    finding = failed_report["findings"][0]
    assert 'id="verdict" class="verdict failed">failed<' in html and finding["path"] in html
    assert failed_report["thresholds_from"] in html
    assert f'href="{ask_page("history", sig=finding["signature"])}"' in page.text
    assert f'href="{pages.page_path(pages.SNAPSHOT, tag=final)}"' in page.text
    assert f'href="{pages.page_path(pages.SNAPSHOT, tag=baseline)}"' in page.text
    run_twin = client.get(gate_run_pages.gate_run_page(failed_id) + links.JSON_SUFFIX)
    assert run_twin.json() == client.get(links.path(links.GATE_RUN, id=failed_id)).json()


def test_a_person_opens_the_failing_run_from_the_header_in_chromium(runs: dict) -> None:
    _baseline, _target, final = runs["tags"]
    failed_id, failed_report = runs["failed"]
    failing = [f for f in failed_report["findings"] if f["fails"]]
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + links.HOME_PAGE)
        browser.follow(f'header nav a[href="{links.GATE_RUNS_PAGE}"]')
        assert browser.evaluate("document.querySelector('h1').textContent") == "Gate runs"
        rows = browser.evaluate(
            "[...document.querySelectorAll('#gate-runs tbody tr')].map(tr => [tr.querySelector('th').textContent, "
            "tr.querySelector('.verdict').textContent])"
        )
        assert rows[:2] == [[f"run {failed_id}", "failed"], [f"run {runs['passed'][0]}", "passed"]]
        browser.screenshot(SCREENSHOTS / "gate-runs.png", full_page=False)
        assert browser.accessibility_violations(AXE, IMPACTS) == []
        browser.follow(f'#gate-runs a[href="{gate_run_pages.gate_run_page(failed_id)}"]')
        assert browser.evaluate("document.querySelector('#verdict').textContent") == "failed"
        assert f"Gate run {failed_id}" in browser.evaluate("document.querySelector('h1').textContent")
        paths = browser.evaluate("[...document.querySelectorAll('#failures tbody .path')].map(p => p.textContent)")
        assert paths == [f["path"] for f in failing]
        assert final in browser.evaluate("document.querySelector('dl.totals').textContent")
        browser.screenshot(SCREENSHOTS / "gate-run.png", full_page=False)
        assert browser.accessibility_violations(AXE, IMPACTS) == []
        # A finding's signature opens its history across builds.
        browser.follow("#failures tbody a[title^='this signature']")
        assert "history" in browser.evaluate("location.pathname")
        assert browser.problems == [], browser.problems
