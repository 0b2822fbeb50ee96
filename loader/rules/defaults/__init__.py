"""The rule sets heapdb ships, one per runtime, applied to every load unless switched off.

Each is an ordinary rule file beside this module (docs/rules.md, "Default rules"). They hold only
``internal``, ``transient``, ``known_leak`` and (Java) ``lifecycle`` rules, so they change no
dominator and no retained size: exact answers stay exact.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

from heapdb.errors import RuleError
from heapdb.loader.formats import named
from heapdb.loader.graph import HeapGraph
from heapdb.loader.rules.model import Rule, RuleSet
from heapdb.loader.rules.parse import parse_rules

RUNTIMES = ("v8", "luau", "python", "java")


def runtime_of(graph: HeapGraph) -> str | None:
    """Which default rule set a snapshot gets: the one its format declares, else the one its runtime
    names (snap.bin)."""
    declared = named(graph.meta.get("format"))
    if declared is not None and declared.default_rules is not None:
        return declared.default_rules
    runtime = str(graph.meta.get("runtime", "")).lower()
    return runtime if runtime in RUNTIMES else None


@cache
def default_rules(runtime: str) -> RuleSet:
    """The default rule set of ``runtime`` (one of :data:`RUNTIMES`)."""
    if runtime not in RUNTIMES:
        raise RuleError(None, f"no default rules for {runtime!r} (there are: {', '.join(RUNTIMES)})")
    text = resources.files(__package__).joinpath(f"{runtime}.toml").read_text(encoding="utf-8")
    return parse_rules(text, f"default rules for {runtime}")


def with_defaults(rules: RuleSet | None, graph: HeapGraph) -> tuple[RuleSet | None, str | None]:
    """``rules`` followed by the default rules of ``graph``'s runtime, and that runtime's name (None
    when it has no default rules). A team's rules come first, so their buckets win."""
    runtime = runtime_of(graph)
    if runtime is None:
        return rules, None
    defaults = default_rules(runtime)
    return (defaults if rules is None else rules.followed_by(defaults)), runtime


def default_group_names() -> frozenset[str]:
    """Every group of every default rule set: the names --disable-group takes besides a file's own."""
    return frozenset(name for runtime in RUNTIMES for name in default_rules(runtime).group_names)


def defaults_by_group(runtimes: tuple[str, ...] = RUNTIMES) -> dict[str, list[dict[str, Any]]]:
    """Per runtime, its default groups in file order: name, description, and how many rules of each
    kind it holds (``heapdb rules defaults``)."""
    listed: dict[str, list[dict[str, Any]]] = {}
    for runtime in runtimes:
        rules = default_rules(runtime)
        groups = []
        for group in rules.groups:
            kinds: dict[str, int] = {}
            for rule in rules.rules:
                if rule.group == group.name:
                    kinds[rule_kind(rule)] = kinds.get(rule_kind(rule), 0) + 1
            groups.append({"name": group.name, "description": group.description, "rules": kinds})
        listed[runtime] = groups
    return listed


def rule_kind(rule: Rule) -> str:
    """A rule's kind as a rule file names it (``KnownLeakRule`` -> ``known_leak``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(rule).__name__.removesuffix("Rule")).lower()
