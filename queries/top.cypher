// name: top
// description: The objects that retain most, optionally of one type.
// param tag: string -- the snapshot's tag
// param type: string? = null -- only objects of this type
// param limit: int = 20 in 1..1000 -- how many objects
//
// The root and the synthetic root-kind nodes ((GC roots) and the like) are left out: they would top
// every list. Objects the root does not reach are left out too.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.id IS NOT NULL AND NOT o:Root AND o.reachable AND o.kind <> 'synthetic'
  AND ($type IS NULL OR o.type = $type)
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached} AS object
ORDER BY o.retained_size DESC, o.id
LIMIT $limit
