// name: dominated
// description: What the given objects dominate directly (their children in the dominator tree), largest first.
// needs: objects
// param tag: string -- the snapshot's tag
// param ids: list<int> -- ids of the parent objects
// param limit: int = 50 in 1..1000 -- how many children to return, over all parents
//
// The limit's largest retained sizes are found in the (sid, dom, retained_size) index alone; only
// the children that reach the smallest of them are read, then ordered with ties by id.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
CALL (s) {
  UNWIND $ids AS parent_id
  MATCH (c:Object {sid: s.sid, dom: parent_id})
  WHERE c.retained_size IS NOT NULL
  WITH c.retained_size AS size ORDER BY size DESC LIMIT $limit
  RETURN min(size) AS cutoff
}
UNWIND $ids AS parent_id
MATCH (child:Object {sid: s.sid, dom: parent_id})
WHERE child.retained_size >= cutoff
WITH parent_id, child ORDER BY child.retained_size DESC, child.id LIMIT $limit
RETURN parent_id AS parent,
       child {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, root: child:Root} AS child
ORDER BY child.retained_size DESC, child.id
