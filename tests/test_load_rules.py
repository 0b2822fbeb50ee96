"""`heapdb load --rules`: a load analysed under rules, against the real Neo4j and a real leak.js snapshot.

Three loads of one snapshot are shared by the module: the plain one (the session's), one under ownership rules and
one under an ignore rule. Each stores what the in-process analysis with the same weights computes,
object for object; the references keep the relationship types of the plain load.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader import analysis, formats, store
from heapdb.loader.analysis import retaining_edges
from heapdb.loader.graph import HeapGraph
from heapdb.loader.rules import compile_rules, parse_rules
from heapdb.loader.rules.defaults import with_defaults
from heapdb.loader.store import rulesets
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service.app import create_app
from heapdb.service.pages import object_page
from tests.support.snapshots import LUAU_FIXTURES
from tests.support.snapshots import Loaded as SessionLoad

# The closure's context owns the payload it captures, so the item's own reference yields to it and
# each payload array moves from under its LeakedItem to under the context.
OWNS_RULES = """\
version = 1

[[owns]]
from = "system / Context"
edge.name = "payload"
weight = 5

[[owns]]
from = "LeakyCache"
path = ["entries", { name = "table", kind = "internal" }, {}]
weight = 10

[[bucket]]
name = "app"
object.type = ["LeakyCache", "LeakedItem", "LeakedBuffer"]

[[bucket]]
name = "engine"
object.type = { glob = "system / *" }
"""

# The item's own reference to its payload neither retains nor shows on paths: the payload is alive
# through the closure's context alone.
IGNORE_RULES = """\
version = 1

[[ignore]]
from = "LeakedItem"
edge.name = "payload"
"""

# Two owners of one weight for every payload array: each one is of ambiguous ownership.
AMBIGUOUS_RULES = """\
version = 1

[[owns]]
from = "system / Context"
edge.name = "payload"

[[owns]]
from = "LeakedItem"
edge.name = "payload"
"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def unique_tag(label: str) -> str:
    return f"test-rules-{label}-{uuid.uuid4().hex[:8]}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Loaded:
    tag: str
    sid: int
    expected: store.LoadInput  # what the in-process analysis with the same weights gives
    result: analysis.Analysis
    bucket_names: tuple[str, ...] = ()
    bucket: np.ndarray | None = None


@dataclass(frozen=True)
class Loads:
    graph: HeapGraph
    plain: Loaded
    owns: Loaded
    ignore: Loaded
    rule_files: dict[str, Path]
    tags: list[str]


def _expected(
    graph: HeapGraph, rules_text: str | None, *, defaults: bool = True
) -> tuple[store.LoadInput, analysis.Analysis, Any]:
    if rules_text is not None and not defaults:
        compiled = compile_rules(parse_rules(rules_text), graph)
        result = analysis.analyze(graph, edge_weight=compiled.edge_weight)
        return store.LoadInput.from_analysis(graph, result), result, compiled
    if rules_text is None:
        result = analysis.analyze(graph)
        return store.LoadInput.from_analysis(graph, result), result, None
    # A load applies the runtime's default rules after the file's: they add the objects top lists
    # look through, which moves the ranks.
    rules, _runtime = with_defaults(parse_rules(rules_text), graph)
    assert rules is not None
    compiled = compile_rules(rules, graph)
    result = analysis.analyze(graph, edge_weight=compiled.edge_weight)
    assert compiled.internal is not None
    look = analysis.look_through(result, compiled.internal)
    return store.LoadInput.from_analysis(graph, result, look_through=look), result, compiled


def _load(database: Database, snapshot: Path, graph: HeapGraph, label: str, *options: str) -> tuple[str, int]:
    tag = unique_tag(label)
    code, out, err = invoke("load", str(snapshot), "--tag", tag, "--json", *options)
    assert code == 0, err
    return tag, int(json.loads(out)["sid"])


