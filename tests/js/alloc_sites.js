#!/usr/bin/env node
// Source locations and allocation stacks: closures defined at known lines, and a leaked structure
// allocated by a named function, in a snapshot taken while V8 tracks allocations.
//
// Usage: node --track-heap-objects alloc_sites.js <out-file> [entries]
//
// The snapshot is taken through the inspector (HeapProfiler.startTrackingHeapObjects, then
// takeHeapSnapshot), which records allocation traces in the snapshot's trace_tree whatever the
// command-line flags. Prints one JSON line: {"path": ...}.

'use strict';

const fs = require('fs');
const inspector = require('inspector');

class LeakyEntry {
  constructor(id) {
    this.id = id;
    this.payload = new Array(16).fill(id);
  }
}

const leakyRegistry = [];

function makeLeakyEntry(id) {
  const entry = new LeakyEntry(id);
  leakyRegistry.push(entry);
  return entry;
}

function makeCounter(start) {
  let count = start;
  return function locatedCounter() {
    count += 1;
    return count;
  };
}

const counters = [];

function post(session, method, params) {
  return new Promise((resolve, reject) => {
    session.post(method, params || {}, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function main(argv) {
  const out = argv[0];
  const entries = Number(argv[1] || 50);
  if (!out || !Number.isInteger(entries)) {
    process.stderr.write('usage: node alloc_sites.js <out-file> [entries]\n');
    process.exit(2);
  }
  const session = new inspector.Session();
  session.connect();
  await post(session, 'HeapProfiler.enable');
  await post(session, 'HeapProfiler.startTrackingHeapObjects', { trackAllocations: true });
  for (let i = 0; i < entries; i++) {
    makeLeakyEntry(i);
    counters.push(makeCounter(i));
  }
  const fd = fs.openSync(out, 'w');
  const onChunk = (message) => fs.writeSync(fd, message.params.chunk);
  session.on('HeapProfiler.addHeapSnapshotChunk', onChunk);
  await post(session, 'HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  session.removeListener('HeapProfiler.addHeapSnapshotChunk', onChunk);
  fs.closeSync(fd);
  await post(session, 'HeapProfiler.stopTrackingHeapObjects', { reportProgress: false });
  session.disconnect();
  process.stdout.write(JSON.stringify({ path: out, entries: leakyRegistry.length, counters: counters.length }) + '\n');
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
