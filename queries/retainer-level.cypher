// name: retainer-level
// description: One level of an object's retainers tree: a page of what references it, weak references too, nearest the root first.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
// param offset: int = 0 in 0..1000000000 -- how many references to pass over
// param limit: int = 50 in 0..1000 -- how many references (0: only how many there are)
//
// Holders the root does not reach are listed too, last (their distance is null): they hold the
// object in the snapshot, though they cannot keep it alive. The total reads the stored degree.
//
// A hub (an object with more than 10,000 references this way) has the order of its references
// written at load, one entry each (`holders_order`: the other end's id; `holders_nth`: which of the
// references between the two objects, by name): its page is a slice of that, the same rows the
// sort gives, without reading every reference's other end.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid, id: $id})
CALL (o) {
  WITH o WHERE o.holders_order IS NULL
  MATCH (holder)-[r:REF|WEAK_REF]->(o)
  WITH holder, r ORDER BY holder.distance, holder.id, r.name SKIP $offset LIMIT $limit
  RETURN collect([holder, r]) AS sorted
}
CALL (o) {
  WITH o WHERE o.holders_order IS NOT NULL
  // Read once: a hub's order is a list property of up to millions of entries.
  WITH o, o.holders_order[$offset..$offset + $limit] AS ids, o.holders_nth[$offset..$offset + $limit] AS nths
  UNWIND range(0, size(ids) - 1) AS i
  WITH o, i, ids[i] AS other, nths[i] AS nth
  MATCH (holder:Object {sid: o.sid, id: other})
  CALL (o, holder, nth) {
    MATCH (holder)-[r:REF|WEAK_REF]->(o)
    WITH r ORDER BY r.name
    WITH collect(r) AS between
    RETURN between[nth] AS r
  }
  WITH holder, r ORDER BY i
  RETURN collect([holder, r]) AS listed
}
CALL (sorted, listed) {
  UNWIND sorted + listed AS pair
  WITH pair[0] AS holder, pair[1] AS r
  RETURN collect({reference: r {.kind, .name, weak: type(r) = 'WEAK_REF'}, object: holder {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: holder:Root}}) AS rows
}
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object, rows, COUNT { ()-[:REF|WEAK_REF]->(o) } AS total
