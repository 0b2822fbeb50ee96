// name: duplicate-strings
// description: String contents held in more than one string object, the most wasteful first: their copies, bytes and owners.
// param tag: string -- the snapshot's tag
// param sort: string = "wasted" one of wasted|retained_size|count -- what to rank by, largest first
// param limit: int = 20 in 1..100 -- how many contents
//
// Reads what the load stored (:StringGroup: the 100 first contents of each ranking; the totals over
// all strings are the snapshot's `strings`). `wasted` is what all copies but one retain; `owner_*`
// name the types whose objects own most copies (the copies' immediate dominators), with how many
// and one such owner. docs/analysis.md, "Duplicate strings", says what counts.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (g:StringGroup {sid: s.sid})
WITH g.key AS key, g.value AS value, g.length AS length, g.count AS count, g.retained_size AS retained_size,
     g.wasted AS wasted, g.example_id AS example_id, g.owner_types AS owner_types,
     g.owner_copies AS owner_copies, g.owner_example_ids AS owner_example_ids
RETURN key, value, length, count, retained_size, wasted, example_id, owner_types, owner_copies, owner_example_ids
ORDER BY CASE $sort WHEN 'count' THEN count WHEN 'retained_size' THEN retained_size ELSE wasted END DESC,
         wasted DESC, example_id
LIMIT $limit
