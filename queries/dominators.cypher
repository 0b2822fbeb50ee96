// name: dominators
// description: The chain of immediate dominators from the snapshot's root down to an object.
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
//
// Each object has at most one incoming :DOMINATES, so the walk up from the object is a single chain;
// the pattern is written upward so the planner expands from the object, not from the root (which
// dominates everything). No row: the object is not in the dominator tree (unreachable).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (target:Object {sid: s.sid, id: $id})
MATCH p = (target)<-[:DOMINATES*0..]-(top:Root)
RETURN reverse([n IN nodes(p) | n {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached}]) AS objects
