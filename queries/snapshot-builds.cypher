// name: snapshot-builds
// description: The ready snapshots' load numbers, tags, metadata and whether each was pruned: what the builds of a history are chosen from.
//
// What `heapdb growth --builds` and `heapdb type-history` read to put the loaded builds in order
// (the `build` of `meta`, a JSON text). Only these properties, not `s {.*}`: a thousand snapshots'
// stored inspections would take longer to send and decode than the question itself.
MATCH (s:Snapshot {status: 'ready'})
RETURN s {.sid, .tag, .status, .meta, .summary, .store_version} AS snapshot
ORDER BY s.sid
