// name: why-alive
// description: The shortest chain of retaining references (:REF) from the snapshot's root to an object.
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
//
// The loader runs one breadth-first search from the root over the retaining references and stores
// on every object it reaches the holder the search reached it from (`via`) and that reference's
// kind and name (`via_kind`, `via_name`). Following `via` back from the object is therefore a
// shortest retaining path, read with one index seek per hop (`distance` hops), even through an
// object a million references point at, where a shortestPath search would have to expand such hubs;
// it needs no :REF, so it answers while a load still writes the references. Weak references never
// retain, so they are never on it. No row: the root does not reach the object. To keep references
// or objects off the path, or for more paths than one, see why-alive-avoiding and retainers.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (target:Object {sid: s.sid, id: $id})
WHERE target.reachable
WITH reverse(reduce(path = [target], step IN range(1, target.distance) |
                    path + COLLECT { MATCH (h:Object {sid: s.sid, id: last(path).via}) RETURN h })) AS path
RETURN [n IN path | n {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: n:Root}] AS objects,
       [n IN tail(path) | {kind: n.via_kind, name: n.via_name}] AS references
