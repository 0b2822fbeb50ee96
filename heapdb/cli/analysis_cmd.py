"""``heapdb analyze``: dominators and retained sizes of one snapshot, in process, no database."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click
import numpy as np

from heapdb.cli import main
from heapdb.cli.steps import (
    analyse_with_progress,
    analysis_options,
    choose_rules,
    read_with_progress,
    refuse_groups_without_rules,
    rules_options,
)
from heapdb.errors import HeapdbError, RuleError
from heapdb.loader import analysis, formats, views
from heapdb.loader.analysis import Semantics
from heapdb.loader.graph import HeapGraph
from heapdb.loader.inspections import (
    collections,
    dom,
    fill,
    held,
    lifecycles,
    objects,
    react,
    react_hooks,
    strings,
    unbound,
)
from heapdb.loader.owners.table import owners_table, owners_text
from heapdb.loader.report import AnalysisReport, analysis_report
from heapdb.loader.rules import CompiledRules, RulesSummary, compile_rules, rules_summary
from heapdb.loader.rules.defaults import default_rules
from heapdb.units import human_bytes, short_name

if TYPE_CHECKING:
    from heapdb.db import Database

LABEL_WIDTH = 80  # characters of "type / name" per line of the text report


def print_report(report: AnalysisReport) -> None:
    """The report as text for a person."""
    click.echo(f"{report.file}  ({report.format}, {report.semantics} semantics)")
    click.echo(f"  objects      {report.objects:>14,}    references {report.references:,}")
    click.echo(f"  total size   {human_bytes(report.total_self_size):>14}")
    click.echo(f"  reachable    {human_bytes(report.reachable_size):>14}    {report.reachable_objects:,} objects")
    click.echo(f"  unreachable  {report.unreachable_objects:>14,} objects")
    click.echo(f"  root retains {human_bytes(report.root.retained_size):>14}")
    for title, rows in (("Roots", report.roots), ("Top retainers", report.top_retainers)):
        click.echo("")
        click.echo(f"{title}:")
        click.echo(f"  {'retained':>10}  {'objects':>9}  {'dist':>4}  {'id':>12}  type / name")
        for row in rows:
            label = row.type if row.name in ("", row.type) else f"{row.type} / {row.name}"
            click.echo(
                f"  {human_bytes(row.retained_size):>10}  {row.retained_count:>9,}  {row.distance:>4}  "
                f"{row.id:>12}  {short_name(label, LABEL_WIDTH)}"
            )
            if row.location:
                click.echo(f"  {'':>43}at {row.location}")


def rules_heading(summary: RulesSummary) -> str:
    """Which rules an analysis applied, in one line: the team's file or stored set, then the
    runtime's default rules with the groups of theirs that were on, and the groups switched off."""
    said = [] if summary.rules_file is None else [summary.rules_file]
    if summary.default_rules is not None:
        groups = ", ".join(summary.default_groups) or "every group off"
        said.append(f"the {summary.default_rules} default rules [{groups}]")
    off = f", groups off: {', '.join(summary.disabled_groups)}" if summary.disabled_groups else ""
    return f"Rules: {', then '.join(said) or 'none'} ({summary.rules} rules{off})"


