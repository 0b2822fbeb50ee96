// name: type-history
// description: One type's objects, shallow size and retained size in each of the given snapshots (a history's builds), in their order.
// param tags: list<string> -- the snapshots' tags, in build order (`heapdb type-history` passes a page of the loaded builds)
// param type: string -- the type, as `heapdb types` lists it
//
// Reads the per-type totals stored at load (:TypeGroup), which pruning keeps: one seek on the
// (sid, type) key per snapshot, whatever the heap sizes, so a thousand builds answer in
// milliseconds. A snapshot without objects of the type has no row; `heapdb type-history` shows it
// as zeros.
UNWIND range(0, size($tags) - 1) AS i
MATCH (s:Snapshot {tag: $tags[i], status: 'ready'})
MATCH (g:TypeGroup {sid: s.sid, type: $type})
RETURN i, s.tag AS tag, g.objects AS objects, g.self_size AS self_size, g.retained_size AS retained_size
ORDER BY i