@pytest.fixture(scope="module")
def loads(
    database: Database, leak_snapshot: Path, leak_loaded: SessionLoad, tmp_path_factory: pytest.TempPathFactory
) -> Loads:
    """The plain load is the session's (``leak_loaded``: no rules, read only); the two under rules are
    this module's, through `heapdb load --rules`."""
    folder = tmp_path_factory.mktemp("rules")
    files = {"owns": folder / "owns.toml", "ignore": folder / "ignore.toml"}
    files["owns"].write_text(OWNS_RULES)
    files["ignore"].write_text(IGNORE_RULES)
    graph = formats.read_graph(leak_snapshot)
    tags: list[str] = []
    made = {}
    for label, text, options in (
        ("plain", None, ()),
        ("owns", OWNS_RULES, ("--rules", str(files["owns"]))),
        ("ignore", IGNORE_RULES, ("--rules", str(files["ignore"]))),
    ):
        if options:
            tag, sid = _load(database, leak_snapshot, graph, label, *options)
        else:
            tag, sid = leak_loaded.tag, store.get_snapshot(database, leak_loaded.tag).sid
        tags.append(tag)
        expected, result, compiled = _expected(graph, text)
        made[label] = Loaded(
            tag,
            sid,
            expected,
            result,
            compiled.bucket_names if compiled is not None else (),
            compiled.bucket if compiled is not None else None,
        )
    return Loads(graph, made["plain"], made["owns"], made["ignore"], files, tags)


def stored_objects(database: Database, sid: int, graph: HeapGraph) -> dict[str, np.ndarray]:
    """Every object's stored analysis properties, as arrays in the graph's node order (NULL: -1, or None)."""
    rows = database.read(
        "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL RETURN o.id AS id, o.dom AS dom, "
        "o.retained_size AS retained_size, o.retained_count AS retained_count, o.distance AS distance, "
        "o.reachable AS reachable, o.via AS via, o.path_sig AS path_sig, o.rank AS rank, o.bucket AS bucket",
        {"sid": sid},
    )
    assert len(rows) == graph.node_count
    order = np.argsort(graph.ids, kind="stable")
    at = order[np.searchsorted(graph.ids[order], np.array([r["id"] for r in rows], dtype=np.int64))]
    out: dict[str, np.ndarray] = {}
    for key in ("dom", "retained_size", "retained_count", "distance", "via", "path_sig", "rank"):
        column = np.full(graph.node_count, -1, dtype=np.int64)
        column[at] = [-1 if r[key] is None else r[key] for r in rows]
        out[key] = column
    reachable = np.zeros(graph.node_count, dtype=np.bool_)
    reachable[at] = [bool(r["reachable"]) for r in rows]
    out["reachable"] = reachable
    bucket = np.full(graph.node_count, None, dtype=object)
    bucket[at] = [r["bucket"] for r in rows]
    out["bucket"] = bucket
    return out


def assert_stores_the_analysis(database: Database, graph: HeapGraph, loaded: Loaded) -> dict[str, np.ndarray]:
    stored = stored_objects(database, loaded.sid, graph)
    expected, result = loaded.expected, loaded.result
    tree = expected.tree_ids
    no_object = store.summaries.NO_OBJECT
    assert np.array_equal(stored["dom"], np.where(tree.dom == no_object, -1, tree.dom))
    assert np.array_equal(stored["via"], np.where(tree.via == no_object, -1, tree.via))
    assert np.array_equal(stored["retained_size"], result.retained_size)
    assert np.array_equal(stored["retained_count"], result.retained_count)
    assert np.array_equal(stored["distance"], np.where(result.distance < 0, -1, result.distance))
    assert np.array_equal(stored["reachable"], result.reachable)
    signature = expected.paths.signature.astype(np.int64)
    assert np.array_equal(stored["path_sig"], np.where(signature == 0, -1, signature))
    rank = expected.top_ranks()[0]
    assert np.array_equal(stored["rank"], np.where(rank == 0, -1, rank))
    return stored


