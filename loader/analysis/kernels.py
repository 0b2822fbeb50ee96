"""The analysis' numba kernels: plain loops over a graph's CSR arrays, compiled once and cached.

No recursion (dominator trees of real heaps are millions of levels deep in the worst case) and no
Python object per heap object. :mod:`heapdb.loader.analysis` drives them; ``docs/analysis.md`` states
the semantics they implement.

Why this module is long: every loop the analysis runs over all objects or references is here, rule
weights included, so that numba compiles them together and nothing else in the analysis needs numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from heapdb.loader.graph import IGNORED, EdgeKind

_WEAK = np.uint8(EdgeKind.WEAK)
_SHORTCUT = np.uint8(EdgeKind.SHORTCUT)
_ELEMENT = np.uint8(EdgeKind.ELEMENT)


@njit(cache=True)
def outermost(root, child_start, children, group, member, group_count):
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


@njit(cache=True)
def page_owned(edge_start, edge_to, edge_kind, root, dom_trees_root):
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
def retaining_mask(edge_start, edge_to, edge_kind, root, page, use_page):
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
def has_strong_referrer(n, edge_to, edge_kind):
    """Whether some edge other than a weak or shortcut edge points at each node."""
    has = np.zeros(n, dtype=np.bool_)
    for e in range(edge_to.shape[0]):
        k = edge_kind[e]
        if k != _WEAK and k != _SHORTCUT:
            has[edge_to[e]] = True
    return has


@njit(cache=True)
def dfs(start, parent_of_start, edge_start, edge_to, mask, pre, vertex, parent, cursor, count):
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
def number(n, root, edge_start, edge_to, mask, strong_referrer, attach_unreachable):
    """DFS-number the nodes: ``(pre, vertex, parent, count, reached)`` (see :func:`dfs`).

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
    count = dfs(root, 0, edge_start, edge_to, mask, pre, vertex, parent, cursor, 0)
    reached = count
    if attach_unreachable and count < n:
        for v in range(n):
            if pre[v] == 0 and not strong_referrer[v]:
                count = dfs(v, 1, edge_start, edge_to, mask, pre, vertex, parent, cursor, count)
        for v in range(n):
            if pre[v] == 0:
                count += 1
                pre[v] = count
                vertex[count] = v
                parent[count] = 1
    return pre, vertex, parent, count, reached


@njit(cache=True)
def predecessors(edge_start, edge_to, mask, pre, pred_start):
    """Predecessor lists of the retaining edges from numbered nodes, by the target's DFS number,
    each a list of the sources' DFS numbers.

    Fills ``pred_start`` (offsets by number, ``count + 2`` or more, zeroed) in place and returns
    ``pred_from``. Sources are scanned in index order, so their numbers cost nothing to look up.
    Lists by number, not by node, let :func:`semi_nca` keep its semidominators in ``pred_start``.
    """
    n = edge_start.shape[0] - 1
    for v in range(n):
        if pre[v] == 0:
            continue
        for e in range(edge_start[v], edge_start[v + 1]):
            if mask[e]:
                pred_start[pre[edge_to[e]] + 1] += 1
    for i in range(pred_start.shape[0] - 1):
        pred_start[i + 1] += pred_start[i]
    pred_from = np.empty(pred_start[-1], dtype=np.int32)
    # Scatter with pred_start[w] as w's cursor; it ends as w + 1's start, so shifting by one
    # restores the offsets without a second array.
    for v in range(n):
        pv = pre[v]
        if pv == 0:
            continue
        for e in range(edge_start[v], edge_start[v + 1]):
            if mask[e]:
                w = pre[edge_to[e]]
                pred_from[pred_start[w]] = pv
                pred_start[w] += 1
    for i in range(pred_start.shape[0] - 1, 0, -1):
        pred_start[i] = pred_start[i - 1]
    pred_start[0] = 0
    return pred_from


