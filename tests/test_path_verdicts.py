"""Verdicts and known leaks on answers keyed by retainer path, against the real Neo4j and real Node snapshots.

leak.js's three snapshots are loaded under a rule file with verdicts selected by reference paths (the
emitter, its listener list, the LeakedBuffers' byte arrays) and a known leak (the LeakyCache).
Every answer by path (`leaks`, `diff`, `growth` `--by path`, the gate) shows, on each path, the
verdict and known leak of the path's largest object (its group's first sample), read back here from
the stored objects themselves; leaks by path answer the paths whose largest object is a known leak
apart, never as new leaks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.queries import catalog, params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff
from heapdb.renderers import ci_report
from heapdb.service import compare_pages
from heapdb.service.app import create_app

LABELS = ("baseline", "target", "final")
KNOWN = "the cache never evicts (ticket 42)"
BYTES = "expected: 64 bytes per listener"
LISTENERS = "expected: one listener list, never emptied"
EMITTER = "expected: the app's one emitter"

RULES = f"""\
version = 1

[[known_leak]]
reason = "{KNOWN}"
link = "https://example.invalid/issues/42"
from = "system / Context"
edge.name = "cache"

[[verdict]]
note = "{EMITTER}"
from = "system / Context"
edge.name = "emitter"

[[verdict]]
note = "{BYTES}"
from = "LeakedBuffer"
edge.name = "bytes"

[[verdict]]
note = "{LISTENERS}"
from = "EventEmitter"
path = ["_events", "tick"]
"""

# A path's largest object (its group's first sample) in a snapshot, per signature: null where the
# snapshot has no such path.
LARGEST = (
    "MATCH (s:Snapshot {tag: $tag, status: 'ready'}) UNWIND $sigs AS sig "
    "OPTIONAL MATCH (g:PathGroup {sid: s.sid, sig: sig}) "
    "OPTIONAL MATCH (o:Object {sid: s.sid, id: g.samples[0]}) "
    "RETURN sig, g IS NOT NULL AS present, o.verdict AS verdict, o.known_leak AS known_leak"
)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def tags(
    database: Database, leak_snapshots: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[str]]:
    rules = tmp_path_factory.mktemp("path-verdicts") / "rules.toml"
    rules.write_text(RULES)
    loaded = []
    for name in LABELS:
        tag = f"test-path-verdicts-{name}-{uuid.uuid4().hex[:6]}"
        code, _out, err = invoke("load", str(leak_snapshots[name]), "--tag", tag, "--rules", str(rules))
        assert code == 0, err
        loaded.append(tag)
    yield loaded


def stored(database: Database, tag: str, sigs: list[int]) -> dict[int, dict[str, Any]]:
    """Per signature, whether ``tag`` has the path, and its largest object's own verdict and known leak."""
    return {r["sig"]: r for r in database.read(LARGEST, {"tag": tag, "sigs": sigs})}


def rules_of(row: dict[str, Any]) -> tuple[str | None, str | None]:
    return row["verdict"], row["known_leak"]


def test_the_rules_mark_objects_the_paths_select(database: Database, tags: list[str]) -> None:
    marked = database.read(
        "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) "
        "RETURN collect(DISTINCT o.verdict) AS verdicts, collect(DISTINCT o.known_leak) AS known",
        {"tag": tags[2]},
    )[0]
    assert set(marked["verdicts"]) == {BYTES, LISTENERS, EMITTER} and marked["known"] == [KNOWN]


def test_leaks_by_path_show_the_largest_objects_verdict(database: Database, tags: list[str]) -> None:
    baseline, target, final = tags
    answer = Questions(database).leaks(baseline, target, final, params.Leaks(by="path", limit=1000))
    clusters = [*answer.clusters, *answer.known]
    expected = stored(database, tags[2], [c.signature for c in clusters])
    for c in clusters:
        reason = None if c.known_leak is None else c.known_leak.reason
        assert (c.verdict, reason) == rules_of(expected[c.signature]), c.path
    # Paths whose largest object is part of a known leak are answered apart, never as new leaks.
    assert answer.clusters and answer.known
    assert all(c.known_leak is None for c in answer.clusters)
    assert all(c.known_leak is not None and c.known_leak.reason == KNOWN for c in answer.known)
    assert all(c.known_leak.link == "https://example.invalid/issues/42" for c in answer.known if c.known_leak)
    assert any("LeakedItem" in c.path for c in answer.known)
    assert not any("LeakyCache" in c.path for c in answer.clusters)
    assert {c.verdict for c in answer.clusters} >= {BYTES, None}
    # The same paths as a load without those rules would answer, only split: the limit counts new ones.
    fewer = Questions(database).leaks(baseline, target, final, params.Leaks(by="path", limit=3))
    assert [c.signature for c in fewer.clusters] == [c.signature for c in answer.clusters[:3]]

    code, out, err = invoke("leaks", *tags, "--by", "path", "--limit", "1000")
    assert code == 0, err
    assert f"verdict: {BYTES}" in out and "known leaks" in out and f"known: {KNOWN}" in out


