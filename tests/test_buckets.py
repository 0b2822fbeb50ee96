"""Bucket totals of stored snapshots and `heapdb diff --by bucket`, against the real Neo4j and real
leak.js snapshots.

The baseline and final leak snapshots are loaded under two bucket rules (leak.js's own classes, and
V8's `(...)` and `system / ...` objects), and the final one once more without rules. A load stores each bucket's
totals on its `:Snapshot` (`buckets`), the figures the in-process analysis gives for the same file
and rules; `diff --by bucket` compares them, the same through Python, the CLI and REST.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.cli.steps import analyse_for_store, choose_rules
from heapdb.db import Database
from heapdb.errors import ParameterError
from heapdb.loader import analysis, formats
from heapdb.loader.rules import compile_rules
from heapdb.loader.rules.summary import bucket_rows
from heapdb.loader.store.snapshots import get_snapshot
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff, ObjectInfo
from heapdb.service import compare_pages
from heapdb.service.app import create_app
from tests.support.v8_fixtures import BUCKET_RULES, LEAK_SIZES

# leak.js leaks one LeakedItem and one LeakedBuffer per unit; baseline has the first size's units,
# final all three sizes'.
LEAKED_OBJECTS = 2 * (sum(LEAK_SIZES) - LEAK_SIZES[0])


@dataclass(frozen=True)
class Loads:
    baseline: str  # tags: under BUCKET_RULES
    final: str
    plain: str  # the final snapshot without rules
    rules: Path
    files: dict[str, Path]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def unique_tag(label: str) -> str:
    return f"test-buckets-{label}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def loads(
    database: Database, leak_snapshots: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Loads]:
    rules = tmp_path_factory.mktemp("bucket-rules") / "buckets.toml"
    rules.write_text(BUCKET_RULES)
    tags = {label: unique_tag(label) for label in ("baseline", "final", "plain")}
    for label, file, options in (
        ("baseline", "baseline", ("--rules", str(rules))),
        ("final", "final", ("--rules", str(rules))),
        ("plain", "final", ("--rules", "none")),
    ):
        code, _, err = invoke("load", str(leak_snapshots[file]), "--tag", tags[label], "--json", *options)
        assert code == 0, err
    yield Loads(tags["baseline"], tags["final"], tags["plain"], rules, leak_snapshots)


def expected_buckets(file: Path, rules: Path) -> list[dict[str, Any]]:
    """What a load of ``file`` under ``rules`` stores as ``buckets``, computed in process by the
    loader's own functions; checked against what `heapdb analyze --rules` prints for the same analysis."""
    graph = formats.read_graph(file)
    choice = choose_rules(str(rules))
    assert choice is not None
    data, _ = analyse_for_store(graph, choice, lambda _m: None)
    rows = json.loads(data.buckets_property()["buckets"])
    # The same analysis again, for the rules summary `heapdb analyze --rules` prints.
    rule_set, _runtime = choice.for_graph(graph)
    assert rule_set is not None
    compiled = compile_rules(rule_set, graph)
    result = analysis.analyze(graph, edge_weight=compiled.edge_weight) if compiled.weighted else analysis.analyze(graph)
    printed = [asdict(row) for row in bucket_rows(result, compiled)]
    assert rows == printed
    return rows


def members_in_store(database: Database, tag: str) -> dict[str, list[int]]:
    """Per bucket, from the stored objects themselves: [members, their self size, the largest retained size]."""
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag, status: 'ready'}) MATCH (o:Object {sid: s.sid}) "
        "WHERE o.bucket IS NOT NULL AND o.reachable AND NOT o:Root "
        "RETURN o.bucket AS name, count(o) AS objects, sum(o.self_size) AS size, max(o.retained_size) AS largest",
        {"tag": tag},
    )
    return {r["name"]: [r["objects"], r["size"], r["largest"]] for r in rows}


def stored_buckets(database: Database, tag: str) -> list[dict[str, Any]] | None:
    rows = database.read("MATCH (s:Snapshot {tag: $tag, status: 'ready'}) RETURN s.buckets AS buckets", {"tag": tag})
    assert len(rows) == 1
    text = rows[0]["buckets"]
    return None if text is None else json.loads(text)


def test_a_load_stores_each_buckets_totals(database: Database, loads: Loads) -> None:
    for tag, file in ((loads.baseline, "baseline"), (loads.final, "final")):
        expected = expected_buckets(loads.files[file], loads.rules)
        assert sorted(r["name"] for r in expected) == ["app", "engine"]
        assert all(r["objects"] > 0 and r["retained_size"] >= r["max_retained_size"] > 0 for r in expected)
        assert stored_buckets(database, tag) == expected
        # And counted again from the objects' own stored `bucket` properties.
        assert members_in_store(database, tag) == {
            r["name"]: [r["objects"], r["self_size"], r["max_retained_size"]] for r in expected
        }
        assert list(get_snapshot(database, tag).buckets) == expected
    # Without bucket rules there is no such property.
    assert stored_buckets(database, loads.plain) is None
    assert get_snapshot(database, loads.plain).buckets == ()
    # The snapshot's REST record carries them too.
    client = TestClient(create_app(token=""))
    record = client.get(f"/api/snapshots/{loads.final}")
    assert record.status_code == 200
    assert record.json()["buckets"] == stored_buckets(database, loads.final)


