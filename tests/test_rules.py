"""Rule files: parsing, every error with its line, compilation to arrays, and ``heapdb analyze --rules``.

Compilation is checked on a small hand-built heap whose every reference is known, so each expected
``edge_weight`` and ``bucket`` array is written out in full. The CLI test computes what a rule should
do to a retained size on a real V8 snapshot with a plain-Python oracle (breadth-first searches over
the graph's references), not with the analysis engine.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.errors import HeapdbError, RuleError
from heapdb.loader import formats
from heapdb.loader.analysis import IGNORED, NO_RULE, WEAK_WEIGHT
from heapdb.loader.graph import EdgeKind, HeapGraph, StringTable, csr_from_coo
from heapdb.loader.rules import (
    BucketRule,
    IgnoreRule,
    KnownLeakRule,
    ObjectSelector,
    OwnsRule,
    PatternKind,
    Step,
    VerdictRule,
    WeakRule,
    compile_rules,
    load_rules,
    parse_rules,
)
from tests.support.snapshots import LUAU_FIXTURES


def rules(body: str) -> str:
    return "version = 1\n" + textwrap.dedent(body)


# ---------------------------------------------------------------------------------------------
# Parsing


def test_every_rule_kind_parses() -> None:
    rule_set = parse_rules(
        rules(
            """
            [[ignore]]
            to.type = "(object shape)"

            [[weak]]
            from = "system / Context"

            [[owns]]
            from.type = "LeakyCache"
            edge.name = "entries"
            weight = 7

            [[bucket]]
            name = "app"
            object.type = { regex = 'Leak.*' }

            [[tag]]
            name = "listeners"
            from = "EventEmitter"
            path = ["_events", {}]

            [[known_leak]]
            object = "LeakedBuffer"
            reason = "listeners are never removed"
            link = "https://example.com/bug/1"

            [[verdict]]
            from = "Pool"
            edge = { name = "free", kind = "property" }
            note = "expected: pool of 64"
            """
        )
    )
    kinds = [type(r) for r in rule_set.rules]
    assert kinds == [IgnoreRule, WeakRule, OwnsRule, BucketRule, BucketRule, KnownLeakRule, VerdictRule]
    assert [r.line for r in rule_set.rules] == [3, 6, 9, 14, 18, 23, 28]
    ignore, weak, owns, bucket, tag, leak, verdict = rule_set.rules
    assert isinstance(ignore, IgnoreRule) and ignore.references.source is None
    (step,) = ignore.references.steps
    assert step.to is not None and step.to.type is not None and step.to.type.matches("(object shape)")
    assert isinstance(weak, WeakRule) and weak.references.steps == (Step(),)
    assert weak.references.source is not None and weak.references.source.type is not None
    assert weak.references.source.type.patterns[0].text == "system / Context"
    assert isinstance(owns, OwnsRule) and owns.weight == 7
    assert isinstance(bucket, BucketRule) and bucket.bucket == "app" and bucket.references is None
    assert bucket.objects is not None and bucket.objects.type is not None
    assert bucket.objects.type.patterns[0].kind is PatternKind.REGEX
    assert isinstance(tag, BucketRule) and tag.bucket == "listeners" and tag.objects is None
    assert tag.references is not None and len(tag.references.steps) == 2
    assert isinstance(leak, KnownLeakRule) and leak.link == "https://example.com/bug/1"
    assert leak.reason == "listeners are never removed" and leak.path is None
    assert isinstance(verdict, VerdictRule) and verdict.note == "expected: pool of 64"
    assert verdict.path is not None and verdict.path.steps[0].kind == frozenset({EdgeKind.PROPERTY})
    assert rule_set.known_leaks == (leak,) and rule_set.verdicts == (verdict,)


def test_owned_by_is_owns_from_the_other_side() -> None:
    text = rules('[[owned_by]]\nobject = "Item"\nby = "Cache"\npath = ["entries", {}]\nweight = 4\n')
    (rule,) = parse_rules(text).rules
    spelt_as_owns = rules('[[owns]]\nfrom = "Cache"\npath = ["entries", {}]\nto = "Item"\nweight = 4\n')
    assert rule == parse_rules(spelt_as_owns).rules[0]
    with pytest.raises(RuleError, match=r"^r.toml:4: owned_by: by: unknown key 'tipe'"):
        parse_rules(rules('[[owned_by]]\nobject = "Item"\nby.tipe = "Cache"\n'), "r.toml")
    with pytest.raises(RuleError, match=r"^r.toml:2: owned_by: missing `object`"):
        parse_rules(rules('[[owned_by]]\nby = "Cache"\n'), "r.toml")


def test_owns_weight_defaults_to_one() -> None:
    (rule,) = parse_rules(rules('[[owns]]\nto = "Item"\n')).rules
    assert isinstance(rule, OwnsRule) and rule.weight == 1


@pytest.mark.parametrize(
    "name",
    ["system / Context", "(closure)", "Array", "(object shape)", "<symbol>", "a*b", "x[1]", "/re/", "", "é ü"],
)
def test_exact_names_match_only_themselves(name: str) -> None:
    text = rules(f"[[ignore]]\nto.type = {json.dumps(name)}\n")
    (rule,) = parse_rules(text).rules
    assert isinstance(rule, IgnoreRule)
    selector = rule.references.steps[0].to
    assert selector is not None and selector.type is not None
    (pattern,) = selector.type.patterns
    assert pattern.kind is PatternKind.EXACT and pattern.text == name
    assert selector.type.matches(name)
    for other in ("system / ContextX", "closure", "ab", "x1", "re", "x", name + " "):
        if other != name:
            assert not selector.type.matches(other)


def test_selector_forms() -> None:
    text = rules(
        """
        [[ignore]]
        from = { type = { glob = "system / *" }, name = ["a", { regex = 'b[0-9]+' }], kind = "hidden" }
        edge = { name = { glob = "<symbol *>" }, kind = ["internal", "hidden"] }
        to = { type = { glob = "[[]x*" } }
        """
    )
    (rule,) = parse_rules(text).rules
    assert isinstance(rule, IgnoreRule)
    source = rule.references.source
    assert source is not None and source.type is not None and source.name is not None and source.kind is not None
    assert source.type.matches("system / Context") and not source.type.matches("system/Context")
    assert source.name.matches("a") and source.name.matches("b12") and not source.name.matches("b12x")
    assert source.kind.matches("hidden") and not source.kind.matches("hiddenx")
    (step,) = rule.references.steps
    assert step.kind == frozenset({EdgeKind.INTERNAL, EdgeKind.HIDDEN})
    assert step.name is not None and step.name.matches("<symbol Symbol.iterator>")
    assert step.to is not None and step.to.type is not None
    assert step.to.type.matches("[x]") and not step.to.type.matches("x")


def test_regex_matches_the_whole_text() -> None:
    (rule,) = parse_rules(rules("[[ignore]]\nto.name = { regex = 'Leak' }\n")).rules
    assert isinstance(rule, IgnoreRule)
    to = rule.references.steps[0].to
    assert to is not None and to.name is not None
    assert to.name.matches("Leak") and not to.name.matches("LeakedItem")


def test_paths_and_their_target() -> None:
    text = rules(
        """
        [[owns]]
        from = "LeakyCache"
        path = ["entries", { kind = "internal", name = "table" }, {}]
        to = "LeakedItem"
        weight = 2
        """
    )
    (rule,) = parse_rules(text).rules
    assert isinstance(rule, OwnsRule)
    first, second, third = rule.references.steps
    assert first.name is not None and first.name.matches("entries") and first.kind is None and first.to is None
    assert second.kind == frozenset({EdgeKind.INTERNAL})
    assert third.name is None and third.to is not None and third.to.type is not None
    assert third.to == ObjectSelector(type=third.to.type) and third.to.type.matches("LeakedItem")


def test_groups_switch_rules_off() -> None:
    text = rules(
        """
        [groups.v8-internals]
        description = "engine internals"

        [groups.extra]
        enabled = false

        [[ignore]]
        group = "v8-internals"
        to = "(object shape)"

        [[weak]]
        group = "extra"
        to = "A"

        [[weak]]
        group = "implicit"
        to = "B"

        [[weak]]
        to = "C"
        """
    )
    rule_set = parse_rules(text)
    assert rule_set.group_names == ("v8-internals", "extra", "implicit")
    assert rule_set.groups[0].description == "engine internals" and rule_set.groups[0].line == 3
    assert [r.line for r in rule_set.enabled_rules()] == [9, 17, 21]
    assert [r.line for r in rule_set.with_groups(disable=["v8-internals"]).enabled_rules()] == [17, 21]
    assert [r.line for r in rule_set.with_groups(enable=["extra"]).enabled_rules()] == [9, 13, 17, 21]
    assert [r.line for r in rule_set.with_groups(disable=["*"]).enabled_rules()] == [21]
    assert [r.line for r in rule_set.with_groups(disable=["*"], enable=["implicit"]).enabled_rules()] == [17, 21]
    with pytest.raises(RuleError, match="no rule group named 'nope'"):
        rule_set.with_groups(disable=["nope"])


def test_the_gate_table_gives_thresholds_as_written() -> None:
    text = (
        "version = 1\n\n[gate]\nmax_growth = 2000000\nmin_bytes = '64KiB'\nfail_on = ['growth', 'suspects', 'growth']\n"
    )
    gate = parse_rules(text).gate
    assert gate is not None and gate.line == 3
    assert gate.given() == {"max_growth": "2000000", "min_bytes": 65536, "fail_on": ("growth", "suspects")}
    assert parse_rules("version = 1\n[gate]\nmin_bytes = 10\n").gate.given() == {"min_bytes": 10}  # type: ignore[union-attr]
    assert parse_rules(rules('[[weak]]\nto = "A"\n')).gate is None


def test_load_rules_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(rules('[[weak]]\nto = "A"\n'), encoding="utf-8")
    rule_set = load_rules(path)
    assert rule_set.path == str(path) and len(rule_set.rules) == 1
    with pytest.raises(RuleError, match="cannot read"):
        load_rules(tmp_path / "missing.toml")


# ---------------------------------------------------------------------------------------------
# Errors: each names the file, the line and what was expected.

ERRORS = [
    # (file text, line, part of the message)
    ("version = 1\n[[ignore]\nto = 'A'\n", 2, "not valid TOML"),
    ("version = 1\n[[ignore]]\nto = { type = 'A'\n", 3, "not valid TOML"),
    ("[[ignore]]\nto = 'A'\n", 1, "expected `version = 1`"),
    ("# rules\nversion = 2\n", 2, "unknown rule-file version 2"),
    ("version = '1'\n", 1, "version: expected the integer 1"),
    ("version = 1\n\n[[owned]]\nto = 'A'\n", 3, "unknown rule kind 'owned'"),
    ("version = 1\nignore_all = true\n", 2, "unknown rule kind 'ignore_all'"),
    ("version = 1\n[ignore]\nto = 'A'\n", 2, "expected [[ignore]] tables"),
    ("version = 1\n[[owns]]\nto = 'A'\nweight = 0\n", 4, "weight must be an integer from 1 to 127, got an integer 0"),
    ("version = 1\n[[owns]]\nto = 'A'\nweight = 300\n", 4, "got an integer 300"),
    ("version = 1\n[[owns]]\nto = 'A'\nweight = -1\n", 4, "got an integer -1"),
    ("version = 1\n[[owns]]\nto = 'A'\nweight = true\n", 4, "got a boolean"),
    ("version = 1\n[[owns]]\nto = 'A'\nweight = 1.5\n", 4, "got a float"),
    ("version = 1\n[[ignore]]\nto = 'A'\n[[ignore]]\nfrom.type = { regex = 'a(b' }\n", 5, "bad regex 'a(b'"),
    ("version = 1\n[[ignore]]\nfrom.name = { regex = '*x' }\n", 3, "bad regex"),
    ("version = 1\n[[bucket]]\nobject = 'A'\n", 2, 'missing `name = "..."`'),
    ("version = 1\n[[bucket]]\nname = ''\nobject = 'A'\n", 3, "name: expected a non-empty string"),
    ("version = 1\n[[bucket]]\nname = 'x'\n", 2, "expected either `object`"),
    ("version = 1\n[[bucket]]\nname = 'x'\nobject = 'A'\nto = 'B'\n", 2, "not both or neither"),
    ("version = 1\n[[known_leak]]\nobject = 'A'\n", 2, "missing `reason"),
    ("version = 1\n[[known_leak]]\nobject = 'A'\nreason = 'r'\nlink = 'ftp://x'\n", 5, "expected an http(s) URL"),
    ("version = 1\n[[known_leak]]\nreason = 'r'\n", 2, "expected `object` and/or a path"),
    ("version = 1\n[[verdict]]\nobject = 'A'\nnote = 3\n", 4, "note: expected a non-empty string, got an integer 3"),
    ("version = 1\n[[ignore]]\ngroup = 'x'\n", 2, "expected at least one of from, edge, path, to"),
    ("version = 1\n[[ignore]]\nto = 'A'\nwieght = 2\n", 4, "unknown key 'wieght'"),
    (
        "version = 1\n[[owns]]\nto = 'A'\n\n[[weak]]\nto.tipe = 'A'\n",
        6,
        "unknown key 'tipe' (expected type, name, kind, instance_of)",
    ),
    ("version = 1\n[[weak]]\nfrom = {}\n", 3, "expected a type name or a table"),
    ("version = 1\n[[weak]]\nto.type = 3\n", 3, "expected a string (exact)"),
    ("version = 1\n[[weak]]\nto.type = { glob = 'a', regex = 'b' }\n", 3, "expected a string (exact)"),
    ("version = 1\n[[weak]]\nto.type = []\n", 3, "expected at least one pattern"),
    ("version = 1\n[[weak]]\nedge.kind = 'strong'\n", 3, "expected an edge kind or a list of them"),
    ("version = 1\n[[weak]]\nedge.name = 'a'\npath = ['a']\n", 4, "give `edge` (one reference) or `path`"),
    ("version = 1\n[[weak]]\npath = []\n", 3, "path: expected a non-empty list"),
    ("version = 1\n[[weak]]\npath = [3]\n", 3, "expected an edge name or a table"),
    ("version = 1\n[[weak]]\npath = [{ nam = 'x' }]\n", 3, "unknown key 'nam'"),
    ("version = 1\n[[weak]]\npath = [{ to = 'A' }]\nto = 'B'\n", 4, "not both"),
    ("version = 1\n[[weak]]\nto = 'A'\ngroup = 'a b'\n", 4, "group: expected a name"),
    ("version = 1\n[groups.core]\nenabled = 'no'\n", 3, "groups.core.enabled: expected true or false"),
    ("version = 1\n[groups.core]\nenabld = true\n", 3, "unknown key 'enabld'"),
    ("version = 1\n[groups]\ncore = 3\n", 3, "groups.core: expected a table"),
    ("version = 1\n[gate]\nmax_growth = 'lots'\n", 3, "gate.max_growth: 'lots' is not a size"),
    ("version = 1\n[gate]\nmax_growth = true\n", 3, "gate.max_growth: expected a size such as 256KiB or 5%"),
    ("version = 1\n[gate]\n\nmin_bytes = '5%'\n", 4, "gate.min_bytes: expected a size of at least 1 byte"),
    ("version = 1\n[gate]\nmin_bytes = 0\n", 3, "got 0"),
    ("version = 1\n[gate]\nfail_on = 'growth'\n", 3, "gate.fail_on: expected a list of checks"),
    ("version = 1\n[gate]\nfail_on = ['growth', 'leaks']\n", 3, "unknown check 'leaks'"),
    ("version = 1\n[gate]\nmax_grow = '5%'\n", 3, "gate: unknown key 'max_grow'"),
    ("version = 1\n[[gate]]\nmin_bytes = 1\n", 2, "gate: expected a [gate] table"),
]


@pytest.mark.parametrize(("text", "line", "message"), ERRORS)
def test_errors_name_file_line_and_expectation(text: str, line: int, message: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_rules(text, "team.toml")
    error = caught.value
    assert isinstance(error, HeapdbError)
    assert error.line == line, str(error)
    assert message in error.problem, str(error)
    assert str(error).startswith(f"team.toml:{line}: ")
    assert "\n" not in str(error)


def test_inline_rule_arrays_point_at_their_key() -> None:
    with pytest.raises(RuleError) as caught:
        parse_rules("version = 1\n\nowns = [{ to = 'A', weight = 0 }]\n", "r.toml")
    assert caught.value.line == 3


# ---------------------------------------------------------------------------------------------
# Compilation on a hand-built heap


def build_graph(nodes: list[tuple[str, str, str]], edges: list[tuple[int, int, EdgeKind, str | int]]) -> HeapGraph:
    """nodes: (type, name, node kind); edges: (from, to, kind, name or element index)."""
    table = StringTable()
    kinds = ["synthetic", "object", "closure", "hidden", "array"]
    n = len(nodes)
    names = [int(e[3]) if isinstance(e[3], int) else table.intern(e[3]) for e in edges]
    edge_start, edge_to, edge_kind, edge_name = csr_from_coo(
        n,
        np.array([e[0] for e in edges], dtype=np.int64),
        np.array([e[1] for e in edges]),
        np.array([int(e[2]) for e in edges]),
        np.array(names),
    )
    graph = HeapGraph(
        ids=np.arange(1, n + 1, dtype=np.int64) * 10,
        kind=np.array([kinds.index(k) for _, _, k in nodes], dtype=np.uint8),
        type=np.array([table.intern(t) for t, _, _ in nodes], dtype=np.int32),
        name=np.array([table.intern(nm) for _, nm, _ in nodes], dtype=np.int32),
        self_size=np.full(n, 10, dtype=np.int64),
        edge_start=edge_start,
        edge_to=edge_to,
        edge_kind=edge_kind,
        edge_name=edge_name,
        strings=table.strings,
        node_kinds=kinds,
        meta={"format": "test"},
    )
    graph.validate()
    return graph


NODES = [
    ("(root)", "(root)", "synthetic"),  # 0
    ("Cache", "Cache", "object"),  # 1
    ("Map", "Map", "object"),  # 2
    ("(closure)", "onEvent", "closure"),  # 3
    ("system / Context", "system / Context", "hidden"),  # 4
    ("Item", "Item", "object"),  # 5
    ("Array", "Array", "array"),  # 6
    ("<symbol>", "a*b[1]/c", "object"),  # 7
    ("(object shape)", "system / Map", "hidden"),  # 8
]
P, E, IN, C, H = EdgeKind.PROPERTY, EdgeKind.ELEMENT, EdgeKind.INTERNAL, EdgeKind.CONTEXT, EdgeKind.HIDDEN
# Listed by source, so edge positions are the list's indices (csr_from_coo keeps each node's order).
EDGES: list[tuple[int, int, EdgeKind, str | int]] = [
    (0, 1, P, "cache"),  # 0
    (0, 3, P, "handler"),  # 1
    (0, 7, P, "sym"),  # 2
    (1, 2, P, "entries"),  # 3
    (2, 5, E, 0),  # 4
    (2, 6, E, 1),  # 5
    (2, 8, H, 12),  # 6
    (3, 4, IN, "context"),  # 7
    (4, 5, C, "item"),  # 8
    (5, 6, P, "payload"),  # 9
    (5, 8, IN, "map"),  # 10
    (5, 7, P, "a*b[1]/c"),  # 11
    (6, 8, IN, "map"),  # 12
    (7, 8, IN, "map"),  # 13
]


@pytest.fixture(scope="module")
def graph() -> HeapGraph:
    g = build_graph(NODES, EDGES)
    assert [int(g.edge_to[e]) for e in range(g.edge_count)] == [e[1] for e in EDGES]
    return g


def weights(graph: HeapGraph, body: str) -> list[int]:
    compiled = compile_rules(parse_rules(rules(body)), graph)
    assert compiled.edge_weight.dtype == np.int8 and compiled.edge_weight.shape == (graph.edge_count,)
    return compiled.edge_weight.tolist()


def weight_list(**at: int) -> list[int]:
    out = [NO_RULE] * len(EDGES)
    for key, value in at.items():
        out[int(key[1:])] = value
    return out


def test_no_rules_weigh_nothing(graph: HeapGraph) -> None:
    compiled = compile_rules(parse_rules("version = 1\n"), graph)
    assert compiled.edge_weight.tolist() == [NO_RULE] * len(EDGES)
    assert compiled.bucket.dtype == np.int32 and compiled.bucket.tolist() == [-1] * len(NODES)
    assert compiled.bucket_names == () and compiled.hits == ()


def test_every_reference_into_and_out_of_a_type(graph: HeapGraph) -> None:
    assert weights(graph, '[[ignore]]\nto = "(object shape)"\n') == weight_list(
        e6=IGNORED, e10=IGNORED, e12=IGNORED, e13=IGNORED
    )
    assert weights(graph, '[[weak]]\nfrom = "Item"\n') == weight_list(e9=WEAK_WEIGHT, e10=WEAK_WEIGHT, e11=WEAK_WEIGHT)
    assert weights(graph, '[[owns]]\nfrom.kind = "hidden"\nweight = 9\n') == weight_list(e8=9)


def test_edge_names_and_kinds(graph: HeapGraph) -> None:
    assert weights(graph, '[[weak]]\nedge.name = "map"\n') == weight_list(e10=-1, e12=-1, e13=-1)
    assert weights(graph, '[[weak]]\nedge.kind = "internal"\n') == weight_list(e7=-1, e10=-1, e12=-1, e13=-1)
    assert weights(graph, '[[weak]]\nedge = { name = "map", kind = "hidden" }\n') == weight_list()
    # Special characters are plain text in an exact name, escaped in a glob.
    assert weights(graph, '[[weak]]\nedge.name = "a*b[1]/c"\n') == weight_list(e11=-1)
    assert weights(graph, '[[weak]]\nedge.name = { glob = "a[*]b[[]*" }\n') == weight_list(e11=-1)
    assert weights(graph, '[[weak]]\nedge.name = { glob = "*a*" }\n') == weight_list(
        e0=-1, e1=-1, e9=-1, e10=-1, e11=-1, e12=-1, e13=-1
    )
    # Element and hidden references are named by their index in decimal; the kind keeps them apart.
    assert weights(graph, '[[weak]]\nedge.name = "1"\n') == weight_list(e5=-1)
    assert weights(graph, '[[weak]]\nedge.name = "01"\n') == weight_list()
    assert weights(graph, "[[weak]]\nedge.name = { regex = '[0-9]+' }\n") == weight_list(e4=-1, e5=-1, e6=-1)
    assert weights(graph, "[[weak]]\nedge = { name = { regex = '1.*' }, kind = \"hidden\" }\n") == weight_list(e6=-1)


def test_object_names_types_and_kinds(graph: HeapGraph) -> None:
    assert weights(graph, '[[weak]]\nto.name = "a*b[1]/c"\n') == weight_list(e2=-1, e11=-1)
    assert weights(graph, '[[weak]]\nto.name = "onEvent"\n') == weight_list(e1=-1)
    assert weights(graph, "[[weak]]\nto.type = { regex = '\\(.*\\)' }\n") == weight_list(
        e1=-1, e6=-1, e10=-1, e12=-1, e13=-1
    )
    assert weights(graph, "[[weak]]\nto = { type = { glob = 'system / *' }, kind = 'hidden' }\n") == weight_list(e7=-1)
    assert weights(graph, '[[weak]]\nto = { type = "Item", kind = "array" }\n') == weight_list()


def test_chains_apply_to_their_last_reference(graph: HeapGraph) -> None:
    # Cache -entries-> Map -any element-> Item, Array: only the last references are owned.
    body = '[[owns]]\nfrom = "Cache"\npath = ["entries", { kind = "element" }]\nweight = 2\n'
    assert weights(graph, body) == weight_list(e4=2, e5=2)
    body = '[[owns]]\nfrom = "Cache"\npath = ["entries", {}, "map"]\nweight = 3\n'
    assert weights(graph, body) == weight_list(e10=3, e12=3)
    body = '[[owns]]\nfrom = "Cache"\npath = ["entries", { to = "Item" }, "map"]\n'
    assert weights(graph, body) == weight_list(e10=1)
    body = '[[owns]]\npath = [{ kind = "element" }, "payload"]\nto = "Array"\n'
    assert weights(graph, body) == weight_list(e9=1)
    body = '[[owns]]\nfrom = "Map"\npath = ["entries", {}]\n'  # no Map has an "entries" reference
    assert weights(graph, body) == weight_list()


def test_precedence_ignore_then_highest_owns_then_weak(graph: HeapGraph) -> None:
    body = """
        [[weak]]
        from = "Item"

        [[owns]]
        from = "Item"
        edge.name = "payload"
        weight = 3

        [[owns]]
        edge.name = "payload"
        weight = 2

        [[owns]]
        to = "(object shape)"
        weight = 5

        [[owns]]
        edge.name = "map"
        weight = 127

        [[ignore]]
        from = "Array"
        """
    # e9 payload: weak, 3 and 2 -> 3; e10 Item.map: weak, 5, 127 -> 127; e11: weak only;
    # e12 Array.map: 5, 127 but ignored; e6 Map's hidden reference to the shape: 5; e13: 127.
    assert weights(graph, body) == weight_list(e6=5, e9=3, e10=127, e11=-1, e12=IGNORED, e13=127)
    compiled = compile_rules(parse_rules(rules(body)), graph)
    assert compiled.hits == (3, 1, 1, 4, 3, 1)
    assert compiled.unmatched() == ()


def test_disabled_groups_are_not_applied(graph: HeapGraph) -> None:
    text = rules('[groups.core]\nenabled = false\n\n[[ignore]]\ngroup = "core"\nto = "Map"\n\n[[weak]]\nto = "Map"\n')
    rule_set = parse_rules(text)
    assert compile_rules(rule_set, graph).edge_weight.tolist() == weight_list(e3=-1)
    enabled = rule_set.with_groups(enable=["core"])
    assert compile_rules(enabled, graph).edge_weight.tolist() == weight_list(e3=IGNORED)


def test_buckets_first_rule_wins(graph: HeapGraph) -> None:
    body = """
        [[bucket]]
        name = "shapes"
        object.type = "(object shape)"

        [[tag]]
        name = "cache"
        from = "Cache"
        path = ["entries", {}]

        [[bucket]]
        name = "internal"
        object.kind = ["hidden", "closure"]

        [[bucket]]
        name = "cache"
        object.name = "Cache"

        [[known_leak]]
        object = "Item"
        reason = "kept by the cache"
        """
    compiled = compile_rules(parse_rules(rules(body)), graph)
    assert compiled.bucket_names == ("shapes", "cache", "internal")
    # Map -> {Item, Array, shape}: the shape is already "shapes"; Cache itself joins "cache" last.
    assert compiled.bucket.tolist() == [-1, 1, -1, 2, 2, 1, 1, -1, 0]
    assert compiled.hits == (1, 3, 3, 1, 1)  # a known_leak counts the objects it names
    assert len(compiled.known_leaks) == 1 and compiled.verdicts == ()
    assert compiled.known_leak is not None and compiled.verdict is None
    assert [graph.type_name(int(i)) for i in (compiled.known_leak >= 0).nonzero()[0]] == ["Item"]


def test_unmatched_rules_are_reported(graph: HeapGraph) -> None:
    compiled = compile_rules(parse_rules(rules('[[weak]]\nto = "Nothing"\n\n[[ignore]]\nto = "Map"\n')), graph)
    assert [r.line for r in compiled.unmatched()] == [2]


# ---------------------------------------------------------------------------------------------
# heapdb analyze --rules on a real V8 snapshot, against a plain-Python oracle


def oracle_retaining(graph: HeapGraph, weight: np.ndarray) -> list[list[int]]:
    """Out-lists of the references that retain under generic semantics and rule weights.

    Generic semantics: weak references never retain, shortcuts only from the root, self references
    not at all; ignored references never. Then, per object, only the references of the highest
    weight among those from reached objects are kept (the owns rule; the tests below pick rules
    where no owner is cut off, so the fallback never applies).
    """
    n, root = graph.node_count, graph.root
    edges = []
    for v in range(n):
        for e in range(int(graph.edge_start[v]), int(graph.edge_start[v + 1])):
            w, kind = int(graph.edge_to[e]), int(graph.edge_kind[e])
            if kind == EdgeKind.WEAK or w == v or (kind == EdgeKind.SHORTCUT and v != root) or weight[e] == IGNORED:
                continue
            edges.append((v, w, int(weight[e])))
    out: list[list[int]] = [[] for _ in range(n)]
    for v, w, _ in edges:
        out[v].append(w)
    reached = reach(out, root, -1)
    best = [-(1 << 10)] * n
    for v, w, k in edges:
        if v in reached:
            best[w] = max(best[w], k)
    kept: list[list[int]] = [[] for _ in range(n)]
    for v, w, k in edges:
        if v in reached and k == best[w]:
            kept[v].append(w)
    assert reach(kept, root, -1) == reached  # no fallback needed
    return kept


def reach(out: list[list[int]], root: int, removed: int) -> set[int]:
    seen = {root}
    queue = deque([root])
    while queue:
        v = queue.popleft()
        for w in out[v]:
            if w not in seen and w != removed:
                seen.add(w)
                queue.append(w)
    return seen


def oracle_retained(graph: HeapGraph, out: list[list[int]], node: int) -> int:
    """What ``node`` retains: the self sizes of the objects that become unreachable without it."""
    everything = reach(out, graph.root, -1)
    without = reach(out, graph.root, node)
    return int(sum(int(graph.self_size[v]) for v in everything - without))


def analyze_json(snapshot: Path, *args: str) -> dict:
    result = CliRunner().invoke(main, ["analyze", str(snapshot), "--json", "--semantics", "generic", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture(scope="module")
def leak_graph(leak_snapshot: Path) -> HeapGraph:
    return formats.detect(leak_snapshot).read_graph(leak_snapshot)


def only_node(graph: HeapGraph, type_name: str) -> int:
    (node,) = np.flatnonzero(graph.type == graph.strings.index(type_name)).tolist()
    return int(node)


def test_analyze_with_an_ignore_rule(leak_snapshot: Path, leak_graph: HeapGraph, tmp_path: Path) -> None:
    path = tmp_path / "ignore.toml"
    path.write_text(rules('[[ignore]]\nfrom = "LeakyCache"\nedge.name = "entries"\n'), encoding="utf-8")
    cache = only_node(leak_graph, "LeakyCache")
    ignored = np.zeros(leak_graph.edge_count, dtype=np.int8)
    for e in leak_graph.out_edges(cache):
        if leak_graph.edge_label(e) == "entries":
            ignored[e] = IGNORED
    before = oracle_retained(leak_graph, oracle_retaining(leak_graph, np.zeros_like(ignored)), cache)
    expected = oracle_retained(leak_graph, oracle_retaining(leak_graph, ignored), cache)
    assert expected < before - 100 * 50  # the cache's map and its items leave the cache

    plain = analyze_json(leak_snapshot, "--top", "1000000", "--rules", "none")
    ruled = analyze_json(leak_snapshot, "--top", "1000000", "--rules", str(path))
    cache_id = int(leak_graph.ids[cache])
    assert "rules" not in plain
    assert {r["id"]: r["retained_size"] for r in plain["top_retainers"]}[cache_id] == before
    assert {r["id"]: r["retained_size"] for r in ruled["top_retainers"]}[cache_id] == expected
    assert ruled["rules"]["ignored_references"] == 1 and ruled["rules"]["unmatched_rule_lines"] == []
    assert ruled["reachable_objects"] < plain["reachable_objects"]


def test_analyze_with_an_owns_rule(leak_snapshot: Path, leak_graph: HeapGraph, tmp_path: Path) -> None:
    # Each LeakedItem holds its payload array, and so does its closure's context: by default the
    # item dominates the array; once the context owns it, the context does.
    path = tmp_path / "owns.toml"
    path.write_text(
        rules(
            """
            [[owns]]
            from.type = "system / Context"
            edge = { name = "payload", kind = "context" }
            weight = 3

            [[bucket]]
            name = "items"
            object = "LeakedItem"
            """
        ),
        encoding="utf-8",
    )
    g = leak_graph
    weight = np.zeros(g.edge_count, dtype=np.int8)
    context = g.strings.index("system / Context")
    owners = []
    for v in np.flatnonzero(g.type == context).tolist():
        for e in g.out_edges(v):
            if g.edge_kind[e] == EdgeKind.CONTEXT and g.edge_label(e) == "payload":
                weight[e] = 3
                owners.append(v)
    assert len(owners) >= 100
    plain_out = oracle_retaining(g, np.zeros_like(weight))
    ruled_out = oracle_retaining(g, weight)
    sample = owners[:3]
    before = {int(g.ids[v]): oracle_retained(g, plain_out, v) for v in sample}
    after = {int(g.ids[v]): oracle_retained(g, ruled_out, v) for v in sample}
    assert all(after[i] > before[i] for i in before)  # the payload array moved under the context

    # The default rules' groups off ('*'): the top list then looks through no context, and lists them.
    plain = analyze_json(leak_snapshot, "--top", "1000000", "--rules", "none")
    ruled = analyze_json(leak_snapshot, "--top", "1000000", "--rules", str(path), "--disable-group", "*")
    plain_sizes = {r["id"]: r["retained_size"] for r in plain["top_retainers"]}
    ruled_sizes = {r["id"]: r["retained_size"] for r in ruled["top_retainers"]}
    assert {i: plain_sizes[i] for i in before} == before
    assert {i: ruled_sizes[i] for i in after} == after
    summary = ruled["rules"]
    assert summary["owned_references"] == len(owners) and summary["ambiguous_objects"] == 0
    (bucket,) = summary["buckets"]
    items = np.flatnonzero(g.type == g.strings.index("LeakedItem")).tolist()
    assert bucket["name"] == "items" and bucket["objects"] == len(items)
    # No item dominates another: the bucket retains what its items retain, summed.
    assert bucket["retained_size"] == sum(ruled_sizes[int(g.ids[v])] for v in items)


def test_analyze_text_report_and_ambiguity(leak_snapshot: Path, tmp_path: Path) -> None:
    path = tmp_path / "ambiguous.toml"
    # Every LeakedItem points at the same hidden class: 300 owners of equal weight.
    path.write_text(rules('[[owns]]\nfrom = "LeakedItem"\nedge.name = "map"\n\n[[weak]]\nto = "Nothing"\n'))
    result = CliRunner().invoke(main, ["analyze", str(leak_snapshot), "--rules", str(path)])
    assert result.exit_code == 0, result.output
    assert "Top retainers:" in result.output
    assert "warning: 1 objects of ambiguous ownership" in result.output
    assert "(object shape) @" in result.output
    assert "rules that match nothing in this snapshot, at lines 6" in result.output


def test_analyze_rejects_a_bad_rule_file_in_one_line(tmp_path: Path) -> None:
    snapshot = tmp_path / "x.heapsnapshot"
    snapshot.write_text("{}")
    path = tmp_path / "bad.toml"
    path.write_text("version = 1\n\n[[owns]]\nto = 'A'\nweight = 0\n")
    result = CliRunner().invoke(main, ["analyze", str(snapshot), "--rules", str(path)])
    assert result.exit_code != 0
    assert result.output.strip().splitlines() == [
        f"heapdb: error: {path}:5: owns: weight must be an integer from 1 to 127, got an integer 0"
    ]
    result = CliRunner().invoke(main, ["analyze", str(snapshot), "--disable-group", "x"])
    assert result.exit_code != 0 and "no rule group named 'x'" in result.output
    result = CliRunner().invoke(main, ["analyze", str(snapshot), "--rules", "none", "--disable-group", "v8-closures"])
    assert result.exit_code != 0 and "--disable-group has no rules to switch off with --rules none" in result.output


# ---------------------------------------------------------------------------------------------
# The examples of docs/rules.md


def doc_examples() -> list[str]:
    text = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"```toml\n(.*?)```", text, re.DOTALL) if b.startswith("version = 1")]


def test_every_example_in_the_docs_parses() -> None:
    examples = doc_examples()
    assert len(examples) == 5  # the format, then Node, Chrome, Luau and Python
    for example in examples:
        assert parse_rules(example, "docs/rules.md").rules


def test_node_and_luau_examples_match_real_snapshots(leak_graph: HeapGraph) -> None:
    _, node, _, luau, _ = doc_examples()
    path = LUAU_FIXTURES / "luau-3-final.json"
    for text, graph in ((node, leak_graph), (luau, formats.detect(path).read_graph(path))):
        compiled = compile_rules(parse_rules(text), graph)
        assert compiled.unmatched() == ()
        assert all(
            h > 0 for r, h in zip(compiled.rules, compiled.hits, strict=True) if not isinstance(r, KnownLeakRule)
        )


# ---------------------------------------------------------------------------------------------
# Compilation against a per-reference Python oracle on random graphs and random rules

TYPES = ["Array", "(closure)", "system / Context", "(object shape)", "<symbol>", "a*b", "x[1]", "Item"]
NAMES = ["", "map", "entries", "a*b[1]/c", "item-1", "item-22", "12"]
PATTERNS = [
    '"Array"',
    '"(closure)"',
    '"system / Context"',
    '"a*b"',
    '"x[1]"',
    '"map"',
    '"1"',
    '"12"',
    '{ glob = "system / *" }',
    '{ glob = "(*)" }',
    '{ glob = "x[[]*" }',
    '{ glob = "*" }',
    "{ regex = 'item-[0-9]' }",
    "{ regex = '[0-9]+' }",
    "{ regex = '.*a.*' }",
    '["Item", { glob = "<*>" }]',
]
EDGE_KINDS = ["context", "element", "property", "internal", "hidden", "shortcut", "weak", "reference"]


def random_heap(rng: np.random.Generator) -> HeapGraph:
    n = int(rng.integers(1, 25))
    nodes = [
        (str(rng.choice(TYPES)), str(rng.choice(NAMES)), str(rng.choice(["object", "closure", "hidden"])))
        for _ in range(n)
    ]
    edges: list[tuple[int, int, EdgeKind, str | int]] = []
    for _ in range(int(rng.integers(0, 4 * n + 1))):
        kind = EdgeKind(int(rng.integers(0, len(EdgeKind))))
        name: str | int = (
            int(rng.integers(0, 14)) if kind in (EdgeKind.ELEMENT, EdgeKind.HIDDEN) else str(rng.choice(NAMES))
        )
        edges.append((int(rng.integers(0, n)), int(rng.integers(0, n)), kind, name))
    edges.sort(key=lambda e: e[0])
    return build_graph(nodes, edges)


def random_object_selector(rng: np.random.Generator) -> str:
    fields = [f for f in ("type", "name", "kind") if rng.random() < 0.3] or [str(rng.choice(["type", "name"]))]
    parts = []
    for f in fields:
        parts.append(
            f"{f} = "
            + (f'"{rng.choice(["object", "closure", "hidden"])}"' if f == "kind" else str(rng.choice(PATTERNS)))
        )
    return "{ " + ", ".join(parts) + " }"


def random_step(rng: np.random.Generator, *, to: bool = True) -> str:
    parts = []
    if rng.random() < 0.4:
        parts.append(f"name = {rng.choice(PATTERNS)}")
    if rng.random() < 0.3:
        kinds = rng.choice(EDGE_KINDS, size=int(rng.integers(1, 3)), replace=False)
        parts.append("kind = [" + ", ".join(f'"{k}"' for k in kinds) + "]")
    if to and rng.random() < 0.2:
        parts.append(f"to = {random_object_selector(rng)}")
    return "{ " + ", ".join(parts) + " }"


def random_rule_file(rng: np.random.Generator) -> str:
    out = ["version = 1"]
    for _ in range(int(rng.integers(1, 6))):
        kind = str(rng.choice(["ignore", "weak", "owns", "bucket"]))
        out.append(f"\n[[{kind}]]")
        if kind == "owns":
            out.append(f"weight = {int(rng.integers(1, 128))}")
        if kind == "bucket":
            out.append(f'name = "b{int(rng.integers(0, 3))}"')
            if rng.random() < 0.5:
                out.append(f"object = {random_object_selector(rng)}")
                continue
        has_from = rng.random() < 0.6
        if has_from:
            out.append(f"from = {random_object_selector(rng)}")
        steps = int(rng.choice([1, 1, 2, 3]))
        last_to = not has_from and rng.random() < 0.5
        chain = [random_step(rng, to=k + 1 < steps or not last_to) for k in range(steps)]
        out.append("path = [" + ", ".join(chain) + "]")
        if last_to:
            out.append(f"to = {random_object_selector(rng)}")
    return "\n".join(out) + "\n"


def oracle_compile(rule_set, graph: HeapGraph) -> tuple[list[int], list[int], list[str]]:
    """edge_weight, bucket and bucket names, one object and one reference at a time."""
    n, m = graph.node_count, graph.edge_count
    source_of = [v for v in range(n) for _ in graph.out_edges(v)]

    def object_ok(selector: ObjectSelector | None, v: int) -> bool:
        if selector is None:
            return True
        fields = (
            (selector.type, graph.type_name(v)),
            (selector.name, graph.node_name(v)),
            (selector.kind, graph.node_kinds[int(graph.kind[v])]),
        )
        return all(match is None or match.matches(text) for match, text in fields)

    def step_ok(step: Step, e: int) -> bool:
        return (
            (step.kind is None or EdgeKind(int(graph.edge_kind[e])) in step.kind)
            and (step.name is None or step.name.matches(graph.edge_label(e)))
            and object_ok(step.to, int(graph.edge_to[e]))
        )

    def chain_ends(selector) -> set[int]:
        frontier = {v for v in range(n) if object_ok(selector.source, v)}
        ends: set[int] = set()
        for step in selector.steps:
            ends = {e for e in range(m) if source_of[e] in frontier and step_ok(step, e)}
            frontier = {int(graph.edge_to[e]) for e in ends}
        return ends

    ignored, weak, owns = set(), set(), [0] * m
    bucket, names = [-1] * n, []
    for rule in rule_set.enabled_rules():
        if isinstance(rule, BucketRule):
            if rule.objects is not None:
                members = {v for v in range(n) if object_ok(rule.objects, v)}
            else:
                members = {int(graph.edge_to[e]) for e in chain_ends(rule.references)}
            if rule.bucket not in names:
                names.append(rule.bucket)
            for v in members:
                if bucket[v] < 0:
                    bucket[v] = names.index(rule.bucket)
            continue
        ends = chain_ends(rule.references)
        if isinstance(rule, IgnoreRule):
            ignored |= ends
        elif isinstance(rule, WeakRule):
            weak |= ends
        elif isinstance(rule, OwnsRule):
            for e in ends:
                owns[e] = max(owns[e], rule.weight)
    weight = [
        IGNORED if e in ignored else owns[e] if owns[e] > 0 else WEAK_WEIGHT if e in weak else NO_RULE for e in range(m)
    ]
    return weight, bucket, names


@pytest.mark.parametrize("seed", range(300))
def test_compilation_equals_a_per_reference_oracle(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from heapdb.loader.rules import compiler

    monkeypatch.setattr(compiler, "_SLICE", 7)  # many slices, boundaries everywhere
    rng = np.random.default_rng(seed)
    graph = random_heap(rng)
    rule_set = parse_rules(random_rule_file(rng))
    compiled = compile_rules(rule_set, graph)
    weight, bucket, names = oracle_compile(rule_set, graph)
    assert compiled.edge_weight.tolist() == weight
    assert compiled.bucket.tolist() == bucket
    assert list(compiled.bucket_names) == names
