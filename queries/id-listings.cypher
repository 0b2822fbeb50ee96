// name: id-listings
// description: A snapshot's object ids per type, as stored for find: each type's listing, for matching snapshots by id in process.
// needs: objects
// param tag: string -- the snapshot's tag
//
// One row per type with a :TypeGroup: the ids of every object of the type (the root, synthetic and
// unreachable ones included) as a byte array of int64 values, packed since store version 6 (see
// docs/data-model.md); null for a snapshot stored before listings were, or pruned to its summaries.
// Reading these (at most 8 bytes an object) is how heapdb matches three snapshots of millions of
// objects for `leaks --by id` in seconds (`leak-candidates`).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (t:TypeGroup {sid: s.sid})
WHERE t.type IS NOT NULL
RETURN t.type AS type, t.listing_ids AS ids
