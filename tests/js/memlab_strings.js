#!/usr/bin/env node
// memlab's `string` analysis (`memlab analyze string`) as an oracle for heapdb's duplicate strings.
//
// Usage: node memlab_strings.js <snapshot.heapsnapshot> <out-file.json>
//
// Runs memlab's StringAnalysis on the snapshot, as `memlab analyze string --snapshot FILE` does, and
// writes what it found as JSON instead of its coloured, rounded printout:
//
//   memlab        memlab's version
//   topByCount    its "Top duplicated strings in count": [{str, n, size, ids}], size in bytes
//   topBySize     its "Top duplicated strings in size", the same way
//   patterns      its pattern statistics by pattern name: {n, dupN, size, dupSize}
//   groups        every string value it counts, from the same analysis's own string map (the map its
//                 top lists are ranked from): [{str, n, size, ids}], duplicated or not
//
// memlab prints its report while it runs; this script sends that to stderr.

'use strict';

const fs = require('fs');
const { StringAnalysis, getFullHeapFromFile } = require('@memlab/heap-analysis');

async function main(argv) {
  const [snapshotPath, outPath] = argv;
  if (!snapshotPath || !outPath) {
    process.stderr.write('usage: node memlab_strings.js <snapshot.heapsnapshot> <out-file.json>\n');
    process.exit(2);
  }
  const log = console.log;
  console.log = (...args) => console.error(...args);
  const analysis = new StringAnalysis();
  await analysis.analyzeSnapshotFromFile(snapshotPath);
  const heap = await getFullHeapFromFile(snapshotPath);
  const stringMap = analysis.getPreprocessedStringMap(heap);
  console.log = log;

  const record = (str, r) => ({ str, n: r.n, size: r.size, ids: r.ids });
  const result = {
    memlab: require('memlab/package.json').version,
    topByCount: analysis.topDupStrInCnt.map((r) => record(r.str, r)),
    topBySize: analysis.topDupStrInSize.map((r) => record(r.str, r)),
    patterns: analysis.stringPatternsStat,
    groups: Object.entries(stringMap).map(([str, r]) => record(str, r)),
  };
  fs.writeFileSync(outPath, JSON.stringify(result));
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