@njit(cache=True)
def semi_nca(count, parent, pred_start, pred_from):
    """Immediate dominators by DFS number, with semi-NCA (Georgiadis, Tarjan and Werneck).

    Semidominators come from Lengauer–Tarjan's EVAL with iterative path compression, with
    ``best[v]`` holding the smallest semidominator number on v's compressed path; each idom is then
    the nearest common ancestor of the DFS parent and the semidominator, found by climbing the
    dominator tree built so far. A vertex with no retaining predecessor counts as held by the
    root (vertex 1). The predecessor lists are by DFS number and hold DFS numbers (see
    :func:`predecessors`). ``parent`` is overwritten with the result: ``idom[number]``, 0 for the
    root. ``pred_start`` is overwritten too: vertex i's list is read last when i is processed
    (numbers go down), so i's semidominator is kept in its end offset, ``pred_start[i + 1]``,
    rather than in an array of its own.
    """
    best = np.empty(count + 1, dtype=np.int32)
    ancestor = np.zeros(count + 1, dtype=np.int32)
    stack = np.empty(count + 1, dtype=np.int32)
    for i in range(count, 1, -1):
        s = i
        orphan = True
        for k in range(pred_start[i], pred_start[i + 1]):
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
        pred_start[i + 1] = s  # i's semidominator; the list ends are not read again
        best[i] = s
        ancestor[i] = parent[i]
    idom = parent
    for i in range(2, count + 1):
        j = idom[i]
        s = pred_start[i + 1]
        while j > s:
            j = idom[j]
        idom[i] = j
    return idom


@njit(cache=True)
def accumulate(vertex, idom_number, count, self_size):
    """Node-space ``(idom, retained_size, retained_count)`` from the numbered dominator tree.

    Sizes are summed in reverse preorder, so every vertex is complete before it is added to its
    dominator (a dominator is a DFS ancestor, hence has a smaller number). They are summed straight
    into the node-space results: arrays by number as well would be 16 bytes more per object at the
    analysis' peak. Nodes left unnumbered (unreachable under generic semantics) keep idom -1 and
    zero sizes.
    """
    n = self_size.shape[0]
    idom = np.full(n, -1, dtype=np.int32)
    retained_size = np.zeros(n, dtype=np.int64)
    retained_count = np.zeros(n, dtype=np.int64)
    for i in range(1, count + 1):
        v = vertex[i]
        retained_size[v] = self_size[v]
        retained_count[v] = 1
        if i > 1:
            idom[v] = vertex[idom_number[i]]
    for i in range(count, 1, -1):
        v = vertex[i]
        d = idom[v]
        retained_size[d] += retained_size[v]
        retained_count[d] += retained_count[v]
    return idom, retained_size, retained_count


@njit(cache=True)
def first_search(root, edge_start, edge_to, mask, transient, paths):
    """Breadth-first search from the root over retaining edges (``mask``), the edges of the
    ``transient`` nodes (V8's transient root groups) followed only once nothing else is left: the
    objects in the order reached (root first), and per object the holder and the edge it was first
    reached by and its depth (-1 for the root's holder and edge, and where the search never arrives).
    The holders' edges form each object's first path, and its depth is that path's length.

    Without ``paths`` only the depths are kept (the order, holders and edges come back empty): the
    analysis needs no more, and those three arrays would be 16 bytes per object at its peak."""
    n = edge_start.shape[0] - 1
    kept = n if paths else 0
    dist = np.full(n, -1, dtype=np.int32)
    parent = np.full(kept, -1, dtype=np.int32)
    parent_edge = np.full(kept, -1, dtype=np.int64)
    order = np.empty(kept, dtype=np.int32)
    # Every node once, and a transient one a second time when its group comes round again.
    queue = np.empty(n + np.count_nonzero(transient), dtype=np.int32)
    dist[root] = 0
    if paths:
        order[0] = root
    queue[0] = root
    head, tail, reached = 0, 1, 1
    deferred = False
    while True:
        if head == tail:
            if deferred:
                break
            # Everything else is reached: the transient groups come round again, and the search
            # goes on breadth-first from what only they reach.
            deferred = True
            end = tail
            for i in range(end):
                if transient[queue[i]]:
                    queue[tail] = queue[i]
                    tail += 1
            continue
        v = queue[head]
        head += 1
        if transient[v] and not deferred:
            continue
        d = dist[v] + 1
        for e in range(edge_start[v], edge_start[v + 1]):
            if mask[e]:
                w = edge_to[e]
                if dist[w] < 0:
                    dist[w] = d
                    if paths:
                        parent[w] = v
                        parent_edge[w] = e
                        order[reached] = w
                    reached += 1
                    queue[tail] = w
                    tail += 1
    return order[: reached if paths else 0], parent, parent_edge, dist


