// name: detached-dom
// description: Detached DOM grouped by the path that holds it, largest retained first: trees, objects and bytes.
// param tag: string -- the snapshot's tag
// param limit: int = 20 in 1..100 -- how many holder paths
//
// Reads what the load stored (:DetachedGroup: the 100 paths holding the most; the totals over all
// detached objects, and the largest of them, are the snapshot's `dom`). A group's `trees` are
// detached objects no other detached object dominates, held by the same first retainer path
// (`signature`, as on :PathGroup); `attached` counts the DOM objects still attached to a document
// that those trees alone keep alive. Every object's own `detached` property marks it too.
// docs/analysis.md, "Detached DOM", says what counts.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (g:DetachedGroup {sid: s.sid})
RETURN g.signature AS signature, g.path AS path, g.type AS type, g.trees AS trees, g.objects AS objects,
       g.attached AS attached, g.retained_size AS retained_size, g.example_id AS example_id
ORDER BY retained_size DESC, example_id
LIMIT $limit
