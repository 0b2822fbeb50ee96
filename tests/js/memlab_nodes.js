#!/usr/bin/env node
// memlab's analyses that list objects of one kind, as an oracle for heapdb's inspections:
// `memlab analyze detached-DOM`, `memlab analyze unmounted-fiber-node` and
// `memlab analyze collections-with-stale`.
//
// Usage: node memlab_nodes.js <snapshot.heapsnapshot> <out-file.json>
//
// Each of those analyses loads the snapshot as memlab prepares every snapshot for analysis
// (getFullHeapFromFile: dominators, retained sizes, detachedness, React fibers marked), then lists
// its 50 largest objects that one predicate accepts (PluginUtils.filterOutLargestObjects). This
// script does the same once for both, and writes JSON instead of their printouts:
//
//   memlab                  memlab's version
//   detached-DOM            {listed, all} for utils.isDetachedDOMNode
//   unmounted-fiber-node    {listed, all} for utils.isDetachedFiberNode
//   collections-with-stale  every collection the analysis finds holding stale objects (its own
//                           getCollectionsWithStaleValues, before it sorts and cuts the list to 20):
//                           [{id, name, children, stale, staleIds, staleRetainedSize}]
//
// where listed is the analysis' own list and all every node the predicate accepts, each as
// {id, name, selfSize, retainedSize}. memlab's progress output goes to stderr.

'use strict';

const fs = require('fs');
const { CollectionsHoldingStaleAnalysis, PluginUtils, getFullHeapFromFile } = require('@memlab/heap-analysis');
const { utils } = require('@memlab/core');

const ANALYSES = {
  'detached-DOM': utils.isDetachedDOMNode,
  'unmounted-fiber-node': utils.isDetachedFiberNode,
};

async function main(argv) {
  const [snapshotPath, outPath] = argv;
  if (!snapshotPath || !outPath) {
    process.stderr.write('usage: node memlab_nodes.js <snapshot.heapsnapshot> <out-file.json>\n');
    process.exit(2);
  }
  const log = console.log;
  console.log = (...args) => console.error(...args);
  const heap = await getFullHeapFromFile(snapshotPath);
  const record = (node) => ({ id: node.id, name: node.name, selfSize: node.self_size, retainedSize: node.retainedSize });
  const result = { memlab: require('memlab/package.json').version };
  for (const [name, accepts] of Object.entries(ANALYSES)) {
    const listed = PluginUtils.filterOutLargestObjects(heap, accepts).map(record);
    const all = [];
    heap.nodes.forEach((node) => {
      if (accepts(node)) all.push(record(node));
    });
    result[name] = { listed, all };
  }
  result['collections-with-stale'] = new CollectionsHoldingStaleAnalysis()
    .getCollectionsWithStaleValues(heap)
    .map((stat) => ({
      id: stat.collection.id,
      name: stat.collection.name,
      children: stat.childrenSize,
      stale: stat.staleChildren.length,
      staleIds: stat.staleChildren.map((node) => node.id),
      staleRetainedSize: stat.staleRetainedSize,
    }));
  console.log = log;
  fs.writeFileSync(outPath, JSON.stringify(result));
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
