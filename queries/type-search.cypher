// name: type-search
// description: Types whose name matches a text, ignoring case: the whole name, its start, or anywhere in it.
// param tag: string -- the snapshot's tag
// param text: string -- the text to look for
// param mode: string = "contains" one of exact|prefix|contains -- how the name must match
// param offset: int = 0 in 0..1000000000 -- how many types to pass over
// param limit: int = 20 in 1..1000 -- how many types
//
// Reads the per-type totals stored at load (:TypeGroup), most retained first.
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (t:TypeGroup {sid: s.sid})
WITH t, toLower(t.type) AS name, toLower($text) AS text
WHERE t.type IS NOT NULL
  AND CASE $mode WHEN 'exact' THEN name = text WHEN 'prefix' THEN name STARTS WITH text ELSE name CONTAINS text END
WITH t ORDER BY t.retained_size DESC, t.type
WITH collect({type: t.type, count: t.objects, self_size: t.self_size, retained_size: t.retained_size,
              max_retained_size: t.max_retained_size}) AS found
RETURN size(found) AS total, found[$offset..$offset + $limit] AS types
