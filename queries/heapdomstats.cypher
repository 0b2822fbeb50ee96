// name: heapdomstats
// description: Per type, the objects no object below the root owns: their immediate dominator is the root or a root group.
// needs: objects
// param tag: string -- the snapshot's tag
// param limit: int = 50 in 1..10000 -- how many types
//
// One row: the types that float up to the root, most retained first (`rows`, at most `limit`), and
// the totals over all of them. A root group is a synthetic object such as `(GC roots)` whose
// immediate dominator is the root or another root group; neither they nor the root are listed. No
// floating object dominates another, so their retained sizes add up. The synthetic objects are
// the ones the snapshot lists (`root_group_ids`); on one stored before that list was recorded,
// every object is read to find them. Then their children, listed on each (`dominated_order`), or
// on a snapshot stored before store version 5, found in the (sid, dom, retained_size) index.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
CALL (s) {
  CALL (s) {
    UNWIND coalesce(s.root_group_ids, []) AS listed
    MATCH (r:Object {sid: s.sid, id: listed})
    RETURN r
    UNION
    WITH s WHERE s.root_group_ids IS NULL
    CALL (s) {
      MATCH (r:Object {sid: s.sid}) WHERE r.id IS NOT NULL
      RETURN r
    }
    RETURN r
  }
  WITH r WHERE r.id IS NOT NULL AND r.kind = 'synthetic' AND r.reachable AND NOT r:Root
  WITH r ORDER BY r.distance
  // A dominator is nearer the root than what it dominates: by distance, each group's parent comes first.
  WITH collect(r) AS groups
  RETURN reduce(layer = [s.root_id], r IN groups |
                CASE WHEN r.dom IN layer THEN layer + r.id ELSE layer END) AS tops
}
CALL (s, tops) {
  WITH s, tops WHERE s.store_version >= 5
  UNWIND tops AS top
  MATCH (t:Object {sid: s.sid, id: top})
  UNWIND coalesce(t.dominated_order, []) AS child_id
  MATCH (o:Object {sid: s.sid, id: child_id})
  RETURN o
  UNION
  WITH s, tops WHERE coalesce(s.store_version, 1) < 5
  UNWIND tops AS top
  MATCH (o:Object {sid: s.sid, dom: top})
  WHERE o.retained_size IS NOT NULL
  RETURN o
}
WITH s, tops, o WHERE o.reachable AND NOT o.id IN tops
WITH s, o.type AS type, count(o) AS objects, sum(o.self_size) AS self_size,
     sum(o.retained_size) AS retained_size, max(o.retained_size) AS max_retained_size
ORDER BY retained_size DESC, type
WITH s, collect({type: type, objects: objects, self_size: self_size, retained_size: retained_size,
                 max_retained_size: max_retained_size}) AS rows
RETURN s.reachable_size AS reachable_size, rows[..$limit] AS rows, size(rows) AS types,
       reduce(n = 0, r IN rows | n + r.objects) AS objects,
       reduce(n = 0, r IN rows | n + r.retained_size) AS retained_size
