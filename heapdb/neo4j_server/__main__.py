"""``python -m heapdb.neo4j_server resolve``: fetch Neo4j's jars, as scripts/bootstrap.sh does."""

import sys

from heapdb.errors import HeapdbError
from heapdb.neo4j_server.dist import resolve

if sys.argv[1:] != ["resolve"]:
    sys.exit("usage: python -m heapdb.neo4j_server resolve")
try:
    resolve(say=lambda message: print(message, file=sys.stderr))
except HeapdbError as e:
    sys.exit(f"heapdb: error: {e}")
