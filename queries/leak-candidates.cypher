// name: leak-candidates
// description: Leak candidates already matched by id: those of the given final-snapshot objects that can lead a leak cluster, with what clustering reads.
// needs: objects
// param final: string -- the snapshot after undoing the action (or repeating it)
// param ids: list<int> -- ids of final-snapshot objects absent from the baseline and present in the target (same id and type)
//
// The stored query `leaks` answers memlab's question on its own (for the Browser), with two index
// seeks per object of the final snapshot. heapdb itself matches the three snapshots' id listings
// (`id-listings`) in process and asks this query about the matched objects only; it then clusters
// them in process by the same rule (heapdb/queries/leaks_by_id.py), so both give the same clusters.
// One row: [id, path_sig, self_size, retained_size, dom, holder or dom, known_leak] per object the
// root reaches that is not synthetic and not looked through.
MATCH (f:Snapshot {tag: $final, status: 'ready'})
UNWIND $ids AS id
MATCH (o:Object {sid: f.sid, id: id})
WHERE o.reachable AND o.kind <> 'synthetic' AND o.through IS NULL
RETURN collect([o.id, o.path_sig, o.self_size, o.retained_size, o.dom, coalesce(o.holder, o.dom), o.known_leak]) AS objects
