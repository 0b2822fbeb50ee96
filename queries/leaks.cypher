// name: leaks
// description: memlab's three-snapshot model: objects allocated between baseline and target and still alive in final, clustered by retainer path, largest first.
// param baseline: string -- the snapshot before the action under suspicion
// param target: string -- the snapshot after the action
// param final: string -- the snapshot after undoing the action (or repeating it)
// param limit: int = 20 in 1..1000 -- how many clusters
//
// Object ids must be stable across the three snapshots (V8 ids within one process are). An object
// is a leak candidate when it is absent from the baseline, present in the target and still present
// in the final snapshot, "the same object" meaning the same id and the same type, the rule of
// `heapdb diff --by object` (an id seen with another type is a reused id). Candidates are
// clustered by the signature of their shortest retainer path in the final snapshot and ranked by
// the retained size of the cluster's members (members retained by other members are not counted
// twice).
MATCH (b:Snapshot {tag: $baseline, status: 'ready'}), (t:Snapshot {tag: $target, status: 'ready'}), (f:Snapshot {tag: $final, status: 'ready'})
MATCH (o:Object {sid: f.sid})
WHERE o.id IS NOT NULL AND o.reachable AND o.kind <> 'synthetic'
  AND EXISTS { MATCH (:Object {sid: t.sid, id: o.id, type: o.type}) }
  AND NOT EXISTS { MATCH (:Object {sid: b.sid, id: o.id, type: o.type}) }
OPTIONAL MATCH (d:Object {sid: f.sid, id: o.dom})
WITH f, o, d.path_sig = o.path_sig AS nested
WITH f, o.path_sig AS sig, count(*) AS objects, sum(o.self_size) AS self_size,
     sum(CASE WHEN nested THEN 0 ELSE o.retained_size END) AS retained_size, collect(o.id)[..5] AS sample_ids,
     collect(o.type)[0] AS type
MATCH (g:PathGroup {sid: f.sid, sig: sig})
RETURN sig, g.path AS path, g.hops AS hops, type, objects, self_size, retained_size, sample_ids
ORDER BY retained_size DESC, objects DESC, sig
LIMIT $limit
