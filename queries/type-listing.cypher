// name: type-listing
// description: Every object of a type, largest retained first, as stored for find and a type's page: ids, names joined, name ends, self sizes, distances, path signatures.
// needs: objects
// param tag: string -- the snapshot's tag
// param type: string -- the objects' type
//
// No row when the type has no :TypeGroup (only the root, synthetic or unreachable objects have it)
// and null listings for a snapshot stored before listings were: `find` then reads every object
// (stored query `find`). The byte arrays are packed since store version 6 (zlib over the values'
// bytes regrouped by significance) and raw little-endian values before; see docs/data-model.md.
// A load writes the listings after every object, just before `objects_ready` turns true.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (t:TypeGroup {sid: s.sid, type: $type})
RETURN t.listing_ids AS ids, t.listing_names AS names, t.listing_name_ends AS ends,
       t.listing_self_sizes AS self_sizes, t.listing_distances AS distances, t.listing_path_sigs AS path_sigs