def diff_by_path(database: Database, before: str, after: str) -> tuple[Diff, int]:
    """The diff by path, each row's verdict and known leak checked against its largest object's (in
    after, or in before for a path only before has); and how many paths only before has."""
    answer = Questions(database).diff(before, after, params.Diff(by="path", limit=10_000))
    assert isinstance(answer, Diff)
    sigs = [c.signature for c in answer.changes if c.signature is not None]
    assert len(sigs) == len(answer.changes)
    later, earlier = stored(database, after, sigs), stored(database, before, sigs)
    gone = 0
    for c in answer.changes:
        assert c.signature is not None
        present = later[c.signature]["present"]
        gone += not present
        assert (c.verdict, c.known_leak) == rules_of(later[c.signature] if present else earlier[c.signature]), c.label
    return answer, gone


def test_diff_by_path_shows_the_largest_objects_verdict(database: Database, tags: list[str]) -> None:
    before, after = tags[0], tags[2]
    answer, _gone = diff_by_path(database, before, after)
    assert {c.verdict for c in answer.changes} == {BYTES, LISTENERS, EMITTER, None}
    assert {c.known_leak for c in answer.changes} == {KNOWN, None}
    # Paths only before has rank last (they shrank to nothing), past the largest limit here: read
    # the stored query itself without one, and check those rows against before's largest objects.
    rows = database.read(catalog.get("diff-paths").cypher, {"before": after, "after": before, "limit": 1_000_000})
    only_before = [r for r in rows if r["objects_after"] == 0]
    expected = stored(database, after, [r["sig"] for r in only_before])
    assert only_before and all(not stored(database, before, [r["sig"]])[r["sig"]]["present"] for r in only_before[:20])
    assert [rules_of(r) for r in only_before] == [rules_of(expected[r["sig"]]) for r in only_before]
    by_type = Questions(database).diff(before, after, params.Diff(by="type", limit=10_000))
    assert isinstance(by_type, Diff)
    assert all(c.verdict is None and c.known_leak is None and c.signature is None for c in by_type.changes)

    code, out, err = invoke("diff", before, after, "--by", "path", "--limit", "10000", "--json")
    assert code == 0, err
    rows = json.loads(out)["changes"]
    assert [(r["signature"], r["verdict"], r["known_leak"]) for r in rows] == [
        (c.signature, c.verdict, c.known_leak) for c in answer.changes
    ]
    code, out, err = invoke("diff", before, after, "--by", "path", "--limit", "10000")
    assert code == 0, err
    assert f"verdict: {LISTENERS}" in out and f"known: {KNOWN}" in out

    page = TestClient(create_app(token="")).get(compare_pages.compare_page(before, after, "path"))
    assert page.status_code == 200 and f"verdict: {BYTES}" in page.text and f"known leak: {KNOWN}" in page.text


def test_growth_by_path_shows_the_newest_largest_objects_verdict(database: Database, tags: list[str]) -> None:
    answer = Questions(database).growth(tags, params.Growth(by="path", limit=10_000))
    expected = stored(database, tags[2], [g.signature for g in answer.rows if g.signature is not None])
    for g in answer.rows:
        assert g.signature is not None
        assert (g.verdict, g.known_leak) == rules_of(expected[g.signature]), g.label
    assert {g.verdict for g in answer.rows} >= {BYTES, None}
    assert {g.known_leak for g in answer.rows} == {KNOWN, None}
    by_type = Questions(database).growth(tags, params.Growth(by="type", limit=10_000))
    assert all(g.verdict is None and g.known_leak is None for g in by_type.rows)

    code, out, err = invoke("growth", *tags, "--by", "path", "--limit", "10000")
    assert code == 0, err
    assert f"verdict: {BYTES}" in out
    page = TestClient(create_app(token="")).get(compare_pages.growth_page(tags, "path"))
    assert page.status_code == 200 and f"verdict: {BYTES}" in page.text


def test_the_gate_shows_the_largest_objects_verdict(database: Database, tags: list[str]) -> None:
    report = Questions(database).gate(tags[0], tags[2], params.Gate(min_bytes=1024, max_growth="1KB"))
    findings = [*report.findings, *report.known]
    expected = stored(database, tags[2], [f.signature for f in findings if f.signature is not None])
    for f in findings:
        if f.signature is not None:
            assert (f.verdict, f.known_leak) == rules_of(expected[f.signature]), f.path
    assert EMITTER in {f.verdict for f in report.findings} and None in {f.verdict for f in report.findings}
    assert [f.known_leak for f in report.known] and {f.known_leak for f in report.known} == {KNOWN}
    assert f"verdict: {EMITTER}" in ci_report.gate_text(report)
