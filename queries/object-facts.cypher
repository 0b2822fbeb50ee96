// name: object-facts
// description: What lifecycle rules read of objects (hprof): each one's type, name, primitive values, a class object's field layout, and its references of the given names.
// needs: references
// param tag: string -- the snapshot's tag
// param ids: list<int> -- the objects' ids
// param names: list<string> -- the reference names wanted (fields, `<class>`, `<super>`)
//
// Why it is written this way: a why-alive path's objects are labelled LEAKING / NOT_LEAKING at
// question time (docs/analysis.md, "Java and Android leak status"), so this reads only the few
// objects on the path and, a level per call, their classes and super classes. An array's
// references are its elements, never a field a rule names: they are not read, so a path through
// an array of a million elements costs one property lookup, not a million references.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
UNWIND $ids AS id
MATCH (o:Object {sid: s.sid, id: id})
CALL (o) {
  OPTIONAL MATCH (o)-[r:REF|WEAK_REF]->(t:Object)
  WHERE NOT o.type ENDS WITH '[]' AND r.name IN $names
  RETURN collect([r.name, t.id]) AS refs
}
RETURN o.id AS id, o.type AS type, o.name AS name, o.values AS values, o.field_layout AS layout, refs
