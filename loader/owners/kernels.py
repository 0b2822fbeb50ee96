"""The loops owners need compiled: which owners reach each object over retaining references, the
dominator tree's children, and per-owner totals down that tree."""

from __future__ import annotations

import numpy as np
from numba import njit

NONE = -1  # no owner reaches the object
MANY = -2  # two or more owners reach it


@njit(cache=True)
def reaching_owners(edge_start, edge_to, retaining, direct):
    """Per object and level (``direct``: int32[n, levels], every level owning the same objects; an
    object's levels side by side, so a reference's target is one memory read for all):
    the one owner whose objects reach it over retaining references, :data:`NONE` when none does,
    :data:`MANY` when several do.

    The walk starts at every object with an owner of its own (``direct[v, 0]`` >= 0) and never enters
    one: an owner's object passes its own owner on, not what reached it (Dart's ``frozen`` program
    structure). A label only rises, none -> one owner -> many, so each object is pushed at most
    twice a level, and the walk is linear in references; the levels share it, each reference read
    once for all of them."""
    n, levels = direct.shape
    label = direct.copy()
    stack = np.empty(2 * levels * n + 1, dtype=np.int32)
    top = 0
    for v in range(n):
        if direct[v, 0] >= 0:
            stack[top] = v
            top += 1
    while top > 0:
        top -= 1
        u = stack[top]
        for e in range(edge_start[u], edge_start[u + 1]):
            if not retaining[e]:
                continue
            v = edge_to[e]
            if direct[v, 0] >= 0:
                continue
            changed = False
            for k in range(levels):
                mine = label[u, k]
                theirs = label[v, k]
                if mine == NONE or theirs == mine or theirs == MANY:  # noqa: SIM109 (numba: plain comparisons)
                    continue
                label[v, k] = mine if theirs == NONE else MANY
                changed = True
            if changed:
                stack[top] = v
                top += 1
    return label


@njit(cache=True)
def first_target(edge_start, edge_to, edge_name, edge_kind, name, kind):
    """Per object: the target of its first reference of ``kind`` named ``name``, -1 when it has none
    (a Java instance's ``<class>``, a class's ``<classloader>``)."""
    n = edge_start.shape[0] - 1
    out = np.full(n, -1, dtype=np.int32)
    for v in range(n):
        for e in range(edge_start[v], edge_start[v + 1]):
            if edge_name[e] == name and edge_kind[e] == kind:
                out[v] = edge_to[e]
                break
    return out


@njit(cache=True)
def dominator_children(idom):
    """The dominator tree as lists of children: ``start`` (int64[n + 1]) and ``children``
    (int32[n - roots]), each object's children at ``children[start[v]:start[v + 1]]``. A counting
    pass, linear (an argsort of ``idom`` would be n log n)."""
    n = idom.shape[0]
    start = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        if idom[v] >= 0:
            start[idom[v] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    children = np.empty(start[n], dtype=np.int32)
    for v in range(n):
        p = idom[v]
        if p >= 0:
            children[fill[p]] = v
            fill[p] += 1
    return start, children


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
