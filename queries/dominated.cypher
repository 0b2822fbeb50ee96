// name: dominated
// description: What the given objects dominate directly (their children in the dominator tree), largest first.
// param tag: string -- the snapshot's tag
// param ids: list<int> -- ids of the parent objects
// param limit: int = 50 in 1..1000 -- how many children to return, over all parents
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
UNWIND $ids AS parent_id
MATCH (child:Object {sid: s.sid, dom: parent_id})
RETURN parent_id AS parent,
       child {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at} AS child
ORDER BY child.retained_size DESC, child.id
LIMIT $limit
