// name: object
// description: One object's details with its incoming and outgoing references (weak ones too), bounded.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
// param limit: int = 20 in 0..1000 -- how many references to list in each direction
//
// Incoming references are listed nearest holder first, outgoing ones largest target first. Only
// objects have references, so neither end is matched by label: the counts then read the stored
// degrees instead of visiting every reference (an array of 135,000 elements: 270,000 reads less).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid, id: $id})
CALL (o) {
  MATCH (holder)-[r:REF|WEAK_REF]->(o)
  WITH holder, r ORDER BY holder.distance, holder.id, r.name LIMIT $limit
  RETURN collect({reference: r {.kind, .name, weak: type(r) = 'WEAK_REF'},
                  object: holder {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: holder:Root}}) AS incoming
}
CALL (o) {
  MATCH (o)-[r:REF|WEAK_REF]->(held)
  WITH held, r ORDER BY held.retained_size DESC, held.id, r.name LIMIT $limit
  RETURN collect({reference: r {.kind, .name, weak: type(r) = 'WEAK_REF'},
                  object: held {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: held:Root}}) AS outgoing
}
CALL (o) {
  RETURN COUNT { ()-[:REF|WEAK_REF]->(o) } AS incoming_count, COUNT { (o)-[:REF|WEAK_REF]->() } AS outgoing_count
}
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object,
       incoming, outgoing, incoming_count, outgoing_count
