#!/usr/bin/env node
// memlab's unbound-growth analyses (`memlab analyze unbound-collection | unbound-object |
// unbound-shape --snapshot-dir DIR`) as an oracle for heapdb's unbound growth.
//
// Usage: node memlab_unbound.js <snapshot-dir> <work-dir> <out-file.json>
//
// Runs the three analyses over the .heapsnapshot files of <snapshot-dir> (in memlab's order: by
// the number of s<N>.heapsnapshot names) and writes what they found as JSON instead of their
// coloured, rounded printouts:
//
//   memlab        memlab's version
//   collections   unbound-collection's rows (at most 20): [{id, name, type, history}]
//   objects       unbound-object's rows (at most 20), the same way, history in bytes
//   shapes        unbound-shape's rows: [{shape, counts, sizes, examples}], sizes in bytes
//
// The first two are read from the CSV file each writes (its exact figures); memlab's printout goes
// to stderr.

'use strict';

const fs = require('fs');
const path = require('path');
const { config } = require('@memlab/core');
const { ObjectUnboundGrowthAnalysis, ShapeUnboundGrowthAnalysis } = require('@memlab/heap-analysis');
// Not exported from the package's index; its plugin module is what `memlab analyze` loads.
const CollectionUnboundGrowthAnalysis =
  require('@memlab/heap-analysis/dist/plugins/CollectionUnboundGrowthAnalysis').default;

const PLAIN = /\u001b\[[0-9;]*m/g; // colour codes, should memlab think it writes to a terminal

function readRows(file) {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line)
    .map((line) => {
      // name,id,type,history...: the name may hold commas, the rest never does.
      const cells = line.split(',');
      const numbers = [];
      while (cells.length && /^-?\d+$/.test(cells[cells.length - 1])) numbers.unshift(Number(cells.pop()));
      const type = cells.pop();
      const id = Number(cells.pop());
      return { name: cells.join(','), id, type, history: numbers };
    });
}

async function run(analysis, dir, workDir) {
  await analysis.analyzeSnapshotsInDirectory(dir, { workDir });
}

async function main(argv) {
  const [dir, workDir, outPath] = argv;
  if (!dir || !workDir || !outPath) {
    process.stderr.write('usage: node memlab_unbound.js <snapshot-dir> <work-dir> <out-file.json>\n');
    process.exit(2);
  }
  const log = console.log;
  console.log = (...args) => console.error(...args);
  const result = { memlab: require('memlab/package.json').version };
  for (const [key, Analysis] of [
    ['collections', CollectionUnboundGrowthAnalysis],
    ['objects', ObjectUnboundGrowthAnalysis],
  ]) {
    const analysis = new Analysis();
    // Each writes its CSV only when it finds something: remove the last one's first.
    const csv = () => config.unboundObjectCSV;
    await run(analysis, dir, path.join(workDir, key));
    result[key] = readRows(csv());
    if (fs.existsSync(csv())) fs.unlinkSync(csv());
  }
  const shapes = new ShapeUnboundGrowthAnalysis();
  await run(shapes, dir, path.join(workDir, 'shapes'));
  result.shapes = shapes.getShapesWithUnboundGrowth().map((s) => ({
    shape: s.shape.replace(PLAIN, ''),
    counts: s.counts,
    sizes: s.sizes,
    examples: s.examples,
  }));
  console.log = log;
  fs.writeFileSync(outPath, JSON.stringify(result));
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
