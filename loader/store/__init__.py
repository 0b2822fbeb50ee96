"""Writing analysed snapshots into Neo4j, listing them and dropping them.

The data model is described, with example Cypher, in ``docs/data-model.md``. One job per module:

- :mod:`.schema`: the store version and the constraints and indexes (:func:`ensure_schema`);
- :mod:`.listings`: the type listings and dropped references stored as byte arrays;
- :mod:`.summaries`: :class:`LoadInput`, a graph with its analysis, and the group totals and top
  ranks computed from it at load;
- :mod:`.snapshots`: the typed :class:`Snapshot` record, :func:`list_snapshots`, :func:`get_snapshot`;
- :mod:`.lifecycle`: claiming a tag for a load, hiding, dropping, tidying up after dead loads, and
  why loads look atomic;
- :mod:`.purge`: the background purger that frees the records of hidden snapshots;
- :mod:`.bulk`: batches of rows packed as int64 cells, and the calls into heapdb's Neo4j plugin
  (whose Java source is in ``plugin/``);
- :mod:`.order`: the order a load writes objects in, so that a snapshot answers early;
- :mod:`.rows`: what each object and reference carries, packed as batches;
- :mod:`.writer`: where the batches go, and :func:`load` itself;
- :mod:`.readback`: a stored snapshot read back as a graph (:func:`read_back`), for ``heapdb reanalyze``.
- :mod:`.signatures` and :mod:`.gate_runs`: what ``heapdb gate --record`` remembers, the leak
  signatures across builds and the gate's runs; :mod:`.rulesets`: the rule sets kept as data;
  :mod:`.numbering`: the numbers those take in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from heapdb.lazy import lazy_attributes
from heapdb.loader.store.lifecycle import delete_objects, drop
from heapdb.loader.store.listings import DroppedReferences, TypeListing
from heapdb.loader.store.readback import StoredGraph, read_back
from heapdb.loader.store.schema import OLDEST_ANSWERED_VERSION, SCHEMA, STORE_VERSION, ensure_schema
from heapdb.loader.store.snapshots import Snapshot, get_snapshot, list_snapshots

if TYPE_CHECKING:
    from heapdb.loader.store.batches import DEFAULT_BATCH
    from heapdb.loader.store.rows import object_batch
    from heapdb.loader.store.summaries import TOP_RANKS, LoadInput, reference_label
    from heapdb.loader.store.writer import WRITERS, LoadReport, load

# What only a load needs pulls in the analysis, and so numba (a quarter of a second to import): it
# is imported on first use, so that the questions, which list, read and drop snapshots, start
# without it.
__getattr__ = lazy_attributes(
    __name__,
    {
        "object_batch": "rows",
        "TOP_RANKS": "summaries",
        "LoadInput": "summaries",
        "reference_label": "summaries",
        "DEFAULT_BATCH": "batches",
        "WRITERS": "writer",
        "LoadReport": "writer",
        "load": "writer",
    },
)


__all__ = [
    "DEFAULT_BATCH",
    "SCHEMA",
    "STORE_VERSION",
    "OLDEST_ANSWERED_VERSION",
    "TOP_RANKS",
    "WRITERS",
    "DroppedReferences",
    "LoadInput",
    "LoadReport",
    "Snapshot",
    "StoredGraph",
    "TypeListing",
    "delete_objects",
    "drop",
    "ensure_schema",
    "get_snapshot",
    "list_snapshots",
    "load",
    "object_batch",
    "read_back",
    "reference_label",
]
