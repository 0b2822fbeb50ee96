"""``heapdb analyze`` under the runtime's default rules, as ``heapdb load`` applies them, on a real V8
snapshot: the defaults apply unless ``--rules none`` (which is the plain analysis, exactly), a rule
file goes before them, ``--disable-group`` switches default groups off, and the report says which
rules applied. The top retainers look through the engine's objects as a load's top ranks do."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import analysis, formats, store
from heapdb.loader.graph import HeapGraph
from heapdb.loader.report import analysis_report
from heapdb.loader.rules import compile_rules, load_rules
from heapdb.loader.rules.defaults import default_rules

TOP = 40
V8_GROUPS = ["v8-internals", "v8-closures", "v8-transient-roots", "node-known-leaks", "chrome-known-leaks"]
KNOWN_LEAK_GROUPS = ["node-known-leaks", "chrome-known-leaks"]  # a catalogue: on, matching nothing here


def analyze_output(snapshot: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["analyze", str(snapshot), "--top", str(TOP), *args])
    assert result.exit_code == 0, result.output
    return result.output


def analyze_json(snapshot: Path, *args: str) -> dict:
    return json.loads(analyze_output(snapshot, "--json", *args))


@pytest.fixture(scope="module")
def graph(leak_snapshot: Path) -> HeapGraph:
    return formats.read_graph(leak_snapshot)


@pytest.fixture(scope="module")
def plain(graph: HeapGraph) -> analysis.Analysis:
    return analysis.analyze(graph)


def through_of(graph: HeapGraph, result: analysis.Analysis, disable: tuple[str, ...] = ()) -> np.ndarray:
    """What the top retainers look through under the v8 defaults with ``disable`` switched off."""
    compiled = compile_rules(default_rules("v8").with_groups(disable=disable), graph)
    assert compiled.internal is not None
    return analysis.look_through(result, compiled.internal).through


def test_rules_none_is_the_plain_analysis(leak_snapshot: Path, graph: HeapGraph, plain: analysis.Analysis) -> None:
    expected = analysis_report(str(leak_snapshot), graph, plain, TOP).as_dict()
    assert analyze_json(leak_snapshot, "--rules", "none") == json.loads(json.dumps(expected))
    assert "Rules:" not in analyze_output(leak_snapshot, "--rules", "none")


def test_the_defaults_apply_without_rules(leak_snapshot: Path, graph: HeapGraph, plain: analysis.Analysis) -> None:
    report = analyze_json(leak_snapshot)
    rules = report["rules"]
    assert rules["rules_file"] is None and rules["default_rules"] == "v8"
    assert rules["default_groups"] == V8_GROUPS and rules["disabled_groups"] == []
    assert rules["rules"] == len(default_rules("v8").rules)
    assert rules["unmatched_rule_lines"] == []
    # The transient group selects exactly heapdb's built-in transient root groups.
    assert rules["transient_objects"] == int(np.count_nonzero(graph.transient_root_groups())) > 0

    # The defaults change no size: every figure is the plain analysis'.
    index = {int(i): k for k, i in enumerate(graph.ids)}
    assert report["root"]["retained_size"] == int(plain.retained_size[plain.root])
    for row in report["top_retainers"]:
        k = index[row["id"]]
        assert row["retained_size"] == int(plain.retained_size[k])
        assert row["distance"] == int(plain.distance[k])

    # The top list looks through the engine's objects, as a load's top ranks do.
    through = through_of(graph, plain)
    assert rules["looked_through_objects"] == int(np.count_nonzero(through))
    listed = [row["id"] for row in report["top_retainers"]]
    assert not any(through[index[i]] for i in listed)
    plain_listed = [row["id"] for row in analyze_json(leak_snapshot, "--rules", "none")["top_retainers"]]
    assert any(through[index[i]] for i in plain_listed), "the plain list names an object the defaults look through"
    compiled = compile_rules(default_rules("v8"), graph)
    assert compiled.internal is not None
    data = store.LoadInput.from_analysis(graph, plain, look_through=analysis.look_through(plain, compiled.internal))
    rank = data.top_ranks()[0]
    by_rank = {int(rank[v]): int(graph.ids[v]) for v in np.flatnonzero(rank)}
    assert listed == [by_rank[r] for r in range(1, len(listed) + 1)]

    text = analyze_output(leak_snapshot)
    assert f"Rules: the v8 default rules [{', '.join(V8_GROUPS)}]" in text
    assert "looked through" in text and "not applied yet" not in text


def test_disable_group_switches_a_default_group_off(
    leak_snapshot: Path, graph: HeapGraph, plain: analysis.Analysis
) -> None:
    report = analyze_json(leak_snapshot, "--disable-group", "v8-closures")
    rules = report["rules"]
    assert rules["disabled_groups"] == ["v8-closures"]
    assert rules["default_groups"] == ["v8-internals", "v8-transient-roots", *KNOWN_LEAK_GROUPS]
    through = through_of(graph, plain, ("v8-closures",))
    assert rules["looked_through_objects"] == int(np.count_nonzero(through))
    assert rules["looked_through_objects"] != analyze_json(leak_snapshot)["rules"]["looked_through_objects"]
    closures = [row for row in report["top_retainers"] if row["type"] == "(closure)"]
    assert closures, "with the closures group off, closures are listed as themselves"
    assert not any(row["type"] == "(closure)" for row in analyze_json(leak_snapshot)["top_retainers"])

    everything = analyze_json(leak_snapshot, "--disable-group", "*")["rules"]
    assert everything["default_groups"] == [] and everything["rules"] == 0
    assert everything["looked_through_objects"] == 0 and everything["transient_objects"] == 0
    assert "every group off" in analyze_output(leak_snapshot, "--disable-group", "*")


def test_a_rule_file_goes_before_the_defaults(leak_snapshot: Path, graph: HeapGraph, tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text(
        'version = 1\n\n[[bucket]]\nname = "app"\nobject.type = ["LeakyCache", "LeakedItem"]\n\n'
        '[[known_leak]]\nreason = "the cache"\nobject = "LeakyCache"\n',
        encoding="utf-8",
    )
    report = analyze_json(leak_snapshot, "--rules", str(path), "--disable-group", "v8-transient-roots")
    rules = report["rules"]
    assert rules["rules_file"] == str(path.resolve())
    assert rules["default_rules"] == "v8"
    assert rules["default_groups"] == ["v8-internals", "v8-closures", *KNOWN_LEAK_GROUPS]
    team = load_rules(path)
    assert rules["rules"] == len(team.rules) + len(default_rules("v8").rules) - 1
    assert [b["name"] for b in rules["buckets"]] == ["app"]
    assert rules["known_leak_rules"] == 1 + len(default_rules("v8").known_leaks)
    assert [k["reason"] for k in rules["known_leaks"]] == ["the cache"]  # the defaults' match nothing here
    text = analyze_output(leak_snapshot, "--rules", str(path))
    assert f"Rules: {path.resolve()}, then the v8 default rules [{', '.join(V8_GROUPS)}]" in text
    assert f"applied at load: {rules['known_leak_rules']} known_leak and 0 verdict rules" in text


def test_a_missing_rule_file_or_stored_name_without_a_database(
    leak_snapshot: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(main, ["analyze", str(leak_snapshot), "--rules", str(tmp_path / "nope.toml")])
    assert result.exit_code != 0 and "no such rule file" in result.output
    # A stored rule set's name needs the database; an unreachable one says what analyze takes.
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    monkeypatch.setenv("NEO4J_PASSWORD", "unused")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(leak_snapshot), "--rules", "team-rules"])
    assert result.exit_code != 0
    assert "a stored rule set's name needs the database" in result.output
    assert "analyze takes a rule file, a stored rule set's name, or none" in result.output
