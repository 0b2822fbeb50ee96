"""Leak answers under rules, against the real Neo4j and real Node snapshots.

- The default rules name the program's type: a Session leaked through closures in a cache ranks
  first, where the engine-level answer (`--rules none`) ranks V8's backing store, closures and
  contexts above it; top retainers lose the contexts and backing stores too.
- known_leak rules move a leak out of the new leaks, with its reason and link; verdict notes show on
  the clusters and objects they are about.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader.store import get_snapshot
from heapdb.queries import catalog, params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Leaks
from tests.support.v8 import write_closure_cache_snapshots

LABELS = ("baseline", "target", "final")
LEAKED = 300

KNOWN_RULES = """\
version = 1

[[known_leak]]
reason = "the cache never evicts (ticket 42)"
link = "https://example.invalid/issues/42"
from = "LeakyCache"
edge.name = "entries"

[[verdict]]
note = "expected: one buffer per listener"
object = "LeakedBuffer"
"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def load_one(snapshots: dict[str, Path], label: str, name: str, *options: str) -> str:
    tag = f"test-leaks-rules-{label}-{name}-{uuid.uuid4().hex[:6]}"
    code, _out, err = invoke("load", str(snapshots[name]), "--tag", tag, *options)
    assert code == 0, err
    return tag


def load_three(snapshots: dict[str, Path], label: str, *options: str) -> list[str]:
    return [load_one(snapshots, label, name, *options) for name in LABELS]


@dataclass(frozen=True)
class Sessions:
    defaults: list[str]
    none: list[str]


@pytest.fixture(scope="module")
def sessions(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sessions]:
    snapshots = write_closure_cache_snapshots(tmp_path_factory.mktemp("closure-cache"), 50, LEAKED)
    loaded = Sessions(load_three(snapshots, "defaults"), load_three(snapshots, "none", "--rules", "none"))
    yield loaded


def leaks(database: Database, tags: list[str]) -> list[dict[str, Any]]:
    answer = ask_leaks(database, tags, 10)
    return [{"type": c.type, "objects": c.objects, "retained": c.retained_size} for c in answer.clusters]


def ask_leaks(database: Database, tags: list[str], limit: int) -> Leaks:
    baseline, target, final = tags
    return Questions(database).leaks(baseline, target, final, params.Leaks(limit=limit))


def test_default_rules_name_the_leaked_class_first(database: Database, sessions: Sessions) -> None:
    with_defaults = leaks(database, sessions.defaults)
    assert with_defaults[0]["type"] == "Session"
    assert with_defaults[0]["objects"] == LEAKED
    # The closures and contexts that hold the Sessions are looked through: no cluster of them is
    # left (closures that hold nothing of the program's still show, as what there is to see).
    assert all(c["objects"] < LEAKED for c in with_defaults if c["type"] in ("system / Context", "(closure)"))
    snapshot = get_snapshot(database, sessions.defaults[2])
    assert snapshot.default_rules == "v8" and snapshot.look_through and snapshot.rules is None


def test_no_rules_keep_the_engine_level_answer(database: Database, sessions: Sessions) -> None:
    engine = leaks(database, sessions.none)
    types = [str(c["type"]) for c in engine]
    # The same Sessions are there, below what V8 holds them with: the closures and their contexts.
    assert "Session" in types and types[0] != "Session"
    assert {"system / Context", "(closure)"} <= set(types[: types.index("Session")] + types)
    session = next(c for c in engine if c["type"] == "Session")
    assert session["objects"] == LEAKED
    snapshot = get_snapshot(database, sessions.none[2])
    assert snapshot.default_rules is None and not snapshot.look_through


def test_sizes_are_the_same_with_and_without_default_rules(database: Database, sessions: Sessions) -> None:
    query = (
        "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) "
        "RETURN o.id AS id, o.dom AS dom, o.retained_size AS retained, o.distance AS distance ORDER BY id"
    )
    assert database.read(query, {"tag": sessions.defaults[2]}) == database.read(query, {"tag": sessions.none[2]})


def test_top_looks_through_contexts_and_backing_stores(database: Database, sessions: Sessions) -> None:
    def top(tag: str) -> list[str]:
        return [o.type for o in Questions(database).top(tag, params.Top(limit=30))]

    assert "system / Context" in top(sessions.none[2])
    assert "system / Context" not in top(sessions.defaults[2])
    # What the contexts held is still ranked, in the same order among itself.
    kept = [t for t in top(sessions.none[2]) if t not in ("system / Context", "(array)", "(closure)")]
    assert [t for t in top(sessions.defaults[2]) if t in kept][:5] == kept[:5]


