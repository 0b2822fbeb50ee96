"""What an analysis under rules says beyond retained sizes: ownership warnings and bucket totals.

``heapdb analyze`` prints this beside the ordinary report whenever rules apply (the runtime's default
rules, a team's rule file before them, or both). A frozen record; ``as_dict()``
gives its ``--json`` form.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from heapdb.loader.analysis import IGNORED, WEAK_WEIGHT, Analysis, group_figures
from heapdb.loader.graph import HeapGraph
from heapdb.loader.rules.compiler import CompiledRules

EXAMPLES = 5  # objects of ambiguous ownership listed by (type, id)


@dataclass(frozen=True)
class ObjectRef:
    type: str
    id: int


@dataclass(frozen=True)
class BucketRow:
    """One bucket: its reached members and what they retain, each byte counted once."""

    name: str
    objects: int  # reached members
    self_size: int  # their summed self sizes
    retained_size: int  # the summed retained sizes of the outermost members (no member dominates them)
    max_retained_size: int = 0  # the largest member's retained size


@dataclass(frozen=True)
class KnownLeakRow:
    """The objects one known_leak rule covers in this snapshot (those it names and everything they
    alone keep alive), each byte counted once: what `heapdb leaks` answers apart from new leaks."""

    reason: str
    link: str | None
    line: int  # where the rule starts in its file
    objects: int
    retained_size: int


@dataclass(frozen=True)
class RulesSummary:
    rules_file: str | None
    rules: int  # enabled rules
    disabled_groups: tuple[str, ...]
    unmatched_rule_lines: tuple[int, ...]  # applied rules that selected nothing in this snapshot
    ignored_references: int
    weak_references: int
    owned_references: int
    ambiguous_objects: int  # MSA's ambiguous ownership: two owners of the same highest weight
    ambiguous_examples: tuple[ObjectRef, ...]
    unowned_objects: int  # reached objects no owns rule owns (root and synthetic nodes aside)
    buckets: tuple[BucketRow, ...]  # largest retained size first
    known_leak_rules: int  # applied by loads (heapdb leaks), not shown by analyze
    verdict_rules: int  # applied by loads (object answers), not shown by analyze
    # The runtime whose default rules follow the team's (None: none apply) and their groups applied.
    default_rules: str | None = None
    default_groups: tuple[str, ...] = ()
    looked_through_objects: int = 0  # internal objects top retainers look through (as a load's `top`)
    transient_objects: int = 0  # objects transient rules select (besides V8's built-in root groups)
    known_leaks: tuple[KnownLeakRow, ...] = ()  # the known leaks found, largest retained first

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def rules_summary(
    graph: HeapGraph,
    result: Analysis,
    compiled: CompiledRules,
    *,
    rules_file: str | None = None,
    disabled_groups: tuple[str, ...] = (),
    default_rules: str | None = None,
    default_groups: tuple[str, ...] = (),
    looked_through: np.ndarray | None = None,
) -> RulesSummary:
    """Summarise ``result`` (an analysis run under ``compiled``: its ``edge_weight`` when weighted).

    ``rules_file`` names the team's rule file or stored set (None: the default rules alone);
    ``default_rules`` and ``default_groups`` say which runtime's default rules followed and which
    of their groups were on; ``looked_through`` (bool[n]) is what the top retainers looked through."""
    weight = compiled.edge_weight
    ambiguous = result.ambiguous
    examples = tuple(ObjectRef(graph.type_name(int(i)), int(graph.ids[int(i)])) for i in ambiguous[:EXAMPLES])

    counted = result.reachable & ~graph.synthetic_nodes()
    counted[result.root] = False
    unowned = int(np.count_nonzero(counted & (result.owner_weight <= 0)))

    return RulesSummary(
        rules_file=rules_file,
        rules=len(compiled.rules),
        disabled_groups=disabled_groups,
        unmatched_rule_lines=tuple(r.line for r in compiled.unmatched()),
        ignored_references=int(np.count_nonzero(weight == IGNORED)),
        weak_references=int(np.count_nonzero(weight == WEAK_WEIGHT)),
        owned_references=int(np.count_nonzero(weight > 0)),
        ambiguous_objects=int(len(ambiguous)),
        ambiguous_examples=examples,
        unowned_objects=unowned,
        buckets=bucket_rows(result, compiled),
        known_leak_rules=len(compiled.known_leaks),
        verdict_rules=len(compiled.verdicts),
        default_rules=default_rules,
        default_groups=default_groups,
        looked_through_objects=0 if looked_through is None else int(np.count_nonzero(looked_through)),
        transient_objects=0 if compiled.transient is None else int(np.count_nonzero(compiled.transient)),
        known_leaks=known_leak_rows(result, compiled),
    )


def known_leak_rows(result: Analysis, compiled: CompiledRules) -> tuple[KnownLeakRow, ...]:
    """Per known_leak rule that covers something: the objects it covers, spread down the dominator
    tree as a load spreads them, and what the outermost of them retain."""
    if compiled.known_leak is None:
        return ()
    from heapdb.loader.analysis import spread_down

    covered = spread_down(result, compiled.known_leak).astype(np.int32)
    reasons = tuple(str(i) for i in range(len(compiled.known_leaks)))  # by rule: two may share a reason
    rows = bucket_totals(result, covered, reasons)
    found = []
    for row in rows:
        rule = compiled.known_leaks[int(row.name)]
        if row.objects:
            found.append(KnownLeakRow(rule.reason, rule.link, rule.line, row.objects, row.retained_size))
    return tuple(found)


def bucket_rows(result: Analysis, compiled: CompiledRules) -> tuple[BucketRow, ...]:
    """Per bucket: reached members, their self sizes, and the retained size of the outermost ones."""
    return bucket_totals(result, compiled.bucket, compiled.bucket_names)


def bucket_totals(
    result: Analysis, bucket: np.ndarray, names: tuple[str, ...], self_size: np.ndarray | None = None
) -> tuple[BucketRow, ...]:
    """:func:`bucket_rows` from an analysis and each object's bucket (an index into ``names``, -1 for
    none): what ``analyze --rules`` prints and what a load stores on its snapshot (``buckets``, which
    ``diff --by bucket`` compares), computed in this one place. ``self_size``: the sizes to add up,
    when not the analysis' own (a load adds up the graph's)."""
    count = len(names)
    if count == 0:
        return ()
    member = (bucket >= 0) & result.reachable
    member[result.root] = False
    objects, own, retained, best = group_figures(result, np.where(member, bucket, -1), count, self_size=self_size)
    largest = np.where(best >= 0, result.retained_size[np.maximum(best, 0)], 0)
    rows = [
        BucketRow(name, int(objects[b]), int(own[b]), int(retained[b]), int(largest[b])) for b, name in enumerate(names)
    ]
    rows.sort(key=lambda r: (-r.retained_size, r.name))
    return tuple(rows)
