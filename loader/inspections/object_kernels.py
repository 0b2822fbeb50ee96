"""The numba kernels of the duplicate-objects inspection (:mod:`.objects`): one content hash per
object, from its shallow values (V8) or its elements (a primitive array). Imported only where a
graph is inspected, so that the records and the text of a stored answer load no numba.

Hashes are the polynomial hashes of :mod:`.kernels` (two primes near 2^31, the same bases), folded
over a fixed sequence of symbols per object, so that two objects share both hashes by chance with
odds of about 2^-61.
"""

from __future__ import annotations

import numba
import numpy as np

from heapdb.loader.inspections.kernels import B1, B2, P1, P2

LITERAL = 1  # a value written in JSON as itself (a number, true, false, null); 0 is a JSON string
REFERENCE = 2  # a value that is another object: memlab's text "REFERENCE_" and the object's id
AFTER_INDEXES = np.int64(1) << 40  # sorts a named key after every array index (< 2^32)
_MINUS, _ZERO = 45, 48  # the code points of "-" and "0"


@numba.njit(cache=True)
def shallow_hashes(
    nodes,
    classes,
    edge_start,
    edge_to,
    edge_kind,
    edge_name,
    property_kind,
    key_of,
    key_index,
    key_hashes,
    tag,
    h1,
    h2,
    length,
    literal_nodes,
    literal_hashes,
    ids,
    prefix,
):  # pragma: no cover - compiled
    """Per node of ``nodes``: the two hashes of its class and its property values as memlab's
    object-shallow serialises them, and how many properties it has.

    ``key_of`` maps a reference's name (a string index) to its key (-1: not a key); ``key_index``
    is a key's array index (-1: a named key), ``key_hashes`` int64[k, 3] a key's hashes and length;
    ``classes`` int64[count, 3] the hashes and length of each node's class name. Per node as a
    value: ``tag`` (0: a JSON string, LITERAL, REFERENCE); a string's hashes and length (``h1``,
    ``h2``, ``length``), a literal's in ``literal_hashes``, by its place in ``literal_nodes``
    (sorted). ``prefix``: the hashes and length of the text "REFERENCE_"."""
    count = nodes.shape[0]
    out = np.zeros((count, 3), dtype=np.int64)
    owner = np.full(key_hashes.shape[0], -1, dtype=np.int64)
    slot = np.zeros(key_hashes.shape[0], dtype=np.int64)
    width = 1
    for i in range(count):
        width = max(width, edge_start[nodes[i] + 1] - edge_start[nodes[i]])
    keys = np.empty(width, dtype=np.int64)
    targets = np.empty(width, dtype=np.int64)
    place = np.empty(width, dtype=np.int64)
    order = np.empty(width, dtype=np.int64)
    digits = np.empty(24, dtype=np.int64)
    for i in range(count):
        v = nodes[i]
        k = 0
        indexed = False
        # A JavaScript object's keys: a key set twice keeps its first place and its last value.
        for e in range(edge_start[v], edge_start[v + 1]):
            if edge_kind[e] != property_kind:
                continue
            c = key_of[edge_name[e]]
            if c < 0:
                continue
            if owner[c] != i:
                owner[c] = i
                slot[c] = k
                keys[k] = c
                targets[k] = edge_to[e]
                indexed = indexed or key_index[c] >= 0
                k += 1
            else:
                targets[slot[c]] = edge_to[e]
        # ... and array-index keys come first, in ascending order (JSON.stringify writes them so).
        if indexed:
            for j in range(k):
                place[j] = key_index[keys[j]] if key_index[keys[j]] >= 0 else AFTER_INDEXES + j
            order[:k] = np.argsort(place[:k], kind="mergesort")
        a = np.int64(classes[i, 0])
        b = np.int64(classes[i, 1])
        a = (a * B1 + classes[i, 2]) % P1
        b = (b * B2 + classes[i, 2]) % P2
        for jj in range(k):
            j = order[jj] if indexed else jj
            c = keys[j]
            t = targets[j]
            kind = np.int64(tag[t])
            x1, x2, chars = h1[t], h2[t], length[t]
            if kind == LITERAL:
                at = np.searchsorted(literal_nodes, t)
                x1, x2, chars = literal_hashes[at, 0], literal_hashes[at, 1], literal_hashes[at, 2]
            elif kind == REFERENCE:  # the text "REFERENCE_<id>", hashed on from the prefix's hash
                kind = np.int64(0)
                x1, x2, chars = prefix[0], prefix[1], prefix[2]
                number = ids[t]
                if number < 0:
                    x1 = (x1 * B1 + _MINUS) % P1
                    x2 = (x2 * B2 + _MINUS) % P2
                    chars += 1
                    number = -number
                nd = 0
                while True:
                    digits[nd] = number % 10
                    nd += 1
                    number //= 10
                    if number == 0:
                        break
                for d in range(nd - 1, -1, -1):
                    x1 = (x1 * B1 + _ZERO + digits[d]) % P1
                    x2 = (x2 * B2 + _ZERO + digits[d]) % P2
                chars += nd
            # One entry's symbols: its key's hashes and length, its value's kind, hashes and length.
            a = (((a * B1 + key_hashes[c, 0]) % P1 * B1 + key_hashes[c, 2]) % P1 * B1 + kind) % P1
            a = ((a * B1 + x1) % P1 * B1 + chars) % P1
            b = (((b * B2 + key_hashes[c, 1]) % P2 * B2 + key_hashes[c, 2]) % P2 * B2 + kind) % P2
            b = ((b * B2 + x2) % P2 * B2 + chars) % P2
        out[i, 0] = (a * B1 + k) % P1
        out[i, 1] = (b * B2 + k) % P2
        out[i, 2] = k
    return out


@numba.njit(cache=True)
def array_hashes(buf, start, size, code):  # pragma: no cover - compiled
    """int64[k, 2]: the two hashes of each array's ``size`` bytes of elements from ``start`` in
    ``buf``, begun with its element type's ``code`` (an int[] and a float[] of equal bytes differ)."""
    k = start.shape[0]
    out = np.zeros((k, 2), dtype=np.int64)
    for i in range(k):
        a = np.int64(code[i])
        b = np.int64(code[i])
        end = start[i] + size[i]
        j = start[i]
        # Three bytes a symbol (below 2^24, so below both moduli): a third of the steps of one
        # byte at a time. Arrays compared have the same size, so the last one or two bytes, each
        # a symbol of its own, fall in the same places.
        while j + 3 <= end:
            w = (np.int64(buf[j]) << 16) | (np.int64(buf[j + 1]) << 8) | np.int64(buf[j + 2])
            a = (a * B1 + w) % P1
            b = (b * B2 + w) % P2
            j += 3
        while j < end:
            a = (a * B1 + buf[j]) % P1
            b = (b * B2 + buf[j]) % P2
            j += 1
        out[i, 0] = a
        out[i, 1] = b
    return out
