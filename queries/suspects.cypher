// name: suspects
// description: Eclipse MAT's leak suspects: the topmost objects retaining at least a given number of bytes, each with its accumulation point.
// param tag: string -- the snapshot's tag
// param min_retained: int in 0..9223372036854775807 -- the retained size an object needs, in bytes (heapdb suspects passes a share of the snapshot's reachable size)
// param ratio: int = 80 in 51..100 -- descend into a dominated child while it holds at least this percentage of its parent's retained size
// param limit: int = 20 in 1..1000 -- how many suspects
//
// An object is a suspect when it retains at least min_retained bytes and its immediate dominator
// (`dom`) is the root or a synthetic root-kind node: anything that dominates an object retains at
// least as much, so of each chain of big objects only the topmost is listed, as MAT does. From each suspect
// the dominator tree is descended through the child holding at least `ratio` percent of its
// parent's retained size (above half, so there is at most one such child); the accumulation point
// is where that stops, an object whose retained size is far larger than any one child's: typically
// the collection the leaked objects pile up in. It comes with its direct children in the dominator
// tree, the largest child's retained size and the number of steps from the suspect.
//
// A snapshot lists its root and root groups (`root_group_ids`), and each object its children,
// largest first (`dominated_order`): the candidates are the first of each group's children, as
// many as the limit and the groups themselves (the only children not counted), and each descent
// step reads one child, the largest. One stored before store version 5 finds the candidates and
// steps in its (sid, dom, retained_size) index, and one stored before its root groups were
// recorded has each of its objects read.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
CALL (s) {
  WITH s WHERE s.store_version >= 5
  UNWIND coalesce(s.root_group_ids, []) AS top
  MATCH (t:Object {sid: s.sid, id: top})
  UNWIND coalesce(t.dominated_order, [])[..$limit + size(s.root_group_ids)] AS child_id
  MATCH (o:Object {sid: s.sid, id: child_id})
  WHERE o.retained_size >= $min_retained
  RETURN o
  UNION
  WITH s WHERE coalesce(s.store_version, 1) < 5
  UNWIND coalesce(s.root_group_ids, []) AS top
  MATCH (o:Object {sid: s.sid, dom: top})
  WHERE o.retained_size >= $min_retained
  RETURN o
  UNION
  WITH s WHERE s.root_group_ids IS NULL
  CALL (s) {
    MATCH (o:Object {sid: s.sid})
    WHERE o.id IS NOT NULL AND o.retained_size >= $min_retained
    MATCH (d:Object {sid: s.sid, id: o.dom})
    WHERE d:Root OR d.kind = 'synthetic'
    RETURN o
  }
  RETURN o
}
WITH s, o WHERE o.id IS NOT NULL AND o.reachable AND o.kind <> 'synthetic' AND NOT o:Root
WITH s, o ORDER BY o.retained_size DESC, o.id LIMIT $limit
CALL (s, o) {
  // One step down per round; a round that finds no such child ends the walk (the chain stops
  // growing, and every later round sees it shorter than its number and skips the lookup).
  WITH reduce(chain = [o], step IN range(1, o.retained_count) |
              CASE WHEN size(chain) < step THEN chain
                   WHEN s.store_version >= 5
                   THEN chain + COLLECT { MATCH (b:Object {sid: s.sid, id: last(chain).dominated_order[0]})
                                          WHERE b.retained_size >= last(chain).retained_size * $ratio / 100.0
                                          RETURN b }
                   ELSE chain + COLLECT { MATCH (b:Object {sid: s.sid, dom: last(chain).id})
                                          WHERE b.retained_size >= last(chain).retained_size * $ratio / 100.0
                                          RETURN b ORDER BY b.retained_size DESC, b.id LIMIT 1 }
              END) AS chain
  WITH last(chain) AS point, size(chain) - 1 AS depth
  // Its children listed, or (before store version 5) the count a load stored on the objects it
  // writes first, else counted from the children; the largest child's size as a load stored it on
  // those first objects (before their children are in), else read from the largest child.
  RETURN point, depth,
         CASE WHEN s.store_version >= 5 THEN size(coalesce(point.dominated_order, []))
              WHEN point.dominates IS NOT NULL THEN point.dominates
              ELSE COUNT { MATCH (child:Object {sid: s.sid, dom: point.id}) WHERE child.retained_size IS NOT NULL } END AS children,
         CASE WHEN point.largest_dominated IS NOT NULL THEN point.largest_dominated
              WHEN s.store_version >= 5
              THEN coalesce(COLLECT { MATCH (child:Object {sid: s.sid, id: point.dominated_order[0]})
                                      RETURN child.retained_size }[0], 0)
              ELSE coalesce(COLLECT { MATCH (child:Object {sid: s.sid, dom: point.id}) WHERE child.retained_size IS NOT NULL
                                      RETURN child.retained_size ORDER BY child.retained_size DESC LIMIT 1 }[0], 0) END AS largest_child
}
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object,
       point {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: point:Root} AS point,
       depth, children, largest_child
ORDER BY o.retained_size DESC, o.id
