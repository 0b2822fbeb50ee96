"""A :class:`RuleSet` over one :class:`HeapGraph` -> per-reference weights and per-object buckets.

Everything is vectorised. Each pattern is matched once against the strings the graph actually uses
in that role (the distinct types, names or edge names: a few thousand to a few million strings, far
fewer than references), giving a boolean table over the string table; the per-node and per-edge
arrays then index that table with numpy. No Python loop runs per object or per reference.

Memory: the results are ``edge_weight`` (1 byte per reference) and ``bucket`` (4 bytes per object;
none without bucket rules). While compiling, the ignore and weak masks (a byte per reference each, with the owns weights that
become ``edge_weight``), the current rule's mask and its source objects' mask spread over their
references (a byte per reference each), the per-object reference counts (8 bytes per object) and
temporaries of one slice of :data:`_SLICE` references live at a time, plus a table of a byte per
string for each pattern.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, is_dataclass
from functools import cached_property

import numpy as np

from heapdb.loader.analysis import IGNORED, NO_RULE, WEAK_WEIGHT
from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind, HeapGraph, string_positions
from heapdb.loader.rules.model import (
    BucketRule,
    IgnoreRule,
    InternalRule,
    KnownLeakRule,
    LifecycleRule,
    Match,
    ObjectSelector,
    OwnsRule,
    Pattern,
    PatternKind,
    RedactRule,
    ReferenceSelector,
    Rule,
    RuleSet,
    Step,
    TransientRule,
    VerdictRule,
    WeakRule,
)


@dataclass(frozen=True)
class CompiledRules:
    """The enabled rules of a :class:`RuleSet`, applied to one graph.

    ``edge_weight`` (int8[m], indexed like ``graph.edge_to``) is what
    :func:`heapdb.loader.analysis.analyze` takes: :data:`IGNORED` where an ignore rule hits (it wins
    over everything), else the highest owns weight (1..127), else :data:`WEAK_WEIGHT` where a weak
    rule hits, else :data:`NO_RULE`. ``bucket`` (int32[n]) indexes ``bucket_names``, -1 for none; an
    object takes the bucket of the first rule in file order that selects it. ``internal`` (bool[n])
    marks the objects internal rules select, ``transient`` (bool[n]) those transient rules select
    (first-path searches follow them last, besides V8's built-in transient root groups: pass it to
    :func:`heapdb.loader.analysis.analyze` as ``transient``); both None when no such rule is
    enabled. ``known_leak`` and ``verdict`` (int16[n]) index
    ``known_leaks`` and ``verdicts``, -1 for none: the objects each selects directly (its ``object``
    selector, the targets of its path, or the targets that match both), the first rule in file order
    winning; a known leak then spreads down the dominator tree at load (everything only it keeps
    alive is part of it). ``hits[i]`` counts the references (objects, for the other kinds) that
    ``rules[i]`` selected, ignoring precedence.
    """

    edge_weight: np.ndarray
    bucket: np.ndarray
    bucket_names: tuple[str, ...]
    rules: tuple[Rule, ...]
    hits: tuple[int, ...]
    known_leaks: tuple[KnownLeakRule, ...]
    verdicts: tuple[VerdictRule, ...]
    internal: np.ndarray | None = None
    known_leak: np.ndarray | None = None
    verdict: np.ndarray | None = None
    transient: np.ndarray | None = None

    @cached_property
    def weighted(self) -> bool:
        """Whether any reference has a weight: without one, the analysis is exactly the plain one."""
        return bool(np.any(self.edge_weight != NO_RULE))

    def unmatched(self) -> tuple[Rule, ...]:
        """The rules that selected nothing in this graph, the default rules' aside: their known leaks
        are a catalogue of what some programs leak through, most of which a given program never has."""
        from heapdb.loader.rules.defaults import default_group_names

        defaults = default_group_names()
        return tuple(r for r, h in zip(self.rules, self.hits, strict=True) if h == 0 and r.group not in defaults)


def compile_rules(rule_set: RuleSet, graph: HeapGraph) -> CompiledRules:
    """Apply ``rule_set``'s enabled rules to ``graph`` (see :class:`CompiledRules`)."""
    n, m = graph.node_count, graph.edge_count
    select = Selection(graph)
    select.find_strings(_exact_texts(rule_set.enabled_rules()))  # one pass over the strings for every rule
    ignored = np.zeros(m, dtype=np.bool_)
    weak = np.zeros(m, dtype=np.bool_)
    owns = np.zeros(m, dtype=np.int8)
    bucket: np.ndarray | None = None
    bucket_names: list[str] = []
    internal: np.ndarray | None = None
    transient: np.ndarray | None = None
    known_leak: np.ndarray | None = None
    verdict: np.ndarray | None = None
    # Redaction rules say what a load keeps out of the store, lifecycle rules which Java objects are
    # past their life (heapdb.loader.inspections.leak_status): neither says how the analysis runs.
    rules = tuple(r for r in rule_set.enabled_rules() if not isinstance(r, (RedactRule, LifecycleRule)))
    hits = []
    for rule in rules:
        if isinstance(rule, (IgnoreRule, WeakRule, OwnsRule)):
            edges = select.references(rule.references)
            hits.append(int(np.count_nonzero(edges)))
            if isinstance(rule, IgnoreRule):
                ignored |= edges
            elif isinstance(rule, WeakRule):
                weak |= edges
            else:
                edges &= owns < rule.weight
                owns[edges] = rule.weight
        elif isinstance(rule, BucketRule):
            if rule.objects is not None:
                members = select.objects(rule.objects)
            else:
                assert rule.references is not None
                members = select.targets(select.references(rule.references))
            hits.append(int(np.count_nonzero(members)))
            if rule.bucket not in bucket_names:
                bucket_names.append(rule.bucket)
            if bucket is None:
                bucket = np.full(n, -1, dtype=np.int32)
            members &= bucket < 0
            bucket[members] = bucket_names.index(rule.bucket)
        elif isinstance(rule, InternalRule):
            members = select.objects(rule.objects)
            hits.append(int(np.count_nonzero(members)))
            internal = members if internal is None else internal | members
        elif isinstance(rule, TransientRule):
            members = select.objects(rule.objects)
            hits.append(int(np.count_nonzero(members)))
            transient = members if transient is None else transient | members
        else:
            assert isinstance(rule, (KnownLeakRule, VerdictRule))
            members = select.noted(rule.objects, rule.path)
            hits.append(int(np.count_nonzero(members)))
            if isinstance(rule, KnownLeakRule):
                known_leak = _first_wins(known_leak, members, rule_set.known_leaks.index(rule), n)
            else:
                verdict = _first_wins(verdict, members, rule_set.verdicts.index(rule), n)
    del select
    edge_weight = owns  # reused in place: owns weights stay, the rest is filled in
    edge_weight[weak & (edge_weight == NO_RULE)] = WEAK_WEIGHT
    edge_weight[ignored] = IGNORED
    return CompiledRules(
        edge_weight=edge_weight,
        # Without bucket rules, a read-only view of one -1: 4 bytes per object saved at the peak.
        bucket=np.broadcast_to(np.int32(-1), (n,)) if bucket is None else bucket,
        bucket_names=tuple(bucket_names),
        rules=rules,
        hits=tuple(hits),
        known_leaks=rule_set.known_leaks,
        verdicts=rule_set.verdicts,
        internal=internal,
        known_leak=known_leak,
        verdict=verdict,
        transient=transient,
    )


