"""heapdb: heap snapshots from many builds in one Neo4j database.

The package is one import namespace:

- ``heapdb.loader``: snapshot formats (readers and writers), the in-memory graph and its analysis,
  and the bulk writer into Neo4j;
- ``heapdb.queries``: the catalog of stored Cypher queries;
- ``heapdb.service``: the REST service;
- ``heapdb.neo4j_server``, ``heapdb.config``, ``heapdb.db``: the managed Neo4j and connections to it;
- ``heapdb.cli``: the ``heapdb`` command.
"""

# The one place the version is written: pyproject.toml reads it from here when building
# (setuptools `dynamic`), so keep it a plain string literal.
__version__ = "0.1.0"
