"""The default rule sets and the `internal` rule kind, without a database.

Looking through internal objects is checked against a definition written top-down over the
dominator tree (the engine climbs bottom-up), on random graphs; the shipped rule sets must parse,
hold only rules that change no dominator, and select what their comments say on a real snapshot.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from heapdb.errors import RuleError
from heapdb.loader import analysis, formats
from heapdb.loader.rules import (
    InternalRule,
    KnownLeakRule,
    LifecycleRule,
    TransientRule,
    compile_rules,
    parse_rules,
)
from heapdb.loader.rules.defaults import RUNTIMES, default_group_names, default_rules, runtime_of
from tests.test_analysis import random_graph


def children_of(idom: np.ndarray) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for v, d in enumerate(idom):
        if d >= 0:
            out.setdefault(int(d), []).append(v)
    return out


def expected_look_through(idom: np.ndarray, root: int, internal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-down: an internal object is looked through when a walk down the dominator tree from it,
    passing internal objects only, meets an object that is not internal; an object's holder is the
    first object above it that is not looked through."""
    n = idom.shape[0]
    kids = children_of(idom)
    through = np.zeros(n, dtype=bool)
    for v in range(n):
        if v == root or idom[v] < 0 or not internal[v]:
            continue
        frontier = list(kids.get(v, []))
        while frontier:
            u = frontier.pop()
            if not internal[u]:
                through[v] = True
                break
            frontier.extend(kids.get(u, []))
    holder = np.full(n, -1, dtype=np.int64)
    for v in range(n):
        if v == root or idom[v] < 0:
            continue
        a = int(idom[v])
        while a != root and through[a]:
            a = int(idom[a])
        holder[v] = a
    return through, holder


@pytest.mark.parametrize("seed", range(60))
def test_look_through_equals_its_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    graph = random_graph(rng)
    result = analysis.analyze(graph)
    internal = rng.random(graph.node_count) < 0.5
    got = analysis.look_through(result, internal)
    through, holder = expected_look_through(result.idom, result.root, internal)
    assert got.through.tolist() == through.tolist()
    assert got.holder.tolist() == holder.tolist()
    # A holder is never looked through, and is an ancestor of the object in the dominator tree.
    for v in np.flatnonzero(got.holder >= 0):
        h = int(got.holder[v])
        assert not got.through[h] or h == result.root
        a = int(result.idom[v])
        while a != h:
            assert got.through[a]
            a = int(result.idom[a])


def test_nothing_internal_means_every_holder_is_the_dominator() -> None:
    graph = random_graph(np.random.default_rng(7))
    result = analysis.analyze(graph)
    got = analysis.look_through(result, np.zeros(graph.node_count, dtype=bool))
    assert not got.through.any()
    dominated = result.idom >= 0
    dominated[result.root] = False
    assert got.holder[dominated].tolist() == result.idom[dominated].tolist()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_default_rule_sets_change_no_dominator(runtime: str) -> None:
    rules = default_rules(runtime)
    # Kinds that weigh no reference: internal and transient rules, known leaks and lifecycles.
    kinds = (InternalRule, TransientRule, KnownLeakRule, LifecycleRule)
    assert rules.rules and all(isinstance(r, kinds) for r in rules.rules)
    assert all(r.group for r in rules.rules), "every default rule can be switched off by its group"
    assert set(rules.group_names) <= default_group_names()


def test_unknown_runtime_has_no_defaults() -> None:
    with pytest.raises(RuleError, match="no default rules for 'cobol'"):
        default_rules("cobol")


def test_v8_defaults_on_a_real_snapshot(leak_snapshot: Path) -> None:
    graph = formats.read_graph(leak_snapshot)
    assert runtime_of(graph) == "v8"
    compiled = compile_rules(default_rules("v8"), graph)
    assert not compiled.weighted
    assert compiled.internal is not None
    types = {graph.type_name(int(v)) for v in np.flatnonzero(compiled.internal)}
    assert "system / Context" in types and "(closure)" in types and "(object shape)" in types
    assert "LeakedItem" not in types and "(string)" not in types
    # Without the closures group, closures are what they are.
    off = compile_rules(default_rules("v8").with_groups(disable=["v8-closures"]), graph)
    assert off.internal is not None
    assert "(closure)" not in {graph.type_name(int(v)) for v in np.flatnonzero(off.internal)}


def test_internal_rules_parse_and_refuse_what_they_do_not_take() -> None:
    rules = parse_rules('version = 1\n[[internal]]\nobject.kind = ["hidden", "code"]\n')
    (rule,) = rules.rules
    assert isinstance(rule, InternalRule) and rule.line == 2
    with pytest.raises(RuleError, match=":2: internal: missing `object`"):
        parse_rules('version = 1\n[[internal]]\ngroup = "g"\n')
    with pytest.raises(RuleError, match="internal: unknown key 'from'"):
        parse_rules('version = 1\n[[internal]]\nfrom = "Map"\n')
