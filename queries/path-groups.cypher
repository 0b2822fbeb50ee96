// name: path-groups
// description: A snapshot's retainer-path groups by signature: the path as text and as hops.
// param tag: string -- the snapshot's tag
// param sigs: list<int> -- the path signatures
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
UNWIND $sigs AS sig
MATCH (g:PathGroup {sid: s.sid, sig: sig})
RETURN g.sig AS sig, g.path AS path, g.hops AS hops