def print_rules(summary: RulesSummary) -> None:
    """The ownership warnings and bucket totals of an analysis under rules, as text."""
    click.echo("")
    click.echo(rules_heading(summary))
    click.echo(
        f"  references   {summary.ignored_references:,} ignored, {summary.weak_references:,} weak, "
        f"{summary.owned_references:,} owning"
    )
    if summary.unmatched_rule_lines:
        lines = ", ".join(str(line) for line in summary.unmatched_rule_lines)
        click.echo(f"  warning: rules that match nothing in this snapshot, at lines {lines}")
    if summary.ambiguous_objects:
        examples = ", ".join(f"{short_name(o.type, 40)} @{o.id}" for o in summary.ambiguous_examples)
        more = ", ..." if summary.ambiguous_objects > len(summary.ambiguous_examples) else ""
        click.echo(
            f"  warning: {summary.ambiguous_objects:,} objects of ambiguous ownership "
            f"(owned by two objects with the same weight): {examples}{more}"
        )
    else:
        click.echo(f"  ambiguous    {0:>14,} objects owned by two objects with the same weight")
    if summary.owned_references:  # with no owns rule at all, every object is unowned: nothing to say
        click.echo(f"  unowned      {summary.unowned_objects:>14,} reached objects no owns rule owns")
    if summary.looked_through_objects:
        click.echo(
            f"  looked through {summary.looked_through_objects:>12,} internal objects the top retainers name "
            "the program's objects below"
        )
    if summary.transient_objects:
        click.echo(f"  transient    {summary.transient_objects:>14,} objects first paths and distances go through last")
    if summary.known_leak_rules or summary.verdict_rules:
        click.echo(
            f"  applied at load: {summary.known_leak_rules} known_leak and {summary.verdict_rules} verdict rules "
            "(`heapdb load` marks the objects; leak and object answers show them)"
        )
    if summary.known_leaks:
        click.echo("")
        click.echo("Known leaks (known_leak rules: reported apart from new leaks):")
        click.echo(f"  {'retained':>10}  {'objects':>9}  reason")
        for leak in summary.known_leaks:
            link = f" ({leak.link})" if leak.link else ""
            click.echo(f"  {human_bytes(leak.retained_size):>10}  {leak.objects:>9,}  {leak.reason}{link}")
    if summary.buckets:
        click.echo("")
        click.echo("Buckets:")
        click.echo(f"  {'retained':>10}  {'self':>10}  {'objects':>9}  bucket")
        for row in summary.buckets:
            click.echo(
                f"  {human_bytes(row.retained_size):>10}  {human_bytes(row.self_size):>10}  {row.objects:>9,}  "
                f"{short_name(row.name, LABEL_WIDTH)}"
            )


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=0), help="How many retainers to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--semantics",
    type=click.Choice(["auto", *(s.value for s in Semantics)]),
    default="auto",
    show_default=True,
    help="Retention rules: v8 follows memlab exactly; auto picks v8 for V8 snapshots.",
)
@click.option(
    "--devtools-sizes",
    is_flag=True,
    help="Move the size of hidden/array backing stores onto their owner, as Chrome DevTools shows it.",
)
@rules_options
@click.option(
    "--root",
    "root_id",
    type=int,
    metavar="ID",
    help="Analyse as if the object with this id were the only root: what it reaches, dominates and retains.",
)
@click.option(
    "--lifelines",
    "lifelines_type",
    metavar="TYPE",
    help="Also merge the first retainer paths of the objects of TYPE into one tree, with counts per step.",
)
@click.option(
    "--name",
    "name_contains",
    default="",
    metavar="TEXT",
    help="With --lifelines: only objects whose name contains TEXT.",
)
@click.option(
    "--limit",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="With --lifelines: branches to show per step (the rest summed up in one line).",
)
@click.option(
    "--heapdomstats",
    "domstats",
    is_flag=True,
    help="Also list, per type, the objects no object below the root owns (their immediate dominator is the "
    "root or a root group); --top types.",
)
@click.option(
    "--strings",
    "dup_strings",
    is_flag=True,
    help="Also list the duplicated string contents that waste most, with their owners (memlab's `string` "
    "analysis, number for number); --top contents.",
)
@click.option(
    "--dup-objects",
    "dup_objects",
    is_flag=True,
    help="Also list the duplicated object contents that waste most, with their owners (V8: memlab's "
    "`object-shallow` analysis, number for number; Java: primitive arrays with equal elements); --top contents.",
)
@click.option(
    "--dom",
    "detached_dom",
    is_flag=True,
    help="Also list the detached DOM (V8 snapshots of a browser), grouped by the path that holds it, and its "
    "largest objects (memlab's `detached-DOM` analysis, object for object); --top paths.",
)
@click.option(
    "--react",
    "unmounted",
    is_flag=True,
    help="Also list the React components unmounted but still alive (V8 snapshots of a page), by component, "
    "with what holds each (memlab's `unmounted-fiber-node` analysis); --top components.",
)
@click.option(
    "--react-hooks",
    "by_hooks",
    is_flag=True,
    help="Also list memory by React component (V8 snapshots of a page): its fibers, what they retain, and the "
    "hooks of one of them (memlab's `react-hooks` analysis); --top components.",
)
@click.option(
    "--stale",
    "stale",
    is_flag=True,
    help="Also list the Maps, Sets and Arrays that still reference detached DOM or unmounted React fibers "
    "(memlab's `collections-with-stale` analysis); --top collections.",
)
@click.option(
    "--held",
    "by_holders",
    is_flag=True,
    help="Also list what event listeners, the console and closures alone keep alive (V8 snapshots; Chrome "
    "DevTools' filters), grouped by the path that reaches it, and the global variables the program added "
    "(memlab's `global-variable` analysis); --top paths and globals.",
)
@click.option(
    "--fill",
    "by_fill",
    is_flag=True,
    help="Also list the collections by fill (Java collections and object arrays, V8 Maps, Sets and Arrays): "
    "per type how many are empty and how full, and those whose unused capacity takes most bytes (Eclipse "
    "MAT's collection and array fill ratios); --top collections.",
)
@click.option(
    "--lifecycles",
    "by_lifecycles",
    is_flag=True,
    help="Also list the Java and Android objects past their lifecycle (hprof): destroyed Activities, detached "
    "Views... grouped by the references suspected of keeping them, each with its labelled path (LeakCanary's "
    "Shark); --top groups.",
)
@click.option(
    "--owners",
    "by_owner",
    is_flag=True,
    help="Also list who owns the memory: per npm package and script (V8), package and class loader (Java), "
    "category and script (Luau), namespace (.NET), package and module (Python), package and library (Dart), "
    "each owner's objects, self and retained size; bucket rules name owners first; --top owners per level.",
)
@click.option(
    "--unbound",
    "later",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    metavar="LATER",
    help="Also list the collections, objects and shapes that grew at every step from FILE through each LATER "
    "snapshot of the same process (repeat it, oldest first; V8), with their series (memlab's unbound-*); --top "
    "rows each.",
)
def analyze(
    file: str,
    top: int,
    as_json: bool,
    semantics: str,
    devtools_sizes: bool,
    rules: str | None,
    disabled: tuple[str, ...],
    root_id: int | None,
    lifelines_type: str | None,
    name_contains: str,
    limit: int,
    domstats: bool,
    dup_strings: bool,
    dup_objects: bool,
    detached_dom: bool,
    unmounted: bool,
    by_hooks: bool,
    stale: bool,
    by_fill: bool,
    by_holders: bool,
    by_lifecycles: bool,
    by_owner: bool,
    later: tuple[str, ...],
) -> None:
    """Dominators, retained sizes and root distances of a snapshot FILE (any format), without Neo4j.

    The rules are chosen as `heapdb load` chooses them (docs/rules.md): the runtime's default rules
    apply unless --rules none (they change no size; the top retainers look through the engine's
    own objects to the program's, as a load's `top` does); --rules FILE puts a team's rule file
    before them; --rules NAME reads a rule set stored with `heapdb rules add` from the database
    (the only case that needs Neo4j). --rules none gives the plain, engine-level analysis.
    --lifelines, --heapdomstats, --strings, --dup-objects, --dom, --react, --react-hooks, --stale, --fill,
    --held and --owners add views of the same analysis
    (under the rules and --root too).
    """
    refuse_groups_without_rules(rules, disabled)
    if name_contains and lifelines_type is None:
        raise click.UsageError("--name needs --lifelines")
    # The rules are read and checked first: a bad rule file fails before a long read of the snapshot.
    choice = choose_rules(rules, disabled_groups=disabled, connect=_connect_for(rules))
    _refuse_inspections_of(file, dup_strings, detached_dom or unmounted or by_hooks or stale)  # before a long read
    _refuse_fill_of(file, by_fill)
    if by_holders and not held.shows_held(formats.detect(file).name):
        raise click.UsageError(
            f"--held: {formats.detect(file).name} snapshots hold no JavaScript listeners or closures"
        )
    if by_lifecycles and not formats.detect(file).lifecycles:
        raise click.UsageError(f"--lifecycles: {formats.detect(file).name} snapshots show no Java classes and fields")
    if dup_objects and formats.detect(file).duplicates is None:
        raise click.UsageError(
            f"--dup-objects: heapdb does not compare the objects of {formats.detect(file).name} snapshots"
        )
    _, graph = read_with_progress(file)
    rule_set, runtime = (None, None) if choice is None else choice.for_graph(graph)
    compiled = None if rule_set is None else compile_rules(rule_set, graph)
    options: dict[str, Any] = {} if compiled is None else analysis_options(compiled)
    if root_id is not None:
        options["root"] = _node_of(graph, root_id)
    result = analyse_with_progress(
        graph, semantics=None if semantics == "auto" else semantics, devtools_sizes=devtools_sizes, **options
    )
    # Only what the top retainers look through is kept, not each object's holder beyond it: the
    # report ranks the objects next, which sets this command's peak memory.
    through = None
    if compiled is not None and compiled.internal is not None:
        through = analysis.look_through(result, compiled.internal).through
    report = analysis_report(file, graph, result, top, looked_through=through)
    summary = None
    if compiled is not None:
        assert choice is not None
        summary = rules_summary(
            graph,
            result,
            compiled,
            rules_file=choice.name,
            disabled_groups=choice.disabled_groups,
            default_rules=runtime,
            default_groups=_default_groups_on(compiled, runtime),
            looked_through=through,
        )
    # The views asked for, each with its JSON key and text renderer, in the order they print.
    extras: list[tuple[str, Any, Callable[[Any], str]]] = []
    if lifelines_type is not None:
        rows = views.lifeline_rows(graph, result, lifelines_type, name_contains)
        tree = views.lifelines(rows, source=file, type_name=lifelines_type, name_contains=name_contains, limit=limit)
        extras.append(("lifelines", tree, views.lifelines_text))
    if domstats:
        floating = views.heapdomstats(
            views.heapdomstats_rows(graph, result), source=file, reachable_size=result.reachable_size, limit=top
        )
        extras.append(("heapdomstats", floating, views.heapdomstats_text))
    # The strings' contents, read once where both inspections read them (a V8 object's string values).
    found = strings.string_contents(graph) if dup_strings and dup_objects else None
    if dup_strings:
        extras.append(
            (
                "strings",
                strings.duplicate_strings(graph, result, source=file, limit=top, found=found),
                strings.duplicate_strings_text,
            )
        )
    if dup_objects:
        copies = objects.duplicate_objects(graph, result, source=file, limit=top, found=found)
        extras.append(("dup_objects", copies, objects.duplicate_objects_text))
    if detached_dom or unmounted or stale or by_fill or by_holders or by_lifecycles:
        from heapdb.loader.paths import first_paths

        paths = first_paths(graph, result.retaining, result.transient)
        if detached_dom:
            extras.append(
                ("dom", dom.detached_dom(graph, result, paths, source=file, limit=top), dom.detached_dom_text)
            )
        if unmounted:
            fibers = react.unmounted_fibers(graph, result, paths, source=file, limit=top)
            extras.append(("react", fibers, react.unmounted_fibers_text))
        if stale:
            marked = collections.stale_objects(graph, result)
            assert marked is not None  # the format was checked before the read
            holding = collections.stale_collections(graph, result, paths, marked, source=file, limit=top)
            extras.append(("stale", holding, collections.stale_collections_text))
        if by_fill:
            filled = fill.collection_fill(graph, result, paths, source=file, limit=top)
            extras.append(("fill", filled, fill.collection_fill_text))
        if by_holders:
            extras.append(("held", held.held(graph, result, paths, source=file, limit=top), held.held_text))
        if by_lifecycles:
            from heapdb.loader.inspections.leak_status import Inspectors

            inspectors = Inspectors.of(rule_set)  # the rules' lifecycle rules: the team's, then heapdb's
            leaks = lifecycles.lifecycle_leaks(graph, result, paths, source=file, limit=top, inspectors=inspectors)
            extras.append(("lifecycles", leaks, lifecycles.lifecycle_leaks_text))
    if by_hooks:  # no paths needed
        by_component = react_hooks.component_hooks(graph, result, source=file, limit=top)
        extras.append(("react_hooks", by_component, react_hooks.component_hooks_text))
    if by_owner:
        buckets = (None, ()) if compiled is None else (compiled.bucket, compiled.bucket_names)
        mine = owners_table(file, graph, result, *buckets).limited(None, max(top, 1))
        extras.append(("owners", mine, owners_text))
    if later:
        extras.append(("unbound", _unbound_series(file, graph, result, later, top), unbound.unbound_growth_text))
    if as_json:
        data = report.as_dict()
        if summary is not None:
            data["rules"] = summary.as_dict()
        if root_id is not None:
            data["scoped_to"] = root_id
        for key, answer, _ in extras:
            if answer is not None:
                data[key] = asdict(answer)
        click.echo(json.dumps(data, indent=2))
    else:
        if root_id is not None:
            click.echo(f"Scoped to object {root_id}: everything below is what it reaches, as if it were the only root.")
        print_report(report)
        if summary is not None:
            print_rules(summary)
        for _, answer, render in extras:
            if answer is not None:
                click.echo("")
                click.echo(render(answer))


