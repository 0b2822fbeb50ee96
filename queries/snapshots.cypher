// name: snapshots
// description: The snapshots queries can see (status ready), oldest first.
MATCH (s:Snapshot {status: 'ready'})
RETURN s.tag AS tag, s.sid AS sid, s.format AS format, s.runtime AS runtime,
       s.object_count AS object_count, s.reference_count AS reference_count,
       s.total_size AS total_size, s.reachable_size AS reachable_size, s.root_id AS root_id,
       s.loaded_at AS loaded_at, coalesce(s.store_version, 1) AS store_version
ORDER BY s.loaded_at, s.sid
