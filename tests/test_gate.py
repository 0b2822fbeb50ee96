"""The CI gate and leak signatures across builds.

Six builds of a Node program (tests/js/builds.js) whose builds 3 to 5 leak LeakedAuditRecord
objects are loaded in sequence with `--meta build=N`, and each is gated against the one before: the
gate fails at 3 and passes at 2 and 6, and the leak's remembered history says first seen 3, last
seen 5, fixed. The pure parts (thresholds, statuses, report formats) are tested without Neo4j.
"""

from __future__ import annotations

import json
import random
import subprocess
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ParameterError
from heapdb.loader import store
from heapdb.loader.store.signatures import order_key, summarise
from heapdb.loader.store.summaries import held_under
from heapdb.queries import params
from heapdb.queries.gate import classify, threshold_bytes
from heapdb.queries.questions import Questions
from heapdb.queries.results import GateFinding, GateReport, ObjectRef
from heapdb.renderers import ci_report
from heapdb.service import compare_pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from heapdb.units import parse_threshold
from tests.support.v8 import JS_DIR

BUILDS = range(1, 7)
LEAKING = range(3, 6)  # what builds.js leaks in
CLEAN, FIRST, LAST, FIXED = LEAKING.start - 1, LEAKING.start, LEAKING[-1], LEAKING.stop
REQUESTS = 3000  # builds.js's requests: one leaked record each


# --- pure parts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10MB", (10_000_000, False)),
        ("512KiB", (524_288, False)),
        ("1048576", (1_048_576, False)),
        (" 2 gib ", (2 * 1024**3, False)),
        ("5%", (5.0, True)),
        ("0.5%", (0.5, True)),
    ],
)
def test_thresholds_parse(text: str, expected: tuple[float, bool]) -> None:
    assert parse_threshold(text) == expected


@pytest.mark.parametrize("text", ["", "ten", "5 potatoes", "-3MB", "5%%", "MB"])
def test_bad_thresholds_are_parameter_errors(text: str) -> None:
    with pytest.raises(ParameterError, match="max_growth"):
        parse_threshold(text)
    with pytest.raises(ParameterError, match="max_growth"):
        params.Gate(max_growth=text)


def brute_held(paths: list[str], retained: list[int]) -> list[int]:
    return [
        max([retained[i]] + [r for q, r in zip(paths, retained) if q.startswith(p + " / ")])
        for i, p in enumerate(paths)
    ]


def prefix_held(paths: list[str], retained: list[int]) -> list[int]:
    """:func:`brute_held` in linear time, for a real snapshot's thousands of paths: each path's
    figure goes to every path it extends, the texts before each of its " / "."""
    below: dict[str, int] = {}
    for q, r in zip(paths, retained):
        at = q.find(" / ")
        while at >= 0:
            below[q[:at]] = max(below.get(q[:at], r), r)
            at = q.find(" / ", at + 1)
    return [max(r, below.get(p, r)) for p, r in zip(paths, retained)]


def test_held_under_is_the_most_any_extending_path_retains() -> None:
    hops = ["a", "b", "a / b", "c", "system", "system / Context", "[#]"]  # hop names with the separator in them
    rng = random.Random(7)
    for _ in range(300):
        paths = sorted({" / ".join(rng.choices(hops, k=rng.randint(1, 5))) for _ in range(rng.randint(1, 40))})
        rng.shuffle(paths)
        retained = [rng.randint(0, 10_000) for _ in paths]
        assert held_under(paths, retained) == brute_held(paths, retained), (paths, retained)
        assert prefix_held(paths, retained) == brute_held(paths, retained), (paths, retained)
    assert held_under([], []) == []


def test_a_percentage_is_of_the_reachable_heap() -> None:
    assert threshold_bytes("5%", 2_000_000) == 100_000
    assert threshold_bytes("2MB", 123) == 2_000_000


def test_statuses_follow_the_observations() -> None:
    def seen(*present: int) -> list[tuple[str, int, bool]]:
        return [(str(b), 1000 * b if b in present else 0, b in present) for b in range(1, 11)]

    fixed = summarise(seen(4, 5, 6, 7), known=False, noise=10)
    assert (fixed.first_seen, fixed.last_seen, fixed.status) == ("4", "7", "fixed")
    assert fixed.grew == ("4", "5", "6", "7")
    assert summarise(seen(10), known=False, noise=10).status == "new"
    assert summarise(seen(4, 10), known=False, noise=10).status == "recurring"
    assert summarise(seen(4, 10), known=True, noise=10).status == "known"
    assert summarise([], known=False, noise=10) == summarise([], known=False, noise=10)
    steady = [("1", 500, True), ("2", 505, True), ("3", 900, True)]
    assert summarise(steady, known=False, noise=10).grew == ("3",)  # 1 -> 2 is within the noise


