"""Source locations of a Luau dump's functions and protos (:class:`~heapdb.loader.sources.SourceLocations`).

A Lua closure's ``proto`` says where its function is defined: ``source`` (the chunk name, ``@file``
for a file, ``=name`` for a named chunk, shown without that mark) and ``line`` (1-based, the line the
function starts at). A proto is placed the same way. The dump has no columns and no script ids.
C functions have no proto and so no location.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from heapdb.loader.sources import SourceLocations

_MAX_LINE = 0x7FFFFFFF


def luau_locations(
    objects: dict[str, Any], index: dict[str, int], intern: Callable[[str], int]
) -> SourceLocations | None:
    """The locations of the functions, protos and threads among ``objects`` (by address; ``index``
    gives their node; every value is an object, the reader checked), script names interned with
    ``intern``; None when none has one. A thread's is where it runs (its own ``source`` and
    ``line``: the main thread's, the main chunk), a function's its proto's."""
    rows = []
    for address, obj in objects.items():
        kind = obj.get("type")
        if kind not in ("function", "proto", "thread"):
            continue
        ref = obj.get("proto")
        proto = (objects.get(ref) if isinstance(ref, str) else None) if kind == "function" else obj
        if not isinstance(proto, dict) or proto.get("type") != ("thread" if kind == "thread" else "proto"):
            continue
        source, line = proto.get("source"), proto.get("line")
        if isinstance(source, str) and type(line) is int and 0 < line <= _MAX_LINE:
            name = source[1:] if source[:1] in ("@", "=") else source
            rows.append((index[address], intern(name), line - 1))
    if not rows:
        return None
    table = np.array(sorted(rows), dtype=np.int64).reshape(-1, 3)
    unknown = np.full(table.shape[0], -1, dtype=np.int32)
    return SourceLocations(
        node=table[:, 0].astype(np.int32),
        script_id=unknown,
        script=table[:, 1].astype(np.int32),
        line=table[:, 2].astype(np.int32),
        column=unknown.copy(),
    )
