// name: gate-runs
// description: The CI gate's recorded runs, newest first: id, when, the two snapshots' tags, the verdict and how many findings failed it.
// param candidate: string? = null -- only the runs whose candidate was this tag
// param offset: int = 0 in 0..1000000000 -- how many runs to pass over
// param limit: int = 50 in 1..1000 -- how many runs
//
// Written by `heapdb gate --record` (the default; docs/ci.md), one :GateRun per run, numbered in
// the order recorded. Like the leak signatures they outlive the snapshots they were read from. The
// report itself (`report`, JSON) is left out here: `gate-run` reads one run whole.
MATCH (r:GateRun)
WHERE $candidate IS NULL OR r.candidate = $candidate
WITH r ORDER BY r.id DESC
WITH collect(r {.recorded_at, .id, .baseline, .candidate, .passed, .failing}) AS runs
RETURN size(runs) AS total, runs[$offset..$offset + $limit] AS runs
