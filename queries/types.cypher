// name: types
// description: Objects per type: count, shallow size and summed retained size.
// param tag: string -- the snapshot's tag
// param sort: string = "self_size" one of count|self_size|retained_size|max_retained_size -- the column to sort by, largest first
// param limit: int = 50 in 1..10000 -- how many types
//
// retained_size sums the retained sizes of the type's objects, so objects of the type that hold
// others of the same type (a linked list) are counted more than once; max_retained_size, the
// largest single object's, never double-counts. Synthetic root-kind nodes are left out.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid})
WHERE o.id IS NOT NULL AND o.kind <> 'synthetic'
WITH o.type AS type, count(*) AS count, sum(o.self_size) AS self_size,
     sum(o.retained_size) AS retained_size, max(o.retained_size) AS max_retained_size
RETURN type, count, self_size, retained_size, max_retained_size
ORDER BY CASE $sort WHEN 'count' THEN count WHEN 'retained_size' THEN retained_size
                    WHEN 'max_retained_size' THEN max_retained_size ELSE self_size END DESC, type
LIMIT $limit
