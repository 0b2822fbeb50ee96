#!/usr/bin/env node
// memlab's `object-shallow` analysis (`memlab analyze object-shallow`) as an oracle for heapdb's
// duplicate objects.
//
// Usage: node memlab_objects.js <snapshot.heapsnapshot> <out-file.json>
//
// Runs memlab's ObjectShallowAnalysis on the snapshot, as `memlab analyze object-shallow --snapshot
// FILE` does, and writes what it found as JSON instead of its coloured, rounded printout:
//
//   memlab        memlab's version
//   topByCount    its "Top duplicated objects in count": [{obj, n, size, ids}], size in bytes
//   topBySize     its "Top duplicated objects in size", the same way
//   patterns      its pattern statistics by pattern name: {n, dupN, size, dupSize}
//   groups        every object content it counts, from the analysis' own object map (the map its top
//                 lists are ranked from): [{obj, n, size, ids}], duplicated or not; obj is memlab's
//                 JSON text of the object's class and shallow values
//
// memlab prints its report while it runs; this script sends that to stderr.

'use strict';

const fs = require('fs');
const { ObjectShallowAnalysis, getFullHeapFromFile } = require('@memlab/heap-analysis');

async function main(argv) {
  const [snapshotPath, outPath] = argv;
  if (!snapshotPath || !outPath) {
    process.stderr.write('usage: node memlab_objects.js <snapshot.heapsnapshot> <out-file.json>\n');
    process.exit(2);
  }
  const log = console.log;
  console.log = (...args) => console.error(...args);
  const analysis = new ObjectShallowAnalysis();
  await analysis.analyzeSnapshotFromFile(snapshotPath);
  const heap = await getFullHeapFromFile(snapshotPath);
  const objectMap = analysis.getPreprocessedObjectMap(heap);
  console.log = log;

  const record = (r) => ({ obj: r.obj, n: r.n, size: r.size, ids: r.ids });
  const result = {
    memlab: require('memlab/package.json').version,
    topByCount: analysis.topDupObjInCnt.map(record),
    topBySize: analysis.topDupObjInSize.map(record),
    patterns: analysis.objectPatternsStat,
    groups: Object.values(objectMap).map(record),
  };
  fs.writeFileSync(outPath, JSON.stringify(result));
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
