// name: object-columns
// description: A snapshot's objects as columns (ids, types, self and retained sizes), for matching two snapshots object by object.
// param tag: string -- the snapshot's tag
//
// The objects the root reaches, the root and synthetic root-kind nodes aside, in one row of four
// lists. Matching two snapshots by id is a join of a million rows with a million: heapdb reads
// both sides once this way and joins them in process (sorted ids), which takes a fraction of the
// time of an index seek per object.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.id IS NOT NULL AND o.reachable AND o.kind <> 'synthetic' AND NOT o:Root
RETURN collect(o.id) AS ids, collect(o.type) AS types, collect(o.self_size) AS self_sizes,
       collect(o.retained_size) AS retained_sizes
