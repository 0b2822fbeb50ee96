"""`heapdb reanalyze` and reading a stored snapshot back, against the real Neo4j and a real leak.js snapshot.

The module loads one snapshot twice: ``subject`` (the load that gets reanalysed) and ``ruled`` (a
fresh `heapdb load --rules` of the same file); ``plain`` is the session's plain load of it
(``leak_loaded``), to compare with. A
reanalysis must store, object for object, what the fresh load of the file under the same rules
stores: dominators, retained sizes and counts, reachability, distances and buckets.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ReferencesLoading
from heapdb.loader import formats, store
from heapdb.loader.graph import NUMERIC_NAME_KINDS, Detachedness, HeapGraph
from heapdb.loader.store import read_back, writer
from heapdb.units import shorten
from tests.support import old_versions
from tests.support.snapshots import Loaded
from tests.test_load_rules import OWNS_RULES as RULES  # ownership by path and edge name, and buckets

# What must agree object for object (compared as text, NULL as '').
COMPARED = (
    "dom",
    "retained_size",
    "retained_count",
    "distance",
    "reachable",
    "bucket",
    "through",
    "holder",
    "known_leak",
    "verdict",
)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@dataclass(frozen=True)
class Loads:
    subject: str
    plain: str
    ruled: str
    rules_file: Path


def sid_of(database: Database, tag: str) -> int:
    return int(
        database.read("MATCH (s:Snapshot {tag: $tag, status: 'ready'}) RETURN s.sid AS sid", {"tag": tag})[0]["sid"]
    )


@pytest.fixture(scope="module")
def loads(
    database: Database, leak_snapshot: Path, leak_loaded: Loaded, tmp_path_factory: pytest.TempPathFactory
) -> Loads:
    rules_file = tmp_path_factory.mktemp("reanalyze") / "rules.toml"
    rules_file.write_text(RULES)
    run = uuid.uuid4().hex[:8]
    tags = {label: f"test-reanalyze-{label}-{run}" for label in ("subject", "ruled")}
    for label, tag in tags.items():
        # `subject` is a plain load, as `leak_loaded` is (no rules at all, not even the runtime's defaults).
        options = ("--rules", str(rules_file) if label == "ruled" else "none")
        code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, *options)
        assert code == 0, err
    return Loads(tags["subject"], leak_loaded.tag, tags["ruled"], rules_file)


def differences(database: Database, sid: int, expected_sid: int) -> tuple[int, list[dict[str, Any]]]:
    """How many objects the two loads share, and up to five whose compared properties differ."""
    same = " AND ".join(f"coalesce(toString(a.{key}), '') = coalesce(toString(b.{key}), '')" for key in COMPARED)
    rows = database.read(
        "MATCH (a:Object {sid: $a}) WHERE a.id IS NOT NULL MATCH (b:Object {sid: $b, id: a.id}) "
        f"WITH a, b, ({same}) AS equal "
        "RETURN count(*) AS shared, collect(CASE WHEN NOT equal THEN {id: a.id, "
        + ", ".join(f"{key}: [a.{key}, b.{key}]" for key in COMPARED)
        + "} END)[..5] AS differing",
        {"a": sid, "b": expected_sid},
    )
    return int(rows[0]["shared"]), rows[0]["differing"]


def assert_same_analysis(database: Database, sid: int, expected_sid: int) -> None:
    counts = database.read(
        "MATCH (s:Snapshot) WHERE s.sid IN [$a, $b] RETURN s.sid AS sid, s.object_count AS n",
        {"a": sid, "b": expected_sid},
    )
    n = {row["sid"]: row["n"] for row in counts}
    shared, differing = differences(database, sid, expected_sid)
    assert shared == n[sid] == n[expected_sid]
    assert differing == []


def reanalyze(tag: str, *options: str) -> dict[str, Any]:
    code, out, err = invoke("reanalyze", tag, "--json", *options)
    assert code == 0, err
    answer: dict[str, Any] = json.loads(out)
    return answer


def snapshot_node(database: Database, sid: int) -> dict[str, Any]:
    node: dict[str, Any] = database.read("MATCH (s:Snapshot {sid: $sid}) RETURN s {.*} AS s", {"sid": sid})[0]["s"]
    return node


def test_reanalyze_under_rules_equals_a_fresh_load(
    database: Database, loads: Loads, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_sid = sid_of(database, loads.subject)
    # Read before: once replaced, the old load is freed by a background purger at any moment.
    old = snapshot_node(database, old_sid)
    seen: list[dict[int, str]] = []
    switch = writer._switch

    def watched_switch(db: Database, sid: int, replaced: list[int], report: writer.LoadReport) -> None:
        # Just before the switch: the old load still answers for the tag, the new one is invisible.
        rows = db.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.sid AS sid, s.status AS status", {"tag": loads.subject})
        seen.append({row["sid"]: row["status"] for row in rows})
        assert sid_of(db, loads.subject) == old_sid
        switch(db, sid, replaced, report)

    monkeypatch.setattr(writer, "_switch", watched_switch)
    answer = reanalyze(loads.subject, "--rules", str(loads.rules_file))
    new_sid = answer["sid"]
    assert answer["reanalysed_from"] == old_sid and new_sid != old_sid
    assert seen == [{old_sid: "ready", new_sid: "loading"}]
    assert sid_of(database, loads.subject) == new_sid
    assert_same_analysis(database, new_sid, sid_of(database, loads.ruled))

    # The new load records the rules as `load --rules` does, and keeps what the old one said.
    new, ruled = (snapshot_node(database, s) for s in (new_sid, sid_of(database, loads.ruled)))
    for key in ("rules", "rules_digest", "ambiguous_objects", "default_rules", "look_through", "known_leaks"):
        assert new.get(key) == ruled.get(key), key
    for key in ("format", "runtime", "source", "object_count", "reference_count", "total_size", "root_id"):
        assert new[key] == old[key]
    meta = json.loads(new["meta"])
    assert meta["reanalysed_from"] == str(old_sid) and meta["reanalysed_from_rules"] == "none"
    assert {k: v for k, v in json.loads(old["meta"]).items() if not k.startswith("reanalysed")} == {
        k: v for k, v in meta.items() if not k.startswith("reanalysed")
    }


def test_reanalyze_without_rules_is_the_plain_load(database: Database, loads: Loads) -> None:
    answer = reanalyze(loads.subject, "--rules", "none", "--writer", "cypher")
    assert answer["rules"] is None and answer["writer"] == "cypher"
    assert_same_analysis(database, answer["sid"], sid_of(database, loads.plain))
    node = snapshot_node(database, answer["sid"])
    assert not {"rules", "rules_digest", "default_rules"} & node.keys()


def test_reanalyze_writes_a_version_4_snapshot_again_at_the_current_version(
    database: Database, leak_snapshot: Path, loads: Loads
) -> None:
    """A snapshot stored at version 4 (no children lists, raw listings, the dominator index kept for
    it) is written again by `heapdb reanalyze` as a fresh load of the file stores it, and answers as
    that load does; the index goes once no version-4 snapshot is left."""
    tag = f"test-reanalyze-old-{uuid.uuid4().hex[:8]}"
    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, "--rules", "none")
    assert code == 0, err
    try:
        old_versions.store_as(database, tag, 4)
        store.ensure_schema(database)
        assert store.schema.DOMINATOR_INDEX in indexes(database)
        before = [invoke(*question, "--json") for question in old_questions(tag, loads.plain)]
        answer = reanalyze(tag, "--rules", "none")
        new_sid = answer["sid"]
        assert snapshot_node(database, new_sid)["store_version"] == store.STORE_VERSION
        assert_same_analysis(database, new_sid, sid_of(database, loads.plain))
        children = database.read(
            "MATCH (o:Object {sid: $a}) WHERE o.dominated_order IS NOT NULL WITH o "
            "MATCH (p:Object {sid: $b, id: o.id}) RETURN count(*) AS listed, "
            "sum(CASE WHEN o.dominated_order = p.dominated_order THEN 1 ELSE 0 END) AS same",
            {"a": new_sid, "b": sid_of(database, loads.plain)},
        )[0]
        assert children["listed"] == children["same"] > 100
        names = old_versions.stored_listings(database, tag)
        assert names and all(isinstance(row["stored"]["listing_names"], bytes) for row in names)  # packed again
        after = [invoke(*question, "--json") for question in old_questions(tag, loads.plain)]
        assert all(code == 0 for code, _, _ in before) and after == before
    finally:
        invoke("drop", tag)
    store.ensure_schema(database)  # the old load was replaced, the new one dropped: none of version 4
    assert store.schema.DOMINATOR_INDEX not in indexes(database)


def indexes(database: Database) -> set[str]:
    return {r["name"] for r in database.read("SHOW INDEXES YIELD name RETURN name")}


def old_questions(tag: str, other: str) -> list[tuple[str, ...]]:
    """Questions that read the children and the listings: the tree, suspects, a type's page, find,
    and a diff by object against ``other``."""
    return [
        ("suspects", tag, "--share", "0.01"),
        ("heapdomstats", tag),
        ("instances", tag, "--type", "LeakedItem", "--sort", "distance", "--limit", "50"),
        ("find", tag, "--type", "(string)", "--name-contains", "item-1", "--limit", "20"),
        ("diff", other, tag, "--by", "object"),
    ]


def test_reanalyze_refuses_an_unknown_tag(database: Database) -> None:
    code, _, err = invoke("reanalyze", f"test-reanalyze-missing-{uuid.uuid4().hex[:8]}")
    assert code == 1
    assert "no ready snapshot tagged" in err


def test_reanalyze_checks_the_rules_first(database: Database, loads: Loads, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("version = 1\n[[owns]]\nfrom = 3\n")
    before = sid_of(database, loads.plain)
    code, _, err = invoke("reanalyze", loads.plain, "--rules", str(bad))
    assert code != 0 and "bad.toml" in err
    assert sid_of(database, loads.plain) == before


def test_read_back_refuses_a_snapshot_still_writing_its_references(database: Database) -> None:
    tag = f"test-reanalyze-writing-{uuid.uuid4().hex[:8]}"
    # A load in progress (its loader is this live process, so housekeeping leaves it alone).
    database.write(
        "CREATE (:Snapshot {sid: -1 - toInteger(rand() * 1000000), tag: $tag, status: 'ready', references_ready: false, "
        "store_version: $version, references_written: 5, reference_count: 10, pid: $pid, host: $host})",
        {"tag": tag, "version": store.STORE_VERSION, "pid": os.getpid(), "host": socket.gethostname()},
    )
    try:
        with pytest.raises(ReferencesLoading, match="still writing its references"):
            read_back(database, tag)
    finally:
        database.write("MATCH (s:Snapshot {tag: $tag}) DELETE s", {"tag": tag})


def edge_multiset(graph: HeapGraph) -> Counter[tuple[int, int, int, str]]:
    numeric = {int(k) for k in NUMERIC_NAME_KINDS}
    sources = graph.ids[graph.edge_sources()].tolist()
    targets = graph.ids[graph.edge_to].tolist()
    names = [
        str(n) if k in numeric else shorten(graph.strings[n])
        for k, n in zip(graph.edge_kind.tolist(), graph.edge_name.tolist())
    ]
    return Counter(zip(sources, targets, graph.edge_kind.tolist(), names))


def test_read_back_gives_the_readers_graph(database: Database, loads: Loads, leak_snapshot: Path) -> None:
    original = formats.read_graph(leak_snapshot)
    stored = read_back(database, loads.plain)
    back = stored.graph
    assert stored.snapshot.sid == sid_of(database, loads.plain)
    assert back.node_count == original.node_count and back.edge_count == original.edge_count
    order = np.argsort(original.ids, kind="stable")
    assert np.array_equal(back.ids, original.ids[order])
    assert int(back.ids[back.root]) == int(original.ids[original.root])
    assert np.array_equal(back.self_size, original.self_size[order])
    for field in ("type", "name"):
        texts = [
            shorten(original.strings[i]) if field == "name" else original.strings[i]
            for i in getattr(original, field)[order]
        ]
        assert [back.strings[i] for i in getattr(back, field)] == texts, field
    assert [back.node_kinds[k] for k in back.kind] == [original.node_kinds[k] for k in original.kind[order]]

    def detached(g: HeapGraph, at: np.ndarray | None = None) -> np.ndarray:
        d = (
            np.zeros(g.node_count, dtype=np.bool_)
            if g.detachedness is None
            else g.detachedness == Detachedness.DETACHED
        )
        return d if at is None else d[at]

    assert np.array_equal(detached(back), detached(original, order))
    assert edge_multiset(back) == edge_multiset(original)
    assert back.meta["format"] == original.meta["format"]
    # The same stored snapshot reads back the same, edge order included.
    again = read_back(database, loads.plain).graph
    for field in ("edge_start", "edge_to", "edge_kind", "edge_name"):
        assert np.array_equal(getattr(again, field), getattr(back, field)), field
