"""Answers as text for a terminal (the graph answers are drawn by :mod:`heapdb.renderers.drawing`).

Names come straight from the heap (any text at all), so control characters are shown as escapes,
and every name or type in a text or a drawing's label is cut (an ellipsis marks the cut): names to
:data:`NAME_WIDTH` characters, types and reference names to :data:`~heapdb.units.NAME_LIMIT`. The
full values stay in the database.
"""

from __future__ import annotations

import shlex

from heapdb import units
from heapdb.loader.graph import ROOT_NAME
from heapdb.loader.inspections.leak_status import PathLabels
from heapdb.queries.dominator_diff import DominatorDiff
from heapdb.queries.results import (
    Diff,
    DominatorChain,
    GrowthReport,
    Instances,
    LeakCluster,
    Leaks,
    Neighbour,
    ObjectDetails,
    ObjectDiff,
    ObjectInfo,
    ObjectRef,
    Reference,
    ReferenceLevel,
    Retains,
    SearchResults,
    Suspects,
    Turnover,
    TypeRow,
    WhyAlive,
    series_ends,
)
from heapdb.units import NAME_LIMIT, human_bytes

NAME_WIDTH = 40  # characters of an object's name shown in a label or a line


# --- text ------------------------------------------------------------------------------------


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """A name on one line, cut to ``width`` characters (default: an object's name in a label)."""
    return units.short_name(name, width)


def why_command(ref: ObjectRef) -> str:
    """The command line that asks why an object is alive, for text answers that point at one."""
    return f"heapdb why {shlex.quote(ref.tag)} {ref.id}"


def describe(o: ObjectInfo) -> str:
    """``Type name (self, retained) @id``, the way every text answer names an object."""
    name = short_name(o.name) or (ROOT_NAME if o.root else "")
    type_ = short_name(o.type, NAME_LIMIT)
    shown = f"{type_} {name}" if name and name != o.type else type_
    return f"{shown} ({human_bytes(o.self_size)}, retained {human_bytes(o.retained_size)}) @{o.id}"


def source_lines(o: ObjectInfo, indent: str) -> list[str]:
    """Where the object comes from, where the snapshot records it: its script position and its
    allocation stack (innermost first), one line each."""
    lines = []
    if o.location:
        lines.append(f"{indent}at {o.location}")
    if o.allocated_at:
        lines.append(f"{indent}allocated at {o.allocated_at}")
    return lines


def short_location(location: str, width: int = 60) -> str:
    """A location cut from the left to ``width`` characters: the file's name and line stay."""
    return location if len(location) <= width else "…" + location[-(width - 1) :]


def reference_label(r: Reference) -> str:
    """A reference's name as people read it: element indexes as ``[3]``."""
    if r.kind in ("element", "hidden") and r.name.isdigit():
        return f"[{short_name(r.name, NAME_LIMIT)}]"
    return short_name(r.name, 60)