def test_diff_by_bucket_is_the_same_everywhere(database: Database, loads: Loads) -> None:
    answer = Questions(database).diff(loads.baseline, loads.final, params.Diff(by="bucket"))
    assert isinstance(answer, Diff) and answer.by == "bucket"
    before = {r["name"]: r for r in stored_buckets(database, loads.baseline) or []}
    after = {r["name"]: r for r in stored_buckets(database, loads.final) or []}
    assert {c.label for c in answer.changes} == {"app", "engine"}
    for change in answer.changes:
        assert change.hops == [change.label]
        old, new = before[change.label], after[change.label]
        assert (change.count_before, change.count_after) == (old["objects"], new["objects"])
        assert (change.size_before, change.size_after) == (old["self_size"], new["self_size"])
        assert (change.retained_before, change.retained_after) == (old["retained_size"], new["retained_size"])
    # Sorted as diff by type: largest self size growth first, then count growth, then name.
    keys = [(-c.size_delta, -c.count_delta, c.label) for c in answer.changes]
    assert keys == sorted(keys)

    # The leaked bucket grew by the leaked objects, as their types did.
    app = next(c for c in answer.changes if c.label == "app")
    assert app.count_delta == LEAKED_OBJECTS
    assert app.size_delta > 0 and app.retained_delta > 0
    by_type = Questions(database).diff(loads.baseline, loads.final, params.Diff(by="type", limit=10_000))
    assert isinstance(by_type, Diff)
    leaked_types = [c for c in by_type.changes if c.label in ("LeakyCache", "LeakedItem", "LeakedBuffer")]
    assert sum(c.count_delta for c in leaked_types) == app.count_delta
    assert sum(c.size_delta for c in leaked_types) == app.size_delta

    # The CLI's JSON and REST give the same rows; the text names each bucket.
    code, out, err = invoke("diff", loads.baseline, loads.final, "--by", "bucket", "--json")
    assert code == 0, err
    cli = json.loads(out)
    assert cli["by"] == "bucket"
    assert [(r["label"], r["count_delta"], r["size_delta"], r["retained_delta"]) for r in cli["changes"]] == [
        (c.label, c.count_delta, c.size_delta, c.retained_delta) for c in answer.changes
    ]
    rest = TestClient(create_app(token="")).get(f"/api/diff/{loads.baseline}/{loads.final}", params={"by": "bucket"})
    assert rest.status_code == 200
    assert rest.json() == cli
    code, out, err = invoke("diff", loads.baseline, loads.final, "--by", "bucket")
    assert code == 0, err
    assert "by bucket" in out and "app" in out and "engine" in out
    assert f"+{LEAKED_OBJECTS:,}" in out
    # limit keeps the first rows.
    limited = Questions(database).diff(loads.baseline, loads.final, params.Diff(by="bucket", limit=1))
    assert isinstance(limited, Diff) and limited.changes == answer.changes[:1]


def test_diff_by_bucket_without_bucket_rules_says_how_to_add_them(database: Database, loads: Loads) -> None:
    with pytest.raises(ParameterError, match="without bucket rules") as caught:
        Questions(database).diff(loads.plain, loads.plain, params.Diff(by="bucket"))
    assert f"heapdb reanalyze {loads.plain} --rules" in str(caught.value)

    result = CliRunner().invoke(main, ["diff", loads.plain, loads.plain, "--by", "bucket"])
    assert result.exit_code != 0
    assert "without bucket rules" in result.stderr and "heapdb reanalyze" in result.stderr
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)

    rest = TestClient(create_app(token="")).get(f"/api/diff/{loads.plain}/{loads.plain}", params={"by": "bucket"})
    assert 400 <= rest.status_code < 500
    assert "without bucket rules" in rest.text

    # One side with buckets is not enough (every bucket would look new): the error names the other.
    with pytest.raises(ParameterError, match="without bucket rules") as one_sided:
        Questions(database).diff(loads.plain, loads.final, params.Diff(by="bucket"))
    assert f"snapshot {loads.plain!r} was" in str(one_sided.value) and loads.final not in str(one_sided.value)


def test_the_compare_page_groups_by_bucket(database: Database, loads: Loads) -> None:
    client = TestClient(create_app(token=""))
    page = client.get(compare_pages.compare_page(loads.baseline, loads.final, by="bucket"))
    assert page.status_code == 200, page.text
    answer = Questions(database).diff(loads.baseline, loads.final, params.Diff(by="bucket"))
    assert isinstance(answer, Diff)
    for change in answer.changes:  # one row per bucket, as the API answers
        assert f'<th scope="row"><span class="ref">{change.label}</span></th>' in page.text
    assert '<strong aria-current="true">bucket</strong>' in page.text
    refused = client.get(compare_pages.compare_page(loads.plain, loads.final, by="bucket"))
    assert refused.status_code == 422 and "without bucket rules" in refused.text
    assert refused.headers["content-type"].startswith("text/html")


