"""``heapdb rebuild``: a fresh store of several snapshots through neo4j-admin's offline import.

It stops and restarts Neo4j and replaces its database, so it runs on a managed Neo4j of its own (its
own XDG directories and free ports), never the session's. Real V8 snapshots of tests/js/leak.js are
first loaded with `heapdb load`; a rebuild of the same files must then answer every question the
same, object property by property, keep the stored rule set, and a rebuild whose import fails must
leave the old store in place, answering.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from heapdb import config, db, neo4j_server
from heapdb.cli import main
from heapdb.cli.steps import analyse_for_store, read_with_progress
from heapdb.errors import RebuildError
from heapdb.loader.store import admin_import, rebuild, rulesets
from tests.support.neo4j_fixtures import TEST_GC
from tests.support.tiers import needs

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

HEAPDB = [sys.executable, "-m", "heapdb"]
TAGS = ("base", "grown")
RULES = """version = 1

# Closure contexts yield to any other holder.
[[weak]]
to.type = "system / Context"
"""


def run_heapdb(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process, with this module's environment (its private Neo4j)."""
    env = {**os.environ, "HEAPDB_PROGRESS": "0"}
    return subprocess.run([*HEAPDB, *args], env=env, capture_output=True, text=True, timeout=timeout)


def answer(*args: str) -> Any:
    """A question's answer through the CLI in this process (a process each cost a second or two of
    the machine's two cores, twenty times over): the module's environment points it at the private Neo4j."""
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
@needs("neo4j")
def private_neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[config.ManagedSettings]:
    """A managed Neo4j of this module's own; the session's XDG directories come back afterwards."""
    home = tmp_path_factory.mktemp("rebuild-home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_DATA_HOME", str(home / "data"))
        env.setenv("XDG_CONFIG_HOME", str(home / "config"))
        for variable in ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
            env.delenv(variable, raising=False)
        # 2 GB of heap, not 512 MB: the two loads and the rebuild's checks ran a sixth slower in the
        # smaller heap, for its collections.
        with neo4j_server.running_on_free_ports(heap="2g", pagecache="256m", gc=TEST_GC) as settings:
            yield settings


@pytest.fixture(scope="module")
def files(leak_snapshots: dict[str, Path]) -> list[str]:
    return [str(leak_snapshots["baseline"]), str(leak_snapshots["final"])]


@pytest.fixture(scope="module")
def loaded(private_neo4j: config.ManagedSettings, files: list[str]) -> dict[str, Any]:
    """The files loaded with `heapdb load`, and a rule set stored: everything the rebuild must match."""
    for path, tag in zip(files, TAGS):
        result = run_heapdb("load", path, "--tag", tag)
        assert result.returncode == 0, result.stderr
    with db.connect(start_managed=False) as database:
        rulesets.add_rule_set(database, "team", RULES, author="tests")
    return everything()


def everything() -> dict[str, Any]:
    """Every answer compared before and after: the questions through the CLI, and the stored records."""
    answers: dict[str, Any] = {"rules": answer("rules", "list")}
    for tag in TAGS:
        top = answer("top", tag, "--limit", "30")
        answers[f"top {tag}"] = top
        answers[f"types {tag}"] = answer("types", tag, "--limit", "200")
        first = _first_object_id(top)
        answers[f"why {tag} {first}"] = answer("why", tag, str(first))
    for by in ("type", "path"):
        answers[f"diff by {by}"] = answer("diff", *TAGS, "--by", by, "--limit", "100")
    with db.connect(start_managed=False) as database:
        answers["records"] = {tag: stored_records(database, tag) for tag in TAGS}
    return answers


def _first_object_id(top: Any) -> int:
    rows = top["rows"] if isinstance(top, dict) else top
    return int(rows[0]["id"])