def test_builds_sort_by_number_then_load_order() -> None:
    builds = [("10", 10.0, 3), ("9", 9.0, 5), ("main", None, 1), ("2", 2.0, 9)]
    assert [b for b, *_ in sorted(builds, key=lambda b: order_key(b[1], b[2]))] == ["2", "9", "10", "main"]


def _row(sig: int, hops: list[str], before: int, after: int) -> dict:
    return {
        "sig": sig,
        "path": " / ".join(hops),
        "hops": hops,
        "type": hops[-1],
        "objects_before": 0,
        "objects_after": 1,
        "retained_before": before,
        "retained_after": after,
        "sample": sig * 10,
        "known_leak": None,
    }


def test_findings_are_the_outermost_new_or_grown_paths() -> None:
    rows = [
        _row(1, ["(root)", "cache → Map", "[] → Leak"], 0, 900_000),
        _row(2, ["(root)", "cache → Map", "[] → Leak", "payload → Array"], 0, 400_000),  # inside 1
        _row(3, ["(root)", "list → Array"], 100_000, 700_000),  # grew
        _row(4, ["(root)", "small → Array"], 0, 1000),  # below the floor
        _row(5, ["(root)", "steady → Array"], 500_000, 510_000),  # within the growth threshold
    ]
    leaks, growths = classify(rows, min_bytes=256 * 1024, growth_bytes=100_000, tag="t")
    assert [f.signature for f in leaks] == [1]
    assert [f.signature for f in growths] == [3]
    assert leaks[0].why == ObjectRef("t", 10) and growths[0].growth == 600_000
    # A module context that "grew" because a new array appeared under it: the array is the leak.
    rows = [
        _row(6, ["(root)", "* → Context"], 180_000, 1_520_000),
        _row(7, ["(root)", "* → Context", "trail → Array"], 0, 1_500_000),
        _row(8, ["(root)", "* → Context", "cache → Map"], 100_000, 900_000),  # grew on its own
    ]
    leaks, growths = classify(rows, min_bytes=256 * 1024, growth_bytes=100_000, tag="t")
    assert [f.signature for f in leaks] == [7] and [f.signature for f in growths] == [8]


def _report(path: str) -> GateReport:
    finding = GateFinding(
        kind="new-leak",
        signature=42,
        path=path,
        hops=[path],
        type="Leak<&>\x01",
        objects_before=0,
        objects_after=3,
        bytes_before=0,
        bytes_after=300_000,
        why=ObjectRef("b-2", 7),
    )
    return GateReport(
        baseline="b-1",
        candidate="b-2",
        passed=False,
        fail_on=["new-leaks"],
        min_bytes=1000,
        max_growth="5%",
        growth_bytes=10,
        reachable_before=100,
        reachable_after=400_000,
        findings=[finding],
    )


def test_junit_and_markdown_escape_what_the_heap_names() -> None:
    report = _report('(root) / a"b → <x> & | `y`')
    tree = ET.fromstring(ci_report.junit_xml(report))
    failures = tree.findall(".//testcase/failure")
    assert len(failures) == 1 and tree.attrib["failures"] == "1"
    assert "42" in tree.find(".//testcase").attrib["name"]  # type: ignore[union-attr]
    assert '(root) / a"b → <x> & | `y`' in (failures[0].text or "")
    text = ci_report.markdown(report)
    table = [line for line in text.splitlines() if "`42`" in line]
    assert len(table) == 1 and "&lt;x&gt;" in table[0] and "\\|" in table[0]
    assert "heapdb why b-2 7" in text


# --- six builds in Neo4j ------------------------------------------------------------------------


def _write_build(build: int, out: Path) -> Path:
    subprocess.run(
        ["node", "--expose-gc", str(JS_DIR / "builds.js"), str(build), str(out)], check=True, capture_output=True
    )
    return out


