"""Rules as data: rule files that say which references own, which are weak or ignored, and how objects
are bucketed, compiled into arrays the analysis takes.

- :func:`load_rules` / :func:`parse_rules`: a TOML rule file (docs/rules.md) -> a frozen :class:`RuleSet`;
  every problem is a :class:`heapdb.errors.RuleError` naming the file and line;
- :func:`compile_rules`: a rule set over one graph -> :class:`CompiledRules` (``edge_weight`` for
  :func:`heapdb.loader.analysis.analyze`, ``bucket`` / ``bucket_names`` per object);
- :func:`rules_summary`: what an analysis under the rules says about ownership and buckets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from heapdb.lazy import lazy_attributes
from heapdb.loader.rules.model import (
    DEFAULT_GROUP,
    FORMAT_VERSION,
    BucketRule,
    Group,
    IgnoreRule,
    InternalRule,
    KnownLeakRule,
    LifecycleRule,
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

if TYPE_CHECKING:
    from heapdb.loader.rules.compiler import CompiledRules, Selection, compile_rules
    from heapdb.loader.rules.summary import BucketRow, RulesSummary, rules_summary

    compile = compile_rules

# The compiler and the summary need the analysis, and so numba (a quarter of a second to import):
# they are imported on first use, so that what only parses rules (the questions' ignore lists, the
# rule-set listing) starts without them. The contract names the compiler ``compile``;
# ``compile_rules`` avoids shadowing the builtin inside this package, and both names work.
__getattr__ = lazy_attributes(
    __name__,
    {
        "CompiledRules": "compiler",
        "Selection": "compiler",
        "compile_rules": "compiler",
        "compile": "compiler:compile_rules",
        "BucketRow": "summary",
        "RulesSummary": "summary",
        "rules_summary": "summary",
    },
)


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
    "LifecycleRule",
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
