"""Rules as data: rule files that say which references own, which are weak or ignored, and how objects
are bucketed, compiled into arrays the analysis takes.

- :func:`load_rules` / :func:`parse_rules`: a TOML rule file (docs/rules.md) -> a frozen :class:`RuleSet`;
  every problem is a :class:`heapdb.errors.RuleError` naming the file and line;
- :func:`compile_rules`: a rule set over one graph -> :class:`CompiledRules` (``edge_weight`` for
  :func:`heapdb.loader.analysis.analyze`, ``bucket`` / ``bucket_names`` per object);
- :func:`rules_summary`: what an analysis under the rules says about ownership and buckets.
"""

from __future__ import annotations

from heapdb.loader.rules.compiler import CompiledRules, Selection, compile_rules
from heapdb.loader.rules.model import (
    DEFAULT_GROUP,
    FORMAT_VERSION,
    BucketRule,
    Group,
    IgnoreRule,
    InternalRule,
    KnownLeakRule,
    Match,
    ObjectSelector,
    OwnsRule,
    Pattern,
    PatternKind,
    ReferenceSelector,
    Rule,
    RuleSet,
    Step,
    TransientRule,
    VerdictRule,
    WeakRule,
)
from heapdb.loader.rules.parse import RULE_KINDS, load_rules, parse_rules
from heapdb.loader.rules.summary import BucketRow, RulesSummary, rules_summary

# The contract names the compiler ``compile``; ``compile_rules`` avoids shadowing the builtin inside
# this package, and both names work.
compile = compile_rules

__all__ = [
    "DEFAULT_GROUP",
    "FORMAT_VERSION",
    "RULE_KINDS",
    "BucketRow",
    "BucketRule",
    "CompiledRules",
    "Group",
    "IgnoreRule",
    "InternalRule",
    "KnownLeakRule",
    "Match",
    "ObjectSelector",
    "OwnsRule",
    "Pattern",
    "PatternKind",
    "ReferenceSelector",
    "Rule",
    "RuleSet",
    "RulesSummary",
    "Selection",
    "Step",
    "TransientRule",
    "VerdictRule",
    "WeakRule",
    "compile",
    "compile_rules",
    "load_rules",
    "parse_rules",
    "rules_summary",
]