@pytest.fixture(scope="module")
def builds(database: Database, tmp_path_factory: pytest.TempPathFactory):
    """Six builds loaded under unique tags with `--meta build=N`, each gated (and recorded) against
    the build before: the tags and the reports by build number."""
    out = tmp_path_factory.mktemp("builds")
    run = uuid.uuid4().hex[:8]
    tags = {}
    for n in BUILDS:
        tags[n] = f"test-gate-{n}-{run}"
        snapshot = _write_build(n, out / f"build-{n}.heapsnapshot")
        result = CliRunner().invoke(main, ["load", str(snapshot), "--tag", tags[n], "--meta", f"build={n}"])
        assert result.exit_code == 0, result.output
    questions = Questions(database)
    reports = {}
    for n in BUILDS[1:]:
        reports[n] = questions.gate(tags[n - 1], tags[n])
        questions.record_gate(reports[n])
    yield tags, reports
    database.write("MATCH (n) WHERE n:Build OR n:Signature OR n:SignatureObservation OR n:GateRun DETACH DELETE n")


def _leak(report: GateReport) -> GateFinding:
    # The outermost new path that holds the leak: the auditTrail array, by the module's context
    # variable that holds it (the records' paths extend it, so they are part of this finding).
    found = [f for f in report.failures if f.kind == "new-leak"]
    assert found, report
    return max(found, key=lambda f: f.growth)


@pytest.mark.node
def test_the_gate_fails_where_the_leak_appears_and_passes_before_and_after(builds) -> None:
    tags, reports = builds
    assert reports[CLEAN].passed, reports[CLEAN]
    assert reports[FIXED].passed, reports[FIXED]
    assert not reports[FIRST].passed
    leak = _leak(reports[FIRST])
    assert leak.kind == "new-leak"
    assert leak.bytes_after >= reports[FIRST].min_bytes > leak.bytes_before
    # At least the records' payloads (32 numbers each) are held that way.
    assert leak.bytes_after > REQUESTS * 32 * 4
    assert not [f for f in reports[FIRST].failures if f is not leak and f.path.startswith(leak.path)]
    assert leak.why is not None and leak.why.tag == tags[FIRST]


@pytest.mark.node
def test_each_stored_path_group_holds_what_its_extensions_retain(database: Database, builds) -> None:
    tags, _reports = builds
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag}) MATCH (g:PathGroup {sid: s.sid}) RETURN g.path AS path, "
        "g.retained_size AS retained, g.held AS held",
        {"tag": tags[FIRST]},
    )
    assert len(rows) > 100
    expected = prefix_held([r["path"] for r in rows], [r["retained"] for r in rows])
    assert [r["held"] for r in rows] == expected
    assert any(r["held"] > r["retained"] for r in rows)  # paths that hold more below them than themselves


@pytest.mark.node
def test_history_says_first_and_last_seen_and_fixed(database: Database, builds) -> None:
    _tags, reports = builds
    leak = _leak(reports[FIRST])
    history = Questions(database).history(leak.signature or 0)
    assert (history.first_seen, history.last_seen, history.status) == (str(FIRST), str(LAST), "fixed")
    assert [o.build for o in history.observations] == [str(n) for n in BUILDS]
    assert [o.build for o in history.observations if o.present] == [str(n) for n in LEAKING]
    assert history.observations[BUILDS.index(FIRST)].retained_size == leak.bytes_after
    assert history.grew == [str(FIRST)]  # the leak is the same size in every leaking build
    since = {h.signature for h in Questions(database).signatures(since=str(FIRST))}
    assert leak.signature in since
    assert leak.signature not in {h.signature for h in Questions(database).signatures(since=str(FIXED))}


