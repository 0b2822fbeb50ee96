// name: gate-run
// description: One recorded run of the CI gate: when, the two snapshots' tags, the verdict, and the whole report as JSON.
// param id: int -- the run's id (`heapdb gate-runs` lists them)
//
// `report` is the gate's report as `heapdb gate --json` prints it, but with each sample object as
// {tag, id}: the verdict, the thresholds and where each came from, the findings, known leaks apart,
// and the notes.
MATCH (r:GateRun {id: $id})
RETURN r {.*} AS run