_NOTHING = Match((Pattern(PatternKind.REGEX, "(?!)"),))  # no text: a class no object is an instance of


def _exact_texts(rules: Iterable[Rule]) -> set[str]:
    """Every exact pattern's text in ``rules`` (types, names, reference names, at any depth)."""
    found: set[str] = set()

    def visit(value: object) -> None:
        if isinstance(value, Pattern):
            if value.kind is PatternKind.EXACT:
                found.add(value.text)
        elif isinstance(value, (tuple, list, frozenset)):
            for item in value:
                visit(item)
        elif is_dataclass(value):
            for f in fields(value):
                visit(getattr(value, f.name))

    for rule in rules:
        visit(rule)
    return found


def _first_wins(labels: np.ndarray | None, members: np.ndarray, label: int, n: int) -> np.ndarray:
    """``labels`` (int16[n], -1 for none, made on first use) with ``label`` on the members that have none yet."""
    if labels is None:
        labels = np.full(n, -1, dtype=np.int16)
    labels[members & (labels < 0)] = label
    return labels


# References are processed in slices of this many, so temporaries stay small on 10^7 references.
_SLICE = 1 << 20

# A step from objects holding at most 1/_FEW of the references looks at theirs alone.
_FEW = 8

# bool[len(EdgeKind)]: the kinds whose reference name is an index, not a string.
_NUMERIC_KIND = np.isin(np.arange(len(EdgeKind)), [int(k) for k in NUMERIC_NAME_KINDS])


