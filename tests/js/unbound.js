#!/usr/bin/env node
// A small program whose collections, objects and shapes grow in different ways, for testing
// unbound-growth analyses (memlab's unbound-collection, unbound-object, unbound-shape) on real V8
// snapshots of one process.
//
// Usage: node unbound.js <out-dir> <steps>
//
// Writes <out-dir>/s1.heapsnapshot ... s<steps>.heapsnapshot (memlab orders s<N> names by N) and
// prints one JSON line per snapshot: {"label", "path"}. Between two snapshots:
//   - growingMap, growingSet, growingDict (a plain object used as a dictionary) and growingRows (an
//     array of 1,500 more plain objects of one shape, { label, owner }) grow at every step;
//   - flatMap keeps its 50 entries;
//   - stepMap grows once, after the first snapshot, and then stays as it is;
//   - shrinkingMap grows until the last step, where it loses half its entries.

'use strict';

const fs = require('fs');
const path = require('path');
const v8 = require('v8');

class Entry {
  constructor(i) {
    this.i = i;
    this.text = `entry-${i}`;
  }
}

const holder = {
  growingMap: new Map(),
  growingSet: new Set(),
  growingDict: {},
  growingRows: [],
  flatMap: new Map(),
  stepMap: new Map(),
  shrinkingMap: new Map(),
};
globalThis.heapdbUnboundHolder = holder;
for (let i = 0; i < 50; i++) holder.flatMap.set(`flat-${i}`, new Entry(i));

let next = 0;

function step(index, last) {
  const owner = new Entry(-index);
  for (let i = 0; i < 1500; i++) {
    const id = next++;
    holder.growingRows.push({ label: `row-${id}`, owner });
  }
  for (let i = 0; i < 200; i++) {
    const id = next++;
    holder.growingMap.set(`key-${id}`, new Entry(id));
    holder.growingSet.add(new Entry(id));
    holder.growingDict[`d${id}`] = new Entry(id);
  }
  if (index === 1) {
    for (let i = 0; i < 100; i++) holder.stepMap.set(`step-${i}`, new Entry(i));
  }
  if (last) {
    const keys = [...holder.shrinkingMap.keys()];
    keys.slice(0, keys.length / 2).forEach((key) => holder.shrinkingMap.delete(key));
  } else {
    for (let i = 0; i < 100; i++) {
      const id = next++;
      holder.shrinkingMap.set(`shrink-${id}`, new Entry(id));
    }
  }
}

function main(argv) {
  const outDir = argv[0];
  const steps = Number(argv[1]);
  if (!outDir || !Number.isInteger(steps) || steps < 1) {
    process.stderr.write('usage: node unbound.js <out-dir> <steps>\n');
    process.exit(2);
  }
  fs.mkdirSync(outDir, { recursive: true });
  for (let i = 0; i < steps; i++) {
    step(i, i === steps - 1);
    const label = `s${i + 1}`;
    const file = path.join(outDir, `${label}.heapsnapshot`);
    v8.writeHeapSnapshot(file);
    process.stdout.write(JSON.stringify({ label, path: file }) + '\n');
  }
}

main(process.argv.slice(2));
