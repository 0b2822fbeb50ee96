#!/usr/bin/env node
// A small program with deliberate leaks, for testing heap-snapshot tools on real V8 snapshots.
//
// Usage: node leak.js <out-dir> [size ...]
//
// For each size it grows the leaks by that many units and writes <out-dir>/<label>.heapsnapshot,
// labelled baseline, target, final for the first three sizes (step-<i> after that). With one size
// only "baseline" is written. It prints one JSON line per snapshot: {"label", "path", "leaked"}.
//
// What leaks, cumulatively (each kind is reachable from a different root, so retainer paths differ):
//   - LeakyCache: a module-level Map of class instances (LeakedItem), each holding a payload array
//     and a closure that captures the item's payload: instances + closures + context edges.
//   - An EventEmitter whose listener list keeps growing: every listener closes over a LeakedBuffer.
//   - A global (globalThis.heapdbLeakRegistry) array of plain objects with string payloads.
//   - A WeakMap and a WeakRef whose targets are otherwise unreferenced, so weak edges appear.
// Transient garbage is allocated and dropped between snapshots; V8 collects it before writing.

'use strict';

const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const { EventEmitter } = require('events');

class LeakedItem {
  constructor(id) {
    this.id = id;
    this.payload = new Array(16).fill(id);
    this.label = `item-${id}`;
    const payload = this.payload;
    // The closure's context keeps `payload` alive a second way.
    this.sum = () => payload.reduce((a, b) => a + b, 0);
  }
}

class LeakyCache {
  constructor() {
    this.entries = new Map();
  }
  add(key, value) {
    this.entries.set(key, value);
  }
}

class LeakedBuffer {
  constructor(n) {
    this.bytes = Buffer.alloc(64, n % 256);
    this.n = n;
  }
}

const cache = new LeakyCache();
const emitter = new EventEmitter();
emitter.setMaxListeners(0);
globalThis.heapdbLeakRegistry = [];
const weakTargets = new WeakMap();
const weakRefs = [];
let next = 0;

function grow(units) {
  for (let i = 0; i < units; i++) {
    const id = next++;
    cache.add(`key-${id}`, new LeakedItem(id));
    const buffer = new LeakedBuffer(id);
    emitter.on('tick', function onTick() {
      return buffer.n;
    });
    globalThis.heapdbLeakRegistry.push({ id, note: `registry entry ${id} `.repeat(2) });
    if (id % 8 === 0) {
      const key = { weakKey: id };
      weakRefs.push(new WeakRef(key));
      weakTargets.set(key, { value: id });
    }
  }
}

function churn(units) {
  // Garbage that must not show up in the snapshot (V8 collects before writing).
  let garbage = [];
  for (let i = 0; i < units; i++) garbage.push({ i, s: `garbage-${i}` });
  garbage = null;
  return garbage;
}

function main(argv) {
  const outDir = argv[0];
  const sizes = argv.slice(1).map(Number);
  if (!outDir || sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 0)) {
    process.stderr.write('usage: node leak.js <out-dir> <size> [size ...]\n');
    process.exit(2);
  }
  fs.mkdirSync(outDir, { recursive: true });
  const labels = ['baseline', 'target', 'final'];
  sizes.forEach((units, i) => {
    grow(units);
    churn(units);
    const label = i < labels.length ? labels[i] : `step-${i}`;
    const file = path.join(outDir, `${label}.heapsnapshot`);
    v8.writeHeapSnapshot(file);
    process.stdout.write(JSON.stringify({ label, path: file, leaked: next }) + '\n');
  });
}

main(process.argv.slice(2));
