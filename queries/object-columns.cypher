// name: object-columns
// description: A snapshot's objects as [id, type, self size, retained size] rows in one list, for matching two snapshots object by object.
// needs: objects
// param tag: string -- the snapshot's tag
//
// The objects the root reaches, the root and synthetic root-kind nodes aside, in one row. Matching two snapshots by id is a join of a million rows with a million: heapdb reads
// both sides once this way and joins them in process (sorted ids), which takes a fraction of the
// time of an index seek per object.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.id IS NOT NULL AND o.reachable AND o.kind <> 'synthetic' AND NOT o:Root
RETURN collect([o.id, o.type, o.self_size, o.retained_size]) AS objects
