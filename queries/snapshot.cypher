// name: snapshot
// description: One ready snapshot by tag, with its load number (sid) and counts.
// param tag: string -- the snapshot's tag
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
RETURN s.tag AS tag, s.sid AS sid, s.format AS format, s.runtime AS runtime,
       s.object_count AS object_count, s.reference_count AS reference_count,
       s.total_size AS total_size, s.reachable_size AS reachable_size, s.root_id AS root_id,
       s.loaded_at AS loaded_at, coalesce(s.store_version, 1) AS store_version
