// name: why-alive
// description: The shortest chain of retaining references (:REF) from the snapshot's root to an object.
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
//
// Every retaining path from the root to an object passes through all of the object's dominators, in
// order, so a shortest path is the shortest paths between consecutive dominators put end to end. Each
// piece is a shortestPath with both ends bound (a bidirectional breadth-first search that stops at
// the first path), usually one or two references long, so no search has to cross the heap's hubs
// (arrays of 100,000s of elements, contexts shared by as many closures) the way one search from the
// root would. Weak references are :WEAK_REF and never followed. No row: the root does not reach the
// object. To keep references or objects off the path, use why-alive-avoiding (removing references
// changes the dominators, so it searches from the root in one go).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (target:Object {sid: s.sid, id: $id})
WHERE target.reachable
MATCH c = (target)<-[:DOMINATES*0..]-(:Root)
WITH reverse(nodes(c)) AS chain
CALL (chain) {
  UNWIND range(0, size(chain) - 2) AS i
  WITH i, chain[i] AS a, chain[i + 1] AS b
  CALL (a, b) {
    MATCH p = shortestPath((a)-[:REF*1..]->(b))
    RETURN p
  }
  WITH i, p ORDER BY i
  RETURN collect(p) AS pieces
}
WITH chain, pieces WHERE size(pieces) = size(chain) - 1
WITH [chain[0]] + reduce(acc = [], p IN pieces | acc + tail(nodes(p))) AS path,
     reduce(acc = [], p IN pieces | acc + relationships(p)) AS refs
RETURN [n IN path | n {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached}] AS objects,
       [r IN refs | r {.kind, .name}] AS references
