// name: find
// description: Objects of a type whose name contains a text, largest retained size first.
// needs: objects
// param tag: string -- the snapshot's tag
// param type: string -- the objects' type, e.g. a constructor name
// param name_contains: string = "" -- a text the object's name must contain (empty: any name)
// param limit: int = 10 in 1..1000 -- how many objects
//
// Reads every object of the snapshot. heapdb's own find (CLI and REST) gives the same answer from
// the type's listing stored on its :TypeGroup (docs/data-model.md), in milliseconds at any size.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.id IS NOT NULL AND o.type = $type AND o.name CONTAINS $name_contains
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object
ORDER BY o.retained_size DESC, o.id
LIMIT $limit
