"""Reachability, immediate dominators, retained sizes and root distances of a :class:`HeapGraph`.

Everything here works on the graph's flat arrays; the kernels are numba-compiled loops with no
recursion (dominator trees of real heaps are millions of levels deep in the worst case) and no
Python object per heap object. ``docs/analysis.md`` states the semantics and the memory formula.

Outline of :func:`analyze`:

1. mark the *retaining* edges (a byte per edge): weak edges never retain, shortcut edges retain
   only from the root, self edges are ignored, and under V8 semantics memlab's page-ownership rule
   applies as well;
2. number the objects by an iterative depth-first search from the root; under V8 semantics the
   objects the root does not reach are numbered too, below the root, exactly the way memlab and
   Chrome DevTools do it, so every number matches theirs;
3. build the predecessor lists of the retaining edges, once, by DFS number, and compute immediate
   dominators with semi-NCA (Lengauer–Tarjan's semidominators, then nearest common ancestors);
4. accumulate retained sizes and counts bottom-up in reverse DFS preorder;
5. breadth-first search over the retaining edges for each object's distance from the root (V8's
   transient root groups, and what ``transient`` adds to them, followed last).

With ``edge_weight`` (rule weights, one per reference), step 1 also drops the ignored references
and keeps into each live object only its highest-weight references (MemorySnapshotAnalyzer's
OWNS), giving some back where that would cut objects off from the root; the live set never
changes. ``docs/analysis.md`` ("Rule weights") has the exact rules.

The package: this module is the API (:func:`analyze`, :class:`Analysis`, the DevTools rules);
the numba kernels are in :mod:`.kernels`, the ranking every top list shares in :mod:`.ranking`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from heapdb.loader.analysis import kernels
from heapdb.loader.analysis.ranking import largest_first_of
from heapdb.loader.formats import named
from heapdb.loader.formats.protocol import Semantics as Semantics
from heapdb.loader.graph import IGNORED as IGNORED
from heapdb.loader.graph import MAX_OWNS_WEIGHT as MAX_OWNS_WEIGHT
from heapdb.loader.graph import NO_RULE as NO_RULE
from heapdb.loader.graph import SYNTHETIC_KIND, HeapGraph
from heapdb.loader.graph import WEAK_WEIGHT as WEAK_WEIGHT

# The steps :func:`analyze` reports through ``on_step``, in order.
STEPS = ("retaining edges", "numbering", "dominators", "retained sizes", "distances")


@dataclass(frozen=True)
class Analysis:
    """Per-object results, indexed like the graph's nodes.

    ``idom`` is the immediate dominator's node index, -1 for the root. Under generic semantics it is
    also -1 for unreachable objects, whose retained size and count are 0. Under V8 semantics
    unreachable objects get memlab's values (they hang below the root), and ``reachable`` still
    tells them apart.
    """

    reachable: np.ndarray  # bool[n]: reached from the root over retaining edges
    idom: np.ndarray  # int32[n]
    retained_size: np.ndarray  # int64[n]
    retained_count: np.ndarray  # int64[n]: objects dominated, the object itself included
    distance: np.ndarray  # int32[n]: BFS depth from the root over retaining edges, -1 if unreachable
    retaining: np.ndarray  # bool[m]: the edge can keep its target alive (see docs/analysis.md)
    self_size: np.ndarray  # int64[n]: the self sizes the retained sizes were summed from
    ids: np.ndarray  # int64[n]: the graph's object ids, which break ranking ties
    root: int
    semantics: Semantics
    # Rule weights (all zero / empty without them): the weight of the references kept into each
    # live object (0 for the root and dead objects), and the sorted indices of live objects whose
    # kept references of weight >= 1 come from two or more objects (ambiguous ownership).
    owner_weight: np.ndarray  # int8[n]
    ambiguous: np.ndarray  # int64[k]
    # What ``[[transient]]`` rules added to V8's transient root groups (bool[n]; None: nothing): the
    # distances followed them last, and first paths over this analysis must too
    # (``first_paths(graph, result.retaining, result.transient)``).
    transient: np.ndarray | None = None

    @property
    def node_count(self) -> int:
        return int(self.reachable.shape[0])

    @property
    def unreachable_count(self) -> int:
        return self.node_count - int(np.count_nonzero(self.reachable))

    @property
    def reachable_size(self) -> int:
        """The summed self size of the objects the root reaches."""
        return int(self.self_size[self.reachable].sum())

    def top_retainers(self, count: int, *, exclude: np.ndarray | None = None) -> np.ndarray:
        """Indices of the ``count`` reachable objects with the largest retained size, largest first.

        The root is never listed; ``exclude`` (bool[n]) drops more, e.g. synthetic root-kind nodes.
        Ties go to the lower object id (:func:`~heapdb.loader.analysis.ranking.largest_first`).
        """
        keep = self.reachable.copy()
        if exclude is not None:
            keep &= ~exclude
        keep[self.root] = False
        return largest_first_of(self.retained_size, self.ids, keep, count)


def semantics_for(graph: HeapGraph) -> Semantics:
    """The rules the graph's format declares (V8's for V8 snapshots), generic rules for a graph of no
    known format."""
    declared = named(graph.meta.get("format"))
    return Semantics.GENERIC if declared is None else declared.semantics


def analyze(
    graph: HeapGraph,
    *,
    semantics: Semantics | str | None = None,
    devtools_sizes: bool = False,
    edge_weight: np.ndarray | None = None,
    root: int | None = None,
    transient: np.ndarray | None = None,
    on_step: Callable[[str], None] | None = None,
) -> Analysis:
    """Compute reachability, immediate dominators, retained sizes/counts and distances.

    ``semantics`` defaults to :func:`semantics_for`. ``devtools_sizes`` first moves the self size
    of hidden and array objects owned by exactly one ordinary object onto that owner, as Chrome
    DevTools does (V8 snapshots only; the retained sizes then match DevTools rather than memlab).
    ``edge_weight`` (int8[m], :data:`NO_RULE`, :data:`WEAK_WEIGHT`, :data:`IGNORED` or an owns
    weight 1..:data:`MAX_OWNS_WEIGHT`) applies rule weights: ignored references are dropped, and
    each live object keeps only its highest-weight references (``docs/analysis.md``, "Rule
    weights"). ``None`` is the plain analysis, at no extra cost.
    ``root`` (a node index) analyses as if that object were the only root (MemorySnapshotAnalyzer's
    ``'rootobject``): which references retain still follows the runtime's rules from the graph's own
    root, but reachability, dominators, sizes and distances start from ``root``, and the objects it
    does not reach stay detached under any semantics. ``None`` (or the graph's root) changes nothing.
    ``transient`` (bool[n], what ``[[transient]]`` rules select) adds objects to V8's transient root
    groups, which the distances' breadth-first search follows last; ``None`` adds nothing.
    ``on_step`` is called with each name in :data:`STEPS` as that step finishes (for progress bars).
    """
    step = on_step or (lambda _name: None)
    sem = semantics_for(graph) if semantics is None else Semantics(semantics)
    n = graph.node_count
    if root is not None and not 0 <= int(root) < n:
        raise ValueError(f"root must be a node index below {n}, not {root}")
    deferred = graph.transient_nodes(transient)  # checks transient's shape before the long steps
    root = int(graph.root) if root is None else int(root)
    # Rooted elsewhere, no object hangs below the root unreached (memlab's rule is for the real root).
    attach_unreachable = sem is Semantics.V8 and root == int(graph.root)

    self_size = graph.self_size
    if devtools_sizes:
        self_size = devtools_self_sizes(graph)

    mask = retaining_edges(graph, sem)
    owner_weight = np.zeros(n, dtype=np.int8)
    ambiguous = np.zeros(0, dtype=np.int64)
    if edge_weight is not None:
        if edge_weight.dtype != np.int8 or edge_weight.shape != graph.edge_to.shape:
            raise ValueError(
                f"edge_weight must be int8[{graph.edge_count}], not {edge_weight.dtype}{edge_weight.shape}"
            )
        owner_weight, owned_twice = kernels.keep_owners(
            root, graph.edge_start, graph.edge_to, edge_weight, mask.view(np.uint8)
        )
        ambiguous = np.flatnonzero(owned_twice).astype(np.int64)
        del owned_twice
    step(STEPS[0])

    if attach_unreachable and edge_weight is not None:
        strong_referrer = kernels.has_unignored_referrer(n, graph.edge_to, graph.edge_kind, edge_weight)
    elif attach_unreachable:
        strong_referrer = kernels.has_strong_referrer(n, graph.edge_to, graph.edge_kind)
    else:
        strong_referrer = np.zeros(0, dtype=np.bool_)
    pre, vertex, parent, count, reached = kernels.number(
        n, root, graph.edge_start, graph.edge_to, mask, strong_referrer, attach_unreachable
    )
    del strong_referrer
    retaining_count = int(np.count_nonzero(mask))
    # By DFS number 0..count, and one more for the end of the last list.
    pred_start = np.zeros(count + 2, dtype=np.int32 if retaining_count < 2**31 else np.int64)
    pred_from = kernels.predecessors(graph.edge_start, graph.edge_to, mask, pre, pred_start)
    del pre
    step(STEPS[1])

    idom_number = kernels.semi_nca(count, parent, pred_start, pred_from)
    del pred_start, pred_from
    step(STEPS[2])

    reachable = np.zeros(n, dtype=np.bool_)
    reachable[vertex[1 : reached + 1]] = True
    idom, retained_size, retained_count = kernels.accumulate(vertex, idom_number, count, self_size)
    del vertex, parent, idom_number
    step(STEPS[3])
    distance = kernels.first_search(root, graph.edge_start, graph.edge_to, mask, deferred, False)[3]
    step(STEPS[4])
    return Analysis(
        reachable=reachable,
        idom=idom,
        retained_size=retained_size,
        retained_count=retained_count,
        distance=distance,
        retaining=mask,
        self_size=self_size,
        ids=graph.ids,
        root=root,
        semantics=sem,
        owner_weight=owner_weight,
        ambiguous=ambiguous,
        transient=None if transient is None else transient.astype(np.bool_, copy=False),
    )


def retaining_edges(graph: HeapGraph, semantics: Semantics | str | None = None) -> np.ndarray:
    """bool[m]: the references that can retain under the runtime's own rules (step 1 of
    :func:`analyze` without rule weights): what a load stores as ``:REF``, whatever rules say."""
    sem = semantics_for(graph) if semantics is None else Semantics(semantics)
    root = int(graph.root)
    if sem is Semantics.V8:
        dom_trees_root = _kind_masks(graph)["dom_trees_root"]
        page = kernels.page_owned(graph.edge_start, graph.edge_to, graph.edge_kind, root, dom_trees_root)
    else:
        page = np.zeros(0, dtype=np.uint8)
    mask: np.ndarray = kernels.retaining_mask(
        graph.edge_start, graph.edge_to, graph.edge_kind, root, page, sem is Semantics.V8
    )
    return mask


@dataclass(frozen=True)
class LookThrough:
    """The runtime's bookkeeping objects that answers naming a program's objects look through.

    ``through`` (bool[n]) marks the *internal* objects (rule kind ``internal``) that dominate, through
    internal objects only, an object that is not internal: a closure's context holding the program's
    instance, a Map's backing store holding its entries. ``holder`` (int32[n]) is each object's
    nearest proper dominator not looked through (-1 for the root and unreachable objects): where its
    immediate dominator is looked through, the object the program made that holds it. Internal
    objects that hold nothing of the program's (a closure over nothing new, compiled code) are not
    looked through: they are what there is to see.
    """

    through: np.ndarray
    holder: np.ndarray


def look_through(result: Analysis, internal: np.ndarray) -> LookThrough:
    """:class:`LookThrough` over ``result``'s dominator tree, for the objects ``internal`` marks."""
    through, holder = kernels.look_through(result.idom, result.root, internal.astype(np.bool_, copy=False))
    return LookThrough(through=through, holder=holder)


def spread_down(result: Analysis, seed: np.ndarray) -> np.ndarray:
    """Each object's label (``seed``'s dtype, -1 for none): its own, else its nearest dominator's.

    A known leak marks the objects a rule names; everything they alone keep alive (their
    dominator-tree subtrees) is part of the same leak.
    """
    labels: np.ndarray = kernels.spread_down(result.idom, result.root, seed)
    return labels


def outermost_members(
    idom: np.ndarray, root: int, group: np.ndarray, member: np.ndarray, group_count: int
) -> np.ndarray:
    """bool[n]: the members with no dominator-tree ancestor that is a member of the same group.

    ``group`` (int[n], values below ``group_count``) assigns each object a group, such as its
    type; only objects with ``member`` set belong to theirs. Summing the retained sizes of the
    outermost members gives what the whole group retains, each byte counted once: a linked list's
    nodes are not added on top of the head that already retains them, nor are objects of a type
    found below an object of that type further down, through other types. This is Chrome DevTools'
    rule for a constructor's retained size in its Summary view.
    """
    start, children = dominator_tree(idom)
    return kernels.outermost(root, start, children, group, member, group_count)


Tree = tuple[np.ndarray, np.ndarray]  # the dominator tree's children: start (int64[n + 1]), children (int32)


def dominator_tree(idom: np.ndarray) -> Tree:
    """Each object's children in the dominator tree, ``children[start[v]:start[v + 1]]``: a counting
    pass, linear in objects and twelve bytes each (a sort by dominator took five times the time and
    memory on 24 million objects). Build it once where several totals walk the same tree."""
    start, children = kernels.dominator_children(idom)
    return start, children


def ordered_dominator_tree(idom: np.ndarray, retained_size: np.ndarray, ids: np.ndarray) -> Tree:
    """:func:`dominator_tree` with each object's children largest retained first, then by id: the
    order a store lists them in (``dominated_order``) and the stored query ``dominated`` answers in.
    Sorted list by list, in place (one sort of all 24 million children by parent, size and id took
    18 s)."""
    start, children = dominator_tree(idom)
    kernels.sort_children(start, children, retained_size, ids)
    return start, children


Figures = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # objects, self size, retained size, largest member


def group_figures(
    result: Analysis, group: np.ndarray, count: int, tree: Tree | None = None, self_size: np.ndarray | None = None
) -> Figures:
    """Per group (``group``: int[n], -1 for none, below ``count``): members, self size, retained
    size of its outermost members (each byte once, :func:`outermost_members`' rule), and its member
    retaining most (a node index, -1 for none; ties: the lowest id), in one walk down the dominator
    tree (``tree`` when already built). ``self_size``: sizes to add up other than the analysis' own."""
    start, children = tree if tree is not None else dominator_tree(result.idom)
    figures: Figures = kernels.group_totals(
        result.root,
        start,
        children,
        np.ascontiguousarray(group, dtype=np.int32),
        count,
        result.self_size if self_size is None else self_size,
        result.retained_size,
        result.ids,
    )
    return figures


def devtools_self_sizes(graph: HeapGraph) -> np.ndarray:
    """Self sizes as Chrome DevTools shows them (its ``calculateShallowSizes``).

    Each hidden or array object reachable over strong edges from exactly one ordinary object (not
    through another ordinary object) gives its self size to that owner, unless the owner is the
    root or synthetic. DevTools skips this for snapshots without user roots (taken with internals
    exposed); so do we.
    """
    kinds = _kind_masks(graph)
    root = int(graph.root)
    children = graph.edge_to[graph.edge_start[root] : graph.edge_start[root + 1]]
    if not np.any(~kinds["synthetic"][children] | kinds["dom_trees_root"][children]):
        return graph.self_size.copy()
    owned = kinds["hidden"] | kinds["array"]
    return kernels.move_owned_sizes(
        graph.edge_start, graph.edge_to, graph.edge_kind, graph.self_size, owned, kinds["synthetic"], root
    )


def _kind_masks(graph: HeapGraph) -> dict[str, np.ndarray]:
    """Boolean per-node masks for the V8 node kinds and names the rules single out."""
    n = graph.node_count

    def kind_is(name: str) -> np.ndarray:
        if name not in graph.node_kinds:
            return np.zeros(n, dtype=np.bool_)
        return graph.kind == graph.node_kinds.index(name)

    synthetic = kind_is(SYNTHETIC_KIND)
    dom_trees = np.zeros(n, dtype=np.bool_)
    if synthetic.any():
        # Only the few synthetic nodes need their names compared.
        for i in np.flatnonzero(synthetic):
            dom_trees[i] = graph.strings[int(graph.name[i])] == "(Document DOM trees)"
    return {
        "synthetic": synthetic,
        "hidden": kind_is("hidden"),
        "array": kind_is("array"),
        "dom_trees_root": dom_trees,
    }
