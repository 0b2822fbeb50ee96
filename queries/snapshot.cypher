// name: snapshot
// description: One ready snapshot by tag, with its load number (sid), counts and metadata.
// param tag: string -- the snapshot's tag
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
RETURN s {.*} AS snapshot
