#!/usr/bin/env node
// A leak as a new user meets it: instances of a user class (Session) held by closures that a
// module-level cache keeps. The V8 closure's context, not the Session, is what holds each instance.
//
// Usage: node closure_cache.js <out-dir> <baseline-units> <leaked-units>
//
// Writes <out-dir>/{baseline,target,final}.heapsnapshot: baseline after the first units, target after
// leaking the second lot, final after a step that leaks nothing more. Prints one JSON line per snapshot.

'use strict';

const fs = require('fs');
const path = require('path');
const v8 = require('v8');

class Session {
  constructor(id) {
    this.id = id;
    this.user = `user-${id}`;
    this.history = new Array(32).fill(id);
  }
}

const cache = new Map();
let next = 0;

function remember(units) {
  for (let i = 0; i < units; i++) {
    const session = new Session(next++);
    cache.set(session.id, () => session.history.length);
  }
}

function main(argv) {
  const [outDir, first, leaked] = [argv[0], Number(argv[1]), Number(argv[2])];
  if (!outDir || !Number.isInteger(first) || !Number.isInteger(leaked)) {
    process.stderr.write('usage: node closure_cache.js <out-dir> <baseline-units> <leaked-units>\n');
    process.exit(2);
  }
  fs.mkdirSync(outDir, { recursive: true });
  [['baseline', first], ['target', leaked], ['final', 0]].forEach(([label, units]) => {
    remember(units);
    const file = path.join(outDir, `${label}.heapsnapshot`);
    v8.writeHeapSnapshot(file);
    process.stdout.write(JSON.stringify({ label, path: file, sessions: next }) + '\n');
  });
}

main(process.argv.slice(2));
