"""Reading snapshots, analysing them, and writing them into Neo4j.

The path of the data, each stage importing only the stages before it:

1. ``formats`` (:mod:`.formats.snapbin`, :mod:`.formats.v8`, :mod:`.formats.luau`): a file to a
   :class:`~heapdb.loader.graph.HeapGraph`, the arrays every later stage shares (:mod:`.graph`);
2. :mod:`.analysis`: dominators, retained sizes, distances; :mod:`.paths`: each object's first
   retainer path; :mod:`.pathtree`: path trees with totals (:mod:`.luau_heapgraph` builds one by
   Luau's own rules); :mod:`.views`: lifelines and heapdomstats; :mod:`.report`: what
   ``heapdb analyze`` and ``heapdb inspect`` show;
3. :mod:`.store`: the analysed graph written into Neo4j, and the snapshots listed and dropped.
"""