def test_owns_rules_give_the_stored_dominators_and_sizes(database: Database, loads: Loads) -> None:
    g = loads.graph
    stored = assert_stores_the_analysis(database, g, loads.owns)
    plain = loads.plain.result
    moved = np.flatnonzero(loads.owns.result.idom != plain.idom)
    assert len(moved) >= 600  # the payload arrays: each one now under its closure's context
    payload = [i for i in moved.tolist() if g.type_name(i) == "Array"]
    assert len(payload) >= 600
    context = loads.owns.result.idom[payload[0]]
    assert g.type_name(int(context)) == "system / Context"
    assert stored["dom"][payload[0]] == g.ids[context]
    # Buckets: the name where a bucket rule selects the object, no property elsewhere.
    names, bucket = loads.owns.bucket_names, loads.owns.bucket
    assert bucket is not None and names == ("app", "engine")
    assert stored["bucket"].tolist() == [names[b] if b >= 0 else None for b in bucket.tolist()]
    assert sum(1 for b in stored["bucket"].tolist() if b == "app") == int(np.count_nonzero(bucket == 0)) > 0
    plain_buckets = database.read(
        "MATCH (o:Object {sid: $sid}) WHERE o.bucket IS NOT NULL RETURN count(o) AS n", {"sid": loads.plain.sid}
    )
    assert plain_buckets[0]["n"] == 0


def test_ignore_rules_give_the_stored_dominators_and_sizes(database: Database, loads: Loads) -> None:
    stored = assert_stores_the_analysis(database, loads.graph, loads.ignore)
    moved = np.flatnonzero(loads.ignore.result.idom != loads.plain.result.idom)
    assert len(moved) >= 600
    assert not np.array_equal(stored["via"], stored_objects(database, loads.plain.sid, loads.graph)["via"])


def test_plain_load_is_unchanged(database: Database, loads: Loads) -> None:
    assert_stores_the_analysis(database, loads.graph, loads.plain)


