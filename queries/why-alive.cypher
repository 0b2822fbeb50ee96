// name: why-alive
// description: The shortest chain of retaining references (:REF) from the snapshot's root to an object.
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
//
// The loader runs one breadth-first search from the root over the retaining references and stores,
// for every object it reaches, the reference the search reached it by as a :FIRST relationship (a
// copy of that :REF, with its kind and name). Following :FIRST back from the object is therefore a
// shortest retaining path, read in as many steps as it is long: every object has one incoming
// :FIRST, which Neo4j finds directly even on an object a million references point at, where a
// shortestPath search would have to expand such hubs. Weak references never retain, so they are
// never on it. No row: the root does not reach the object. To keep references or objects off the
// path, or for more paths than one, see why-alive-avoiding and retainers.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (target:Object {sid: s.sid, id: $id})
WHERE target.reachable
MATCH p = (target)<-[:FIRST*0..]-(:Root)
WITH reverse(nodes(p)) AS path, reverse(relationships(p)) AS refs
RETURN [n IN path | n {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached}] AS objects,
       [r IN refs | r {.kind, .name}] AS references
