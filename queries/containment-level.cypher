// name: containment-level
// description: One level of an object's containment tree: a page of what it references, weak references too, largest retained first.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
// param offset: int = 0 in 0..1000000000 -- how many references to pass over
// param limit: int = 50 in 0..1000 -- how many references (0: only how many there are)
//
// The total reads the stored degree. A hub (an object with more than 10,000 references this way) has the order of its references
// written at load, one entry each (`held_order`: the other end's id; `held_nth`: which of the
// references between the two objects, by name): its page is a slice of that, the same rows the
// sort gives, without reading every reference's other end.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid, id: $id})
CALL (o) {
  WITH o WHERE o.held_order IS NULL
  MATCH (o)-[r:REF|WEAK_REF]->(held)
  WITH held, r ORDER BY held.retained_size DESC, held.id, r.name SKIP $offset LIMIT $limit
  RETURN collect([held, r]) AS sorted
}
CALL (o) {
  WITH o WHERE o.held_order IS NOT NULL
  // Read once: a hub's order is a list property of up to millions of entries.
  WITH o, o.held_order[$offset..$offset + $limit] AS ids, o.held_nth[$offset..$offset + $limit] AS nths
  UNWIND range(0, size(ids) - 1) AS i
  WITH o, i, ids[i] AS other, nths[i] AS nth
  MATCH (held:Object {sid: o.sid, id: other})
  CALL (o, held, nth) {
    MATCH (o)-[r:REF|WEAK_REF]->(held)
    WITH r ORDER BY r.name
    WITH collect(r) AS between
    RETURN between[nth] AS r
  }
  WITH held, r ORDER BY i
  RETURN collect([held, r]) AS listed
}
CALL (sorted, listed) {
  UNWIND sorted + listed AS pair
  WITH pair[0] AS held, pair[1] AS r
  RETURN collect({reference: r {.kind, .name, weak: type(r) = 'WEAK_REF'}, object: held {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: held:Root}}) AS rows
}
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object, rows, COUNT { (o)-[:REF|WEAK_REF]->() } AS total
