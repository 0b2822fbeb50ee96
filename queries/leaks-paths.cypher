// name: leaks-paths
// description: Leak candidates without stable ids: retainer paths that gained objects from baseline to target and kept them in final, most bytes gained first.
// param baseline: string -- the snapshot before the action under suspicion
// param target: string -- the snapshot after the action
// param final: string -- the snapshot after undoing the action (or repeating it)
// param limit: int = 20 in 1..1000 -- how many clusters
// param samples: int = 5 in 1..20 -- ids of objects held that way in final, largest retained first
// param known: bool = false -- the paths whose largest member in final is part of a known leak (rule kind known_leak) instead of the others
//
// memlab's three-snapshot model on :PathGroup totals instead of object ids, so it works for Luau
// and snap.bin, whose ids are addresses. A path (signature) is a candidate when it holds more
// objects in target than in baseline, and at least as many in final as in target: what the action
// added was not given back. Ranked by the growth of the group's retained size from baseline to
// final (then of its object count); the sample objects are the group's members in final with the
// largest retained size, which the group names (`samples`, written at load).
//
// Rules (docs/rules.md) are read off the group's largest member in final (`samples[0]`), the rule
// `gate-paths` follows: its `verdict` is the path's verdict, and a path whose largest member is part
// of a known leak (`known_leak`) is answered apart (`known`: true), never as a new leak. The largest
// member is looked up (one index seek per candidate path) before the limit, so that known leaks do
// not take the places of new ones.
MATCH (b:Snapshot {tag: $baseline, status: 'ready'}), (t:Snapshot {tag: $target, status: 'ready'}), (f:Snapshot {tag: $final, status: 'ready'})
MATCH (gt:PathGroup {sid: t.sid}) WHERE gt.sig IS NOT NULL
OPTIONAL MATCH (gb:PathGroup {sid: b.sid, sig: gt.sig})
WITH f, gt, coalesce(gb.objects, 0) AS objects_baseline, coalesce(gb.self_size, 0) AS self_baseline, coalesce(gb.retained_size, 0) AS retained_baseline
WHERE gt.objects > objects_baseline
MATCH (gf:PathGroup {sid: f.sid, sig: gt.sig}) WHERE gf.objects >= gt.objects
MATCH (largest:Object {sid: f.sid, id: gf.samples[0]}) WHERE (largest.known_leak IS NOT NULL) = $known
WITH gf, largest, objects_baseline, gt.objects AS objects_target,
     gf.objects - objects_baseline AS objects, gf.self_size - self_baseline AS self_size, gf.retained_size - retained_baseline AS retained_size
ORDER BY retained_size DESC, objects DESC, gf.sig
LIMIT $limit
RETURN gf.sig AS sig, gf.path AS path, gf.hops AS hops, largest.type AS type, objects, self_size, retained_size,
       [objects_baseline, objects_target, gf.objects] AS counts, gf.samples[..$samples] AS sample_ids,
       largest.verdict AS verdict, largest.known_leak AS known_leak
ORDER BY retained_size DESC, objects DESC, sig
