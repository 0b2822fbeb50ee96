"""The hprof reader's numba kernels over the objects the heap-dump walk found (:mod:`.scan`), once
the class dumps are read: each object's class, whether an instance fits its class's fields, and its
type, shallow size and primitive field layout, written straight into the graph's columns."""

from __future__ import annotations

import numba
import numpy as np

from heapdb.loader.formats.hprof.layout import ARRAY_OVERHEAD, OBJECT_ALIGNMENT
from heapdb.loader.formats.hprof.scan import lower_bound


@numba.njit(cache=True, nogil=True)
def class_indexes(obj_kind, obj_class, obj_elem, sorted_ids, order, prim_class, out):
    """``out[i]``: object ``i``'s class (an index into the class dumps, -1 if the dump has none):
    its class id's, found by binary search over the ascending ``sorted_ids`` (``order`` maps them
    back), or a primitive array's array class by its element type (``prim_class``)."""
    k = sorted_ids.shape[0]
    for i in range(obj_kind.shape[0]):
        if obj_kind[i] == 3:
            out[i] = prim_class[obj_elem[i] & 0x7F]
            continue
        key = obj_class[i]
        lo = lower_bound(sorted_ids, key)
        out[i] = order[lo] if lo < k and sorted_ids[lo] == key else -1


@numba.njit(cache=True, nogil=True)
def instance_fits(obj_kind, cls, obj_len, field_bytes, complete, fits, used):
    """``fits[i]`` (zeros before) set to 1: instance ``i`` of a known class has the bytes its class's
    fields take (exactly, or at least where a super class is missing); ``used[c]``: class ``c`` has
    such an instance. Returns
    the instances of no known class and those of a class with a missing super class."""
    unknown = 0
    incomplete = 0
    for i in range(obj_kind.shape[0]):
        if obj_kind[i] != 1:
            continue
        c = cls[i]
        if c < 0:
            unknown += 1
            continue
        n = np.int64(obj_len[i])  # uint32: compared as a signed integer, never unsigned arithmetic
        if complete[c]:
            ok = n == field_bytes[c]
        else:
            incomplete += 1
            ok = n >= field_bytes[c]
        if ok:
            fits[i] = 1
            used[c] = True
    return unknown, incomplete


@numba.njit(cache=True, nogil=True)
def object_nodes(
    obj_kind, cls, obj_elem, obj_len, fits, ref_fields, esize, class_type, prim_type, value_index, header, shrink,
    oop, type_out, size_out, layout_out,
):  # fmt: skip
    """Each object's type (its class's name; a primitive array's by its element type; the last of
    ``class_type`` for no known class), its shallow size as the JVM counts it (see the package
    docstring: ``shrink`` bytes less per reference field of an instance, references at ``oop`` bytes
    in arrays, rounded up to 8) and its primitive field layout (``value_index`` of its class where it
    fits the class's fields, else -1). ``type_out`` may be ``cls``: each object's class is read
    before its type is written."""
    unknown_type = class_type[class_type.shape[0] - 1]
    for i in range(obj_kind.shape[0]):
        k = obj_kind[i]
        c = cls[i]
        n = np.int64(obj_len[i])
        fit = fits[i] != 0
        if k == 1:
            raw = header + n - (ref_fields[c] * shrink if c >= 0 else 0)
            type_out[i] = class_type[c] if c >= 0 else unknown_type
        elif k == 2:
            raw = header + ARRAY_OVERHEAD + n * oop
            type_out[i] = class_type[c] if c >= 0 else unknown_type
        else:
            raw = header + ARRAY_OVERHEAD + n * esize[obj_elem[i] & 0x7F]
            type_out[i] = prim_type[obj_elem[i] & 0x7F]
        size_out[i] = (raw + OBJECT_ALIGNMENT - 1) // OBJECT_ALIGNMENT * OBJECT_ALIGNMENT
        layout_out[i] = value_index[c] if fit else -1
