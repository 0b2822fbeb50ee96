// name: diff-types
// description: Per type, how the count, shallow size and retained size changed between two snapshots, largest growth first.
// param before: string -- the earlier snapshot's tag
// param after: string -- the later snapshot's tag
// param limit: int = 50 in 1..10000 -- how many types
//
// Reads the per-type totals stored at load (:TypeGroup), so it costs the same for a million objects
// as for a thousand. Only objects the root reaches count; a type's retained size counts each byte
// once (DevTools' rule: see `types`). Types present in only one snapshot show 0 there.
MATCH (a:Snapshot {tag: $before, status: 'ready'}), (b:Snapshot {tag: $after, status: 'ready'})
CALL (a, b) {
  MATCH (t:TypeGroup {sid: b.sid}) WHERE t.type IS NOT NULL
  OPTIONAL MATCH (old:TypeGroup {sid: a.sid, type: t.type})
  RETURN t.type AS type, coalesce(old.objects, 0) AS count_before, t.objects AS count_after,
         coalesce(old.self_size, 0) AS size_before, t.self_size AS size_after,
         coalesce(old.retained_size, 0) AS retained_before, t.retained_size AS retained_after
  UNION ALL
  MATCH (old:TypeGroup {sid: a.sid}) WHERE old.type IS NOT NULL AND NOT EXISTS { MATCH (:TypeGroup {sid: b.sid, type: old.type}) }
  RETURN old.type AS type, old.objects AS count_before, 0 AS count_after, old.self_size AS size_before, 0 AS size_after,
         old.retained_size AS retained_before, 0 AS retained_after
}
RETURN type, count_before, count_after, count_after - count_before AS count_delta,
       size_before, size_after, size_after - size_before AS size_delta,
       retained_before, retained_after, retained_after - retained_before AS retained_delta
ORDER BY size_delta DESC, count_delta DESC, type
LIMIT $limit
