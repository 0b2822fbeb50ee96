// name: retainer-level
// description: One level of an object's retainers tree: a page of what references it, weak references too, nearest the root first.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
// param offset: int = 0 in 0..1000000000 -- how many references to pass over
// param limit: int = 50 in 1..1000 -- how many references
//
// Holders the root does not reach are listed too, last (their distance is null): they hold the
// object in the snapshot, though they cannot keep it alive. The total reads the stored degree.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid, id: $id})
CALL (o) {
  MATCH (holder)-[r:REF|WEAK_REF]->(o)
  WITH holder, r ORDER BY holder.distance, holder.id, r.name SKIP $offset LIMIT $limit
  RETURN collect({reference: r {.kind, .name, weak: type(r) = 'WEAK_REF'}, object: holder {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, root: holder:Root}}) AS rows
}
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, root: o:Root} AS object, rows, COUNT { ()-[:REF|WEAK_REF]->(o) } AS total
