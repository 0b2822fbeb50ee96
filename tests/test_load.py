"""`heapdb load` / `snapshots` / `drop` against the real Neo4j, with real V8 snapshots."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb import neo4j_server
from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import InspectionsLoading, LoadError, NotFound, ObjectsLoading, ReferencesLoading
from heapdb.loader import analysis, formats, store
from heapdb.loader.store.order import EARLY_SUSPECT_SHARE, write_order
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service.app import create_app
from heapdb.service.links import SNAPSHOT_PAGE, page_path
from tests.support.snapshots import LUAU_FIXTURES, Loaded


def unique_tag(label: str) -> str:
    return f"test-{label}-{uuid.uuid4().hex[:8]}"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def tag(database: Database):
    return unique_tag("load")


def snapshot_row(database: Database, tag: str) -> dict:
    return store.get_snapshot(database, tag).as_dict()


def test_load_stores_what_the_analysis_computed(database: Database, leak_snapshot: Path, tag: str) -> None:
    code, out, err = invoke("load", str(leak_snapshot), "--tag", tag, "--meta", "build=123", "--json")
    assert code == 0, err
    report = json.loads(out)

    graph = formats.read_graph(leak_snapshot)
    result = analysis.analyze(graph)
    snapshot = snapshot_row(database, tag)
    sid = snapshot["sid"]
    assert report["sid"] == sid
    assert snapshot["status"] == "ready" and snapshot["format"] == "v8"
    assert snapshot["object_count"] == graph.node_count and snapshot["reference_count"] == graph.edge_count
    assert snapshot["meta"]["build"] == "123"

    counts = database.read(
        "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL "
        "RETURN count(o) AS objects, sum(o.self_size) AS self_size, sum(CASE WHEN o.reachable THEN 1 ELSE 0 END) AS reachable",
        {"sid": sid},
    )[0]
    assert counts["objects"] == graph.node_count
    assert counts["self_size"] == int(graph.self_size.sum())
    assert counts["reachable"] == int(result.reachable.sum())

    rels = {
        r["type"]: r["n"]
        for r in database.read(
            "MATCH (o:Object {sid: $sid})-[r]->() WHERE o.id IS NOT NULL RETURN type(r) AS type, count(*) AS n",
            {"sid": sid},
        )
    }
    assert rels["REF"] == int(result.retaining.sum())
    assert rels.get("WEAK_REF", 0) == graph.edge_count - int(result.retaining.sum())
    assert set(rels) <= {"REF", "WEAK_REF"}  # the two trees are properties, not relationships

    # The root carries the label, and the biggest retainers carry the analysis' numbers.
    root = database.read("MATCH (r:Root {sid: $sid}) RETURN r.id AS id", {"sid": sid})
    assert [r["id"] for r in root] == [int(graph.ids[graph.root])]
    top = result.top_retainers(20)
    stored = {
        r["id"]: r
        for r in database.read(
            "UNWIND $ids AS id MATCH (o:Object {sid: $sid, id: id}) RETURN o.id AS id, o.retained_size AS retained, o.retained_count AS count, o.distance AS distance",
            {"sid": sid, "ids": graph.ids[top].tolist()},
        )
    }
    for index in top.tolist():
        row = stored[int(graph.ids[index])]
        assert row["retained"] == int(result.retained_size[index])
        assert row["count"] == int(result.retained_count[index])
        assert row["distance"] == int(result.distance[index])

    # Path groups: one per distinct first-path signature of the reachable objects (the root aside).
    data = store.LoadInput.from_analysis(graph, result)
    members = result.reachable & (graph.kind != graph.node_kinds.index("synthetic"))
    members[graph.root] = False
    signatures, group_counts = np.unique(data.paths.signature[members], return_counts=True)
    stored_groups = database.read(
        "MATCH (g:PathGroup {sid: $sid}) RETURN g.sig AS sig, g.objects AS objects, g.path AS path", {"sid": sid}
    )
    assert {g["sig"]: g["objects"] for g in stored_groups} == dict(zip(signatures.tolist(), group_counts.tolist()))
    # Type groups: count and self size per type, as numpy counts them.
    types, inverse = np.unique(graph.type[members], return_inverse=True)
    sizes = np.bincount(inverse, weights=graph.self_size[members]).astype(np.int64)
    stored_types = {
        r["type"]: (r["objects"], r["self_size"])
        for r in database.read(
            "MATCH (t:TypeGroup {sid: $sid}) RETURN t.type AS type, t.objects AS objects, t.self_size AS self_size",
            {"sid": sid},
        )
    }
    assert stored_types == {
        graph.strings[t]: (int(c), int(z))
        for t, c, z in zip(types.tolist(), np.bincount(inverse).tolist(), sizes.tolist())
    }
    leaked = database.read(
        "MATCH (o:Object {sid: $sid, type: 'LeakedItem'}) WITH o.path_sig AS sig, count(*) AS n ORDER BY n DESC LIMIT 1 "
        "MATCH (g:PathGroup {sid: $sid, sig: sig}) RETURN g.path AS path, g.objects AS objects, n",
        {"sid": sid},
    )[0]
    assert leaked["objects"] == leaked["n"] and leaked["path"].endswith("LeakedItem")

    # Every object names the analysis' immediate dominator, and the holder, kind and name of the
    # reference its first path arrives by; the root and the unreachable name neither.
    stored_trees = {
        r["id"]: r
        for r in database.read(
            "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL "
            "RETURN o.id AS id, o.dom AS dom, o.via AS via, o.via_kind AS via_kind, o.via_name AS via_name",
            {"sid": sid},
        )
    }
    assert len(stored_trees) == graph.node_count
    sources = graph.edge_sources()
    for i in range(graph.node_count):
        row = stored_trees[int(graph.ids[i])]
        assert row["dom"] == (int(graph.ids[result.idom[i]]) if result.idom[i] >= 0 else None)
        edge = int(data.paths.parent_edge[i])
        if edge < 0:
            assert row["via"] is None and row["via_kind"] is None and row["via_name"] is None
        else:
            assert row["via"] == int(graph.ids[sources[edge]])
            assert (row["via_kind"], row["via_name"]) == store.reference_label(
                graph, int(graph.edge_kind[edge]), int(graph.edge_name[edge])
            )


def stored_graph(database: Database, tag: str) -> tuple[list[dict], list[tuple]]:
    """Every object of a snapshot as its property map (sid aside), and every reference as (type,
    holder id, target id, kind, name), both sorted: what a load wrote, whatever wrote it."""
    sid = snapshot_row(database, tag)["sid"]
    objects = database.read(
        "MATCH (o:Object {sid: $sid}) RETURN o {.*, sid: null, labels: labels(o)} AS o ORDER BY o.id", {"sid": sid}
    )
    references = database.read(
        "MATCH (a:Object {sid: $sid})-[r]->(b) RETURN type(r) AS type, a.id AS a, b.id AS b, r.kind AS kind, "
        "r.name AS name, keys(r) AS keys ORDER BY a, b, type, kind, name",
        {"sid": sid},
    )
    # A relationship's keys come in the order of its property records, which depends on the property
    # keys' token ids, and so on what else the database stored first: compared sorted.
    return [row["o"] for row in objects], [
        tuple(map(str, {**row, "keys": sorted(row["keys"])}.values())) for row in references
    ]


def test_the_plugin_and_cypher_write_the_same_graph(database: Database, leak_snapshots: dict[str, Path]) -> None:
    """The managed Neo4j has heapdb's plugin (built at install), and loads use it. Where the plugin
    cannot serve (here: it speaks another protocol than this loader), a load asked for the plugin
    stops before claiming its tag, and one in the default mode says so in one line and writes through
    Cypher: exactly the same objects, properties and references. (The smallest of the leak
    snapshots: Cypher is the slow writer, and the graph's size changes nothing.)"""
    graph = formats.read_graph(leak_snapshots["baseline"])
    data = store.LoadInput.from_analysis(graph, analysis.analyze(graph))
    tags = {writer: unique_tag(writer) for writer in ("plugin", "cypher")}
    said: list[str] = []
    assert store.load(database, data, tags["plugin"], say=said.append).writer == "plugin"
    assert said == []  # no notice: the plugin was there
    protocol = store.bulk.PROTOCOL
    store.bulk.PROTOCOL = protocol + 1  # this loader now speaks a protocol the plugin does not
    try:
        with pytest.raises(LoadError, match=f"speaks protocol {protocol}, this heapdb {protocol + 1}"):
            store.load(database, data, tags["cypher"], writer="plugin")
        with pytest.raises(NotFound):
            store.get_snapshot(database, tags["cypher"])
        assert store.load(database, data, tags["cypher"], say=said.append).writer == "cypher"
    finally:
        store.bulk.PROTOCOL = protocol
    assert len(said) == 1 and "writing through Cypher" in said[0] and "heapdb neo4j install" in said[0]
    plugin_objects, plugin_references = stored_graph(database, tags["plugin"])
    cypher_objects, cypher_references = stored_graph(database, tags["cypher"])
    assert len(plugin_objects) == graph.node_count and len(plugin_references) == graph.edge_count
    assert plugin_objects == cypher_objects
    assert plugin_references == cypher_references
    # `heapdb neo4j plugin` hands out the jar the managed Neo4j runs, for a Neo4j of one's own.
    code, out, err = invoke("neo4j", "plugin")
    assert code == 0, err
    jar = Path(out.strip())
    assert jar.read_bytes() == (neo4j_server.paths().plugins / neo4j_server.PLUGIN_JAR).read_bytes()
    assert "org/heapdb/neo4j/BulkWrite.class" in zipfile.ZipFile(jar).namelist()
    # Properties that do not apply are absent, not stored as null or false.
    assert all(o.get("detached") in (None, True) for o in plugin_objects)
    assert sum("dom" not in o or o["dom"] is None for o in plugin_objects) == int((data.idom < 0).sum())


def test_questions_answer_before_the_objects_and_references_are_written(
    database: Database, leak_snapshot: Path, tag: str
) -> None:
    """The snapshot answers once the objects the first questions name and the groups are in; a
    question about an object not written yet, or one reading every object or following references,
    says it waits; once everything is in, the answers are the same."""
    graph = formats.read_graph(leak_snapshot)
    result = analysis.analyze(graph)
    data = store.LoadInput.from_analysis(graph, result)
    order = write_order(data, data.top_ranks())
    early = order.early_mask
    questions = Questions(database)
    top_index = int(np.flatnonzero(data.top_ranks()[0] == 1)[0])
    # The deepest object the load writes after the snapshot starts answering.
    later = int(np.argmax(np.where(result.reachable & ~early, result.distance, -1)))
    assert early[top_index] and not early[later]
    seen: dict[str, object] = {}

    def listings_written(sid: int) -> tuple[int, int]:
        """How many of the snapshot's types have a group, and how many of those a listing."""
        row = database.read(
            "MATCH (t:TypeGroup {sid: $sid}) RETURN count(t) AS groups, count(t.listing_ids) AS listings", {"sid": sid}
        )[0]
        return row["groups"], row["listings"]

    def mid_load(report: store.LoadReport) -> None:
        snapshot = store.get_snapshot(database, tag)
        seen["ready"] = (snapshot.status, snapshot.objects_ready, snapshot.references_ready, report.ready_seconds > 0)
        counts = database.read(
            "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL "
            "RETURN count(o) AS objects, sum(COUNT { (o)-[]->() }) AS references",
            {"sid": snapshot.sid},
        )[0]
        seen["written"] = (counts["objects"], counts["references"])
        seen["listings"] = listings_written(snapshot.sid)
        seen["why"] = questions.why_alive(tag, int(graph.ids[top_index])).paths[0].length
        seen["dominators"] = len(questions.dominators(tag, int(graph.ids[top_index])).chain)
        seen["top"] = questions.top(tag)
        seen["types"] = questions.types(tag)
        seen["suspects"] = questions.suspects(tag)
        for ask in (
            lambda: questions.why_alive(tag, int(graph.ids[later])),
            lambda: questions.dominators(tag, int(graph.ids[later])),
            lambda: questions.object(tag, int(graph.ids[top_index])),
            lambda: questions.retains(tag, int(graph.ids[top_index])),
            lambda: questions.find(tag, params.Find(type=graph.type_name(later))),
            lambda: questions.lifelines(tag, params.Lifelines(type=graph.type_name(later))),
            lambda: questions.suspects(tag, params.Suspects(share=EARLY_SUSPECT_SHARE / 2)),
        ):
            with pytest.raises(ObjectsLoading, match="still loading its objects"):
                ask()
        code, _, err = invoke("query", "retainers", "-p", f"tag={tag}", "-p", f"id={int(graph.ids[later])}")
        seen["cli"] = (code, "still loading its objects" in err, "Traceback" in err)
        client = TestClient(create_app())
        early_why = client.get(f"/api/snapshots/{tag}/objects/{int(graph.ids[top_index])}/why")
        later_why = client.get(f"/api/snapshots/{tag}/objects/{int(graph.ids[later])}/why")
        seen["rest"] = (early_why.status_code, later_why.status_code, "still loading its objects" in later_why.text)
        seen["page"] = "objects still being written" in client.get("/").text
        # The inspections come next, within seconds: asked before, each says so and the page answers.
        with pytest.raises(InspectionsLoading, match="still working out its inspections"):
            questions.strings(tag)
        strings_rest = client.get(f"/api/snapshots/{tag}/strings")
        page = client.get(f"/snapshots/{tag}")
        seen["inspections"] = (strings_rest.status_code, page.status_code, "still working out" in page.text)
        code, out, _ = invoke("snapshots")
        seen["listed"] = [line for line in out.splitlines() if line.startswith(tag)][0]

    store.load(database, data, tag, on_ready=mid_load)
    assert seen["ready"] == ("ready", False, False, True)
    # Only the early objects were in, and no reference: the answers came from them alone. The type
    # listings, which only questions that wait for every object read, were not written yet either.
    assert seen["written"] == (int(early.sum()), 0)
    type_groups = len(data.type_groups())
    assert type_groups > 0 and seen["listings"] == (type_groups, 0)
    assert seen["why"] == int(result.distance[top_index])
    chain = [top_index]
    while result.idom[chain[-1]] >= 0:
        chain.append(int(result.idom[chain[-1]]))
    assert seen["dominators"] == len(chain)
    assert seen["cli"] == (1, True, False)
    assert seen["rest"] == (200, 409, True)
    assert seen["page"]
    assert seen["inspections"] == (409, 200, True)
    computed = data.inspections.strings
    assert computed is not None and questions.strings(tag).duplicated == computed.duplicated > 0
    assert "ready, objects " in str(seen["listed"])

    after = store.get_snapshot(database, tag)
    assert after.objects_ready and after.references_ready and after.loaded_at and after.pid is None
    assert listings_written(after.sid) == (type_groups, type_groups)
    assert questions.find(tag, params.Find(type=graph.type_name(later)))
    assert questions.lifelines(tag, params.Lifelines(type=graph.type_name(later))).objects > 0
    assert after.objects_written == graph.node_count
    assert seen["top"] == questions.top(tag)
    assert seen["types"] == questions.types(tag)
    assert seen["suspects"] == questions.suspects(tag)
    assert questions.why_alive(tag, int(graph.ids[later])).paths[0].length == int(result.distance[later])
    assert questions.object(tag, int(graph.ids[later])).incoming_count > 0

    # While only the references are still being written, questions that follow them say so.
    database.write(
        "MATCH (s:Snapshot {sid: $sid}) SET s.references_ready = false, s.references_written = 5", {"sid": after.sid}
    )
    try:
        with pytest.raises(ReferencesLoading, match="still loading its references"):
            questions.object(tag, int(graph.ids[later]))
        assert len(questions.dominators(tag, int(graph.ids[later])).chain) > 1
    finally:
        database.write("MATCH (s:Snapshot {sid: $sid}) SET s.references_ready = true", {"sid": after.sid})


def test_existing_tag_needs_replace_and_replace_swaps_it(
    database: Database, leak_snapshots: dict[str, Path], tag: str
) -> None:
    assert invoke("load", str(leak_snapshots["baseline"]), "--tag", tag)[0] == 0
    first = snapshot_row(database, tag)

    code, _, err = invoke("load", str(leak_snapshots["final"]), "--tag", tag)
    assert code == 1
    assert "exists already" in err and "--replace" in err

    code, _, err = invoke("load", str(leak_snapshots["final"]), "--tag", tag, "--replace")
    assert code == 0, err
    second = snapshot_row(database, tag)
    assert second["sid"] != first["sid"]
    assert second["object_count"] == formats.read_graph(leak_snapshots["final"]).node_count
    # The old load is hidden at once, then freed entirely by the background purger.
    statuses = database.read("MATCH (s:Snapshot {sid: $sid}) RETURN s.status AS status", {"sid": first["sid"]})
    assert [r["status"] for r in statuses] in ([], ["dropping"])
    deadline = time.monotonic() + 180
    while database.read("MATCH (s:Snapshot {tag: $tag}) RETURN count(s) AS n", {"tag": tag})[0]["n"] > 1:
        assert time.monotonic() < deadline, "the replaced snapshot was never freed"
        time.sleep(0.5)
    left = database.read(
        "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL RETURN count(o) AS n", {"sid": first["sid"]}
    )
    assert left[0]["n"] == 0


def test_snapshots_lists_ready_loads(database: Database, leak_snapshots: dict[str, Path], tag: str) -> None:
    assert invoke("load", str(leak_snapshots["baseline"]), "--tag", tag)[0] == 0
    code, out, _ = invoke("snapshots", "--json")
    assert code == 0
    listed = {row["tag"]: row for row in json.loads(out)}
    assert listed[tag]["status"] == "ready"
    assert listed[tag]["object_count"] == formats.read_graph(leak_snapshots["baseline"]).node_count
    code, out, _ = invoke("snapshots")
    assert tag in out and "ready" in out
    assert listed[tag]["store_version"] == store.STORE_VERSION

    # The same snapshot as an older heapdb stored it: listed as outdated, refused with what to do.
    database.write("MATCH (s:Snapshot {tag: $tag}) REMOVE s.store_version", {"tag": tag})
    code, out, _ = invoke("snapshots")
    assert code == 0 and [line for line in out.splitlines() if line.startswith(tag)][0].split()[1] == "outdated"
    code, _, err = invoke("top", tag)
    assert code == 1 and "older heapdb" in err and f"--tag {tag} --replace" in err and "Traceback" not in err
    client = TestClient(create_app())
    response = client.get(f"/api/snapshots/{tag}/types")
    assert response.status_code == 409 and "load it again" in response.json()["error"]


def test_drop_removes_everything(database: Database, leak_snapshots: dict[str, Path]) -> None:
    tag = unique_tag("drop")
    assert invoke("load", str(leak_snapshots["baseline"]), "--tag", tag)[0] == 0
    sid = snapshot_row(database, tag)["sid"]
    code, out, _ = invoke("drop", tag, "--wait")  # without --wait the records are freed in the background
    assert code == 0 and "dropped" in out
    assert (
        database.read("MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL RETURN count(o) AS n", {"sid": sid})[0]["n"]
        == 0
    )
    assert database.read("MATCH (s:Snapshot {tag: $tag}) RETURN count(s) AS n", {"tag": tag})[0]["n"] == 0
    code, _, err = invoke("drop", tag)
    assert code == 1 and "no snapshot tagged" in err


def test_bad_input_touches_nothing(database: Database, leak_snapshot: Path, tmp_path: Path, tag: str) -> None:
    broken = tmp_path / "broken.heapsnapshot"
    broken.write_bytes(leak_snapshot.read_bytes()[: leak_snapshot.stat().st_size // 2])
    result = subprocess.run(
        [sys.executable, "-m", "heapdb", "load", str(broken), "--tag", tag], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1
    assert str(broken) in result.stderr and "Traceback" not in result.stderr
    assert database.read("MATCH (s:Snapshot {tag: $tag}) RETURN count(s) AS n", {"tag": tag})[0]["n"] == 0


def test_kill_9_mid_load_leaves_nothing_visible_and_the_next_load_cleans_up(
    database: Database, leak_snapshot: Path, tag: str
) -> None:
    # Small batches make the load long enough to be caught in the middle.
    process = subprocess.Popen(
        [sys.executable, "-m", "heapdb", "load", str(leak_snapshot), "--tag", tag, "--batch-size", "200"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "HEAPDB_PROGRESS": "0"},
    )
    sid = None
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and process.poll() is None:
            rows = database.read("MATCH (s:Snapshot {tag: $tag, status: 'loading'}) RETURN s.sid AS sid", {"tag": tag})
            if rows:
                written = database.read(
                    "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL RETURN count(o) AS n", {"sid": rows[0]["sid"]}
                )
                if written[0]["n"] > 0:
                    sid = rows[0]["sid"]
                    break
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert process.stderr is not None  # opened with stderr=PIPE
    assert sid is not None, f"the load was never caught in the middle: {process.stderr.read().decode()[-500:]}"

    # Half-written, and invisible: no query that starts from a ready snapshot finds it.
    with pytest.raises(NotFound):
        store.get_snapshot(database, tag)
    assert tag not in {row.tag for row in store.list_snapshots(database)}
    assert tag in {row.tag for row in store.list_snapshots(database, include_incomplete=True)}

    code, _, err = invoke("load", str(leak_snapshot), "--tag", tag)
    assert code == 0, err
    assert "leftovers" in err or "hid" in err
    # The leftovers are freed in the background.
    deadline = time.monotonic() + 180
    while database.read("MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL RETURN count(o) AS n", {"sid": sid})[0][
        "n"
    ]:
        assert time.monotonic() < deadline, "the leftovers were never freed"
        time.sleep(0.5)
    assert snapshot_row(database, tag)["object_count"] == formats.read_graph(leak_snapshot).node_count


def test_an_empty_dump_loads_and_answers_that_it_holds_nothing(database: Database, tag: str, tmp_path: Path) -> None:
    """A Luau dump of no object at all is a heap, if an empty one: it loads (its load crashed while
    grouping its paths, and stayed listed as failed) and every question answers it."""
    dump = tmp_path / "empty.json"
    dump.write_text('{"objects":{},"roots":{}}')
    code, _, err = invoke("load", str(dump), "--tag", tag)
    assert code == 0, err
    assert snapshot_row(database, tag)["status"] == "ready"
    for question in ("top", "types", "suspects", "strings"):
        code, out, err = invoke(question, tag, "--json")
        assert code == 0 and "Traceback" not in err, (question, err)
    code, out, _ = invoke("top", tag, "--json")
    assert json.loads(out) == []
    page = TestClient(create_app(token="")).get(page_path(SNAPSHOT_PAGE, tag=tag))
    assert page.status_code == 200 and tag in page.text


def test_load_real_luau_dump(database: Database, tag: str) -> None:
    dump = LUAU_FIXTURES / "luau-3-final.json"
    if not dump.exists():
        pytest.skip(f"the real Luau dumps are not beside the repository ({LUAU_FIXTURES})")
    code, _, err = invoke("load", str(dump), "--tag", tag)
    assert code == 0, err
    graph = formats.read_graph(dump)
    result = analysis.analyze(graph)
    sid = snapshot_row(database, tag)["sid"]
    weak = database.read(
        "MATCH (o:Object {sid: $sid})-[r:WEAK_REF]->() WHERE o.id IS NOT NULL RETURN count(r) AS n, collect(DISTINCT r.kind) AS kinds",
        {"sid": sid},
    )[0]
    assert weak["n"] == graph.edge_count - int(result.retaining.sum()) > 0
    # Weak-table entries, plus self-references (a table holding itself), which retain nothing.
    assert "weak" in weak["kinds"] and set(weak["kinds"]) <= {"weak", "reference"}
    assert (
        database.read(
            "MATCH (a:Object {sid: $sid})-[r:WEAK_REF]->(b) WHERE a.id IS NOT NULL AND r.kind <> 'weak' AND a <> b RETURN count(r) AS n",
            {"sid": sid},
        )[0]["n"]
        == 0
    )
    # Objects the dump's two listed roots do not reach are alive through "(other roots)", and stored so.
    other = database.read(
        "MATCH (:Root {sid: $sid})-[:REF]->(o:Object {name: '(other roots)'})-[:REF]->(held) RETURN count(held) AS n",
        {"sid": sid},
    )[0]["n"]
    assert other > 0
    assert database.read(
        "MATCH (o:Object {sid: $sid}) WHERE o.id IS NOT NULL AND NOT o.reachable RETURN count(o) AS n", {"sid": sid}
    )[0]["n"] == graph.node_count - int(result.reachable.sum())


@pytest.mark.slow  # two real Node snapshots written and loaded
def test_path_groups_compare_two_builds(database: Database, leak_series_loaded: dict[str, Loaded]) -> None:
    before, after = leak_series_loaded["baseline"].tag, leak_series_loaded["final"].tag
    # The query of docs/data-model.md, as written there.
    doc = (Path(__file__).resolve().parents[1] / "docs" / "data-model.md").read_text()
    cypher = doc.split("Comparing two builds by path is then a join on `sig`:")[1].split("```cypher")[1].split("```")[0]
    rows = database.read(cypher, {"before": before, "after": after})
    growth = {row["g.path"]: row["growth"] for row in rows}
    # leak.js grows its cache of LeakedItem and its listeners' LeakedBuffer by the same units each step.
    leaked = {path: g for path, g in growth.items() if path.endswith("→ LeakedItem") or path.endswith("→ LeakedBuffer")}
    assert leaked, f"no leaked class among the top path groups: {list(growth)[:10]}"
    assert all(g > 0 for g in leaked.values())
    assert max(growth.values()) == max(leaked.values()) or max(leaked.values()) >= 100