def test_why_follows_the_rules(database: Database, loads: Loads) -> None:
    """A payload array's retainer path: through its item without rules, through the closure's
    context under the ignore rule (the item's `payload` reference is not on any path)."""
    g = loads.graph
    questions = Questions(database)
    moved = np.flatnonzero(loads.ignore.result.idom != loads.plain.result.idom)
    samples = [int(i) for i in moved[:: max(1, len(moved) // 5)]][:5]
    for node in samples:
        object_id = int(g.ids[node])
        plain = questions.why_alive(loads.plain.tag, object_id).paths[0]
        ruled = questions.why_alive(loads.ignore.tag, object_id).paths[0]
        assert plain.objects[-2].type == "LeakedItem" and plain.references[-1].name == "payload"
        assert ruled.objects[-2].type == "system / Context"
        assert not any(
            holder.type == "LeakedItem" and ref.name == "payload"
            for holder, ref in zip(ruled.objects[:-1], ruled.references, strict=True)
        )
        # Object for object, the first path of the in-process analysis under the same weights.
        assert [o.id for o in ruled.objects] == first_path(g, loads.ignore.expected, node)
        assert ruled.length == int(loads.ignore.result.distance[node])
        owned = questions.why_alive(loads.owns.tag, object_id).paths[0]
        assert owned.objects[-2].type == "system / Context"


def _pairs(graph: HeapGraph, edges: np.ndarray) -> set[tuple[int, int]]:
    sources = graph.edge_sources()
    return set(zip(graph.ids[sources[edges]].tolist(), graph.ids[graph.edge_to[edges]].tolist()))


def _bfs_length(graph: HeapGraph, root: int, target: int, allowed: np.ndarray) -> int:
    """Breadth-first distance from ``root`` to ``target`` over the ``allowed`` edges (-1: none)."""
    distance = np.full(graph.node_count, -1, dtype=np.int64)
    distance[root] = 0
    frontier = np.array([root])
    while frontier.size and distance[target] < 0:
        edges = np.concatenate([np.arange(graph.edge_start[v], graph.edge_start[v + 1]) for v in frontier.tolist()])
        edges = edges[allowed[edges]]
        reached = np.unique(graph.edge_to[edges])
        reached = reached[distance[reached] < 0]
        distance[reached] = distance[frontier[0]] + 1
        frontier = reached
    return int(distance[target])


def test_questions_that_walk_references_follow_the_rules(database: Database, loads: Loads) -> None:
    """The references the rules keep from retaining are stored on the root (by object pair), marked
    on an object's references, and never on a path of why --k or why --ignore-*: each such path is
    as long as a breadth-first search over the references that retain under the rules says."""
    g = loads.graph
    questions = Questions(database)
    client = TestClient(create_app(token=""))
    for loaded in (loads.ignore, loads.owns):
        kept = loaded.result.retaining
        dropped_edges = np.flatnonzero(retaining_edges(g, loaded.result.semantics) & ~kept)
        dropped = _pairs(g, dropped_edges) - _pairs(g, np.flatnonzero(kept))
        assert len(dropped) >= 600
        row = database.read(
            "MATCH (s:Snapshot {tag: $tag}) MATCH (r:Object {sid: s.sid, id: s.root_id}) "
            "RETURN r.dropped_holders AS holders, r.dropped_targets AS targets",
            {"tag": loaded.tag},
        )[0]
        stored = store.DroppedReferences.from_properties(row["holders"], row["targets"])
        assert set(zip(stored.holders.tolist(), stored.targets.tolist())) == dropped
        # A payload array: held by its item (dropped under both rule files) and its closure's context.
        targets = sorted({t for _, t in dropped})
        for object_id in targets[:: max(1, len(targets) // 4)][:4]:
            answer = questions.object(loaded.tag, object_id)
            marks = [(n.object.id, n.reference.dropped) for n in answer.incoming]
            assert marks == [(h, (h, object_id) in dropped) for h, _ in marks]
            assert any(flag for _, flag in marks) and not all(flag for _, flag in marks)
            code, out, err = invoke("object", loaded.tag, str(object_id))
            assert code == 0, err
            assert out.count("(not retaining under the rules)") == sum(flag for _, flag in marks)
            page = client.get(object_page(loaded.tag, object_id))
            assert page.status_code == 200 and page.text.count("not retaining (rules)") == sum(f for _, f in marks)
            assert not any(n.reference.dropped for n in questions.object(loads.plain.tag, object_id).incoming)
            node = int(np.flatnonzero(g.ids == object_id)[0])
            why = questions.why_alive(loaded.tag, object_id, params.Why(k=3))
            assert why.paths
            for path in why.paths:
                hops = list(zip([o.id for o in path.objects], [o.id for o in path.objects[1:]]))
                assert not set(hops) & dropped, hops
            # Without the first path's last holder: the shortest path over what retains under the rules.
            holder = why.paths[0].objects[-2]
            fenced = questions.why_alive(loaded.tag, object_id, params.Why(ignore_id=[holder.id]))
            allowed = kept & (g.ids[g.edge_sources()] != holder.id)
            expected = _bfs_length(g, loaded.result.root, node, allowed)
            assert [p.length for p in fenced.paths] == ([] if expected < 0 else [expected])
    row = database.read(
        "MATCH (s:Snapshot {tag: $tag}) MATCH (r:Object {sid: s.sid, id: s.root_id}) RETURN r.dropped_holders AS h",
        {"tag": loads.plain.tag},
    )[0]
    assert row["h"] is None


def first_path(graph: HeapGraph, data: store.LoadInput, node: int) -> list[int]:
    """The ids along ``node``'s first retainer path, from the root, as ``via`` links them."""
    via = data.tree_ids.via
    index = {int(i): k for k, i in enumerate(graph.ids.tolist())}
    path = [int(graph.ids[node])]
    while via[index[path[-1]]] != store.summaries.NO_OBJECT:
        path.append(int(via[index[path[-1]]]))
    return path[::-1]


def _references(database: Database, sid: int) -> dict[str, int]:
    rows = database.read(
        "MATCH (o:Object {sid: $sid})-[r]->() WHERE o.id IS NOT NULL RETURN type(r) AS type, count(*) AS n",
        {"sid": sid},
    )
    return {r["type"]: r["n"] for r in rows}


def _sample_references(database: Database, sid: int, ids: list[int]) -> list[tuple[Any, ...]]:
    rows = database.read(
        "UNWIND $ids AS id MATCH (o:Object {sid: $sid, id: id})-[r]->(t) "
        "RETURN o.id AS from, type(r) AS type, r.kind AS kind, r.name AS name, t.id AS to",
        {"sid": sid, "ids": ids},
    )
    return sorted((r["from"], r["type"], r["kind"], r["name"], r["to"]) for r in rows)


def test_rules_keep_the_reference_types(database: Database, loads: Loads) -> None:
    g = loads.graph
    raw = retaining_edges(g)
    counts = _references(database, loads.plain.sid)
    assert counts == {"REF": int(np.count_nonzero(raw)), "WEAK_REF": int(g.edge_count - np.count_nonzero(raw))}
    # Under rules the analysis keeps fewer references, but the stored types do not change.
    for loaded in (loads.owns, loads.ignore):
        assert np.count_nonzero(loaded.result.retaining) < np.count_nonzero(raw)
        assert _references(database, loaded.sid) == counts
    # A sample: the holders of the references the rules changed, and objects of every kind.
    changed = np.flatnonzero(loads.owns.result.retaining != raw)
    holders = np.searchsorted(g.edge_start, changed, side="right") - 1
    rng = np.random.default_rng(12)
    picked = np.unique(np.r_[holders, rng.choice(g.node_count, 500, replace=False)])
    ids = [int(i) for i in g.ids[picked]]
    plain = _sample_references(database, loads.plain.sid, ids)
    assert len(plain) > 1000 and {row[1] for row in plain} == {"REF", "WEAK_REF"}
    assert _sample_references(database, loads.owns.sid, ids) == plain
    assert _sample_references(database, loads.ignore.sid, ids) == plain


def test_snapshot_records_the_rules(database: Database, loads: Loads) -> None:
    owns = store.get_snapshot(database, loads.owns.tag)
    assert owns.rules == str(loads.rule_files["owns"].resolve())
    assert owns.rules_digest == digest(OWNS_RULES)
    assert owns.ambiguous_objects == 0 and owns.rules_version is None
    plain = store.get_snapshot(database, loads.plain.tag).as_dict()
    assert not {"rules", "rules_digest", "rules_version", "ambiguous_objects"} & plain.keys()

    code, out, _ = invoke("snapshots", "--json")
    assert code == 0
    listed = {s["tag"]: s for s in json.loads(out)}
    assert listed[loads.ignore.tag]["rules"] == str(loads.rule_files["ignore"].resolve())
    assert listed[loads.ignore.tag]["rules_digest"] == digest(IGNORE_RULES)
    assert listed[loads.ignore.tag]["ambiguous_objects"] == 0
    assert "rules" not in listed[loads.plain.tag]

    response = TestClient(create_app()).get(f"/api/snapshots/{loads.owns.tag}")
    assert response.status_code == 200
    body = response.json()
    assert body["rules"] == owns.rules and body["rules_digest"] == owns.rules_digest


def _all_objects(database: Database, sid: int) -> list[dict[str, Any]]:
    rows = database.read("MATCH (o:Object {sid: $sid}) RETURN properties(o) AS p ORDER BY o.id", {"sid": sid})
    return [{k: v for k, v in r["p"].items() if k != "sid"} for r in rows]


def _groups(database: Database, sid: int) -> list[dict[str, Any]]:
    rows = database.read(
        "MATCH (g {sid: $sid}) WHERE g:PathGroup OR g:TypeGroup "
        "RETURN labels(g) AS labels, properties(g) AS p ORDER BY labels(g)[0], g.sig, g.type",
        {"sid": sid},
    )
    return [{"labels": r["labels"], **r["p"]} for r in rows]


def test_default_rules_store_the_plain_figures(database: Database, loads: Loads, leak_snapshot: Path) -> None:
    """No --rules: the default rules, which change no stored figure, only add their views."""
    tag, sid = _load(database, leak_snapshot, loads.graph, "defaults")
    views = ("through", "holder", "rank", "type_rank")
    defaults, plain = _all_objects(database, sid), _all_objects(database, loads.plain.sid)
    assert [{k: v for k, v in o.items() if k not in views} for o in defaults] == [
        {k: v for k, v in o.items() if k not in views} for o in plain
    ]
    assert any(o.get("through") for o in defaults) and not any(o.get("through") for o in plain)
    assert _references(database, sid) == _references(database, loads.plain.sid)
    assert _groups(database, sid) == [{**g, "sid": sid} for g in _groups(database, loads.plain.sid)]
    snapshot = store.get_snapshot(database, tag)
    assert snapshot.default_rules == "v8" and snapshot.rules is None and snapshot.look_through
    none = store.get_snapshot(database, loads.plain.tag).as_dict()
    assert not {"rules", "rules_digest", "ambiguous_objects", "default_rules", "look_through"} & none.keys()


def _no_snapshot(database: Database, tag: str) -> bool:
    rows = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN count(s) AS n", {"tag": tag})
    return rows[0]["n"] == 0


def test_a_bad_rule_file_fails_before_anything_is_written(
    database: Database, leak_snapshot: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\n\n[[owns]]\nfrom = "LeakyCache"\nweight = 300\n')
    tag = unique_tag("bad")
    code, out, err = invoke("load", str(leak_snapshot), "--tag", tag, "--rules", str(bad))
    assert code == 1 and "Traceback" not in err
    assert f"{bad}:5: owns: weight must be an integer from 1 to 127" in err
    assert "read " not in err  # stopped before reading the snapshot
    assert _no_snapshot(database, tag)

    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, "--rules", str(tmp_path / "missing.toml"))
    assert code == 1 and "missing.toml: no such rule file" in err and _no_snapshot(database, tag)

    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, "--rules", "no-such-rule-set")
    assert code == 1 and "not a rule file, and no rule set named 'no-such-rule-set'" in err
    assert _no_snapshot(database, tag)

    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, "--rules", str(bad.with_name("x.toml")))
    assert code == 1 and _no_snapshot(database, tag)

    bad.write_text("version = 1\n[groups.g]\n[[weak]]\ngroup = 'g'\nto = 'X'\n")
    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, "--rules", str(bad), "--disable-group", "h")
    assert code == 1 and "no rule group named 'h'" in err and _no_snapshot(database, tag)

    # Without --rules a group can only be one of the default rules'.
    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, "--disable-group", "g")
    assert code == 1 and "no rule group named 'g'" in err and "v8-internals" in err and _no_snapshot(database, tag)
    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag, "--rules", "none", "--disable-group", "g")
    assert code == 2 and "--disable-group has no rules to switch off" in err and _no_snapshot(database, tag)


