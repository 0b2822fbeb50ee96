"""The loops owners need compiled: which owners reach each object over retaining references, and
the first reference of a kind and name (per-owner totals are the analysis' ``group_totals``)."""

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
