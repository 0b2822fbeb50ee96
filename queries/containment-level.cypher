// name: containment-level
// description: One level of an object's containment tree: a page of what it references, weak references too, largest retained first.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
// param offset: int = 0 in 0..1000000000 -- how many references to pass over
// param limit: int = 50 in 1..1000 -- how many references
//
// The total reads the stored degree.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid, id: $id})
CALL (o) {
  MATCH (o)-[r:REF|WEAK_REF]->(held)
  WITH held, r ORDER BY held.retained_size DESC, held.id, r.name SKIP $offset LIMIT $limit
  RETURN collect({reference: r {.kind, .name, weak: type(r) = 'WEAK_REF'}, object: held {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, root: held:Root}}) AS rows
}
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, root: o:Root} AS object, rows, COUNT { (o)-[:REF|WEAK_REF]->() } AS total
