// name: gate-paths
// description: Retainer paths of a candidate build that retain at least a floor, with what the baseline build held the same way.
// param baseline: string -- the baseline build's snapshot tag
// param candidate: string -- the candidate build's snapshot tag
// param min_bytes: int = 262144 -- the smallest retained size of a path new in the candidate worth reporting
// param growth_bytes: int -- the smallest growth of a path's retained size worth reporting
//
// What `heapdb gate` reads: one row per candidate :PathGroup that may be a finding (it retains at
// least min_bytes, or at least growth_bytes, which any path that grew by that much does), with the
// baseline's group of the same signature (0 where there is none) and the candidate group's largest
// member (`samples[0]`), whose type names the path, whose `known_leak` (set under rules) says the
// leak is known and whose `verdict` (a verdict rule's note) is shown with the finding.
// Reads stored group totals only: answers at once at any heap size, needs no stable ids.
//
// retained_before and retained_after are what each build holds *under* the path: the most that its
// group or any group whose path extends it retains (`held`, written at load; see data-model.md). A
// path's own retained size moves with the dominator tree: when a VM handle (a compiler's, a handle
// scope's) also points straight at the leaked array, the array's dominator is the root and the
// variable's context above it retains little, in one build and not the next. The most retained under
// the path does not move with it. The baseline's figure is its group of the same signature's. Groups
// stored before `held` existed count their own retained size only.
MATCH (a:Snapshot {tag: $baseline, status: 'ready'}), (b:Snapshot {tag: $candidate, status: 'ready'})
MATCH (g:PathGroup {sid: b.sid})
WHERE g.sig IS NOT NULL
  AND g.retained_size >= CASE WHEN $min_bytes < $growth_bytes THEN $min_bytes ELSE $growth_bytes END
OPTIONAL MATCH (old:PathGroup {sid: a.sid, sig: g.sig})
OPTIONAL MATCH (largest:Object {sid: b.sid, id: g.samples[0]})
RETURN g.sig AS sig, g.path AS path, g.hops AS hops, coalesce(largest.type, last(g.hops)) AS type,
       coalesce(old.objects, 0) AS objects_before, g.objects AS objects_after,
       coalesce(old.held, old.retained_size, 0) AS retained_before,
       coalesce(g.held, g.retained_size) AS retained_after,
       g.samples[0] AS sample, largest.known_leak AS known_leak, largest.verdict AS verdict
ORDER BY retained_after DESC, sig
LIMIT 10000
