// name: diff-paths
// description: Per retainer path, how many objects and bytes are held that way in each of two snapshots, largest growth first.
// param before: string -- the earlier snapshot's tag
// param after: string -- the later snapshot's tag
// param limit: int = 50 in 1..10000 -- how many paths
//
// Works without stable object ids: objects are grouped by the signature of their shortest
// retainer path (root kind, reference names and types; indexes and numbers normalized), stored at
// load as :PathGroup. Paths present in only one snapshot show 0 on the other side.
//
// Each path's `type` (its objects', as the path's last hop names it), `verdict` and `known_leak` (set by a load under rules, docs/rules.md) are those of its
// group's largest member (`samples[0]`), the rule `gate-paths` follows: in after, or in before for
// a path only before has. Looked up after the limit, so only for the paths answered; null where the
// objects are not stored (a pruned snapshot).
MATCH (a:Snapshot {tag: $before, status: 'ready'}), (b:Snapshot {tag: $after, status: 'ready'})
CALL (a, b) {
  MATCH (g:PathGroup {sid: b.sid}) WHERE g.sig IS NOT NULL
  OPTIONAL MATCH (old:PathGroup {sid: a.sid, sig: g.sig})
  RETURN g.sig AS sig, g.path AS path, g.hops AS hops, coalesce(old.objects, 0) AS objects_before, g.objects AS objects_after,
         coalesce(old.self_size, 0) AS size_before, g.self_size AS size_after,
         coalesce(old.retained_size, 0) AS retained_before, g.retained_size AS retained_after,
         b.sid AS side, g.samples[0] AS largest_id
  UNION ALL
  MATCH (old:PathGroup {sid: a.sid}) WHERE old.sig IS NOT NULL AND NOT EXISTS { MATCH (:PathGroup {sid: b.sid, sig: old.sig}) }
  RETURN old.sig AS sig, old.path AS path, old.hops AS hops, old.objects AS objects_before, 0 AS objects_after,
         old.self_size AS size_before, 0 AS size_after, old.retained_size AS retained_before, 0 AS retained_after,
         a.sid AS side, old.samples[0] AS largest_id
}
WITH sig, path, hops, objects_before, objects_after, objects_after - objects_before AS objects_delta,
     size_before, size_after, size_after - size_before AS size_delta,
     retained_before, retained_after, retained_after - retained_before AS retained_delta, side, largest_id
ORDER BY size_delta DESC, objects_delta DESC, sig
LIMIT $limit
OPTIONAL MATCH (largest:Object {sid: side, id: largest_id})
RETURN sig, path, hops, objects_before, objects_after, objects_delta, size_before, size_after, size_delta,
       retained_before, retained_after, retained_delta, largest.type AS type, largest.verdict AS verdict,
       largest.known_leak AS known_leak
ORDER BY size_delta DESC, objects_delta DESC, sig