def stored_records(database: db.Database, tag: str) -> dict[str, Any]:
    """A sample of the snapshot's objects with all their properties and labels, a sample of its
    references, its groups and its node's description of it; sids left out (a rebuild numbers anew)."""
    sid = database.read("MATCH (s:Snapshot {tag: $tag, status: 'ready'}) RETURN s.sid AS sid", {"tag": tag})[0]["sid"]
    objects = database.read(
        "MATCH (o:Object {sid: $sid}) WITH o ORDER BY o.id "
        "WHERE o.id % 7 = 0 OR o.rank IS NOT NULL OR o:Root "
        "RETURN o {.*, sid: null, labels: labels(o)} AS o",
        {"sid": sid},
    )
    for row in objects:  # Neo4j lists a node's labels in no set order
        row["o"]["labels"] = sorted(row["o"]["labels"])
    references = database.read(
        "MATCH (a:Object {sid: $sid})-[r]->(b) WHERE a.id % 11 = 0 "
        "RETURN a.id AS a, b.id AS b, type(r) AS type, properties(r) AS props ORDER BY a, b, type, props.name",
        {"sid": sid},
    )
    counts = database.read(
        "MATCH (o:Object {sid: $sid}) RETURN count(o) AS objects, sum(COUNT { (o)-->() }) AS references", {"sid": sid}
    )
    groups = database.read(
        "MATCH (g {sid: $sid}) WHERE g:TypeGroup OR g:PathGroup "
        "RETURN labels(g) AS labels, g {.*, sid: null} AS g ORDER BY labels, g.type, g.sig",
        {"sid": sid},
    )
    snapshot = database.read(
        "MATCH (s:Snapshot {sid: $sid}) RETURN s {.store_version, .format, .runtime, .source, .object_count, "
        ".reference_count, .total_size, .reachable_size, .unreachable_count, .root_id, .meta, .status, "
        ".references_ready, .rules, .rules_digest} AS s",
        {"sid": sid},
    )
    assert len(objects) > 100 and len(references) > 100 and groups
    return {"objects": objects, "references": references, "counts": counts, "groups": groups, "snapshot": snapshot}


def test_a_rebuild_answers_as_the_loads_did_and_keeps_the_rule_sets(loaded: dict[str, Any], files: list[str]) -> None:
    result = run_heapdb("rebuild", *files, "--tags", ",".join(TAGS), "--yes", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [s["tag"] for s in report["snapshots"]] == list(TAGS)
    assert report["carried"] == 1  # the rule set
    assert not rebuild.aside_dir().exists()  # verified, so the old store is gone

    after = everything()
    for key, before in loaded.items():
        if key == "records":
            for tag in TAGS:
                for part, rows in before[tag].items():
                    assert after[key][tag][part] == rows, (tag, part)
        else:
            assert after[key] == before, key
    with db.connect(start_managed=False) as database:
        assert database.read("MATCH (s:Snapshot) RETURN count(s) AS n")[0]["n"] == len(TAGS)


def test_a_failed_import_puts_the_old_store_back(loaded: dict[str, Any], files: list[str]) -> None:
    with db.connect(start_managed=False) as database:
        before = database.read("MATCH (s:Snapshot) RETURN s.tag AS tag, s.sid AS sid ORDER BY tag")

    def corrupt(staged: admin_import.ImportFiles) -> None:
        with open(staged.nodes[0], "a", encoding="utf-8") as f:
            f.write('not-a-number,"Object",1\n')  # neo4j-admin refuses this row's id

    def analyse(path: str) -> Any:
        return analyse_for_store(read_with_progress(path)[1], None, lambda _m: None)

    with pytest.raises(RebuildError, match="failed at its import step, and the old store is back in place"):
        rebuild.rebuild(files, analyse, lambda path, _g: "x-" + Path(path).stem, after_staging=corrupt)
    assert not rebuild.aside_dir().exists()
    with db.connect(start_managed=False) as database:
        assert database.read("MATCH (s:Snapshot) RETURN s.tag AS tag, s.sid AS sid ORDER BY tag") == before
    assert answer("rules", "list") == loaded["rules"]
    assert answer("top", TAGS[0], "--limit", "30") == loaded[f"top {TAGS[0]}"]
    # The Neo4j started again heeds SIGTERM: `heapdb neo4j stop` must not have to kill it.
    assert not ignored_signals(neo4j_server.running_pid()) & {signal.SIGTERM, signal.SIGINT}


def ignored_signals(pid: int | None) -> set[int]:
    """The signals a running process ignores, from its /proc status."""
    assert pid is not None
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("SigIgn:"))
    mask = int(line.split()[1], 16)
    return {number for number in range(1, 65) if mask >> (number - 1) & 1}


def test_repeated_tags_and_another_neo4j_are_refused_before_anything_runs(files: list[str]) -> None:
    same = run_heapdb("rebuild", *files, "--tags", "a,a", "--yes")
    assert same.returncode != 0 and "same tag: 'a'" in same.stderr and "Traceback" not in same.stderr
    elsewhere = subprocess.run(
        [*HEAPDB, "rebuild", *files, "--yes"],
        env={**os.environ, "NEO4J_URI": "bolt://neo4j.example:7687", "NEO4J_PASSWORD": "x", "HEAPDB_PROGRESS": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert elsewhere.returncode != 0 and "bolt://neo4j.example:7687" in elsewhere.stderr
    assert "heapdb load" in elsewhere.stderr and "Traceback" not in elsewhere.stderr