@njit(cache=True)
def move_owned_sizes(edge_start, edge_to, edge_kind, self_size, owned, synthetic, root):
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
            # Separate compares, not `in (...)`: numba cannot type `in` over a tuple of mixed int types.
            elif ow == w or ow == o or ow == multiple:  # noqa: SIM109
                continue
            else:
                owner[w] = multiple
                work[top] = w
                top += 1
    sizes = self_size.copy()
    for v in range(n):
        o = owner[v]
        if o < 0 or o == v or synthetic[o] or o == root:  # noqa: SIM109 - numba: no `in` over mixed int types
            continue
        sizes[o] += sizes[v]
        sizes[v] = 0
    return sizes


# Rule weights (see "Rule weights" in docs/analysis.md). No retaining reference keeps IGNORED once
# the ignored ones are dropped, so the kernels below also use it as "no reference seen yet".
_IGNORED = np.int8(IGNORED)


@njit(cache=True)
def has_unignored_referrer(n, edge_to, edge_kind, edge_weight):
    """:func:`has_strong_referrer` with the ignored references left out, as if they were absent."""
    has = np.zeros(n, dtype=np.bool_)
    for e in range(edge_to.shape[0]):
        k = edge_kind[e]
        if k != _WEAK and k != _SHORTCUT and edge_weight[e] != _IGNORED:
            has[edge_to[e]] = True
    return has