def why_text(answer: WhyAlive) -> str:
    """Each path as an indented chain from the root: ``--[name]--> Type name (self, retained)``."""
    lines = [f"why is {describe(answer.target)} alive? (snapshot {answer.tag})"]
    lines += source_lines(answer.target, "  ")
    ignored = {k: v for k, v in answer.ignored.items() if v}
    if ignored:
        lines.append("ignoring " + "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in ignored.items()))
    if not answer.paths:
        if not answer.target.reachable:
            lines.append(
                "the root does not reach it over retaining references: it is garbage, kept only in the snapshot"
            )
        else:
            lines.append("no retaining path avoids the ignored references and objects")
    for number, path in enumerate(answer.paths, 1):
        labels = None if answer.leak_status is None else answer.leak_status[number - 1]
        lines.append("")
        lines.append(f"path {number} ({path.length} references):")
        lines.append(f"  {describe(path.objects[0])}")
        for i, (reference, held) in enumerate(zip(path.references, path.objects[1:])):
            weak = " (weak)" if reference.weak else ""
            at = f"  at {held.location}" if held.location else ""
            lines.append(f"    --[{reference_label(reference)}]-->{weak} {describe(held)}{at}")
            if labels is not None:
                lines += _leak_label_lines(labels, i)
    return "\n".join(lines)


def _leak_label_lines(labels: PathLabels, reference: int) -> list[str]:
    """Under a Java path's object: its leak status and why, and ``~~~`` when the reference from it
    is a suspect (LeakCanary's marks)."""
    label = labels.objects[reference + 1]
    found = []
    if label.status:
        found.append(f"         {label.status}" + (f": {label.reason}" if label.reason else ""))
        found += [f"         note: {note}" for note in label.notes]
    if reference + 1 in labels.suspects:
        found.append("         ~~~ suspect: the reference below may be the leak")
    return found


def dominators_text(answer: DominatorChain) -> str:
    """The dominator chain, root first, one level of indentation per step."""
    lines = [f"dominators of {describe(answer.target)} (snapshot {answer.tag}), root first:"]
    if not answer.chain:
        lines.append("  none: the root does not reach it")
    for depth, o in enumerate(answer.chain):
        lines.append("  " * (depth + 1) + describe(o))
    return "\n".join(lines)


def retains_text(answer: Retains) -> str:
    """The dominated subtree as an indented tree."""
    children: dict[int, list[ObjectInfo]] = {}
    by_id = {o.id: o for o in answer.objects}
    for parent, child in answer.edges:
        children.setdefault(parent, []).append(by_id[child])
    lines = [
        f"{describe(answer.target)} keeps alive {answer.target.retained_count:,} objects, {human_bytes(answer.target.retained_size)} (snapshot {answer.tag}):"
    ]

    def walk(o: ObjectInfo, depth: int) -> None:
        lines.append("  " * depth + describe(o))
        for child in children.get(o.id, []):
            walk(child, depth + 1)

    walk(answer.target, 0)
    if answer.truncated:
        lines.append(f"(cut at depth {answer.depth} / {answer.limit} objects; raise --depth or --limit for more)")
    return "\n".join(lines)


def objects_table(objects: list[ObjectInfo]) -> str:
    """Objects as aligned columns: id, type, name, self size, retained size, distance."""
    header = f"{'id':>14}  {'type':<28} {'name':<32} {'self':>10} {'retained':>11} {'distance':>8}"
    rows = [
        f"{o.id:>14}  {short_name(o.type, 28):<28} {short_name(o.name, 32):<32} {human_bytes(o.self_size):>10} "
        f"{human_bytes(o.retained_size):>11} {'' if o.distance is None else o.distance:>8}"
        for o in objects
    ]
    return "\n".join([header, *rows])


def types_table(rows: list[TypeRow]) -> str:
    header = f"{'type':<40} {'count':>10} {'self size':>11} {'retained':>15} {'max retained':>13}"
    lines = [
        f"{short_name(r.type):<40} {r.count:>10,} {human_bytes(r.self_size):>11} {human_bytes(r.retained_size):>15} {human_bytes(r.max_retained_size):>13}"
        for r in rows
    ]
    return "\n".join(
        [
            header,
            *lines,
            "(retained: what the type's objects hold together, each byte once; max retained: the largest single object's)",
        ]
    )


def _signed(n: int, bytes_: bool = False) -> str:
    text = human_bytes(abs(n)) if bytes_ else f"{abs(n):,}"
    return ("+" if n > 0 else "-" if n < 0 else " ") + text


def diff_text(answer: Diff | ObjectDiff | DominatorDiff) -> str:
    """A diff as a table: one type, path or bucket per line, largest growth first."""
    if isinstance(answer, ObjectDiff):
        return object_diff_text(answer)
    if isinstance(answer, DominatorDiff):
        from heapdb.renderers.dominator_text import dominator_diff_text  # it builds on this module's helpers

        return dominator_diff_text(answer)
    lines = [f"{answer.before} → {answer.after}, by {answer.by}, largest growth first"]
    lines.append(f"{'objects':>9} {'Δ objects':>11} {'size':>11} {'Δ size':>12} {'Δ retained':>12}  {answer.by}")
    for c in answer.changes:
        label = short_name(c.label) if answer.by == "type" else c.label
        if c.inspection is not None:
            label = f"{c.inspection}: {label}"
        lines.append(
            f"{c.count_after:>9,} {_signed(c.count_delta):>11} {human_bytes(c.size_after):>11} "
            f"{_signed(c.size_delta, True):>12} {_signed(c.retained_delta, True):>12}  {label}"
        )
        lines.extend(rule_lines(c.verdict, c.known_leak, " " * 11))
    if answer.by == "bucket":
        lines.append("(retained: what the bucket's outermost members hold, each byte once; size: its members' own)")
    if answer.by == "inspection":
        if not answer.changes:
            lines.append("(no inspection row changed)")
        lines.append(
            "(objects: copies, trees, fibers, collections, leaking or outermost held objects, globals; size: the bytes "
            "the gate compares, wasted by copies, retained by detached trees, unmounted fibers, leaking objects, "
            "held groups, globals and components, unused by collections)"
        )
        lines += [f"note: {n}" for n in answer.notes]
    return "\n".join(lines)


def object_diff_text(answer: ObjectDiff) -> str:
    """Per type, new / survived / freed objects (count and self size), then the largest new objects."""
    lines = [f"{answer.before} → {answer.after}, by object (matched by id and type), most new bytes first"]
    if answer.warnings:
        lines.append("UNSAFE: ids may not name the same objects in both snapshots (see the warnings)")
    lines.append(f"{'new':>9} {'new size':>11} {'survived':>9} {'size':>11} {'freed':>9} {'freed size':>11}  type")

    def row(t: Turnover) -> str:
        return (
            f"{t.new_count:>9,} {human_bytes(t.new_size):>11} {t.survived_count:>9,} {human_bytes(t.survived_size):>11} "
            f"{t.freed_count:>9,} {human_bytes(t.freed_size):>11}  {short_name(t.type)}"
        )

    lines += [row(t) for t in answer.types]
    lines.append(row(answer.total))
    samples = [s for t in answer.types for s in t.samples]
    if samples:
        lines.append("")
        lines.append("largest new objects, and why each is alive:")
        for t in answer.types:
            for s in t.samples:
                lines.append(
                    f"  {short_name(t.type)} @{s.id}: self {human_bytes(s.self_size)}, retained {human_bytes(s.retained_size)}"
                    f"  ({why_command(s.why)})"
                )
                if s.location:
                    lines.append(f"    at {s.location}")
                if s.allocated_at:
                    lines.append(f"    allocated at {s.allocated_at}")
    return "\n".join(lines)


def growth_flamegraph(answer: Diff) -> str | None:
    """A diff by path as a flame graph of what grew (width = bytes); None when nothing grew."""
    from heapdb.renderers.flamegraph import build_tree, render_svg

    grown = [(c.hops, c.size_delta, max(c.count_delta, 0)) for c in answer.changes if c.size_delta > 0]
    if not grown:
        return None
    return render_svg(build_tree(grown), f"Growth from {answer.before} to {answer.after}, by retainer path")


def leaks_text(answer: Leaks) -> str:
    """Leak candidate clusters, each with its path and a why-alive permalink."""
    if answer.by == "path":
        lines = [
            (
                f"retainer paths that gained objects from {answer.baseline} to {answer.target} and kept them in {answer.final};"
                " most bytes gained first (baseline → final)"
            ),
        ]
    else:
        lines = [
            f"allocated after {answer.baseline}, present in {answer.target}, still alive in {answer.final}; largest first"
        ]
    if answer.warnings:
        lines.append("UNSAFE: ids may not name the same objects in all snapshots (see the warnings)")
    for i, c in enumerate(answer.clusters, 1):
        if answer.by == "path" and c.counts:
            counts = " → ".join(f"{n:,}" for n in c.counts)
            lines.append(
                f"{i:>2}. {_signed(c.objects).strip()} × {short_name(c.type, NAME_LIMIT)} ({counts}): retain {_signed(c.retained_size, True).strip()} (self {_signed(c.self_size, True).strip()})"
            )
        else:
            lines.append(
                f"{i:>2}. {c.objects:,} × {short_name(c.type, NAME_LIMIT)}: retain {human_bytes(c.retained_size)} (self {human_bytes(c.self_size)})"
            )
        lines.extend(_cluster_lines(c))
    if not answer.clusters:
        lines.append("no leak candidates" + (" besides the known leaks below" if answer.known else ""))
    if answer.known:
        lines.append("known leaks (the rules' known_leak), largest first")
        for i, c in enumerate(answer.known, 1):
            assert c.known_leak is not None
            link = f" ({c.known_leak.link})" if c.known_leak.link else ""
            lines.append(
                f"{i:>2}. {c.objects:,} × {short_name(c.type, NAME_LIMIT)}: retain {human_bytes(c.retained_size)}"
                f" (self {human_bytes(c.self_size)}); known: {c.known_leak.reason}{link}"
            )
            lines.extend(_cluster_lines(c))
    return "\n".join(lines)


def rule_lines(verdict: str | None, known_leak: str | None, indent: str) -> list[str]:
    """What the rules say of a row's path (its largest object's verdict and known leak), one line each."""
    lines = [f"{indent}verdict: {verdict}"] if verdict else []
    if known_leak:
        lines.append(f"{indent}known: {known_leak}")
    return lines


def _cluster_lines(c: LeakCluster) -> list[str]:
    lines = [f"    held by: {c.path}"]
    if c.location:
        lines.append(f"    at {c.location}")
    if c.allocated_at:
        lines.append(f"    allocated at {c.allocated_at}")
    if c.verdict:
        lines.append(f"    verdict: {c.verdict}")
    lines.append(f"    e.g. ids {', '.join(map(str, c.sample_ids))}; why: {why_command(c.why)}")
    return lines


def _series(values: list[str]) -> str:
    """A series joined by arrows; a long one's ends (:func:`series_ends`), saying how many are left out."""
    head, tail = series_ends(values)
    return " → ".join([*head, *([f"… {len(values) - len(head) - len(tail):,} more …", *tail] if tail else [])])


def growth_text(answer: GrowthReport) -> str:
    """Types or paths that grew at every step, with their per-snapshot series of count and size."""
    lines = [f"{answer.by}s whose size grew at every step across {_series(answer.tags)}; most growth first"]
    for i, g in enumerate(answer.rows, 1):
        lines.append(
            f"{i:>2}. {_signed(g.size_growth, True).strip()}, {_signed(g.count_growth).strip()} objects  {short_name(g.label) if answer.by == 'type' else g.label}"
        )
        lines.append(f"    objects: {_series([f'{n:,}' for n in g.counts])}")
        lines.append(f"    size:    {_series([human_bytes(n) for n in g.sizes])}")
        lines.extend(rule_lines(g.verdict, g.known_leak, "    "))
    if not answer.rows:
        lines.append(f"no {answer.by} grew at every step")
    return "\n".join(lines)


def suspects_text(answer: Suspects) -> str:
    """MAT-style suspects: big objects with their accumulation points, then big types."""
    lines = [
        (
            f"leak suspects in {answer.tag}: retaining at least {answer.share * 100:g}% of the reachable heap "
            f"({human_bytes(answer.min_retained)} of {human_bytes(answer.reachable_size)})"
        ),
    ]
    if answer.objects:
        lines.append("objects (the topmost of each dominator chain):")
    for i, s in enumerate(answer.objects, 1):
        a = s.accumulation
        lines.append(f"{i:>2}. {describe(s.object)}: {s.share:.1%} of the heap")
        lines += source_lines(s.object, "    ")
        lines.append(f"    why: {why_command(s.why)}")
        if a.depth == 0:
            where = "is its own accumulation point"
        else:
            where = f"accumulates {a.depth} step{'s' if a.depth > 1 else ''} down in {describe(a.object)}"
        held = (
            f"{a.children:,} dominated children, the largest holds {a.largest_child_share:.0%}"
            if a.children
            else "it dominates nothing else"
        )
        lines.append(f"    {where}: {held}  (heapdb retains {answer.tag} {a.object.id})")
    if not answer.objects:
        lines.append("no single object retains that much")
    if answer.types:
        lines.append("types:")
        for t in answer.types:
            lines.append(
                f"    {short_name(t.type):<40} {t.count:>10,} objects  retain {human_bytes(t.retained_size):>10}  {t.share:.1%}"
            )
    else:
        lines.append("no type retains that much")
    return "\n".join(lines)


def _not_retaining(n: Neighbour) -> str:
    """Why a reference keeps nothing alive: weak by the runtime's rules, or dropped by the snapshot's."""
    if n.reference.weak:
        return " (weak)"
    return " (not retaining under the rules)" if n.reference.dropped else ""


def object_text(answer: ObjectDetails) -> str:
    o = answer.object
    lines = [
        describe(o),
        f"  kind {o.kind}, {o.retained_count:,} objects retained, distance {o.distance if o.distance is not None else 'unreachable'}"
        + (", detached" if o.detached else "")
        + (", the snapshot's root" if o.root else ""),
    ]
    lines += source_lines(o, "  ")
    if o.verdict:
        lines.append(f"  verdict: {o.verdict}")
    if o.known_leak:
        lines.append(f"  part of a known leak: {o.known_leak}")
    if answer.values:
        lines += ["values:", *(f"  {' '.join(filter(None, (v.type, v.name)))} = {v.value}" for v in answer.values)]
    lines += [
        f"referenced by ({len(answer.incoming)} of {answer.incoming_count}):",
    ]
    lines += [
        f"  {describe(n.object)} --[{reference_label(n.reference)}]-->{_not_retaining(n)}" for n in answer.incoming
    ]
    lines.append(f"references ({len(answer.outgoing)} of {answer.outgoing_count}):")
    lines += [
        f"  --[{reference_label(n.reference)}]-->{_not_retaining(n)} {describe(n.object)}" for n in answer.outgoing
    ]
    return "\n".join(lines)


def _page_note(shown: int, offset: int, total: int, more: str = "") -> str:
    """ "objects 51-100 of 4,210" for a page of a longer list (nothing for an empty one)."""
    if not shown:
        return f"none of {total:,}" if total else "none"
    return f"{offset + 1:,}-{offset + shown:,} of {total:,}{more}"


def instances_text(answer: Instances) -> str:
    """A page of a type's objects as a table, with where it stands in the whole."""
    order = "nearest the root first" if answer.sort == "distance" else f"largest {answer.sort.replace('_', ' ')} first"
    more = " or more" if answer.counted_to is not None and answer.total >= answer.counted_to else ""
    note = _page_note(len(answer.objects), answer.offset, answer.total, more)
    held = f" held by {answer.path}" if answer.path else ""
    return "\n".join([f"{answer.type} in {answer.tag}{held}: {note}, {order}", objects_table(answer.objects)])


def references_text(answer: ReferenceLevel) -> str:
    """A page of an object's retainers (``in``) or of what it references (``out``)."""
    heading = "referenced by" if answer.direction == "in" else "references"
    lines = [describe(answer.object), f"{heading} ({_page_note(len(answer.references), answer.offset, answer.total)}):"]
    for n in answer.references:
        arrow = f"--[{reference_label(n.reference)}]-->{_not_retaining(n)}"
        lines.append(
            f"  {describe(n.object)} {arrow}" if answer.direction == "in" else f"  {arrow} {describe(n.object)}"
        )
    return "\n".join(lines)


def search_text(answer: SearchResults) -> str:
    """What a search found: the object with that id, then types, then strings."""
    lines = [f"{answer.mode} {answer.text!r} in {answer.tag}:"]
    lines.append(f"object with that id: {describe(answer.object)}" if answer.object else "no object with that id")
    lines.append(f"types ({_page_note(len(answer.types), answer.offset, answer.type_total)}):")
    lines += [f"  {r.type} ({r.count:,} objects, {human_bytes(r.retained_size)} retained)" for r in answer.types]
    more = " or more" if answer.string_total >= answer.counted_to else ""
    lines.append(f"strings ({_page_note(len(answer.strings), answer.offset, answer.string_total, more)}):")
    lines += [f"  {describe(o)}" for o in answer.strings]
    return "\n".join(lines)