def objects_in(answer: Any) -> list[ObjectInfo]:
    """Every object an answer names, wherever it sits in it."""
    if isinstance(answer, ObjectInfo):
        return [answer]
    if is_dataclass(answer) and not isinstance(answer, type):
        return [o for f in fields(answer) for o in objects_in(getattr(answer, f.name))]
    if isinstance(answer, (list, tuple)):
        return [o for item in answer for o in objects_in(item)]
    return []


def test_every_object_answer_carries_the_objects_bucket_and_root(database: Database, loads: Loads) -> None:
    ask = Questions(database)
    for tag in (loads.final, loads.plain):
        top = ask.top(tag, params.Top(limit=50))
        items = ask.find(tag, params.Find(type="LeakedItem", limit=5))
        path = ask.why_alive(tag, items[0].id, params.Why(k=3))
        held_by_root = ask.object(tag, path.paths[0].objects[1].id)
        answers = [
            top,
            items,
            path,
            ask.dominators(tag, items[0].id),
            ask.retains(tag, top[0].id),
            ask.object(tag, items[0].id),
            held_by_root,
            ask.suspects(tag),
        ]
        objects = [o for answer in answers for o in objects_in(answer)]
        rows = database.read(
            "MATCH (s:Snapshot {tag: $tag, status: 'ready'}) MATCH (o:Object {sid: s.sid}) WHERE o.id IN $ids "
            "RETURN o.id AS id, o.bucket AS bucket",
            {"tag": tag, "ids": [o.id for o in objects]},
        )
        assert {o.id: o.bucket for o in objects} == {r["id"]: r["bucket"] for r in rows}
        # The root is marked wherever it appears: at the start of a path, and as an object's holder.
        root_id = get_snapshot(database, tag).root_id
        assert all(o.root == (o.id == root_id) for o in objects)
        assert held_by_root.incoming[0].object.root and held_by_root.incoming[0].object.id == root_id
    # Under the bucket rules the answers name the buckets (leak.js's objects are the app's); without
    # rules no object has one.
    item = ask.find(loads.final, params.Find(type="LeakedItem", limit=1))[0]
    why = ask.why_alive(loads.final, item.id)
    assert why.target.bucket == "app" and why.paths[0].objects[-1].bucket == "app"
    assert {o.bucket for o in ask.top(loads.final, params.Top(limit=50))} >= {"app", "engine"}
    assert {o.bucket for o in ask.top(loads.plain, params.Top(limit=50))} == {None}
    # The CLI's JSON and REST carry them too.
    code, out, err = invoke("top", loads.final, "--limit", "50", "--format", "json")
    assert code == 0, err
    assert [o["bucket"] for o in json.loads(out)] == [o.bucket for o in ask.top(loads.final, params.Top(limit=50))]
    rest = TestClient(create_app(token="")).get(f"/api/snapshots/{loads.final}/objects/{why.target.id}/why")
    assert rest.status_code == 200
    assert [o["bucket"] for o in rest.json()["paths"][0]["objects"]] == [o.bucket for o in why.paths[0].objects]


def test_reanalyze_rewrites_the_bucket_totals(database: Database, loads: Loads) -> None:
    # The plain load of the final snapshot, reanalysed under the bucket rules, stores what the
    # load under them stored (the totals do not depend on the order objects are read back in).
    code, out, err = invoke("reanalyze", loads.plain, "--rules", str(loads.rules), "--json")
    assert code == 0, err
    assert stored_buckets(database, loads.plain) == stored_buckets(database, loads.final)
    answer = Questions(database).diff(loads.plain, loads.final, params.Diff(by="bucket"))
    assert isinstance(answer, Diff)
    assert all(c.count_delta == c.size_delta == c.retained_delta == 0 for c in answer.changes)
    # And without rules again, they are gone.
    code, out, err = invoke("reanalyze", loads.plain, "--rules", "none", "--json")
    assert code == 0, err
    assert stored_buckets(database, loads.plain) is None


def test_a_types_objects_filter_by_bucket(database: Database, loads: Loads) -> None:
    ask = Questions(database)
    for type_name, bucket, other in (("LeakedItem", "app", "engine"), ("(closure)", "engine", "app")):
        rows = database.read(
            "MATCH (s:Snapshot {tag: $tag, status: 'ready'}) MATCH (o:Object {sid: s.sid, type: $type}) "
            "WHERE o.reachable AND o.bucket = $bucket RETURN o.id AS id ORDER BY o.retained_size DESC, o.id",
            {"tag": loads.final, "type": type_name, "bucket": bucket},
        )
        expected = [r["id"] for r in rows]
        found = ask.instances(loads.final, params.Instances(type=type_name, bucket=bucket, limit=1000))
        assert 0 < found.total == len(expected)
        assert [o.id for o in found.objects] == expected[:1000]
        assert {o.bucket for o in found.objects} == {bucket}
        assert ask.instances(loads.final, params.Instances(type=type_name, bucket=other)).total == 0
