// name: type-ids
// description: The ids of a type's objects, largest retained first, read object by object.
// needs: objects
// param tag: string -- the snapshot's tag
// param type: string -- the objects' type
//
// For a type without a stored listing (`type-listing`: the root's, synthetic root kinds'): reads
// every object of the snapshot.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.type = $type
RETURN o.id AS id
ORDER BY o.retained_size DESC, o.id
