// name: unbound-collections
// description: Collections' fan-outs by id: a Map's, Set's, WeakMap's or WeakSet's its table's references, an Array's or plain Object's its own (memlab's getCollectionFanout).
// needs: references
// param tag: string -- the snapshot's tag
// param ids: list<int> -- the objects' ids (those that are no collection are left out)
//
// Each row has the object's kind: a collection is of kind `object` (heapdb keeps only those).
//
// `heapdb unbound` reads the collections of the series' last snapshot (their ids from the type
// listings) and the same ids in the earlier snapshots. A Map's fan-out counts every reference of
// the object its `table` reference reaches (its backing hash table: about two a Map entry, one a
// Set entry; references to small integers are not recorded), weak ones included, as memlab counts
// `edge_count`; 0 when it has no table.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
UNWIND $ids AS id
MATCH (o:Object {sid: s.sid, id: id})
WHERE o.type IN ['Map', 'Set', 'WeakMap', 'WeakSet', 'Array', 'Object']
OPTIONAL MATCH (o)-[r {name: 'table'}]->(t)
WHERE o.type IN ['Map', 'Set', 'WeakMap', 'WeakSet']
WITH o, head(collect(t)) AS t
RETURN o.id AS id, o.type AS type, o.kind AS kind,
       CASE WHEN o.type IN ['Array', 'Object'] THEN COUNT { (o)-->() }
            WHEN t IS NULL THEN 0
            ELSE COUNT { (t)-->() } END AS fanout
