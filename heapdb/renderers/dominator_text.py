"""``heapdb diff A B --by dominator`` as text: where the growth concentrates, then the groups below
one group of the dominator tree, each with its largest members and its key to drill with."""

from __future__ import annotations

import shlex

from heapdb.queries.dominator_diff import DominatorDiff, DominatorGroup
from heapdb.renderers.text import _signed, short_name, why_command
from heapdb.units import NAME_LIMIT, human_bytes


def dominator_diff_text(answer: DominatorDiff) -> str:
    """The groups below one group of the dominator tree, largest retained growth first, each with its
    largest members; first the one-line answer: where the growth concentrates, and where it splits."""

    def grew(g: DominatorGroup) -> str:
        plural = "" if g.objects_after == 1 else "s"
        members = f"by {g.objects_after:,} object{plural} ({g.objects_before:,} before)" if g.hops else "in all"
        return f"{_signed(g.retained_delta, True).strip()} retained {members}"

    under = answer.under
    lines = [
        f"{answer.before} → {answer.after}, by dominator: objects grouped by the types of their chain of dominators, "
        "largest retained growth first",
        f"below: {under.label or '(the root)'}: {grew(under)}" + (f"  [{under.key}]" if under.hops else ""),
    ]
    if answer.concentration:
        last = answer.concentration[-1]
        lines.append(f"growth concentrates in: {last.label}: {grew(last)}  [{last.key}]")
    else:
        lines.append("growth concentrates in no single group below it")
    if answer.split:
        lines.append(
            "  then splits: "
            + ", ".join(f"{short_name(g.hops[-1], NAME_LIMIT)} {_signed(g.retained_delta, True)}" for g in answer.split)
        )
    lines.append(
        f"{'objects':>9} {'Δ objects':>11} {'retained':>11} {'Δ retained':>12} {'Δ self':>12}  {'key':<16}  type"
    )
    for g in answer.changes:
        lines.append(
            f"{g.objects_after:>9,} {_signed(g.objects_delta):>11} {human_bytes(g.retained_after):>11} "
            f"{_signed(g.retained_delta, True):>12} {_signed(g.self_delta, True):>12}  {g.key}  {short_name(g.hops[-1], NAME_LIMIT)}"
        )
        for s in g.samples:
            lines.append(f"{'':>11}@{s.id}: retained {human_bytes(s.retained_size)}  ({why_command(s.why)})")
    if not answer.changes:
        lines.append("(no group below it in either snapshot)")
    command = f"heapdb diff {shlex.quote(answer.before)} {shlex.quote(answer.after)} --by dominator --under"
    lines.append(f"drill into a group: {command} KEY")
    if under.hops:
        up = answer.trail[-2] if len(answer.trail) > 1 else None
        lines.append(f"one level up: {command} {up}" if up else f"one level up: {command.removesuffix(' --under')}")
    return "\n".join(lines)
