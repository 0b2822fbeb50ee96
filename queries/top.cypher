// name: top
// description: The objects that retain most, optionally of one type.
// param tag: string -- the snapshot's tag
// param type: string? = null -- only objects of this type
// param limit: int = 20 in 1..1000 -- how many objects
//
// Reads the ranks stored at load (`rank`, and `type_rank` within each type, on the first 1000
// objects), through an index, so it costs the same for a million objects as for a thousand. Ranked
// are the objects the root reaches, except the root and the synthetic root-kind nodes ((GC roots)
// and the like), which would top every list; ties go to the lower id.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
CALL (s) {
  MATCH (o:Object {sid: s.sid}) WHERE $type IS NULL AND o.rank <= $limit
  RETURN o
  UNION ALL
  MATCH (o:Object {sid: s.sid, type: $type}) WHERE o.type_rank <= $limit
  RETURN o
}
RETURN o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root} AS object
ORDER BY o.retained_size DESC, o.id