SAMPLES = (
    "MATCH (s:Snapshot {tag: $tag}) UNWIND range(0, size($ids) - 1) AS i MATCH (o:Object {sid: s.sid, id: $ids[i]}) "
    "RETURN o.id AS id, o.path_sig AS sig, o.type AS type, o.retained_size AS retained ORDER BY i"
)


def same_clusters_as_the_stored_query(database: Database, tags: list[str]) -> int:
    """Leaks by id as the Python API answers them (matched in process from the id listings) and as
    the stored query ``leaks`` answers them alone: the same clusters, in the same order. Returns how
    many clusters were compared."""
    answer = ask_leaks(database, tags, 1000)
    named = dict(zip(("baseline", "target", "final"), tags))
    compared = 0
    for known, clusters in ((False, answer.clusters), (True, answer.known)):
        rows = catalog.run(database, "leaks", {**named, "limit": 1000, "known": known})
        assert [
            (c.signature, c.path, c.objects, c.self_size, c.retained_size, c.known_leak and c.known_leak.reason)
            for c in clusters
        ] == [(r["sig"], r["path"], r["objects"], r["self_size"], r["retained_size"], r["known_leak"]) for r in rows]
        for c in clusters:  # samples: members of the cluster, largest first
            found = database.read(SAMPLES, {"tag": tags[2], "ids": c.sample_ids})
            assert [o["id"] for o in found] == c.sample_ids and len(c.sample_ids) == min(5, c.objects)
            assert {o["sig"] for o in found} == {c.signature} and found[0]["type"] == c.type
            sizes = [o["retained"] for o in found]
            assert sizes == sorted(sizes, reverse=True)
        compared += len(clusters)
    return compared


def test_matching_in_process_gives_the_stored_querys_clusters(database: Database, sessions: Sessions) -> None:
    assert same_clusters_as_the_stored_query(database, sessions.defaults) > 10  # holders looked through
    assert same_clusters_as_the_stored_query(database, sessions.none) > 10


def test_known_leaks_are_answered_apart(database: Database, leak_snapshots: dict[str, Path], tmp_path: Path) -> None:
    rules = tmp_path / "known.toml"
    rules.write_text(KNOWN_RULES)
    tags = load_three(leak_snapshots, "known", "--rules", str(rules))
    # The final snapshot loaded again without the known-leak rule (the runtime's defaults only): a
    # leak is what the final holds of objects new since the baseline, so with the same baseline and
    # target, the clusters are the plain ones.
    plain = [*tags[:2], load_one(leak_snapshots, "plain", "final")]
    answer = ask_leaks(database, tags, 20)
    known_types = {c.type for c in answer.known}
    assert "LeakedItem" in known_types
    assert "LeakedItem" not in {c.type for c in answer.clusters}
    item = next(c for c in answer.known if c.type == "LeakedItem")
    assert item.known_leak is not None
    assert item.known_leak.reason == "the cache never evicts (ticket 42)"
    assert item.known_leak.link == "https://example.invalid/issues/42"
    # The same objects the plain load calls new leaks.
    before = next(c for c in ask_leaks(database, plain, 20).clusters if c.type == "LeakedItem")
    assert (item.objects, item.retained_size) == (before.objects, before.retained_size)
    assert same_clusters_as_the_stored_query(database, tags) > len(answer.known) > 0
    buffers = next(c for c in answer.clusters if c.type == "LeakedBuffer")
    assert buffers.verdict == "expected: one buffer per listener"

    code, out, err = invoke("leaks", *tags, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert any(c["known_leak"]["reason"].startswith("the cache never evicts") for c in data["known"])
    code, out, err = invoke("leaks", *tags)
    assert code == 0, err
    assert "known leaks" in out and "known: the cache never evicts (ticket 42)" in out
    assert "verdict: expected: one buffer per listener" in out

    sample = buffers.sample_ids[0]
    code, out, err = invoke("object", tags[2], str(sample))
    assert code == 0, err
    assert "verdict: expected: one buffer per listener" in out
    code, out, err = invoke("object", tags[2], str(item.sample_ids[0]))
    assert code == 0, err
    assert "part of a known leak: the cache never evicts (ticket 42)" in out
