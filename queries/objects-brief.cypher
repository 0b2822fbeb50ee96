// name: objects-brief
// description: Objects' stored figures by id, without their references, in the order of the ids given.
// param tag: string -- the snapshot's tag
// param ids: list<int> -- the objects' ids
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
UNWIND range(0, size($ids) - 1) AS i
MATCH (o:Object {sid: s.sid, id: $ids[i]})
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object
ORDER BY i
