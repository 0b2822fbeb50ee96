"""Reading snapshots, analysing them, and writing them into Neo4j.

The path of the data: ``formats`` (a file to a :class:`~heapdb.loader.graph.HeapGraph`) →
``analysis`` (dominators, retained sizes, distances) → the Neo4j writer.
"""
