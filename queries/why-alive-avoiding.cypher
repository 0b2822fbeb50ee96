// name: why-alive-avoiding
// description: The shortest chain of retaining references from the root to an object that avoids the given reference names, object types and ids.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
// param ignore_names: list<string> = [] -- reference names the path must not use
// param ignore_types: list<string> = [] -- object types the path must not pass through
// param ignore_ids: list<int> = [] -- object ids the path must not pass through
// param ignore_kinds: list<string> = [] -- reference kinds the path must not use
// param ignore_kind_names: list<string> = [] -- references the path must not use, as "kind:name"
// param ignore_templates: list<string> = [] -- the parts of a reference the keys name, e.g. "from.kind,edge.name"
// param ignore_keys: list<string> = [] -- references the path must not use, as a template and its parts' values joined by U+001F
// param ignore_refs: list<string> = [] -- element ids of references the path must not use
//
// Both ends are bound, so shortestPath is a bidirectional breadth-first search that stops at the
// first path; the WHERE predicates are checked during the search (the plan's ShortestPath operator
// carries them). Weak references are :WEAK_REF and never followed. The root and the target are exempt from
// the ignore lists. A rule selector of exact patterns (`heapdb why --ignore SELECTOR`) comes as a
// template, the parts of a reference it names, and the keys of the references it selects: each
// reference followed is keyed by each template and left out when its key is listed. Each reference
// comes with its element id (`ref`): other selectors (globs, regexes) and the references the
// snapshot's rules drop are checked on the path found, and the search asked again without what
// they name (queries/ignoring.py). No row: the root does not reach the object without the ignored references.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (root:Root {sid: s.sid})
MATCH (target:Object {sid: s.sid, id: $id})
MATCH p = shortestPath((root)-[:REF*0..]->(target))
WHERE all(r IN relationships(p) WHERE NOT r.name IN $ignore_names AND NOT r.kind IN $ignore_kinds
                                   AND NOT (r.kind + ':' + r.name) IN $ignore_kind_names AND NOT elementId(r) IN $ignore_refs
                                   AND none(t IN $ignore_templates WHERE reduce(key = t, part IN split(t, ',') | key + '\u001F' +
                                       coalesce(CASE part WHEN 'from.type' THEN startNode(r).type WHEN 'from.name' THEN startNode(r).name
                                                          WHEN 'from.kind' THEN startNode(r).kind WHEN 'edge.name' THEN r.name
                                                          WHEN 'edge.kind' THEN r.kind WHEN 'to.type' THEN endNode(r).type
                                                          WHEN 'to.name' THEN endNode(r).name WHEN 'to.kind' THEN endNode(r).kind END, ''))
                                       IN $ignore_keys))
  AND all(n IN nodes(p) WHERE n = target OR n = root OR NOT (n.type IN $ignore_types OR n.id IN $ignore_ids))
RETURN [n IN nodes(p) | n {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: n:Root}] AS objects,
       [r IN relationships(p) | r {.kind, .name, ref: elementId(r)}] AS references
