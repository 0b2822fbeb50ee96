// name: growth-types
// description: Types whose shallow size grew at every step across three or more snapshots (and whose count never fell), most growth first.
// param tags: list<string> -- the snapshots' tags, oldest first (at least three)
// param limit: int = 50 in 1..10000 -- how many types
//
// Reads the per-type totals stored at load (:TypeGroup) only, so it costs the same at any heap
// size. A type absent from a snapshot counts 0 there. A type qualifies when its self size grew from
// each snapshot to the next and its object count never shrank (an array that keeps growing keeps
// its count of 1). Ranked by the growth from the first snapshot to the last. The series columns list
// one value per snapshot, in the order of the tags.
//
// The last step is checked first, one seek per group of the newest snapshot: most groups did not
// grow into it, and only those that did have their series read, a seek per snapshot. Over a
// thousand builds of a thousand groups each, that is a thousand seeks instead of a million.
UNWIND range(0, size($tags) - 1) AS i
MATCH (s:Snapshot {tag: $tags[i], status: 'ready'})
WITH i, s ORDER BY i
WITH collect(s.sid) AS sids
WHERE size(sids) = size($tags) AND size(sids) >= 3
MATCH (newest:TypeGroup {sid: last(sids)}) WHERE newest.type IS NOT NULL
OPTIONAL MATCH (previous:TypeGroup {sid: sids[size(sids) - 2], type: newest.type})
WITH sids, newest, previous
WHERE newest.self_size > coalesce(previous.self_size, 0) AND newest.objects >= coalesce(previous.objects, 0)
CALL (sids, newest) {
  UNWIND range(0, size(sids) - 1) AS k
  OPTIONAL MATCH (g:TypeGroup {sid: sids[k], type: newest.type})
  WITH k, g ORDER BY k
  RETURN collect(CASE WHEN g IS NULL THEN [0, 0, 0] ELSE [g.objects, g.self_size, g.retained_size] END) AS series
}
WITH newest, series
WHERE all(k IN range(1, size(series) - 1) WHERE series[k][1] > series[k - 1][1] AND series[k][0] >= series[k - 1][0])
RETURN newest.type AS type, [x IN series | x[0]] AS counts, [x IN series | x[1]] AS sizes, [x IN series | x[2]] AS retained,
       last(series)[1] - head(series)[1] AS size_growth, last(series)[0] - head(series)[0] AS count_growth
ORDER BY size_growth DESC, count_growth DESC, type
LIMIT $limit