@pytest.mark.node
def test_cli_exit_codes_junit_and_markdown(builds, tmp_path: Path) -> None:
    tags, reports = builds
    junit, summary = tmp_path / "gate.xml", tmp_path / "gate.md"
    failed = CliRunner().invoke(
        main,
        [
            "gate",
            "--baseline",
            tags[CLEAN],
            "--candidate",
            tags[FIRST],
            "--no-record",
            "--junit",
            str(junit),
            "--markdown",
            str(summary),
        ],
    )
    assert failed.exit_code == 1, failed.output
    signature = str(_leak(reports[FIRST]).signature)
    assert "gate FAILED" in failed.stdout and signature in failed.stdout
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert any(signature in c.attrib["name"] and c.find("failure") is not None for c in cases)
    assert signature in summary.read_text()
    passed = CliRunner().invoke(
        main, ["gate", "--baseline", tags[LAST], "--candidate", tags[FIXED], "--no-record", "--json"]
    )
    assert passed.exit_code == 0, passed.output
    assert json.loads(passed.stdout)["passed"] is True
    unknown = CliRunner().invoke(main, ["gate", "--baseline", "no-such-tag", "--candidate", tags[FIXED], "--no-record"])
    assert unknown.exit_code == 4 and "no snapshot tagged" in unknown.output
    bad = CliRunner().invoke(
        main, ["gate", "--baseline", tags[CLEAN], "--candidate", tags[FIRST], "--max-growth", "lots"]
    )
    assert bad.exit_code == 4 and "max_growth" in bad.output
    history = CliRunner().invoke(main, ["history", signature])
    assert history.exit_code == 0 and f"first seen {FIRST}, last seen {LAST}" in history.stdout
    listing = CliRunner().invoke(main, ["signatures", "--since", tags[FIRST], "--json"])
    assert listing.exit_code == 0 and int(signature) in [h["signature"] for h in json.loads(listing.stdout)]


@pytest.mark.node
def test_rest_twins_answer_as_the_python_api(database: Database, builds) -> None:
    tags, reports = builds
    client = TestClient(create_app())
    questions = Questions(database)
    rest = client.get("/api/gate", params={"baseline": tags[CLEAN], "candidate": tags[FIRST]})
    assert rest.status_code == 200, rest.text
    assert rest.json() == to_json(questions.gate(tags[CLEAN], tags[FIRST]))
    signature = _leak(reports[FIRST]).signature
    assert client.get(f"/api/signatures/{signature}").json() == to_json(questions.history(signature or 0))
    assert client.get("/api/signatures").json() == to_json(questions.signatures())
    assert client.get("/api/signatures/1").status_code == 404


@pytest.mark.node
def test_the_inspections_checks_fail_the_leaking_build_and_are_remembered(database: Database, builds) -> None:
    tags, _reports = builds
    questions = Questions(database)
    asked = params.Gate(fail_on=("duplicate-objects", "collection-fill"), min_bytes=2048, max_growth="1024")
    report = questions.gate(tags[CLEAN], tags[FIRST], asked)
    assert not report.passed
    copies = [f for f in report.failures if f.kind == "duplicate-object"]
    # One content per user of the sessions the audit trail keeps (tests/test_gate_inspections.py
    # checks them all, in process): the report lists the first of each kind.
    assert len(copies) == asked.limit and all(f.path.startswith("Session {user: 'user-") for f in copies)
    (array,) = [f for f in report.failures if f.kind == "collection-fill"]
    assert array.path == "Array" and array.growth > 0 and not [f for f in report.failures if f.kind == "new-leak"]
    text = CliRunner().invoke(
        main, ["diff", tags[CLEAN], tags[FIRST], "--by", "inspection", "--limit", "500", "--json"]
    )
    changes = json.loads(text.stdout)["changes"]
    assert {c["signature"] for c in changes} >= {f.signature for f in copies}
    assert next(c for c in changes if c["inspection"] == "collection-fill")["size_delta"] == array.growth
    shown = CliRunner().invoke(main, ["diff", tags[CLEAN], tags[FIRST], "--by", "inspection"]).stdout
    assert "collection-fill: Array" in shown and "duplicate-objects: Session {user: 'user-" in shown
    page = TestClient(create_app()).get(compare_pages.compare_page(tags[CLEAN], tags[FIRST], "inspection"))
    assert page.status_code == 200 and "collection-fill" in page.text and "inspection rows" in page.text
    questions.record_gate(report)
    history = questions.history(copies[0].signature or 0)
    # Looked up in every build still loaded: the sessions are kept while the trail leaks, 3 to 5.
    assert (history.first_seen, history.last_seen, history.status) == (str(FIRST), str(LAST), "fixed")
    assert {o.build for o in history.observations if o.present} <= {str(n) for n in LEAKING}
    assert history.observations[0].build == str(BUILDS[0]) and not history.observations[0].present