def _unbound_series(
    file: str, graph: HeapGraph, result: analysis.Analysis, later: tuple[str, ...], top: int
) -> unbound.UnboundGrowth:
    """FILE's series point (under the analysis above) and each LATER file's (plain analysis: the rules
    change no size), compared. Only the points are kept, not the later graphs."""
    if len(later) < 2:
        raise click.UsageError("--unbound needs at least two later snapshots (three in all), oldest first")
    if not dom.shows_dom(graph.meta.get("format")):
        raise click.UsageError("--unbound: only V8 snapshots have the shapes and stable ids it follows")
    points = [unbound.series_point(file, graph, result)]
    for path in later:
        _, next_graph = read_with_progress(path)
        points.append(unbound.series_point(path, next_graph, analyse_with_progress(next_graph)))
    return unbound.unbound(points, limit=max(top, 1))


def _refuse_inspections_of(file: str, dup_strings: bool, of_dom: bool) -> None:
    """A usage error for an inspection FILE's format cannot have, found from its first bytes."""
    if not (dup_strings or of_dom):
        return
    found = formats.detect(file)
    if dup_strings and found.strings is None:
        raise click.UsageError(f"--strings: heapdb does not read the strings of {found.name} snapshots")
    if of_dom and not found.dom:
        raise click.UsageError(f"--dom, --react, --react-hooks and --stale: {found.name} snapshots hold no DOM")


