#!/usr/bin/env node
// One build of a small service, for testing heapdb's CI gate on real V8 snapshots.
//
// Usage: node --expose-gc builds.js <build> <out-file>
//
// Every build does the same work (a request handler with a bounded cache of recent sessions).
// Builds 3 to 5 carry a regression: every handled request is also remembered in a module-level
// `auditTrail` that is never trimmed, each entry a LeakedAuditRecord with a payload. Build 6 fixes it.
// The program handles its requests, collects garbage, writes one snapshot to <out-file> and prints
// {"build", "path", "leaking"} as one JSON line.

'use strict';

const v8 = require('v8');

const REQUESTS = 3000;
const RECENT = 50; // the bounded cache keeps this many sessions, whatever the build
const LEAKING_BUILDS = [3, 4, 5];

class Session {
  constructor(id) {
    this.id = id;
    this.user = `user-${id % 97}`;
    this.started = id * 1000;
  }
}

class LeakedAuditRecord {
  constructor(session) {
    this.session = session;
    this.payload = new Array(32).fill(session.id);
    this.note = `request ${session.id} handled`;
  }
}

const recent = new Map();
const auditTrail = [];

function handle(id, leaking) {
  const session = new Session(id);
  recent.set(id, session);
  if (recent.size > RECENT) recent.delete(recent.keys().next().value);
  if (leaking) auditTrail.push(new LeakedAuditRecord(session));
  // Per-request garbage, collected before the snapshot.
  return JSON.stringify({ id, user: session.user }).length;
}

function main(argv) {
  const build = Number(argv[0]);
  const out = argv[1];
  if (!Number.isInteger(build) || build < 1 || !out) {
    process.stderr.write('usage: node --expose-gc builds.js <build> <out-file>\n');
    process.exit(2);
  }
  const leaking = LEAKING_BUILDS.includes(build);
  for (let id = 0; id < REQUESTS; id++) handle(id, leaking);
  if (typeof global.gc === 'function') global.gc();
  v8.writeHeapSnapshot(out);
  process.stdout.write(JSON.stringify({ build, path: out, leaking, audit: auditTrail.length }) + '\n');
}

main(process.argv.slice(2));