@njit(cache=True)
def keep_owners(root, edge_start, edge_to, edge_weight, state):
    """Drop ignored references, then keep into each live object only its highest-weight ones (OWNS).

    ``state`` is the retaining mask as bytes (0/1); it is rewritten in place to the kept references
    (0/1). Returns ``(owner_weight, ambiguous)``: int8[n], the weight kept into each live object
    other than the root (0 elsewhere), and bool[n], live objects whose kept references of weight
    >= 1 come from two or more objects.

    1. ``live``: what the root reaches over the mask without the ignored references; nothing below
       changes it. The same walk finds ``best[w]``, the highest weight among the references into
       ``w`` from live objects.
    2. The ignored references leave the mask. Another reference stays when its weight is at least
       ``best`` of its target (from a live object: exactly that; from an object the root does not
       reach, unless a live one outranks it).
    3. The kept references are walked from the root in rounds. When a round's walk ends, each live
       object it did not reach but that a reached object references gets back its highest-weight
       references from the objects reached so far, and the next round goes on from there; the
       rounds end when the walk reaches every live object. Each object is walked once.
    """
    n = edge_start.shape[0] - 1
    live = np.zeros(n, dtype=np.uint8)  # 0 dead, 1 live, 2 walked over kept references, 3 given back
    stack = np.empty(n, dtype=np.int32)
    best = np.full(n, _IGNORED, dtype=np.int8)
    live[root] = 1
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        v = stack[top]
        for e in range(edge_start[v], edge_start[v + 1]):
            x = edge_weight[e]
            if state[e] and x != _IGNORED:
                w = edge_to[e]
                if x > best[w]:
                    best[w] = x
                if live[w] == 0:
                    live[w] = 1
                    stack[top] = w
                    top += 1
    outranked = 0
    for e in range(state.shape[0]):
        if state[e]:
            x = edge_weight[e]
            if x == _IGNORED:
                state[e] = 0
            elif x >= best[edge_to[e]]:
                state[e] = 2  # kept
            else:
                outranked += 1  # state 1: retaining but outranked

    walked = np.zeros(n, dtype=np.int32)  # the round in which the walk reached each object
    given = np.full(n, _IGNORED, dtype=np.int8)  # weight given back to a cut-off object
    cut_off = np.empty(n, dtype=np.int32)
    # Nothing outranked: the kept references are all of step 1's, which reach every live object.
    live[root] = 2
    stack[0] = root
    top = 1 if outranked else 0
    rnd = 0
    while top > 0:
        cut = 0
        while top > 0:
            top -= 1
            v = stack[top]
            for e in range(edge_start[v], edge_start[v + 1]):
                s = state[e]
                if s == 0:
                    continue
                w = edge_to[e]
                if live[w] != 1:
                    continue
                if s == 2:
                    live[w] = 2
                    walked[w] = rnd
                    stack[top] = w
                    top += 1
                else:
                    x = edge_weight[e]
                    if given[w] == _IGNORED:
                        cut_off[cut] = w
                        cut += 1
                        given[w] = x
                    elif x > given[w]:
                        given[w] = x
        rnd += 1
        for i in range(cut):
            w = cut_off[i]
            if live[w] == 1:
                live[w] = 3
                walked[w] = rnd
                stack[top] = w
                top += 1

    # Final pass: the given-back references join the kept ones, the mask becomes 0/1 again, and
    # owners are counted per object (sources come in index order, so one `last` per object dedups).
    ambiguous = np.zeros(n, dtype=np.bool_)
    last = cut_off
    last[:] = -1
    for v in range(n):
        lv = live[v]
        for e in range(edge_start[v], edge_start[v + 1]):
            s = state[e]
            if s == 0:
                continue
            w = edge_to[e]
            x = edge_weight[e]
            if s == 1 and lv >= 2 and live[w] == 3 and walked[v] < walked[w] and x == given[w]:
                s = 2
            if s == 2:
                state[e] = 1
                if lv and x >= 1 and last[w] != v:
                    if last[w] >= 0:
                        ambiguous[w] = True
                    last[w] = v
            else:
                state[e] = 0
    for v in range(n):
        if live[v] == 0 or v == root:
            best[v] = 0
    ambiguous[root] = False
    return best, ambiguous


@njit(cache=True)
def look_through(idom, root, internal):
    """Which internal objects answers look through, and each object's nearest holder that is not one.

    First pass: from every reached object that is not internal, climb the dominator tree while the
    ancestors are internal, marking them (each is marked once, so the climbs cost O(n) in all).
    Second pass: each object's nearest proper dominator that is not looked through, found by a
    climb that writes its answer into every object it passed (path compression), so again O(n).
    """
    n = idom.shape[0]
    through = np.zeros(n, dtype=np.bool_)
    for v in range(n):
        if v == root or idom[v] < 0 or internal[v]:
            continue
        w = idom[v]
        while w != root and w >= 0 and internal[w] and not through[w]:
            through[w] = True
            w = idom[w]
    holder = np.full(n, -1, dtype=np.int32)
    chain = np.empty(n, dtype=np.int32)
    for v in range(n):
        if v == root or idom[v] < 0 or holder[v] >= 0:
            continue
        depth = 0
        w = v
        # Climb until an object whose holder is known, or whose dominator is not looked through.
        while True:
            chain[depth] = w
            depth += 1
            parent = idom[w]
            if parent == root or not through[parent]:
                found = parent
                break
            if holder[parent] >= 0:
                found = holder[parent]
                break
            w = parent
        for i in range(depth):
            holder[chain[i]] = found
    return through, holder


@njit(cache=True)
def spread_down(idom, root, seed):
    """Each object's label: its own seed, else its nearest dominator's (-1 where none has one).

    A climb per object, writing its answer into every object it passed (path compression), so each
    object is climbed through once: O(n).
    """
    n = idom.shape[0]
    label = seed.copy()
    done = seed >= 0
    chain = np.empty(n, dtype=np.int32)
    for v in range(n):
        if done[v]:
            continue
        depth = 0
        w = v
        found = -1
        while True:
            chain[depth] = w
            depth += 1
            if done[w]:
                found = label[w]
                depth -= 1  # w's label is already right
                break
            parent = idom[w]
            if w == root or parent < 0:
                break
            w = parent
        for i in range(depth):
            label[chain[i]] = found
            done[chain[i]] = True
    return label


