// name: unmounted-components
// description: React components unmounted but still alive, largest retained first: fibers, bytes and what holds them.
// param tag: string -- the snapshot's tag
// param limit: int = 20 in 1..100 -- how many components
//
// Reads what the load stored (:FiberGroup: the 100 components retaining most; the totals over all
// fibers, and the largest unmounted fibers, are the snapshot's `react`). `path` is the first
// retainer path of the component's largest unmounted fiber: what still holds it.
// docs/analysis.md, "Unmounted React components", says what counts.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (g:FiberGroup {sid: s.sid})
RETURN g.component AS component, g.fibers AS fibers, g.retained_size AS retained_size, g.example_id AS example_id,
       g.path AS path
ORDER BY retained_size DESC, fibers DESC, component
LIMIT $limit