def _refuse_fill_of(file: str, by_fill: bool) -> None:
    """A usage error for --fill on a format whose collections show no capacity (first bytes only)."""
    if by_fill and formats.detect(file).collections is None:
        raise click.UsageError(f"--fill: {formats.detect(file).name} snapshots show no collection capacities")


def _connect_for(name: str | None) -> Callable[[], Database]:
    """How analyze reaches the database, for --rules NAME only (a stored rule set): it reads a file
    and needs no Neo4j otherwise. It starts no managed Neo4j; an unreachable one is a rule error
    that says what analyze takes instead."""

    def connect() -> Database:
        from heapdb import db

        try:
            return db.connect(start_managed=False, tidy=False)
        except HeapdbError as e:  # unreachable, not configured
            raise RuleError(
                name,
                f"no such rule file, and a stored rule set's name needs the database ({e}); "
                "analyze takes a rule file, a stored rule set's name, or none",
            ) from None

    return connect


def _default_groups_on(compiled: CompiledRules, runtime: str | None) -> tuple[str, ...]:
    """The groups of ``runtime``'s default rules that had a rule applied (none switched off)."""
    if runtime is None:
        return ()
    applied = {rule.group for rule in compiled.rules}
    return tuple(name for name in default_rules(runtime).group_names if name in applied)


def _node_of(graph: HeapGraph, object_id: int) -> int:
    """The node index of the object with id ``object_id``; a usage error when there is none."""
    found = np.flatnonzero(graph.ids == object_id)
    if not found.size:
        raise click.BadParameter(f"no object with id {object_id} in the snapshot", param_hint="--root")
    return int(found[0])
