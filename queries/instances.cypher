// name: instances
// description: A page of one type's objects, filtered and sorted, with how many pass the filters.
// needs: objects
// param tag: string -- the snapshot's tag
// param ids: list<int> -- the type's objects (its listing, or `type-ids`)
// param sort: string = "retained_size" one of retained_size|self_size|distance -- retained and self size largest first, distance nearest the root first
// param offset: int = 0 in 0..1000000000 -- how many objects to pass over
// param limit: int = 50 in 1..1000 -- how many objects
// param name_contains: string = "" -- a text the object's name must contain (empty: any name)
// param detached: bool? = null -- only detached objects (true), or only attached ones (false)
// param bucket: string? = null -- only objects a bucket rule put in this bucket (owner)
// param owner: string? = null -- only objects of this owner (package, category...: `heapdb owners`' first level)
// param since: string? = null -- only objects new since this snapshot: no object of the same id and type in it
// param path: int? = null -- only objects whose first retainer path has this signature
//
// The objects are looked up by id, through the index on (sid, id), so a page costs what the type
// has objects, not what the snapshot has. "New since" needs ids that name the same object in both
// snapshots (V8 snapshots of one process).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
OPTIONAL MATCH (before:Snapshot {tag: $since, status: 'ready'})
WITH s, before
WHERE $since IS NULL OR before IS NOT NULL
UNWIND $ids AS id
MATCH (o:Object {sid: s.sid, id: id})
WHERE o.name CONTAINS $name_contains
  AND ($detached IS NULL OR coalesce(o.detached, false) = $detached)
  AND ($bucket IS NULL OR o.bucket = $bucket)
  AND ($owner IS NULL OR o.owner = $owner)
  AND ($path IS NULL OR o.path_sig = $path)
  AND (before IS NULL OR NOT EXISTS { MATCH (b:Object {sid: before.sid, id: o.id}) WHERE b.type = o.type })
WITH o
ORDER BY CASE $sort WHEN 'self_size' THEN -o.self_size WHEN 'distance' THEN o.distance ELSE -o.retained_size END, o.id
WITH collect(o) AS found
RETURN size(found) AS total, [o IN found[$offset..$offset + $limit] | o {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, .detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: o:Root}] AS objects
