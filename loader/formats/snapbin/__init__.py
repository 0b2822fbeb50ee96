"""snap.bin: heapdb's own streamable heap snapshot format (reader and writer).

The byte layout is specified in ``docs/format.md``; this package is its reference implementation,
one job per module, in the order the bytes flow:

- :mod:`.layout`: the on-disk constants (magic, header structs, chunk kinds, flags, limits);
- :mod:`.records`: the records a file is made of, one per chunk;
- :mod:`.reader`: :func:`iter_records` reads a file chunk by chunk with bounded memory, checking
  every chunk;
- :mod:`.stream`: :class:`~.stream.StreamCheck` checks a stream's chunks as its bytes arrive, with
  the reader's checks and in constant memory (``heapdb receive``, the service's uploads);
- :mod:`.assemble`: :func:`read_graph` turns the records into a :class:`HeapGraph`, resolving the
  (arbitrary, sparse, possibly forward) object ids through :mod:`.ids`, a numba hash index;
- :mod:`.writer`: :class:`SnapbinWriter` streams a snapshot out with memory independent of the
  object count;
- :mod:`.from_graph`: :func:`write_graph` writes any :class:`HeapGraph` through the writer's API.

Importing the package does not load numba: a process that only writes (a heap capture) stays light.
:func:`read_graph` imports the id index when it first needs it.
"""

from __future__ import annotations

from heapdb.loader.formats.snapbin.assemble import read_graph
from heapdb.loader.formats.snapbin.from_graph import write_graph
from heapdb.loader.formats.snapbin.layout import MAGIC, MAJOR, MINOR, MetaValue, sniff
from heapdb.loader.formats.snapbin.reader import iter_records
from heapdb.loader.formats.snapbin.records import (
    Header,
    Metadata,
    ObjectNames,
    Objects,
    Record,
    Roots,
    Strings,
    Trailer,
    Types,
    Unknown,
)
from heapdb.loader.formats.snapbin.writer import Ref, SnapbinWriter
from heapdb.loader.graph import EdgeKind

__all__ = [
    "MAGIC",
    "MAJOR",
    "MINOR",
    "MetaValue",
    "Ref",
    "EdgeKind",
    "sniff",
    "iter_records",
    "read_graph",
    "write_graph",
    "SnapbinWriter",
    "Record",
    "Header",
    "Metadata",
    "Strings",
    "Types",
    "Objects",
    "Roots",
    "ObjectNames",
    "Trailer",
    "Unknown",
]
