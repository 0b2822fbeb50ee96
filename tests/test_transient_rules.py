"""The ``transient`` rule kind: objects first retainer paths (and distances) go through last.

On small synthetic graphs: a team's rule defers its own root group, so the first path takes the
program's way when there is one, and keeps the group's when there is none; V8's built-in transient
root groups stay deferred with no rules at all (``--rules none``) and with their default group off.
Then the parser's errors, the shipped group against the built-in set on a real snapshot, `analyze`
under a team's transient rule, and a load and a reanalysis under the same rules storing the same
distances.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.cli.steps import RulesChoice, analyse_for_store
from heapdb.db import Database
from heapdb.errors import RuleError
from heapdb.loader import analysis, formats, store
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.paths import describe_path, first_paths
from heapdb.loader.rules import TransientRule, compile_rules, parse_rules
from heapdb.loader.rules.defaults import default_rules
from tests.test_paths import make_graph

STRINGS = ["", "(root)", "(GC roots)", "(Stack roots)", "(Team scope)", "(Handle scope)", "Context", "trail", "Array"]
S = {name: i for i, name in enumerate(STRINGS)}
ARRAY = 6  # the node both ways reach

TEAM_RULES = 'version = 1\n\n[[transient]]\nobject = { kind = "synthetic", name = "(Team scope)" }\n'


def two_ways(group: str, *, program_way: bool = True) -> HeapGraph:
    """(root) → (GC roots) → ``group`` → Array (the short way, first in the file's order), and
    (GC roots) → (Stack roots) → Context → trail → Array (the program's way, one hop longer)."""
    edges = [
        (0, 1, EdgeKind.ELEMENT, 1),  # (root) → (GC roots)
        (1, 2, EdgeKind.ELEMENT, 1),  # (GC roots) → group
        (1, 3, EdgeKind.ELEMENT, 2),  # (GC roots) → (Stack roots)
        (2, ARRAY, EdgeKind.ELEMENT, 1),  # group → Array
        (3, 4, EdgeKind.ELEMENT, 1),  # (Stack roots) → Context
    ]
    if program_way:
        edges.append((4, ARRAY, EdgeKind.CONTEXT, S["trail"]))  # Context.trail → Array
    graph = make_graph(edges, [0, 0, 0, 0, S["Context"], S["Context"], S["Array"]], STRINGS)
    graph.kind = np.array([1, 1, 1, 1, 0, 0, 0], dtype=np.uint8)
    graph.name = np.array([S["(root)"], S["(GC roots)"], S[group], S["(Stack roots)"], 0, 0, 0], dtype=np.int32)
    graph.node_kinds = ["object", "synthetic"]
    graph.validate()
    return graph


PROGRAM_WAY = "(root) / (GC roots) / [] → Context / trail → Array"


def path_under(graph: HeapGraph, text: str | None) -> tuple[str, int]:
    """The Array's first path and distance, analysed under the rules ``text`` (None: no rules)."""
    transient = None if text is None else compile_rules(parse_rules(text), graph).transient
    result = analysis.analyze(graph, transient=transient)
    paths = first_paths(graph, result.retaining, result.transient)
    # What a load stores takes the same paths.
    stored = store.LoadInput.from_analysis(graph, result).paths
    assert stored.parent_edge.tolist() == paths.parent_edge.tolist()
    assert int(result.distance[ARRAY]) == len(path_edges(graph, paths.parent_edge, ARRAY))
    return describe_path(graph, paths, ARRAY), int(result.distance[ARRAY])


def path_edges(graph: HeapGraph, parent_edge: np.ndarray, node: int) -> list[int]:
    """The references of ``node``'s first path, nearest first."""
    sources = graph.edge_sources()
    edges = []
    while parent_edge[node] >= 0:
        edges.append(int(parent_edge[node]))
        node = int(sources[parent_edge[node]])
    return edges


def test_a_team_rule_defers_its_own_root_group() -> None:
    graph = two_ways("(Team scope)")
    assert path_under(graph, None) == ("(root) / (GC roots) / [] → Array", 3)
    assert path_under(graph, TEAM_RULES) == (PROGRAM_WAY, 4)
    # A rule that selects nothing here leaves the paths alone.
    other = TEAM_RULES.replace("(Team scope)", "(Elsewhere)")
    assert path_under(graph, other) == ("(root) / (GC roots) / [] → Array", 3)


def test_what_only_a_transient_object_holds_keeps_its_path() -> None:
    graph = two_ways("(Team scope)", program_way=False)
    assert path_under(graph, TEAM_RULES) == ("(root) / (GC roots) / [] → Array", 3)


def test_an_ordinary_object_can_be_transient() -> None:
    # Not only root groups: here the team defers every Context, so the Array's way through the
    # (Stack roots) context gives way to the group (no rule defers it).
    graph = two_ways("(Team scope)")
    rules = 'version = 1\n[[transient]]\nobject = "Context"\n'
    assert path_under(graph, rules) == ("(root) / (GC roots) / [] → Array", 3)
    transient = compile_rules(parse_rules(rules), graph).transient
    assert transient is not None and np.flatnonzero(transient).tolist() == [4, 5]


def test_the_built_in_groups_stay_deferred_without_rules_and_with_their_group_off() -> None:
    graph = two_ways("(Handle scope)")
    assert path_under(graph, None) == (PROGRAM_WAY, 4)  # --rules none: today's answer
    v8 = default_rules("v8")
    for rule_set in (v8, v8.with_groups(disable=["v8-transient-roots"]), v8.with_groups(disable=["*"])):
        compiled = compile_rules(rule_set, graph)
        result = analysis.analyze(graph, transient=compiled.transient)
        paths = first_paths(graph, result.retaining, result.transient)
        assert describe_path(graph, paths, ARRAY) == PROGRAM_WAY
    assert compile_rules(v8, graph).transient is not None
    assert compile_rules(v8.with_groups(disable=["v8-transient-roots"]), graph).transient is None


def test_analyse_for_store_follows_the_rules_transient_objects() -> None:
    # What `heapdb load` and `heapdb reanalyze` both run: the stored paths and distances defer the group.
    graph = two_ways("(Team scope)")
    say: list[str] = []
    plain, _ = analyse_for_store(graph, None, say.append)
    ruled, properties = analyse_for_store(graph, RulesChoice(parse_rules(TEAM_RULES, "team.toml")), say.append)
    assert describe_path(graph, plain.paths, ARRAY) == "(root) / (GC roots) / [] → Array"
    assert describe_path(graph, ruled.paths, ARRAY) == PROGRAM_WAY
    assert (int(plain.distance[ARRAY]), int(ruled.distance[ARRAY])) == (3, 4)
    assert properties is not None and say == []


def test_analyze_checks_the_mask() -> None:
    graph = two_ways("(Team scope)")
    with pytest.raises(ValueError, match="transient must be bool"):
        analysis.analyze(graph, transient=np.zeros(3, dtype=np.bool_))


def test_transient_rules_parse_with_their_lines() -> None:
    rules = parse_rules('version = 1\n\n[[transient]]\ngroup = "team"\nobject.name = "(Team scope)"\n')
    (rule,) = rules.rules
    assert isinstance(rule, TransientRule) and rule.line == 3 and rule.group == "team"
    assert rules.group_names == ("team",)
    with pytest.raises(RuleError, match=r"^t\.toml:3: transient: missing `object`"):
        parse_rules('version = 1\n\n[[transient]]\ngroup = "team"\n', "t.toml")
    with pytest.raises(RuleError, match=r"^t\.toml:4: transient: unknown key 'to' \(expected object, group\)"):
        parse_rules('version = 1\n[[transient]]\nobject = "A"\nto = "B"\n', "t.toml")
    with pytest.raises(RuleError, match=r"^t\.toml:3: transient: object\.name: bad regex"):
        parse_rules("version = 1\n[[transient]]\nobject.name = { regex = '(' }\n", "t.toml")
    with pytest.raises(RuleError, match=r"^t\.toml:3: transient: object: unknown key 'size'"):
        parse_rules("version = 1\n[[transient]]\nobject = { size = 3 }\n", "t.toml")


def test_the_shipped_group_is_the_built_in_set(leak_snapshot: Path) -> None:
    graph = formats.read_graph(leak_snapshot)
    compiled = compile_rules(default_rules("v8").with_groups(disable=["v8-internals", "v8-closures"]), graph)
    assert compiled.transient is not None
    assert compiled.transient.tolist() == graph.transient_root_groups().tolist()
    assert compiled.transient.any()


STACK_RULES = 'version = 1\n\n[[transient]]\nobject = { kind = "synthetic", name = "(Stack roots)" }\n'


def test_analyze_under_a_team_transient_rule(leak_snapshot: Path, tmp_path: Path) -> None:
    path = tmp_path / "stack.toml"
    path.write_text(STACK_RULES, encoding="utf-8")
    graph = formats.read_graph(leak_snapshot)
    transient = compile_rules(parse_rules(STACK_RULES), graph).transient
    assert transient is not None and transient.any()
    expected = analysis.analyze(graph, transient=transient).distance
    plain = analysis.analyze(graph).distance
    assert np.count_nonzero(expected != plain) > 0

    result = CliRunner().invoke(main, ["analyze", str(leak_snapshot), "--json", "--top", "200", "--rules", str(path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    builtin = int(np.count_nonzero(graph.transient_root_groups()))
    assert report["rules"]["transient_objects"] == builtin + int(
        np.count_nonzero(transient & ~graph.transient_root_groups())
    )
    index = {int(i): k for k, i in enumerate(graph.ids)}
    rows = report["top_retainers"]
    assert [r["distance"] for r in rows] == [int(expected[index[r["id"]]]) for r in rows]
    assert any(int(plain[index[r["id"]]]) != r["distance"] for r in rows)


def test_load_and_reanalyze_under_a_transient_rule_agree(
    database: Database, leak_snapshot: Path, tmp_path: Path
) -> None:
    path = tmp_path / "stack.toml"
    path.write_text(STACK_RULES, encoding="utf-8")
    run = uuid.uuid4().hex[:8]
    subject, ruled = f"test-transient-subject-{run}", f"test-transient-ruled-{run}"

    def invoke(*args: str) -> str:
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == 0, result.output
        return result.stdout

    invoke("load", str(leak_snapshot), "--tag", subject, "--rules", "none")
    invoke("load", str(leak_snapshot), "--tag", ruled, "--rules", str(path))
    plain = distances(database, subject)
    invoke("reanalyze", subject, "--rules", str(path))
    again, fresh = distances(database, subject), distances(database, ruled)
    assert again == fresh
    assert sum(plain[i] != fresh[i] for i in fresh) > 0, "the rule moves some objects' distances"


def distances(database: Database, tag: str) -> dict[int, int]:
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag, status: 'ready'}) MATCH (o:Object {sid: s.sid}) "
        "RETURN o.id AS id, o.distance AS distance",
        {"tag": tag},
    )
    return {int(r["id"]): r["distance"] for r in rows}
