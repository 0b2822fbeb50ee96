// name: duplicate-objects
// description: Object contents held by more than one object (V8: class and shallow values; hprof: primitive arrays), the most wasteful first.
// param tag: string -- the snapshot's tag
// param sort: string = "wasted" one of wasted|retained_size|count -- what to rank by, largest first
// param limit: int = 20 in 1..100 -- how many contents
//
// Reads what the load stored (:ObjectGroup: the 100 first contents of each ranking; the totals over
// every object compared are the snapshot's `objects`). `type` is the copies' class, `value` their
// content as text, `size` its properties (V8) or elements (hprof); `wasted` is what all copies but
// one retain; `owner_*` name the types whose objects own most copies (the copies' immediate
// dominators). docs/analysis.md, "Duplicate objects", says what counts.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (g:ObjectGroup {sid: s.sid})
WITH g.key AS key, g.type AS type, g.value AS value, g.size AS size, g.count AS count,
     g.retained_size AS retained_size, g.wasted AS wasted, g.example_id AS example_id,
     g.owner_types AS owner_types, g.owner_copies AS owner_copies, g.owner_example_ids AS owner_example_ids
RETURN key, type, value, size, count, retained_size, wasted, example_id, owner_types, owner_copies, owner_example_ids
ORDER BY CASE $sort WHEN 'count' THEN count WHEN 'retained_size' THEN retained_size ELSE wasted END DESC,
         wasted DESC, example_id
LIMIT $limit
