"""The numba kernels of the duplicate-strings inspection (:mod:`.strings`): content hashes of
names, of concatenations and of Java strings' value arrays, and the parts of each concatenation. Imported only where a graph is
inspected, so that the records and the text of a stored answer load no numba.
"""

from __future__ import annotations

import numba
import numpy as np

from heapdb.loader.inspections.strings import CONCATENATED, SLICED

# The hash's two prime moduli and bases: products of two residues fit in an int64.
P1, B1 = 2_147_483_647, 1_000_003
P2, B2 = 1_000_000_007, 911_382_323


@numba.njit(cache=True)
def polynomial_hashes(points, ends):  # pragma: no cover - compiled
    k = ends.shape[0]
    h1 = np.zeros(k, dtype=np.int64)
    h2 = np.zeros(k, dtype=np.int64)
    start = 0
    for i in range(k):
        a = np.int64(0)
        b = np.int64(0)
        for j in range(start, ends[i]):
            c = np.int64(points[j])
            a = (a * B1 + c) % P1
            b = (b * B2 + c) % P2
        h1[i] = a
        h2[i] = b
        start = ends[i]
    return h1, h2


@numba.njit(cache=True)
def power(base, exponent, modulus):  # pragma: no cover - compiled
    result = 1
    base = base % modulus
    while exponent > 0:
        if exponent & 1:
            result = result * base % modulus
        base = base * base % modulus
        exponent >>= 1
    return result


@numba.njit(cache=True)
def first_edge_named(edge_start, edge_to, edge_name, named_edges, sources, indexes):  # pragma: no cover
    target = np.full(edge_start.shape[0] - 1, -1, dtype=np.int32)
    for v in sources:
        for e in range(edge_start[v], edge_start[v + 1]):
            if not named_edges[e]:
                continue
            hit = False
            for i in indexes:
                if edge_name[e] == i:
                    hit = True
            if hit:
                target[v] = edge_to[e]
                break
    return target


@numba.njit(cache=True)
def content_hashes(role, first, second, parent, h1, h2, length):  # pragma: no cover - compiled
    """Each concatenation's and sliced string's content hash from its parts', children first
    (iteratively); a part missing, or a cycle in a malformed file, counts as empty."""
    n = role.shape[0]
    state = np.zeros(n, dtype=np.int8)  # 0 to do, 1 on the stack, 2 done
    stack = np.empty(n, dtype=np.int32)
    for start in range(n):
        if role[start] != CONCATENATED and role[start] != SLICED or state[start] == 2:
            continue
        depth = 0
        stack[0] = start
        state[start] = 1
        depth = 1
        while depth > 0:
            v = stack[depth - 1]
            pushed = False
            parts = (first[v], second[v]) if role[v] == CONCATENATED else (parent[v], np.int32(-1))
            for child in parts:
                if child >= 0 and (role[child] == CONCATENATED or role[child] == SLICED) and state[child] == 0:
                    stack[depth] = child
                    state[child] = 1
                    depth += 1
                    pushed = True
                    break
            if pushed:
                continue
            a1, a2, la = np.int64(0), np.int64(0), np.int64(0)
            for child in parts:
                if child < 0 or state[child] == 1:  # missing, or a cycle back to the stack
                    continue
                a1 = (a1 * power(B1, length[child], P1) + h1[child]) % P1
                a2 = (a2 * power(B2, length[child], P2) + h2[child]) % P2
                la += length[child]
            h1[v], h2[v], length[v] = a1, a2, la
            state[v] = 2
            depth -= 1
    return h1, h2, length


@numba.njit(cache=True)
def reaches_flagged(parent, flagged, members):  # pragma: no cover - compiled
    """bool[n]: for each of ``members``, whether following ``parent`` (int32, -1: none) from it
    through members reaches a ``flagged`` member (itself included); a cycle never does. Each chain
    is walked once (iteratively: React's return chains can be deep)."""
    n = parent.shape[0]
    state = np.zeros(n, dtype=np.int8)  # 0 not yet, 1 on the current walk, 2 reaches, 3 does not
    walk = np.empty(n, dtype=np.int32)
    for start in range(n):
        if not members[start] or state[start] >= 2:
            continue
        depth = 0
        v = start
        answer = 3
        while True:
            if v < 0 or not members[v] or state[v] == 1:
                answer = 3  # off the members, or round a cycle
                break
            if state[v] >= 2:
                answer = state[v]
                break
            if flagged[v]:
                state[v] = 2
                answer = 2
                break
            state[v] = 1
            walk[depth] = v
            depth += 1
            v = parent[v]
        for i in range(depth):
            state[walk[i]] = answer
    return state == 2


@numba.njit(cache=True)
def java_string_hashes(buf, start, count, wide, little):  # pragma: no cover - compiled
    """Per Java string: the two hashes and the length of its characters, ``count`` elements of its
    value array from ``start`` in ``buf``, as UTF-16 code units (the polynomial hashes of
    :func:`polynomial_hashes`, so that text in the Basic Multilingual Plane hashes as its name
    would). ``wide``: two bytes a character (a char[], or a byte[] coded UTF16), else one (a byte[]
    coded LATIN1); ``little``: the two bytes low first (a byte[] coded UTF16 holds the JVM's own
    byte order), else high first (a char[], which the dump writes big-endian)."""
    k = start.shape[0]
    h1 = np.zeros(k, dtype=np.int64)
    h2 = np.zeros(k, dtype=np.int64)
    length = np.zeros(k, dtype=np.int64)
    for i in range(k):
        a = np.int64(0)
        b = np.int64(0)
        o = start[i]
        units = count[i]
        if wide[i]:
            for j in range(units):
                hi = np.int64(buf[o + 2 * j + (1 if little[i] else 0)])
                lo = np.int64(buf[o + 2 * j + (0 if little[i] else 1)])
                c = (hi << 8) | lo
                a = (a * B1 + c) % P1
                b = (b * B2 + c) % P2
        else:
            for j in range(units):
                c = np.int64(buf[o + j])
                a = (a * B1 + c) % P1
                b = (b * B2 + c) % P2
        h1[i] = a
        h2[i] = b
        length[i] = units
    return h1, h2, length


@numba.njit(cache=True)
def outermost_pairs(idom, group, node):  # pragma: no cover - compiled
    """bool[k]: for each (``group[i]``, ``node[i]``) pair, whether no dominator-tree ancestor of
    the node is a member of the same group. The pairs come sorted by group, each once; an object may
    belong to several groups (two components' fibers can share a props object), which
    ``outermost_members``' one group per object cannot say. Each member's dominators are walked up
    to the root, as memlab's getConditionalDominatorIds does: the fibers and what they hold are few."""
    k = node.shape[0]
    outer = np.ones(k, dtype=np.bool_)
    stamp = np.full(idom.shape[0], -1, dtype=np.int64)  # the group a node is a member of, last set
    start = 0
    while start < k:
        end = start
        while end < k and group[end] == group[start]:
            stamp[node[end]] = group[start]
            end += 1
        for i in range(start, end):
            v = idom[node[i]]
            while v >= 0:
                if stamp[v] == group[start]:
                    outer[i] = False
                    break
                v = idom[v]
        start = end
    return outer
