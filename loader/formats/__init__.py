"""Snapshot formats behind one interface.

Each format module exposes:

- ``NAME``: the format's short name (``"snapbin"``, ``"v8"``, ``"luau"``, ``"hprof"``);
- ``sniff(head: bytes) -> bool``: whether the first bytes of a file are this format;
- ``read_graph(path, on_bytes=None) -> HeapGraph``: the whole snapshot as arrays. ``on_bytes`` is
  called with the number of bytes consumed since its last call, for progress bars.

:func:`detect` picks the format from the content, never from the file name.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING

from heapdb.errors import FormatError
from heapdb.loader.graph import HeapGraph

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress

SNIFF_BYTES = 4096


def _modules() -> list[ModuleType]:
    # Imported lazily: the V8 reader pulls in numba, which costs a second at start-up.
    from heapdb.loader.formats import hprof, luau, snapbin, v8

    return [snapbin, v8, luau, hprof]


def detect(path: str | os.PathLike[str]) -> ModuleType:
    """Return the format module that can read ``path``, judged by its first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    if not head:
        raise FormatError(path, "the file is empty", offset=0)
    for module in _modules():
        if module.sniff(head):
            return module
    raise FormatError(
        path,
        "not a snapshot heapdb knows (expected snap.bin magic, a V8 .heapsnapshot, a Luau heap dump or a Java hprof heap dump)",
        offset=0,
    )


def read_graph(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
    """Read any supported snapshot into a :class:`HeapGraph`."""
    return detect(path).read_graph(path, on_bytes=on_bytes)
