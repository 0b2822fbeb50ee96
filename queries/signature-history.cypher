// name: signature-history
// description: Retained bytes and objects per recorded build for one leak signature (what `heapdb history` draws).
// param sig: int -- the leak signature (a retainer-path signature, as `heapdb gate` and `heapdb signatures` print it)
//
// Reads the remembered history only (:SignatureObservation, :Build; docs/data-model.md), so it
// answers for builds whose snapshots were dropped long ago. Build order: numbered builds by number,
// then the others in load order. In the Neo4j Browser, `:param sig => 123`, then the table's
// retained_size column over build is the signature's growth and fix; switch to the chart view of a
// tool that draws rows (or pipe `heapdb query signature-history --json`) for a plot.
MATCH (o:SignatureObservation {sig: $sig})
MATCH (b:Build {build: o.build})
RETURN b.build AS build, b.tag AS tag, b.number AS number, b.sid AS sid,
       o.retained_size AS retained_size, o.objects AS objects, o.present AS present
ORDER BY b.number IS NULL, b.number, b.sid