@pytest.mark.node
def test_dropping_a_snapshot_keeps_the_history(database: Database, builds) -> None:
    tags, reports = builds
    signature = _leak(reports[FIRST]).signature or 0
    questions = Questions(database)
    # Recorded once before the drop: each recording sums every signature up again by its own
    # thresholds, and an earlier test may have recorded with others.
    questions.record_gate(questions.gate(tags[LAST], tags[FIXED]))
    before = questions.history(signature)
    store.drop(database, tags[FIRST + 1])
    questions.record_gate(questions.gate(tags[LAST], tags[FIXED]))
    assert questions.history(signature) == before
    rows = CliRunner().invoke(main, ["query", "signature-history", "--param", f"sig={signature}", "--json"])
    assert rows.exit_code == 0, rows.output
    assert str(before.observations[BUILDS.index(FIRST)].retained_size) in rows.stdout


# A team's thresholds in its rule set: high enough that the first leaking build passes.
LENIENT = 'version = 1\n\n[gate]\nmin_bytes = "1GB"\nmax_growth = "100GB"\n'


@pytest.mark.node
def test_thresholds_come_from_the_rule_sets_gate_table_unless_given(database: Database, builds, tmp_path: Path) -> None:
    tags, _reports = builds
    rule_file = tmp_path / "team.toml"
    rule_file.write_text(LENIENT, encoding="utf-8")
    gate = ["gate", "--baseline", tags[CLEAN], "--candidate", tags[FIRST], "--no-record", "--rules", str(rule_file)]

    # The file's [gate] lets the leak through; what the command line gives still wins.
    lenient = CliRunner().invoke(main, gate)
    assert lenient.exit_code == 0, lenient.output
    assert f"max_growth, min_bytes from rule file {rule_file}, [gate] at line 3" in lenient.stdout
    # A low floor lists thousands of candidate paths: each reads its stored `held`, so it answers
    # well within the query timeout (matching every path against every other did not).
    strict = CliRunner().invoke(main, [*gate, "--min-bytes", "1000", "--json"])
    assert strict.exit_code == 1, strict.output
    answer = json.loads(strict.stdout)
    assert answer["min_bytes"] == 1000 and answer["max_growth"] == "100GB"
    assert answer["thresholds_from"].startswith("min_bytes from the command; max_growth from rule file")

    # A stored rule set, named over REST; an unknown one is a 404, a file path is no name at all.
    name = f"gate-{uuid.uuid4().hex[:8]}"
    added = CliRunner().invoke(main, ["rules", "add", str(rule_file), "--name", name])
    assert added.exit_code == 0, added.output
    try:
        client = TestClient(create_app())
        rest = client.get("/api/gate", params={"baseline": tags[CLEAN], "candidate": tags[FIRST], "rules": name})
        assert rest.status_code == 200, rest.text
        assert rest.json()["passed"] is True and rest.json()["min_bytes"] == 10**9
        assert f"rule set {name} version 1" in rest.json()["thresholds_from"]
        given = client.get(
            "/api/gate", params={"baseline": tags[CLEAN], "candidate": tags[FIRST], "rules": name, "min_bytes": 262144}
        )
        assert given.json()["passed"] is False
        assert (
            client.get(
                "/api/gate", params={"baseline": tags[CLEAN], "candidate": tags[FIRST], "rules": "no-such-set"}
            ).status_code
            == 404
        )
        assert (
            client.get(
                "/api/gate", params={"baseline": tags[CLEAN], "candidate": tags[FIRST], "rules": str(rule_file)}
            ).status_code
            == 422
        )

        # Without --rules, the rules the candidate was loaded with; once they are gone, the defaults and a note.
        again = f"{tags[FIRST]}-ruled"
        snapshot = _write_build(FIRST, tmp_path / f"build-{FIRST}.heapsnapshot")
        loaded = CliRunner().invoke(main, ["load", str(snapshot), "--tag", again, "--rules", name])
        assert loaded.exit_code == 0, loaded.output
        own = Questions(database).gate(tags[CLEAN], again)
        assert own.passed and own.thresholds_from == (
            f"max_growth, min_bytes from the candidate's rule set {name} version 1, [gate] at line 3; "
            "the rest heapdb's defaults"
        )
        assert CliRunner().invoke(main, ["rules", "remove", name, "--yes"]).exit_code == 0
        gone = CliRunner().invoke(main, ["gate", "--baseline", tags[CLEAN], "--candidate", again, "--no-record"])
        assert gone.exit_code == 1, gone.output
        assert f"note: the candidate's rule set {name} version 1 is no longer stored" in gone.stdout
        assert "thresholds: heapdb's defaults" in gone.stdout
    finally:
        CliRunner().invoke(main, ["rules", "remove", name, "--yes"])
