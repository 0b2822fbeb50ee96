// name: shape-groups
// description: A snapshot's shapes as its load counted them (memlab's unbound-shape): objects, what the outermost ones retain, the first one's id.
// param tag: string -- the snapshot's tag
//
// Every shape of the snapshot (V8): each string is `string`, a plain Object `Object { a, b }` (its
// references' names, sorted), any other object its name. `heapdb unbound` compares them across
// snapshots; none for a snapshot stored before they were counted.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (g:ShapeGroup {sid: s.sid})
RETURN g.shape AS shape, g.objects AS objects, g.retained_size AS retained_size, g.example_id AS example_id
ORDER BY g.objects DESC, g.shape
