#!/usr/bin/env node
// memlab as an independent oracle for heapdb's V8 reader and analysis.
//
// Usage: node memlab_oracle.js <snapshot.heapsnapshot> <out-file>
//
// Parses the snapshot with memlab's getFullHeapFromFile (which also computes dominators, retained
// sizes and memlab's shortest retainer paths) and writes, per node in snapshot order (so row i is
// heapdb's node index i):
//
//   id            the V8 node id
//   selfSize      memlab's self size
//   retainedSize  memlab's retained size
//   dominatorId   id of memlab's immediate dominator (the root's is the root itself)
//   pathLength    edges on memlab's retainer path from a GC root (following pathEdge to a node memlab
//                 takes as a root, which counts 0), -1 if none.
//                 memlab's paths are not plain BFS distances: it skips weak/blocklisted edges and
//                 postpones "less preferable" edges and roots, so compare with care.
//   detached      1 if memlab considers the node a detached DOM node, else 0
//
// Output format (compact for large snapshots): one JSON header line
//   {"format": "heapdb-memlab-oracle", "version": 1, "memlab": "<version>", "nodeCount": N,
//    "edgeCount": M, "columns": ["id", ...]}
// followed by each column as N little-endian float64 values, in header order.

'use strict';

const fs = require('fs');
const { getFullHeapFromFile } = require('@memlab/heap-analysis');
const { TraceFinder } = require('@memlab/core');

const COLUMNS = ['id', 'selfSize', 'retainedSize', 'dominatorId', 'pathLength', 'detached'];

async function main(argv) {
  const [snapshotPath, outPath] = argv;
  if (!snapshotPath || !outPath) {
    process.stderr.write('usage: node memlab_oracle.js <snapshot.heapsnapshot> <out-file>\n');
    process.exit(2);
  }
  const heap = await getFullHeapFromFile(snapshotPath);
  const n = heap.nodes.length;
  const columns = {};
  for (const name of COLUMNS) columns[name] = new Float64Array(n);

  // memlab's forEach stops as soon as a callback returns false: return nothing, deliberately.
  heap.nodes.forEach((node) => {
    const i = node.nodeIndex;
    columns.id[i] = node.id;
    columns.selfSize[i] = node.self_size;
    columns.retainedSize[i] = node.retainedSize;
    const dominator = node.dominatorNode;
    columns.dominatorId[i] = dominator ? dominator.id : -1;
    columns.detached[i] = node.is_detached ? 1 : 0;
    columns.pathLength[i] = -2; // not computed yet
  });

  // Path lengths, memoised along each node's pathEdge chain (iteratively: chains can be long). A chain
  // ends at a node without pathEdge: 0 if memlab treats it as a GC root, else the node has no path.
  const nodes = heap.nodes;
  const isRoot = new Uint8Array(n);
  const [highPriorityRoots, lowPriorityRoots] = new TraceFinder().getRootNodeList(heap, { prioritize: true });
  for (const root of highPriorityRoots.concat(lowPriorityRoots)) isRoot[root.nodeIndex] = 1;
  const chain = [];
  for (let start = 0; start < n; start++) {
    if (columns.pathLength[start] !== -2) continue;
    let node = nodes.get(start);
    while (columns.pathLength[node.nodeIndex] === -2 && node.hasPathEdge) {
      columns.pathLength[node.nodeIndex] = -3; // on the current chain: guards against cycles
      chain.push(node.nodeIndex);
      node = node.pathEdge.fromNode;
    }
    let length = columns.pathLength[node.nodeIndex];
    if (length === -2) length = isRoot[node.nodeIndex] ? 0 : -1; // the chain's start
    if (length === -3) length = -1; // a cycle: memlab finds no path either
    columns.pathLength[node.nodeIndex] = length;
    while (chain.length) {
      const i = chain.pop();
      length = length < 0 ? -1 : length + 1;
      columns.pathLength[i] = length;
    }
  }

  const header = {
    format: 'heapdb-memlab-oracle',
    version: 1,
    memlab: require('memlab/package.json').version,
    nodeCount: n,
    edgeCount: heap.edges.length,
    columns: COLUMNS,
  };
  const fd = fs.openSync(outPath, 'w');
  try {
    fs.writeSync(fd, JSON.stringify(header) + '\n');
    for (const name of COLUMNS) {
      const column = columns[name];
      fs.writeSync(fd, new Uint8Array(column.buffer, column.byteOffset, column.byteLength));
    }
  } finally {
    fs.closeSync(fd);
  }
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`memlab_oracle: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
