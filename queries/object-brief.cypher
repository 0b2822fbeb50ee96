// name: object-brief
// description: One object's stored figures, without its references (answers while a load still writes them).
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid, id: $id})
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object