def _slices(length: int) -> list[slice]:
    return [slice(lo, min(length, lo + _SLICE)) for lo in range(0, length, _SLICE)]


class Selection:
    """Selectors evaluated over one graph: boolean masks over its objects or references.

    Caches what several selectors share: the distinct strings in each role and the per-node
    reference counts. Per-reference work runs in slices of :data:`_SLICE` references.
    """

    def __init__(self, graph: HeapGraph) -> None:
        self.graph = graph
        self.size = len(graph.strings)

    # -- the strings each role uses, matched once per pattern -----------------------------------

    def _present(self, indices: np.ndarray) -> np.ndarray:
        present = np.zeros(self.size + 1, dtype=np.bool_)
        present[indices] = True
        return np.flatnonzero(present[: self.size])

    @cached_property
    def _used_types(self) -> np.ndarray:
        return self._present(self.graph.type)

    @cached_property
    def _used_names(self) -> np.ndarray:
        return self._present(self.graph.name)

    @cached_property
    def _used_edge_names(self) -> np.ndarray:
        """The string indices that name at least one (non-numeric) reference."""
        g = self.graph
        present = np.zeros(self.size + 1, dtype=np.bool_)
        for s in _slices(g.edge_count):
            present[np.where(_NUMERIC_KIND[g.edge_kind[s]], self.size, g.edge_name[s])] = True
        return np.flatnonzero(present[: self.size])

    @cached_property
    def _used_indices(self) -> np.ndarray:
        """The distinct indices that name element and hidden references."""
        g = self.graph
        parts = [np.unique(g.edge_name[s][_NUMERIC_KIND[g.edge_kind[s]]]) for s in _slices(g.edge_count)]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.uint32)

    @cached_property
    def _out_degree(self) -> np.ndarray:
        return np.diff(self.graph.edge_start)

    def string_table(self, match: Match, used: np.ndarray) -> np.ndarray:
        """bool[len(strings) + 1]: which of the ``used`` strings ``match`` accepts.

        The extra last entry stays False, so indices clipped to it (a numeric edge name) never match.
        """
        table = np.zeros(self.size + 1, dtype=np.bool_)
        strings = self.graph.strings
        exact = {pattern.text for pattern in match.patterns if pattern.kind is PatternKind.EXACT}
        if exact:
            # Exact texts are looked up over the whole table (in C), then kept to the used strings.
            table[self.positions(exact)] = True
            in_use = np.zeros(self.size + 1, dtype=np.bool_)
            in_use[used] = True
            table &= in_use
        wildcards = [pattern for pattern in match.patterns if pattern.kind is not PatternKind.EXACT]
        candidates = used.tolist() if wildcards else []
        for pattern in wildcards:
            test = pattern.compiled.fullmatch
            hit = np.fromiter((test(strings[i]) is not None for i in candidates), dtype=np.bool_, count=len(candidates))
            table[used[hit]] = True
        return table

    def _matching_indices(self, match: Match) -> np.ndarray:
        """The element/hidden indices (sorted, as numbers) whose decimal text ``match`` accepts."""
        found = [np.zeros(0, dtype=np.int64)]
        for pattern in match.patterns:
            if pattern.kind is PatternKind.EXACT:
                text = pattern.text
                if text.isascii() and text.isdigit() and str(int(text)) == text and int(text) < 1 << 32:
                    found.append(np.array([int(text)], dtype=np.int64))
            else:  # only wildcards need the distinct indices in use
                used = self._used_indices
                test = pattern.compiled.fullmatch
                hit = np.fromiter((test(str(v)) is not None for v in used.tolist()), dtype=np.bool_, count=len(used))
                found.append(used[hit].astype(np.int64))
        return np.unique(np.concatenate(found))

    # -- selectors -------------------------------------------------------------------------------

    def objects(self, selector: ObjectSelector) -> np.ndarray:
        """bool[n]: the objects ``selector`` accepts."""
        g = self.graph
        mask = np.ones(g.node_count, dtype=np.bool_)
        if selector.type is not None:
            mask &= self.string_table(selector.type, self._used_types)[g.type]
        if selector.name is not None:
            mask &= self.string_table(selector.name, self._used_names)[g.name]
        if selector.kind is not None:
            kinds = np.array([selector.kind.matches(k) for k in g.node_kinds] + [False], dtype=np.bool_)
            mask &= kinds[g.kind]
        if selector.instance_of is not None:
            mask &= self.string_table(self._subclasses(selector.instance_of), self._used_types)[g.type]
        return mask

    def _subclasses(self, match: Match) -> Match:
        """The exact names of the classes ``match`` accepts and of all their subclasses (Java); where
        the graph shows no classes, ``match`` itself (an object's type is its class)."""
        chains = self._class_chains
        if not chains:
            return match
        names = sorted({chain[0] for chain in chains.values() if any(match.matches(c) for c in chain)})
        return Match(tuple(Pattern(PatternKind.EXACT, n) for n in names)) if names else _NOTHING

    @cached_property
    def _class_chains(self) -> dict[int, tuple[str, ...]]:
        from heapdb.loader.inspections.lifecycles import class_chains

        return class_chains(self.graph)

    def step(self, step: Step, source: np.ndarray | None = None) -> np.ndarray:
        """bool[m]: the references one chain step accepts, starting at ``source`` objects (None = any)."""
        g = self.graph
        if source is not None and not source.any():
            return np.zeros(g.edge_count, dtype=np.bool_)
        few = self._few_references(step, source)
        if few is not None:
            mask = np.zeros(g.edge_count, dtype=np.bool_)
            mask[self._accepted(step, few)] = True
            return mask
        kinds = names = indices = targets = None
        if step.name is not None:
            names = self.string_table(step.name, self._used_edge_names)
            indices = self._matching_indices(step.name)
        mask = np.ones(g.edge_count, dtype=np.bool_) if source is None else np.repeat(source, self._out_degree)
        if step.kind is not None:
            kinds = np.zeros(len(EdgeKind), dtype=np.bool_)
            kinds[[int(k) for k in step.kind]] = True
        if step.to is not None:
            targets = self.objects(step.to)
        for s in _slices(g.edge_count):
            part = mask[s]
            if kinds is not None:
                part &= kinds[g.edge_kind[s]]
            if names is not None and indices is not None:
                numeric = _NUMERIC_KIND[g.edge_kind[s]]
                edge_name = g.edge_name[s]
                named = names[np.where(numeric, self.size, edge_name)]
                if len(indices):
                    at = np.minimum(np.searchsorted(indices, edge_name), len(indices) - 1)
                    named |= numeric & (indices[at] == edge_name)
                part &= named
            if targets is not None:
                part &= targets[g.edge_to[s]]
        return mask

    def _few_references(self, step: Step, source: np.ndarray | None) -> np.ndarray | None:
        """The references a step can only be among, when they are few (edge indices): those of
        ``source`` objects holding at most 1/_FEW of all references, or, from anywhere, those named
        exactly as the step says (found by their name's index alone). None: look at every one.

        The default rules' known leaks name a reference exactly, or start at a few objects (a root
        group, a class): so a catalogue of them costs a pass or two over the names, not a pass per
        rule over every reference."""
        g = self.graph
        if source is not None:
            nodes = np.flatnonzero(source)
            counts = self._out_degree[nodes]
            if int(counts.sum()) > g.edge_count // _FEW:
                return None
            return np.repeat(g.edge_start[nodes] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        if step.name is None or any(p.kind is not PatternKind.EXACT for p in step.name.patterns):
            return None
        positions = self.positions({p.text for p in step.name.patterns})
        digits = self._matching_indices(step.name)  # exact patterns only: no pass over the indices in use
        if not positions and not len(digits):
            return np.zeros(0, dtype=np.int64)  # no string of the graph is the name: nothing to look at
        # A name's index or an element's index equal to it (told apart by their kinds just below,
        # and again by _accepted): a comparison per reference and name, no table over them all.
        found = np.flatnonzero(np.isin(g.edge_name, np.array([*positions, *digits.tolist()], dtype=g.edge_name.dtype)))
        numeric = _NUMERIC_KIND[g.edge_kind[found]]
        keep = ~numeric & np.isin(g.edge_name[found], positions) | numeric & np.isin(g.edge_name[found], digits)
        return found[keep]

    def find_strings(self, texts: set[str]) -> None:
        """Look up where each of ``texts`` stands in the graph's strings, all in one pass (see
        :meth:`positions`)."""
        missing = texts - self._positions.keys()
        if not missing:
            return
        strings = self.graph.strings
        for i in string_positions(strings, missing):
            self._positions.setdefault(strings[i], []).append(i)
        for text in missing:
            self._positions.setdefault(text, [])

    def positions(self, texts: set[str]) -> list[int]:
        """Where ``texts`` stand in the graph's strings, ascending (a pass over the strings for those
        :meth:`find_strings` was not told of)."""
        self.find_strings(texts)
        return sorted(i for text in texts for i in self._positions[text])

    @cached_property
    def _positions(self) -> dict[str, list[int]]:
        return {}

    def _accepted(self, step: Step, edges: np.ndarray) -> np.ndarray:
        """The references among ``edges`` (indices) that ``step`` accepts: each distinct name tested
        once, as the whole-graph pass tests it (an element's or hidden reference's index in decimal)."""
        g = self.graph
        kinds = g.edge_kind[edges]
        keep = np.ones(edges.size, dtype=np.bool_)
        if step.kind is not None:
            keep &= np.isin(kinds, [int(k) for k in step.kind])
        if step.name is not None:
            numeric = _NUMERIC_KIND[kinds]
            named = np.zeros(edges.size, dtype=np.bool_)
            for part, text in ((~numeric, lambda i: g.strings[i]), (numeric, str)):
                if part.any():
                    distinct, at = np.unique(g.edge_name[edges[part]], return_inverse=True)
                    hit = np.array([step.name.matches(text(i)) for i in distinct.tolist()], dtype=np.bool_)
                    named[part] = hit[at]
            keep &= named
        if step.to is not None:
            keep &= self.objects(step.to)[g.edge_to[edges]]
        return edges[keep]

    def references(self, selector: ReferenceSelector) -> np.ndarray:
        """bool[m]: the last references of the chains ``selector`` describes."""
        frontier = None if selector.source is None else self.objects(selector.source)
        edges = np.zeros(0, dtype=np.bool_)
        for k, step in enumerate(selector.steps):
            edges = self.step(step, frontier)
            if k + 1 < len(selector.steps):
                frontier = self.targets(edges)
        return edges

    def noted(self, objects: ObjectSelector | None, path: ReferenceSelector | None) -> np.ndarray:
        """bool[n]: what a known_leak or verdict rule is about: the objects ``objects`` selects, the
        targets of the references ``path`` selects, or, with both, the targets that match ``objects``."""
        if path is None:
            assert objects is not None
            return self.objects(objects)
        members = self.targets(self.references(path))
        if objects is not None:
            members &= self.objects(objects)
        return members

    def targets(self, edges: np.ndarray) -> np.ndarray:
        """bool[n]: the objects the references in ``edges`` point to."""
        reached = np.zeros(self.graph.node_count, dtype=np.bool_)
        to = self.graph.edge_to
        for s in _slices(self.graph.edge_count):
            reached[to[s][edges[s]]] = True
        return reached
