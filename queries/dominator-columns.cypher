// name: dominator-columns
// description: A snapshot's dominator tree as [id, type, dom, self size, retained size] rows in one list, for comparing two builds' trees.
// needs: objects
// param tag: string -- the snapshot's tag
//
// Every object the root reaches, the root included (it names itself as its dominator, so the tree's
// top is found in the list). A synthetic root kind is named by its name ("(GC roots)", "(Stack
// roots)"), not by its type, which V8 gives them all alike. `heapdb diff A B --by dominator` reads
// both snapshots once this way and groups each tree's objects by their chain of dominators' types
// in process (heapdb/queries/dominator_diff.py): following `dom` upward in Cypher would take an
// index seek per object and step.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.id IS NOT NULL AND o.reachable
RETURN collect([o.id, CASE WHEN o.kind = 'synthetic' AND NOT o:Root THEN coalesce(o.name, o.type) ELSE o.type END,
                coalesce(o.dom, o.id), o.self_size, o.retained_size]) AS objects
