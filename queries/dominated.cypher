// name: dominated
// description: What the given objects dominate directly (their children in the dominator tree), largest first.
// needs: objects
// param tag: string -- the snapshot's tag
// param ids: list<int> -- ids of the parent objects
// param limit: int = 50 in 1..1000 -- how many children to return, over all parents
//
// Each object lists its children, largest retained first, then by id (`dominated_order`): the
// first `limit` of each parent's list are read, by id, and merged. A snapshot stored before store
// version 5 lists only a hub's (an object that dominates more than 10,000 others); the other
// parents' largest retained sizes are found in its (sid, dom, retained_size) index, and only the
// children that reach the smallest of them are read, then ordered with ties by id.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
CALL (s) {
  UNWIND $ids AS parent_id
  MATCH (parent:Object {sid: s.sid, id: parent_id})
  WHERE parent.dominated_order IS NULL AND coalesce(s.store_version, 1) < 5
  MATCH (c:Object {sid: s.sid, dom: parent_id})
  WHERE c.retained_size IS NOT NULL
  WITH c.retained_size AS size ORDER BY size DESC LIMIT $limit
  // Fewer than the limit: they all count, and so does every listed parent's first `limit` (sizes are >= 0).
  RETURN CASE WHEN count(size) < $limit THEN -1 ELSE min(size) END AS cutoff
}
UNWIND $ids AS parent_id
MATCH (parent:Object {sid: s.sid, id: parent_id})
CALL (s, parent, cutoff) {
  WITH parent WHERE parent.dominated_order IS NULL AND coalesce(s.store_version, 1) < 5
  // A subquery, so that it runs only for such a parent: a newer store has no index to seek.
  CALL (s, parent, cutoff) {
    MATCH (child:Object {sid: s.sid, dom: parent.id})
    WHERE child.retained_size >= cutoff
    RETURN child
  }
  RETURN child
  UNION
  WITH parent WHERE parent.dominated_order IS NOT NULL
  UNWIND parent.dominated_order[..$limit] AS child_id
  MATCH (child:Object {sid: s.sid, id: child_id})
  WHERE child.retained_size >= cutoff
  RETURN child
}
WITH parent.id AS parent_id, child ORDER BY child.retained_size DESC, child.id LIMIT $limit
RETURN parent_id AS parent,
       child {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: child:Root} AS child
ORDER BY child.retained_size DESC, child.id