@njit(cache=True)
def dominator_children(idom):
    """The dominator tree as lists of children: ``start`` (int64[n + 1]) and ``children``
    (int32[n - roots]), each object's children at ``children[start[v]:start[v + 1]]``, in index
    order. A counting pass, linear (an argsort of ``idom`` would be n log n), filling each list from
    its end so that ``start`` itself serves as the cursor (no second array of n positions)."""
    n = idom.shape[0]
    start = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        if idom[v] >= 0:
            start[idom[v] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    # start[p + 1] is where p's list ends; filled backwards, it ends up where p's list begins.
    children = np.empty(start[n], dtype=np.int32)
    for v in range(n - 1, -1, -1):
        p = idom[v]
        if p >= 0:
            start[p + 1] -= 1
            children[start[p + 1]] = v
    total = children.shape[0]
    for v in range(n):
        start[v] = start[v + 1]
    start[n] = total
    return start, children


@njit(cache=True)
def sort_children(start, children, retained_size, ids):
    """Sort each list ``children[start[v]:start[v + 1]]`` in place: largest retained size first,
    then the lowest id (the order the stored query ``dominated`` answers in). Most lists hold one
    or two objects, sorted by insertion; a long one by id and then, stably, by size."""
    n = start.shape[0] - 1
    for v in range(n):
        lo = start[v]
        hi = start[v + 1]
        if hi - lo <= 16:
            for i in range(lo + 1, hi):
                c = children[i]
                size = retained_size[c]
                j = i - 1
                while j >= lo and (
                    retained_size[children[j]] < size
                    or (retained_size[children[j]] == size and ids[children[j]] > ids[c])
                ):
                    children[j + 1] = children[j]
                    j -= 1
                children[j + 1] = c
        else:
            part = children[lo:hi]
            by_id = part[np.argsort(ids[part])]
            children[lo:hi] = by_id[np.argsort(-retained_size[by_id], kind="mergesort")]


@njit(cache=True)
def group_totals(root, start, children, group, group_count, self_size, retained_size, ids):
    """Per group (``group``: int32[n], -1 for none): its members, their self sizes, its retained
    size (its outermost members': none of the group's members dominates them, so each byte counts
    once) and its member retaining most (ties: the lowest id), by one walk down the dominator tree
    counting each group's members on the current branch."""
    objects = np.zeros(group_count, dtype=np.int64)
    own = np.zeros(group_count, dtype=np.int64)
    retained = np.zeros(group_count, dtype=np.int64)
    best = np.full(group_count, -1, dtype=np.int64)  # a node index
    open_members = np.zeros(group_count, dtype=np.int64)
    n = group.shape[0]
    stack = np.empty(n, dtype=np.int32)
    cursor = np.empty(n, dtype=np.int64)
    top = 0
    stack[0] = root
    cursor[0] = start[root]
    w = root
    while True:
        g = group[w]  # w: just entered
        if g >= 0:
            if open_members[g] == 0:
                retained[g] += retained_size[w]
            open_members[g] += 1
            objects[g] += 1
            own[g] += self_size[w]
            b = best[g]
            if (
                b < 0
                or retained_size[w] > retained_size[b]
                or (retained_size[w] == retained_size[b] and ids[w] < ids[b])
            ):
                best[g] = w
        # Down to the next child not yet entered, or up (leaving) until there is one.
        while top >= 0 and cursor[top] == start[stack[top] + 1]:
            v = stack[top]
            if group[v] >= 0:
                open_members[group[v]] -= 1
            top -= 1
        if top < 0:
            break
        w = children[cursor[top]]
        cursor[top] += 1
        top += 1
        stack[top] = w
        cursor[top] = start[w]
    return objects, own, retained, best
