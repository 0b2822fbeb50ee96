// name: unbound-objects
// description: The objects of kind object, closure or regexp retaining at least min_retained, as unbound growth starts from them in the last snapshot.
// needs: objects
// param tag: string -- the snapshot's tag
// param min_retained: int = 10240 in 0..1099511627776 -- the least retained size, in bytes
//
// `heapdb unbound` starts from these (the objects of the series' last snapshot that retain enough
// to be listed, memlab's unbound-object threshold by default) and reads the same ids in the earlier
// snapshots with `objects-brief`: a few seeks per object instead of every object of every snapshot.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.retained_size >= $min_retained AND o.kind IN ['object', 'closure', 'regexp']
RETURN o.id AS id, o.type AS type, o.kind AS kind, o.retained_size AS retained_size
