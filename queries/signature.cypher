// name: signature
// description: One remembered leak signature: its path, type, status, first and last build it was seen in.
// param sig: int -- the leak signature
MATCH (s:Signature {sig: $sig})
RETURN s {.*} AS signature