def test_a_stored_rule_set(database: Database, loads: Loads, leak_snapshot: Path) -> None:
    """`--rules NAME` loads under a rule set stored with `heapdb rules add`; here one whose owners
    tie, so the snapshot counts the objects of ambiguous ownership."""
    name = f"test-ambiguous-{uuid.uuid4().hex[:8]}"
    rulesets.add_rule_set(database, name, AMBIGUOUS_RULES)
    try:
        tag = unique_tag("stored")
        code, out, err = invoke(
            "load", str(leak_snapshot), "--tag", tag, "--json", "--rules", name, "--disable-group", "*"
        )
        assert code == 0, err
        g = loads.graph
        # '*' switches off every group, the default rules' too: no objects are looked through.
        expected, result, _ = _expected(g, AMBIGUOUS_RULES, defaults=False)
        assert len(result.ambiguous) >= 600
        assert f"warning: {len(result.ambiguous):,} objects of ambiguous ownership" in err
        assert json.loads(out)["rules"]["ambiguous_objects"] == len(result.ambiguous)
        snapshot = store.get_snapshot(database, tag)
        assert (snapshot.rules, snapshot.rules_version) == (name, 1)
        assert snapshot.rules_digest == digest(AMBIGUOUS_RULES)
        assert snapshot.ambiguous_objects == len(result.ambiguous)
        assert snapshot.rules_disabled_groups == ("*",)
        assert_stores_the_analysis(database, g, Loaded(tag, snapshot.sid, expected, result))
    finally:
        rulesets.remove_rule_set(database, name)


def test_retaining_edges_is_the_plain_analysis_mask(leak_snapshot: Path) -> None:
    """What a load under rules stores as :REF is what the plain analysis calls retaining (V8 and generic)."""
    for path in (leak_snapshot, LUAU_FIXTURES / "luau-3-final.json"):
        graph = formats.read_graph(path)
        assert np.array_equal(retaining_edges(graph), analysis.analyze(graph).retaining)
        compiled = compile_rules(parse_rules(IGNORE_RULES), graph)
        ruled = analysis.analyze(graph, edge_weight=compiled.edge_weight)
        assert np.array_equal(retaining_edges(graph, ruled.semantics), analysis.analyze(graph).retaining)
