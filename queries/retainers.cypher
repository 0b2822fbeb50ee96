// name: retainers
// description: The retaining references into an object, from the holders nearest the root first.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
// param limit: int = 20 in 1..1000 -- how many references to list
// param ignore_names: list<string> = [] -- reference names to leave out
// param ignore_types: list<string> = [] -- holder types to leave out
// param ignore_ids: list<int> = [] -- holder ids to leave out
//
// Holders the root does not reach cannot keep the object alive and are left out.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (target:Object {sid: s.sid, id: $id})
MATCH (holder:Object)-[r:REF]->(target)
WHERE holder.reachable AND holder <> target
  AND NOT r.name IN $ignore_names AND NOT holder.type IN $ignore_types AND NOT holder.id IN $ignore_ids
RETURN holder {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: holder:Root} AS holder,
       r {.kind, .name} AS reference
ORDER BY holder.distance, holder.id, r.name
LIMIT $limit
