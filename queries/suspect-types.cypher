// name: suspect-types
// description: Types whose objects together retain at least a given number of bytes, largest first.
// param tag: string -- the snapshot's tag
// param min_retained: int in 0..9223372036854775807 -- the retained size a type needs, in bytes (heapdb suspects passes a share of the snapshot's reachable size)
// param limit: int = 20 in 1..1000 -- how many types
//
// Reads the per-type totals stored at load (:TypeGroup): a type's retained size counts each member
// once, not again when another member of the type already holds it. Useful when no single object
// stands out but many small ones of one type add up (a cache of a million entries).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (t:TypeGroup {sid: s.sid})
WHERE t.type IS NOT NULL AND t.retained_size >= $min_retained
RETURN t.type AS type, t.objects AS count, t.self_size AS self_size, t.retained_size AS retained_size
ORDER BY t.retained_size DESC, t.type
LIMIT $limit
