#!/usr/bin/env node
// A small service that wastes memory on duplicate objects, for heapdb's duplicate-objects inspection
// (memlab's `object-shallow` rule: objects equal in class, property names and shallow values).
//
// Usage: node --expose-gc dup_objects.js <out-file>
//
// It keeps, per request, its own copy of one connection settings object, built from the same values
// each time (a parse of the same text would do the same): 2,000 copies whose string values are
// separate string objects with equal contents and whose `pool` is one shared object. It also keeps
// Point instances whose coordinates are heap numbers (V8 writes no value for them, so memlab reads
// every one as null), tags built by concatenation in two shapes, objects whose properties are added
// in two orders (two shapes: two groups), dictionary-mode objects (a property deleted), objects
// holding references to distinct objects (unique), and a few objects only once. It collects garbage,
// writes one snapshot to <out-file> and prints {"path", "copies"}.

'use strict';

const v8 = require('v8');

const COPIES = 2000;
const POINTS = 500;
const ORDERED = 300;

class Point {
  constructor(x, y) {
    this.x = x;
    this.y = y;
  }
}

function main(argv) {
  const out = argv[0];
  if (!out) {
    process.stderr.write('usage: node --expose-gc dup_objects.js <out-file>\n');
    process.exit(2);
  }
  const pool = { size: 10 };
  const settings = [];
  for (let i = 0; i < COPIES; i++) {
    // Each string value a new flat string object with the same characters (a decode, as a read
    // of a file would), so that only their contents are equal.
    const host = Buffer.from('db.internal.example').toString('utf8');
    const user = Buffer.from('checkout-service').toString('utf8');
    settings.push({ host, user, tls: true, pool });
  }
  const points = [];
  for (let i = 0; i < POINTS; i++) points.push(new Point(1.5 + (i % 3), 2.5));
  const tags = [];
  for (let i = 0; i < ORDERED; i++) {
    const region = ['eu', 'us'][i % 2];
    const tag = i % 3 ? 'region=' + region + '-west' : 'region=' + (region + '-west');
    tags.push({ tag, kind: 'label' });
  }
  const orders = [];
  for (let i = 0; i < ORDERED; i++) {
    const o = {};
    if (i % 2) {
      o.a = 'alpha';
      o.b = 'beta';
    } else {
      o.b = 'beta';
      o.a = 'alpha';
    }
    orders.push(o);
  }
  const dictionaries = [];
  for (let i = 0; i < 50; i++) {
    const d = { drop: 1, keep: 'kept', other: 'value' };
    delete d.drop;
    dictionaries.push(d);
  }
  const distinct = [];
  for (let i = 0; i < 100; i++) distinct.push({ owner: { n: i }, name: 'user-' + i });
  global.settings = settings;
  global.points = points;
  global.tags = tags;
  global.orders = orders;
  global.dictionaries = dictionaries;
  global.distinct = distinct;
  global.once = { only: 'once', here: 'x' };
  if (typeof global.gc === 'function') global.gc();
  v8.writeHeapSnapshot(out);
  process.stdout.write(JSON.stringify({ path: out, copies: COPIES }) + '\n');
}

main(process.argv.slice(2));
