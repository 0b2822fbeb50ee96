"""Nodes numbered in order, 1, 2, 3...: the versions of a rule set, the runs of the CI gate.

A numbered node is created in one write transaction as "one more than the largest stored"
(:func:`create_numbered`). Two writers that read the same largest number at once both try to create
the same number; the uniqueness constraint on it (:mod:`.schema`) refuses the second, which then
reads again and takes the next. So numbers are never shared and never skipped, with no counter node
that every writer would queue on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

import neo4j
import neo4j.exceptions

from heapdb.db import Database, translate_errors

ATTEMPTS = 10  # writers numbering at once: the loser of the constraint reads again, this many times at most


def create_numbered(
    database: Database, label: str, number: str, properties: Mapping[str, Any], *, within: str | None = None
) -> dict[str, Any]:
    """Create a ``label`` node of ``properties`` whose property ``number`` is one more than the largest
    of the ``label`` nodes stored (of those with the same ``within`` property, when given: a rule set's
    versions count per name); returns the node's properties. ``label``, ``number`` and ``within`` are
    heapdb's own names, never a user's. The constraint that makes the number unique must exist."""
    same = f" {{{within}: $p.{within}}}" if within else ""
    cypher = (
        f"OPTIONAL MATCH (old:{label}{same}) "
        f"WITH coalesce(max(old.{number}), 0) + 1 AS number "
        f"CREATE (n:{label}) SET n = $p, n.{number} = number "
        "RETURN n {.*} AS n"
    )

    def work(tx: neo4j.ManagedTransaction) -> dict[str, Any]:
        return dict(tx.run(cypher, p=dict(properties)).single(strict=True)["n"])

    with translate_errors(database.connection), database.session() as session:
        for attempt in range(ATTEMPTS):
            try:
                return session.execute_write(work)
            except neo4j.exceptions.ConstraintError:
                if attempt == ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, 0.02 * (attempt + 1)))  # spread the next tries of those that met
    raise AssertionError("unreachable")  # pragma: no cover
