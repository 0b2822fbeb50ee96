// name: lifelines
// description: The first retainer paths of the objects of a type, grouped: one row per distinct path, with counts.
// needs: objects
// param tag: string -- the snapshot's tag
// param type: string = "" -- the objects' type (required: no object has the empty type)
// param name_contains: string = "" -- a text the objects' names must contain (empty: any name)
// param ids: list<int>? = null -- the type's object ids when known (heapdb passes its stored listing); null reads every object
//
// The root and synthetic objects (root groups) are left out. heapdb merges the rows into one tree
// from the root down (`heapdb lifelines`, docs/queries.md). `retained_size` adds up the retained
// sizes of the objects whose immediate dominator is not itself one of the selected objects, so a
// list's nodes count once, in their head. Without `ids` every object of the snapshot is read; with
// them, one index seek per object.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
CALL (s) {
  MATCH (o:Object {sid: s.sid}) WHERE $ids IS NULL AND o.id IS NOT NULL AND o.type = $type
  RETURN o
  UNION ALL
  UNWIND coalesce($ids, []) AS id
  MATCH (o:Object {sid: s.sid, id: id}) WHERE o.type = $type
  RETURN o
}
WITH s, o WHERE o.reachable AND o.path_sig IS NOT NULL AND o.kind <> 'synthetic' AND NOT o:Root
               AND o.name CONTAINS $name_contains
OPTIONAL MATCH (d:Object {sid: s.sid, id: o.dom})
WITH s, o.path_sig AS sig, count(o) AS objects,
     sum(CASE WHEN d.type = $type AND d.kind <> 'synthetic' AND NOT d:Root AND d.name CONTAINS $name_contains
              THEN 0 ELSE o.retained_size END) AS retained_size
MATCH (g:PathGroup {sid: s.sid, sig: sig})
RETURN g.hops AS hops, retained_size, objects
ORDER BY objects DESC, sig
