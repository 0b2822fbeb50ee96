// name: dominated-largest
// description: For each given object, how many objects it dominates directly and the largest of them (a treemap level).
// needs: objects
// param tag: string -- the snapshot's tag
// param ids: list<int> -- ids of the parent objects
// param min_sizes: list<int> = [] -- per parent (same order as ids): the smallest retained size worth listing (missing: 0)
// param width: int = 20 in 1..1000 -- how many children to list per parent, largest first
//
// One row per parent: `children` counts all its direct children in the dominator tree, `largest`
// lists at most `width` of those retaining at least its `min_sizes` entry, largest first. What is
// not listed is the parent's retained size less its self size less the listed children's: a
// parent's retained size is its self size plus its children's. The children are listed on the
// parent, largest first (`dominated_order`): the count is the list's length, and only the first
// `width` are read. A snapshot stored before store version 5 has them found in its (sid, dom,
// retained_size) index instead, its count read from the index alone.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
UNWIND range(0, size($ids) - 1) AS k
WITH s, $ids[k] AS parent_id, coalesce($min_sizes[k], 0) AS min_size
CALL (s, parent_id, min_size) {
  WITH s, parent_id, min_size WHERE s.store_version >= 5
  OPTIONAL MATCH (parent:Object {sid: s.sid, id: parent_id})
  WITH s, min_size, coalesce(parent.dominated_order, []) AS listed
  CALL (s, min_size, listed) {
    UNWIND listed[..$width] AS child_id
    MATCH (c:Object {sid: s.sid, id: child_id})
    WHERE c.retained_size >= min_size
    WITH c ORDER BY c.retained_size DESC, c.id
    RETURN collect(c {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: c:Root}) AS largest
  }
  RETURN size(listed) AS children, largest
  UNION
  WITH s, parent_id, min_size WHERE coalesce(s.store_version, 1) < 5
  CALL (s, parent_id) {
    MATCH (c:Object {sid: s.sid, dom: parent_id})
    WHERE c.retained_size IS NOT NULL
    RETURN count(c) AS children
  }
  CALL (s, parent_id, min_size) {
    MATCH (c:Object {sid: s.sid, dom: parent_id})
    WHERE c.retained_size >= min_size
    WITH c ORDER BY c.retained_size DESC, c.id LIMIT $width
    RETURN collect(c {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: c:Root}) AS largest
  }
  RETURN children, largest
}
RETURN parent_id AS parent, children, largest
