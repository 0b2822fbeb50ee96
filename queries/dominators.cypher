// name: dominators
// description: The chain of immediate dominators from the snapshot's root down to an object.
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
//
// Every object names its immediate dominator (`dom`), so the chain is read upward with one index
// seek per step. The chain is never longer than the object's distance from the root (each dominator
// lies on its shortest path), which bounds the walk; past the root `dom` is null and nothing more is
// found. No row: the object is not in the dominator tree (unreachable).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (target:Object {sid: s.sid, id: $id})
WHERE target.reachable
WITH reduce(chain = [target], step IN range(1, target.distance) |
            chain + COLLECT { MATCH (d:Object {sid: s.sid, id: last(chain).dom}) RETURN d }) AS chain
RETURN reverse([n IN chain | n {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: n:Root}]) AS objects
