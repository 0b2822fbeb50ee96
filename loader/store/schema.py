"""What a load writes, versioned, and the constraints and indexes that keep it fast and unique.

The data model is described, with example Cypher, in ``docs/data-model.md``.
"""

from __future__ import annotations

from heapdb.db import Database, translate_errors

# What a load writes, versioned: a snapshot stored under an older version lacks what queries now read
# and must be loaded again. 2: top ranks, group retained sizes counting each byte once, nested V8
# root groups folded in path signatures, :FIRST relationships. 3: each object names its immediate
# dominator and first-path holder (`dom`, `via`, `via_kind`, `via_name`) instead of :DOMINATES and
# :FIRST relationships; snapshots answer before their references are written (`references_ready`).
# 4: path groups name their largest members (`samples`); no index on objects' path signatures.
# 5: each object lists its children in the dominator tree (`dominated_order`), and no index over
# every object's dominator is kept for the snapshot. 6: type listings are stored packed (see
# heapdb.loader.store.listings, PACKED_LISTINGS_VERSION).
STORE_VERSION = 6
# Snapshots stored before the version was recorded carry no store_version property.
FIRST_STORE_VERSION = 1
# The oldest version questions answer: a version-4 snapshot differs only in finding children in the
# dominator index (DOMINATOR_INDEX), which the queries that walk the tree fall back to, and a version-4
# or 5 one in its type listings' raw arrays, which TypeListing reads as well.
OLDEST_ANSWERED_VERSION = 4

# An object's children in the dominator tree, for snapshots stored before version 5 (with the
# retained size in the key, "its largest children" reads the index alone; Neo4j seeks a composite
# index only given a predicate on every key, so those queries say `retained_size IS NOT NULL`).
# Neo4j indexes every :Object with the three properties, whatever its snapshot: 18 B per object and
# reference after a load (docs/benchmarks.md, "A leaner store"). So it is kept only while a
# snapshot that needs it is stored: made if missing, dropped once none is (ensure_schema).
DOMINATOR_INDEX = "heapdb_object_dom_size"
CREATE_DOMINATOR_INDEX = (
    f"CREATE INDEX {DOMINATOR_INDEX} IF NOT EXISTS FOR (o:Object) ON (o.sid, o.dom, o.retained_size)"
)
NEEDS_DOMINATOR_INDEX = (
    "MATCH (s:Snapshot {status: 'ready'}) WHERE coalesce(s.store_version, $first) = $needs "
    "AND NOT coalesce(s.summary, false) RETURN count(s) > 0 AS needed"
)

# A recorded run of the CI gate by its number; the constraint also keeps two runs recorded at once
# from taking one number (heapdb.loader.store.numbering). Recording a run creates it alone, so that a
# CI job never waits for the object indexes of a load that is under way.
GATE_RUN_KEY = "CREATE CONSTRAINT heapdb_gate_run_key IF NOT EXISTS FOR (r:GateRun) REQUIRE r.id IS UNIQUE"

SCHEMA = (
    "CREATE CONSTRAINT heapdb_snapshot_sid IF NOT EXISTS FOR (s:Snapshot) REQUIRE s.sid IS UNIQUE",
    "CREATE INDEX heapdb_snapshot_tag IF NOT EXISTS FOR (s:Snapshot) ON (s.tag)",
    # An object by its id. A plain index, not a uniqueness constraint: every reader already refuses a
    # graph whose ids repeat (HeapGraph.validate), and checking again costs a lock and a seek per
    # object written, which slowed a load's objects by a third.
    "DROP CONSTRAINT heapdb_object_key IF EXISTS",
    "CREATE INDEX heapdb_object_id IF NOT EXISTS FOR (o:Object) ON (o.sid, o.id)",
    "CREATE CONSTRAINT heapdb_path_group_key IF NOT EXISTS FOR (g:PathGroup) REQUIRE (g.sid, g.sig) IS UNIQUE",
    # Path groups name their largest members (`samples`), so no index over every object's signature
    # is kept: that index cost a load a third of its index writes and 15 bytes per element.
    "DROP INDEX heapdb_object_path IF EXISTS",
    # An index on (sid, dom) alone, replaced by DOMINATOR_INDEX in store version 4.
    "DROP INDEX heapdb_object_dom IF EXISTS",
    "CREATE CONSTRAINT heapdb_type_group_key IF NOT EXISTS FOR (t:TypeGroup) REQUIRE (t.sid, t.type) IS UNIQUE",
    # Only the first TOP_RANKS objects of a snapshot (overall, and per type) carry these properties.
    "CREATE INDEX heapdb_object_rank IF NOT EXISTS FOR (o:Object) ON (o.sid, o.rank)",
    "CREATE INDEX heapdb_object_type_rank IF NOT EXISTS FOR (o:Object) ON (o.sid, o.type, o.type_rank)",
    # A snapshot's duplicate strings (at most a few hundred, read all at once).
    "CREATE INDEX heapdb_string_group_sid IF NOT EXISTS FOR (g:StringGroup) ON (g.sid)",
    # A snapshot's duplicate objects (as few, read all at once).
    "CREATE INDEX heapdb_object_group_sid IF NOT EXISTS FOR (g:ObjectGroup) ON (g.sid)",
    # A snapshot's detached DOM, by holder path (as few, read all at once).
    "CREATE INDEX heapdb_detached_group_sid IF NOT EXISTS FOR (g:DetachedGroup) ON (g.sid)",
    # A snapshot's unmounted React components, by component.
    "CREATE INDEX heapdb_fiber_group_sid IF NOT EXISTS FOR (g:FiberGroup) ON (g.sid)",
    # A snapshot's shapes (memlab's unbound-shape), read all at once by `heapdb unbound`.
    "CREATE INDEX heapdb_shape_group_sid IF NOT EXISTS FOR (g:ShapeGroup) ON (g.sid)",
    "CREATE CONSTRAINT heapdb_rule_set_key IF NOT EXISTS FOR (r:RuleSet) REQUIRE (r.name, r.version) IS UNIQUE",
    GATE_RUN_KEY,
)


def ensure_schema(database: Database) -> None:
    """Create heapdb's constraints and indexes if missing, and wait until they are online."""
    for statement in SCHEMA:
        database.write(statement)
    needed = database.read(NEEDS_DOMINATOR_INDEX, {"first": FIRST_STORE_VERSION, "needs": OLDEST_ANSWERED_VERSION})
    if needed[0]["needed"]:
        database.write(CREATE_DOMINATOR_INDEX)
    else:
        database.write(f"DROP INDEX {DOMINATOR_INDEX} IF EXISTS")
    with translate_errors(database.connection), database.session() as session:
        session.run("CALL db.awaitIndexes(300)").consume()
