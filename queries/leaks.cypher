// name: leaks
// description: memlab's three-snapshot model: objects allocated between baseline and target and still alive in final, clustered by retainer path, largest first.
// needs: objects
// param baseline: string -- the snapshot before the action under suspicion
// param target: string -- the snapshot after the action
// param final: string -- the snapshot after undoing the action (or repeating it)
// param limit: int = 20 in 1..1000 -- how many clusters
// param known: bool = false -- the clusters of known leaks (rule kind known_leak) instead of the others
//
// Object ids must be stable across the three snapshots (V8 ids within one process are). An object
// is a leak candidate when it is absent from the baseline, present in the target and still present
// in the final snapshot, "the same object" meaning the same id and the same type, the rule of
// `heapdb diff --by object` (an id seen with another type is a reused id). Candidates are
// clustered by the signature of their shortest retainer path in the final snapshot and ranked by
// the retained size of the cluster's members (members retained by other members are not counted
// twice).
//
// On a load under internal rules (the default rules, docs/rules.md) the clusters name the objects
// the program made: the runtime's objects that hold them (`through`) are looked through, and a
// candidate whose holder (its nearest dominator not looked through) is itself a candidate is part
// of that candidate's leak, not a cluster of its own. Candidates that a `known_leak` rule covers are
// answered apart (`known`: true), each cluster with its reason.
MATCH (b:Snapshot {tag: $baseline, status: 'ready'}), (t:Snapshot {tag: $target, status: 'ready'}), (f:Snapshot {tag: $final, status: 'ready'})
MATCH (o:Object {sid: f.sid})
WHERE o.id IS NOT NULL AND o.reachable AND o.kind <> 'synthetic' AND o.through IS NULL
  AND (o.known_leak IS NOT NULL) = $known
  AND EXISTS { MATCH (:Object {sid: t.sid, id: o.id, type: o.type}) }
  AND NOT EXISTS { MATCH (:Object {sid: b.sid, id: o.id, type: o.type}) }
OPTIONAL MATCH (d:Object {sid: f.sid, id: o.dom})
OPTIONAL MATCH (h:Object {sid: f.sid, id: coalesce(o.holder, o.dom)})
WHERE f.look_through
  AND EXISTS { MATCH (:Object {sid: t.sid, id: h.id, type: h.type}) }
  AND NOT EXISTS { MATCH (:Object {sid: b.sid, id: h.id, type: h.type}) }
WITH f, o, d.path_sig = o.path_sig AS nested, h IS NOT NULL AS held
WHERE NOT held
WITH f, o.path_sig AS sig, o.known_leak AS known_leak, count(*) AS objects, sum(o.self_size) AS self_size,
     sum(CASE WHEN nested THEN 0 ELSE o.retained_size END) AS retained_size, collect(o.id)[..5] AS sample_ids,
     collect(o.type)[0] AS type, collect(o.verdict)[0] AS verdict,
     collect(o.location)[0] AS location, collect(o.allocated_at)[0] AS allocated_at
MATCH (g:PathGroup {sid: f.sid, sig: sig})
RETURN sig, g.path AS path, g.hops AS hops, type, objects, self_size, retained_size, sample_ids, known_leak, verdict,
       location, allocated_at
ORDER BY retained_size DESC, objects DESC, sig
LIMIT $limit
