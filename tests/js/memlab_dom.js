#!/usr/bin/env node
// memlab's `detached-DOM` analysis (`memlab analyze detached-DOM`) as an oracle for heapdb's
// detached-DOM inspection.
//
// Usage: node memlab_dom.js <snapshot.heapsnapshot> <out-file.json>
//
// Runs memlab's DetachedDOMElementAnalysis on the snapshot, as `memlab analyze detached-DOM
// --snapshot FILE` does, and writes what it found as JSON instead of its printout:
//
//   memlab     memlab's version
//   listed     the analysis' own list (its 50 largest detached elements): [{id, name, selfSize, retainedSize}]
//   detached   every node of the same loaded snapshot that memlab's isDetachedDOMNode accepts (the
//              predicate the analysis filters with), in the same form
//
// memlab prints its report while it runs; this script sends that to stderr.

'use strict';

const fs = require('fs');
const { DetachedDOMElementAnalysis, getFullHeapFromFile } = require('@memlab/heap-analysis');
const { utils } = require('@memlab/core');

async function main(argv) {
  const [snapshotPath, outPath] = argv;
  if (!snapshotPath || !outPath) {
    process.stderr.write('usage: node memlab_dom.js <snapshot.heapsnapshot> <out-file.json>\n');
    process.exit(2);
  }
  const log = console.log;
  console.log = (...args) => console.error(...args);
  const analysis = new DetachedDOMElementAnalysis();
  await analysis.analyzeSnapshotFromFile(snapshotPath);
  const listed = analysis.getDetachedElements();
  // The analysis' own snapshot where it listed something (its detachedness is propagated in place).
  const heap = listed.length ? listed[0].snapshot : await getFullHeapFromFile(snapshotPath);
  console.log = log;

  const record = (node) => ({ id: node.id, name: node.name, selfSize: node.self_size, retainedSize: node.retainedSize });
  const detached = [];
  heap.nodes.forEach((node) => {
    if (utils.isDetachedDOMNode(node)) detached.push(record(node));
  });
  const result = {
    memlab: require('memlab/package.json').version,
    listed: listed.map(record),
    detached,
  };
  fs.writeFileSync(outPath, JSON.stringify(result));
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
