// name: string-types
// description: The types whose objects are strings of the given kinds, judged by each type's largest object.
// needs: objects
// param tag: string -- the snapshot's tag
// param kinds: list<string> -- the kinds of string the snapshot's format names its strings by
//
// Reads one object per type, through the index on (sid, type, type_rank).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (t:TypeGroup {sid: s.sid})
MATCH (o:Object {sid: s.sid, type: t.type, type_rank: 1})
WHERE o.kind IN $kinds
RETURN t.type AS type
ORDER BY type
