// name: signatures
// description: Every remembered leak signature with its status, first and last build it was seen in.
//
// The statuses are worked out when `heapdb gate` records builds (see docs/ci.md): new, recurring,
// fixed or known (a rule set's known_leak covers it).
MATCH (s:Signature)
RETURN s {.*} AS signature
ORDER BY s.sig
