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
5. breadth-first search over the retaining edges for each object's distance from the root.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np
from numba import njit

from heapdb.loader.graph import EdgeKind, HeapGraph

_WEAK = np.uint8(EdgeKind.WEAK)
_SHORTCUT = np.uint8(EdgeKind.SHORTCUT)
_ELEMENT = np.uint8(EdgeKind.ELEMENT)


# The steps :func:`analyze` reports through ``on_step``, in order.
STEPS = ("retaining edges", "numbering", "dominators", "retained sizes", "distances")


class Semantics(str, Enum):
    """Which rules decide what retains what."""

    GENERIC = "generic"  # weak/shortcut/self-edge rules only; unreachable objects stay detached
    V8 = "v8"  # memlab's rules, number for number (page ownership, orphans hung under the root)


@dataclass
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
    root: int
    semantics: Semantics

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
        Ties are broken by node index so the answer is stable.
        """
        keep = self.reachable.copy()
        keep[self.root] = False
        if exclude is not None:
            keep &= ~exclude
        candidates = np.flatnonzero(keep)
        if count <= 0 or candidates.size == 0:
            return candidates[:0]
        sizes = self.retained_size[candidates]
        if candidates.size > count:
            # Select before sorting so the sort touches `count` values, not millions: everything
            # above the count-th largest size, then the lowest indices among those equal to it.
            kth = np.partition(sizes, sizes.size - count)[sizes.size - count]
            above = sizes > kth
            tied = np.flatnonzero(sizes == kth)[: count - int(np.count_nonzero(above))]
            chosen = np.concatenate([np.flatnonzero(above), tied])
            candidates, sizes = candidates[chosen], sizes[chosen]
        order = np.lexsort((candidates, -sizes))
        return candidates[order]


def semantics_for(graph: HeapGraph) -> Semantics:
    """V8 rules for V8 snapshots, generic rules for everything else."""
    return Semantics.V8 if graph.meta.get("format") == "v8" else Semantics.GENERIC


def analyze(
    graph: HeapGraph,
    *,
    semantics: Semantics | str | None = None,
    devtools_sizes: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> Analysis:
    """Compute reachability, immediate dominators, retained sizes/counts and distances.

    ``semantics`` defaults to :func:`semantics_for`. ``devtools_sizes`` first moves the self size
    of hidden and array objects owned by exactly one ordinary object onto that owner, as Chrome
    DevTools does (V8 snapshots only; the retained sizes then match DevTools rather than memlab).
    ``on_step`` is called with each name in :data:`STEPS` as that step finishes (for progress bars).
    """
    step = on_step or (lambda _name: None)
    sem = semantics_for(graph) if semantics is None else Semantics(semantics)
    n = graph.node_count
    root = int(graph.root)

    self_size = graph.self_size
    if devtools_sizes:
        self_size = devtools_self_sizes(graph)

    if sem is Semantics.V8:
        dom_trees_root = _kind_masks(graph)["dom_trees_root"]
        page = _page_owned(graph.edge_start, graph.edge_to, graph.edge_kind, root, dom_trees_root)
    else:
        page = np.zeros(0, dtype=np.uint8)
    mask = _retaining_mask(graph.edge_start, graph.edge_to, graph.edge_kind, root, page, sem is Semantics.V8)
    del page
    step(STEPS[0])

    if sem is Semantics.V8:
        strong_referrer = _has_strong_referrer(n, graph.edge_to, graph.edge_kind)
    else:
        strong_referrer = np.zeros(0, dtype=np.bool_)
    pre, vertex, parent, count, reached = _number(
        n, root, graph.edge_start, graph.edge_to, mask, strong_referrer, sem is Semantics.V8
    )
    del strong_referrer
    retaining_count = int(np.count_nonzero(mask))
    pred_start = np.zeros(n + 1, dtype=np.int32 if retaining_count < 2**31 else np.int64)
    pred_from = _predecessors(graph.edge_start, graph.edge_to, mask, pre, pred_start)
    del pre
    step(STEPS[1])

    idom_number = _semi_nca(count, vertex, parent, pred_start, pred_from)
    del pred_start, pred_from
    step(STEPS[2])

    reachable = np.zeros(n, dtype=np.bool_)
    reachable[vertex[1 : reached + 1]] = True
    idom, retained_size, retained_count = _accumulate(vertex, idom_number, count, self_size)
    del vertex, parent, idom_number
    step(STEPS[3])
    distance = _distances(root, graph.edge_start, graph.edge_to, mask)
    step(STEPS[4])
    return Analysis(
        reachable=reachable,
        idom=idom,
        retained_size=retained_size,
        retained_count=retained_count,
        distance=distance,
        retaining=mask,
        self_size=self_size,
        root=root,
        semantics=sem,
    )


def outermost_members(idom: np.ndarray, root: int, group: np.ndarray, member: np.ndarray, group_count: int) -> np.ndarray:
    """bool[n]: the members with no dominator-tree ancestor that is a member of the same group.

    ``group`` (int[n], values below ``group_count``) assigns each object a group, such as its
    type; only objects with ``member`` set belong to theirs. Summing the retained sizes of the
    outermost members gives what the whole group retains, each byte counted once: a linked list's
    nodes are not added on top of the head that already retains them, nor are objects of a type
    found below an object of that type further down, through other types. This is Chrome DevTools'
    rule for a constructor's retained size in its Summary view.
    """
    n = idom.shape[0]
    dominated = np.flatnonzero(idom >= 0)
    order = dominated[np.argsort(idom[dominated], kind="stable")]
    child_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(idom[dominated], minlength=n), out=child_start[1:])
    return _outermost(root, child_start, order.astype(np.int32), group.astype(np.int64), member, group_count)


@njit(cache=True)
def _outermost(root, child_start, children, group, member, group_count):
    """Depth-first over the dominator tree, counting per group the members on the current branch."""
    n = group.shape[0]
    outermost = np.zeros(n, dtype=np.bool_)
    open_members = np.zeros(group_count, dtype=np.int64)
    stack = np.empty(n, dtype=np.int32)
    cursor = np.empty(n, dtype=np.int64)
    top = 0
    stack[0] = root
    cursor[0] = child_start[root]
    if member[root]:
        outermost[root] = True
        open_members[group[root]] += 1
    while top >= 0:
        v = stack[top]
        c = cursor[top]
        if c < child_start[v + 1]:
            cursor[top] = c + 1
            w = children[c]
            if member[w]:
                if open_members[group[w]] == 0:
                    outermost[w] = True
                open_members[group[w]] += 1
            top += 1
            stack[top] = w
            cursor[top] = child_start[w]
        else:
            if member[v]:
                open_members[group[v]] -= 1
            top -= 1
    return outermost


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
    return _move_owned_sizes(
        graph.edge_start, graph.edge_to, graph.edge_kind, graph.self_size, owned, kinds["synthetic"], root
    )


def _kind_masks(graph: HeapGraph) -> dict[str, np.ndarray]:
    """Boolean per-node masks for the V8 node kinds and names the rules single out."""
    n = graph.node_count

    def kind_is(name: str) -> np.ndarray:
        if name not in graph.node_kinds:
            return np.zeros(n, dtype=np.bool_)
        return graph.kind == graph.node_kinds.index(name)

    synthetic = kind_is("synthetic")
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


# ---------------------------------------------------------------------------------------------
# Kernels. Plain loops over the CSR arrays; numba compiles them once and caches the machine code.


@njit(cache=True)
def _page_owned(edge_start, edge_to, edge_kind, root, dom_trees_root):
    """memlab's ``flagReachableNodesFromWindow``: what the page itself (not the debugger) reaches.

    From the root every edge counts except shortcuts and the element edge to ``(Document DOM
    trees)``; below it every non-weak edge counts. The root itself is not flagged.
    """
    n = edge_start.shape[0] - 1
    flags = np.zeros(n, dtype=np.uint8)
    stack = np.empty(n + (edge_start[root + 1] - edge_start[root]), dtype=np.int32)
    top = 0
    for e in range(edge_start[root], edge_start[root + 1]):
        child = edge_to[e]
        k = edge_kind[e]
        if k == _ELEMENT and dom_trees_root[child]:
            continue
        if k == _SHORTCUT:
            continue
        stack[top] = child
        top += 1
        flags[child] = 1
    while top > 0:
        top -= 1
        v = stack[top]
        for e in range(edge_start[v], edge_start[v + 1]):
            child = edge_to[e]
            if flags[child] or edge_kind[e] == _WEAK:
                continue
            flags[child] = 1
            stack[top] = child
            top += 1
    return flags


@njit(cache=True)
def _retaining_mask(edge_start, edge_to, edge_kind, root, page, use_page):
    """One byte per edge: 1 when the edge can keep its target alive."""
    n = edge_start.shape[0] - 1
    mask = np.zeros(edge_to.shape[0], dtype=np.bool_)
    for v in range(n):
        for e in range(edge_start[v], edge_start[v + 1]):
            w = edge_to[e]
            k = edge_kind[e]
            if w == v or k == _WEAK or (k == _SHORTCUT and v != root):
                continue
            # Edges from objects only the debugger holds into page-owned objects do not count.
            if use_page and v != root and page[w] and not page[v]:
                continue
            mask[e] = True
    return mask


@njit(cache=True)
def _has_strong_referrer(n, edge_to, edge_kind):
    """Whether some edge other than a weak or shortcut edge points at each node."""
    has = np.zeros(n, dtype=np.bool_)
    for e in range(edge_to.shape[0]):
        k = edge_kind[e]
        if k != _WEAK and k != _SHORTCUT:
            has[edge_to[e]] = True
    return has


@njit(cache=True)
def _dfs(start, parent_of_start, edge_start, edge_to, mask, pre, vertex, parent, cursor, count):
    """Iterative preorder DFS from ``start`` over retaining edges; returns the new vertex count.

    Numbers are 1-based (0 means "not numbered"): ``pre[node]`` is a node's number,
    ``vertex[number]`` the node, ``parent[number]`` the DFS parent's number. The walk climbs back
    through ``parent`` rather than keeping a stack; ``cursor[number]`` is the next edge to look at,
    so a vertex resumes where it left off, exactly like memlab's and DevTools' DFS.
    """
    count += 1
    first = count
    pre[start] = count
    vertex[count] = start
    parent[count] = parent_of_start
    cursor[count] = edge_start[start]
    i = count
    while True:
        v = vertex[i]
        end = edge_start[v + 1]
        e = cursor[i]
        descended = False
        while e < end:
            if mask[e]:
                w = edge_to[e]
                if pre[w] == 0:
                    cursor[i] = e  # resume here, as memlab does (the edge is then seen as visited)
                    count += 1
                    pre[w] = count
                    vertex[count] = w
                    parent[count] = i
                    cursor[count] = edge_start[w]
                    i = count
                    descended = True
                    break
            e += 1
        if not descended:
            if i == first:
                return count
            i = parent[i]


@njit(cache=True)
def _number(n, root, edge_start, edge_to, mask, strong_referrer, attach_unreachable):
    """DFS-number the nodes: ``(pre, vertex, parent, count, reached)`` (see :func:`_dfs`).

    ``vertex[1..count]`` lists the numbered nodes in preorder, the first ``reached`` from the root.
    With ``attach_unreachable`` (V8 semantics) the nodes the root does not reach are numbered too,
    in memlab's and DevTools' way: first a DFS from each node (in index order) that no strong or
    shortcut edge points at, as if the root held it; then every node still left, singly, below the
    root.
    """
    pre = np.zeros(n, dtype=np.int32)
    vertex = np.zeros(n + 1, dtype=np.int32)
    parent = np.zeros(n + 1, dtype=np.int32)
    cursor = np.zeros(n + 1, dtype=edge_start.dtype)
    count = _dfs(root, 0, edge_start, edge_to, mask, pre, vertex, parent, cursor, 0)
    reached = count
    if attach_unreachable and count < n:
        for v in range(n):
            if pre[v] == 0 and not strong_referrer[v]:
                count = _dfs(v, 1, edge_start, edge_to, mask, pre, vertex, parent, cursor, count)
        for v in range(n):
            if pre[v] == 0:
                count += 1
                pre[v] = count
                vertex[count] = v
                parent[count] = 1
    return pre, vertex, parent, count, reached


@njit(cache=True)
def _predecessors(edge_start, edge_to, mask, pre, pred_start):
    """Predecessor lists of the retaining edges from numbered nodes: per node, the DFS numbers.

    Fills ``pred_start`` (``n + 1`` offsets by node index, zeroed) in place and returns
    ``pred_from``. Sources are scanned in index order, so their numbers cost nothing to look up.
    """
    n = edge_start.shape[0] - 1
    for v in range(n):
        if pre[v] == 0:
            continue
        for e in range(edge_start[v], edge_start[v + 1]):
            if mask[e]:
                pred_start[edge_to[e] + 1] += 1
    for v in range(n):
        pred_start[v + 1] += pred_start[v]
    pred_from = np.empty(pred_start[n], dtype=np.int32)
    # Scatter with pred_start[w] as w's cursor; it ends as w + 1's start, so shifting by one
    # restores the offsets without a second array.
    for v in range(n):
        pv = pre[v]
        if pv == 0:
            continue
        for e in range(edge_start[v], edge_start[v + 1]):
            if mask[e]:
                w = edge_to[e]
                pred_from[pred_start[w]] = pv
                pred_start[w] += 1
    for v in range(n, 0, -1):
        pred_start[v] = pred_start[v - 1]
    pred_start[0] = 0
    return pred_from


@njit(cache=True)
def _semi_nca(count, vertex, parent, pred_start, pred_from):
    """Immediate dominators by DFS number, with semi-NCA (Georgiadis, Tarjan and Werneck).

    Semidominators come from Lengauer–Tarjan's EVAL with iterative path compression, with
    ``best[v]`` holding the smallest semidominator number on v's compressed path; each idom is then
    the nearest common ancestor of the DFS parent and the semidominator, found by climbing the
    dominator tree built so far. A vertex with no retaining predecessor counts as held by the
    root (vertex 1). The predecessor lists are by node (``vertex[i]``) and hold DFS numbers.
    ``parent`` is overwritten with the result: ``idom[number]``, 0 for the root.
    """
    semi = np.empty(count + 1, dtype=np.int32)
    best = np.empty(count + 1, dtype=np.int32)
    ancestor = np.zeros(count + 1, dtype=np.int32)
    stack = np.empty(count + 1, dtype=np.int32)
    for i in range(count, 1, -1):
        s = i
        orphan = True
        v = vertex[i]
        for k in range(pred_start[v], pred_start[v + 1]):
            orphan = False
            p = pred_from[k]
            if p < i:
                # Not yet linked: EVAL(p) is p itself.
                if p < s:
                    s = p
                continue
            # Linked: compress the path above p, then take its best.
            top = 0
            x = p
            while ancestor[ancestor[x]] != 0:
                top += 1
                stack[top] = x
                x = ancestor[x]
            while top > 0:
                y = stack[top]
                top -= 1
                a = ancestor[y]
                if best[a] < best[y]:
                    best[y] = best[a]
                ancestor[y] = ancestor[a]
            if best[p] < s:
                s = best[p]
        if orphan:
            s = 1
        semi[i] = s
        best[i] = s
        ancestor[i] = parent[i]
    idom = parent
    for i in range(2, count + 1):
        j = idom[i]
        s = semi[i]
        while j > s:
            j = idom[j]
        idom[i] = j
    return idom


@njit(cache=True)
def _accumulate(vertex, idom_number, count, self_size):
    """Node-space ``(idom, retained_size, retained_count)`` from the numbered dominator tree.

    Sizes are summed by number in reverse preorder, so every vertex is complete before it is
    added to its dominator (a dominator is a DFS ancestor, hence has a smaller number). Nodes left
    unnumbered (unreachable under generic semantics) keep idom -1 and zero sizes.
    """
    n = self_size.shape[0]
    size = np.zeros(count + 1, dtype=np.int64)
    objects = np.ones(count + 1, dtype=np.int64)
    for i in range(1, count + 1):
        size[i] = self_size[vertex[i]]
    for i in range(count, 1, -1):
        d = idom_number[i]
        size[d] += size[i]
        objects[d] += objects[i]
    idom = np.full(n, -1, dtype=np.int32)
    retained_size = np.zeros(n, dtype=np.int64)
    retained_count = np.zeros(n, dtype=np.int64)
    for i in range(1, count + 1):
        v = vertex[i]
        retained_size[v] = size[i]
        retained_count[v] = objects[i]
        if i > 1:
            idom[v] = vertex[idom_number[i]]
    return idom, retained_size, retained_count


@njit(cache=True)
def _distances(root, edge_start, edge_to, mask):
    """Breadth-first depth from the root over retaining edges; -1 where it never arrives."""
    n = edge_start.shape[0] - 1
    dist = np.full(n, -1, dtype=np.int32)
    queue = np.empty(n, dtype=np.int32)
    dist[root] = 0
    queue[0] = root
    head, tail = 0, 1
    while head < tail:
        v = queue[head]
        head += 1
        d = dist[v] + 1
        for e in range(edge_start[v], edge_start[v + 1]):
            if mask[e]:
                w = edge_to[e]
                if dist[w] < 0:
                    dist[w] = d
                    queue[tail] = w
                    tail += 1
    return dist


@njit(cache=True)
def _move_owned_sizes(edge_start, edge_to, edge_kind, self_size, owned, synthetic, root):
    """DevTools' owner propagation: see :func:`devtools_self_sizes`."""
    n = self_size.shape[0]
    unvisited = -1
    multiple = -2
    owner = np.empty(n, dtype=np.int32)
    # A node enters the worklist at most twice: when it gets an owner and when it gets a second one.
    work = np.empty(2 * n, dtype=np.int32)
    top = 0
    for v in range(n):
        if owned[v]:
            owner[v] = unvisited
        else:
            owner[v] = v
            work[top] = v
            top += 1
    while top > 0:
        top -= 1
        v = work[top]
        o = owner[v]
        for e in range(edge_start[v], edge_start[v + 1]):
            if edge_kind[e] == _WEAK:
                continue
            w = edge_to[e]
            ow = owner[w]
            if ow == unvisited:
                owner[w] = o
                work[top] = w
                top += 1
            elif ow == w or ow == o or ow == multiple:
                continue
            else:
                owner[w] = multiple
                work[top] = w
                top += 1
    sizes = self_size.copy()
    for v in range(n):
        o = owner[v]
        if o < 0 or o == v or synthetic[o] or o == root:
            continue
        sizes[o] += sizes[v]
        sizes[v] = 0
    return sizes
