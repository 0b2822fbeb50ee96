// name: snapshots
// description: The snapshots queries can see (status ready), oldest first.
MATCH (s:Snapshot {status: 'ready'})
RETURN s {.*} AS snapshot
ORDER BY s.loaded_at, s.sid
