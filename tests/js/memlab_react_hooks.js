#!/usr/bin/env node
// memlab's `react-hooks` analysis (`memlab analyze react-hooks`), as an oracle for heapdb's memory by
// React component and hook.
//
// Usage: node memlab_react_hooks.js <snapshot.heapsnapshot> <out-file.json>
//
// Loads the snapshot as memlab prepares every snapshot for analysis (getFullHeapFromFile), then runs
// the analysis' own steps (probeHeapAndFiberInfo, breakDownSnapshotByReactComponents) twice, and
// writes JSON instead of its printout (which rounds every size and shows ten components):
//
//   memlab_rows  the analysis as it is
//   every        the same analysis over every fiber, with the two differences heapdb makes on purpose:
//            memlab's own "Detached" marks are cleared from the fibers first (memlab reads only the
//            fibers whose name, with its mark, is still exactly "FiberNode": on a Chromium page it
//            marks them all), and a type without displayName is named by its function's name, or
//            "(Constructor)" for an object (memlab skips those components).
//
// Each is a list of components, memlab's order (most retained first):
//   {name, instances, retained, shallow, children, sibling, props, state, hooks, lists}
// where hooks is memlab's list, [{type, size, value}], a hook's value the name of the V8 value memlab
// walked into (null, undefined), else null; and lists every hook list memlab walked for the
// component, [{state, retained, hooks}], by the id and retained size of the memoizedState it starts at
// (memlab prints the last it walked).
// memlab's progress output goes to stderr.

'use strict';

const fs = require('fs');
const { getFullHeapFromFile } = require('@memlab/heap-analysis');
const { utils } = require('@memlab/core');
const ReactComponentHookAnalysis = require('@memlab/heap-analysis/dist/plugins/ReactComponentHookAnalysis').default;

const UNKNOWN = 0; // memlab's NodeDetachState.Unknown

// memlab's analysis, each hook marked with the V8 value it is where it is one (`null`, `undefined`):
// memlab follows a reference to React's null state as if it were a hook; heapdb does not.
// Each walk from a fiber's memoizedState is kept by that object's id: memlab keeps one per component.
class MarkedHooks extends ReactComponentHookAnalysis {
  walkHookChain(node, types, i) {
    const hooks = super.walkHookChain(node, types, i); // which walks the rest through this method
    if (hooks.length) hooks[0].value = node.type === 'native' || node.type === 'hidden' ? node.name : null;
    if (i === 0 && node != null) {
      this.walks = this.walks || new Map();
      this.walks.set(node.id, { state: node.id, retained: node.retainedSize, hooks: hooks.map(described) });
    }
    return hooks;
  }
}

function described(hook) {
  return { type: hook.type, size: hook.size, value: hook.value };
}

class EveryComponent extends MarkedHooks {
  getComponentNameFromFiberNode(node, fiberNodeObjectName) {
    const found = super.getComponentNameFromFiberNode(node, fiberNodeObjectName);
    if (found != null || node.name !== fiberNodeObjectName) return found;
    const type = node.references.find((ref) => ref.name_or_index === 'type');
    if (type == null) return null;
    if (type.toNode.type === 'closure') return type.toNode.name || '(anonymous)';
    if (type.toNode.type === 'object') return `(${type.toNode.name})`;
    return null;
  }
}

function breakDown(analysis, heap) {
  analysis.probeHeapAndFiberInfo(heap);
  if (analysis.fiberNodeName == null) return [];
  const stats = analysis.breakDownSnapshotByReactComponents(heap);
  return Array.from(stats.entries())
    .sort((a, b) => b[1].totalRetainedSize - a[1].totalRetainedSize)
    .map(([name, s]) => ({
      name,
      instances: s.fiberNodeIds.length,
      retained: s.totalRetainedSize,
      shallow: s.totalShallowSize,
      children: s.children,
      sibling: s.sibling,
      props: s.totalMemoizedPropsRetainedSize,
      state: s.totalMemoizedStateRetainedSize,
      hooks: s.hooks.map(described),
      lists: Array.from(new Set(s.memoizedStateIds), (id) => analysis.walks.get(id)),
    }));
}

async function main(argv) {
  const [snapshotPath, outPath] = argv;
  if (!snapshotPath || !outPath) {
    process.stderr.write('usage: node memlab_react_hooks.js <snapshot.heapsnapshot> <out-file.json>\n');
    process.exit(2);
  }
  const log = console.log;
  console.log = (...args) => console.error(...args);
  const heap = await getFullHeapFromFile(snapshotPath);
  const result = { memlab: require('memlab/package.json').version };
  result.memlab_rows = breakDown(new MarkedHooks(), heap);
  heap.nodes.forEach((node) => {
    if (utils.isFiberNode(node)) node.detachState = UNKNOWN;
  });
  result.every = breakDown(new EveryComponent(), heap);
  console.log = log;
  fs.writeFileSync(outPath, JSON.stringify(result));
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
