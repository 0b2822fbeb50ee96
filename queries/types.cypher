// name: types
// description: Objects per type: count, shallow size, retained size and the largest object's retained size.
// param tag: string -- the snapshot's tag
// param sort: string = "self_size" one of count|self_size|retained_size|max_retained_size -- the column to sort by, largest first
// param limit: int = 50 in 1..10000 -- how many types
//
// Reads the per-type totals stored at load (:TypeGroup). Counted are the objects the root reaches,
// the root and synthetic root-kind nodes aside. retained_size is what the type's objects retain
// together, each byte once (Chrome DevTools' rule: an object below another of its type in the
// dominator tree adds nothing); max_retained_size is the largest single object's.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (t:TypeGroup {sid: s.sid})
WHERE t.type IS NOT NULL
WITH t.type AS type, t.objects AS count, t.self_size AS self_size, t.retained_size AS retained_size,
     t.max_retained_size AS max_retained_size
RETURN type, count, self_size, retained_size, max_retained_size
ORDER BY CASE $sort WHEN 'count' THEN count WHEN 'retained_size' THEN retained_size
                    WHEN 'max_retained_size' THEN max_retained_size ELSE self_size END DESC, type
LIMIT $limit
