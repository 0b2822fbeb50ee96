// name: dropped-references
// description: The references a snapshot's rules keep from retaining though they are stored as :REF, as holder and target ids.
// param tag: string -- the snapshot's tag
//
// A load under `ignore`, `weak` or `owns` rules stores every reference as the runtime's own rules
// say (:REF or :WEAK_REF), and on its root object, as two byte arrays of little-endian int64 ids
// sorted by target, the object pairs between which the rules keep every :REF from retaining. The
// questions that walk :REF at question time (further why-alive paths, ignore lists, an object's
// references) leave those out, so they follow the rules as the stored first paths do. No arrays
// (nulls): the snapshot's rules drop no reference, or it was loaded without such rules.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (root:Object {sid: s.sid, id: s.root_id})
RETURN root.dropped_holders AS holders, root.dropped_targets AS targets
