// name: path-signatures
// description: Objects' first-path signatures by id (null for an id the snapshot has not, or an unreachable object).
// needs: objects
// param tag: string -- the snapshot's tag
// param ids: list<int> -- the objects' ids
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
UNWIND $ids AS id
OPTIONAL MATCH (o:Object {sid: s.sid, id: id})
RETURN collect([id, o.path_sig]) AS signatures
