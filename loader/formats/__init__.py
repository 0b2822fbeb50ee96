"""Snapshot formats behind one interface.

Each format is one frozen :class:`~heapdb.loader.formats.protocol.Format`, declared below: its
name, the reader module that sniffs and reads it (:class:`~heapdb.loader.formats.protocol.Reader`:
``sniff(head: bytes) -> bool`` and ``read_graph(path, on_bytes=None) -> HeapGraph``), and its traits
(are its ids addresses, which analysis semantics, which default rules). :func:`detect` picks the
format from the content, never from the file name; :func:`named` finds the declaration of the
format a graph or a stored snapshot names, for its traits.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from heapdb.errors import FormatError
from heapdb.loader.formats.protocol import Collections, Duplicates, Format, Ownership, Reader, Semantics, StringKinds
from heapdb.loader.graph import HeapGraph

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress

__all__ = [
    "FORMATS",
    "HPROF",
    "LUAU",
    "MLPD",
    "SNAPBIN",
    "SNIFF_BYTES",
    "V8",
    "Collections",
    "Duplicates",
    "Format",
    "Ownership",
    "Reader",
    "Semantics",
    "StringKinds",
]

SNIFF_BYTES = 4096

SNAPBIN = Format(
    name="snapbin",
    reader="heapdb.loader.formats.snapbin",
    described="snap.bin magic",
    ids_are_addresses=True,  # its writers may use addresses (heapdb.capture writes id())
    semantics=Semantics.GENERIC,
    default_rules=None,  # the writer's runtime decides ("python" for heapdb.capture)
    # heapdb.capture's str and bytes objects, named by their first 1,024 characters
    strings=StringKinds(plain=frozenset({"string"})),
    ownership=Ownership.RUNTIME,  # Python's modules (heapdb.capture), .NET's namespaces (Mono's module)
)
V8 = Format(
    name="v8",
    reader="heapdb.loader.formats.v8",
    described="a V8 .heapsnapshot",
    ids_are_addresses=False,  # V8's heap object ids stay with their object for the process's life
    semantics=Semantics.V8,
    default_rules="v8",
    # V8 names a string by its first 1,024 characters; a cons string is "(concatenated string)"
    strings=StringKinds(
        plain=frozenset({"string"}),
        concatenated=frozenset({"concatenated string"}),
        sliced=frozenset({"sliced string"}),
        code=frozenset({"code"}),
    ),
    dom=True,  # Chromium's snapshots (and Node's, where a native object says so)
    collections=Collections.V8,
    duplicates=Duplicates.SHALLOW,  # objects' properties, as memlab's object-shallow compares them
    ownership=Ownership.V8,  # script locations (Dart's snapshot profiles: their program structure)
)
LUAU = Format(
    name="luau",
    reader="heapdb.loader.formats.luau",
    described="a Luau heap dump",
    ids_are_addresses=True,  # objects are keyed by address
    semantics=Semantics.GENERIC,
    default_rules="luau",
    strings=StringKinds(plain=frozenset({"string"})),  # named by their whole data
    ownership=Ownership.LUAU,
)
HPROF = Format(
    name="hprof",
    reader="heapdb.loader.formats.hprof",
    described="a Java hprof heap dump",
    ids_are_addresses=True,  # the dump's object ids are addresses
    semantics=Semantics.GENERIC,
    default_rules="java",  # heapdb's lifecycle rules and Android's known leaks
    # a java.lang.String's characters: its value array (a char[], or a byte[] and its coder)
    strings=StringKinds(instances=frozenset({"java.lang.String"})),
    collections=Collections.JAVA,
    duplicates=Duplicates.ARRAYS,  # primitive arrays' elements (the reader keeps them)
    lifecycles=True,  # <class> and <super> references, and each instance's primitive fields
    ownership=Ownership.JAVA,
)

MLPD = Format(
    name="mlpd",
    reader="heapdb.loader.formats.mlpd",
    described="a Mono log-profiler .mlpd file",
    ids_are_addresses=True,  # objects are named by their addresses, which a moving GC changes
    semantics=Semantics.GENERIC,
    default_rules=None,  # heapdb has no .NET rule set yet
    ownership=Ownership.DOTNET,
)

FORMATS = (SNAPBIN, V8, LUAU, HPROF, MLPD)  # in the order detect tries them


def named(name: object) -> Format | None:
    """The format called ``name`` (a graph's ``meta["format"]``, a stored snapshot's format), None
    for a name no reader writes (``"unknown"``, a graph built by hand)."""
    return next((f for f in FORMATS if f.name == name), None)


def detect(path: str | os.PathLike[str]) -> Format:
    """Return the format that can read ``path``, judged by its first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror}") from None
    if not head:
        raise FormatError(path, "the file is empty", offset=0)
    for declared in FORMATS:
        if declared.sniff(head):
            return declared
    *others, last = (f.described for f in FORMATS)
    raise FormatError(path, f"not a snapshot heapdb knows (expected {', '.join(others)} or {last})", offset=0)


def read_graph(path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
    """Read any supported snapshot into a :class:`HeapGraph`."""
    return detect(path).read_graph(path, on_bytes=on_bytes)
