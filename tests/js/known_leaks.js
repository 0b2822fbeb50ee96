#!/usr/bin/env node
// A small service with two leaks, for heapdb's known library leaks (the v8 default rules'
// known_leak groups): one through Node's own code, one through the program's.
//
// Usage: node --expose-gc known_leaks.js <out-file>
//
// Each request runs inside AsyncLocalStorage.run() with a RequestContext as its store (the way
// request-scoped logging and tracing work). The first POOL_SIZE requests each open a pooled
// "connection" whose keep-alive timer lives for the life of the process: Node puts the store of the
// run the timer was made in on the timer (under the storage's kResourceStore symbol), so each pooled
// connection keeps the RequestContext of the request that happened to open it. The program holds no
// reference to those contexts; only Node's async context propagation does. That is the known leak.
//
// The program's own leak: every request also records a Session in a module-level list it never
// trims. It collects garbage, writes one snapshot to <out-file> and prints {"path", "pooled",
// "sessions"}.

'use strict';

const v8 = require('v8');
const { AsyncLocalStorage } = require('async_hooks');

const POOL_SIZE = 12;
const REQUESTS = 60;
const KEEP_ALIVE_MS = 1e9; // longer than the program runs: the timers never fire

class RequestContext {
  constructor(id) {
    this.id = id;
    this.headers = Array.from({ length: 40 }, (_, i) => `x-header-${i}: value-${id}-${i}`);
  }
}

class Session {
  constructor(id) {
    this.id = id;
    this.history = Array.from({ length: 30 }, (_, i) => ({ step: i, at: id * 1000 + i }));
  }
}

class PooledConnection {
  constructor(id) {
    this.id = id;
    this.keepAlive = setInterval(() => {}, KEEP_ALIVE_MS); // made inside the request's run()
  }
}

const context = new AsyncLocalStorage();
const pool = [];
const sessions = []; // the program's own leak: never trimmed

function handle(id) {
  if (pool.length < POOL_SIZE) {
    pool.push(new PooledConnection(id)); // the pool keeps the connection, not the request's context
  }
  return context.getStore().id;
}

function main(argv) {
  const out = argv[0];
  if (!out) {
    process.stderr.write('usage: node --expose-gc known_leaks.js <out-file>\n');
    process.exit(2);
  }
  for (let id = 0; id < REQUESTS; id++) {
    context.run(new RequestContext(id), () => handle(id));
    sessions.push(new Session(id));
  }
  global.gc();
  const path = v8.writeHeapSnapshot(out);
  process.stdout.write(JSON.stringify({ path, pooled: pool.length, sessions: sessions.length }) + '\n');
  process.exit(0); // the keep-alive timers would keep the process running
}

main(process.argv.slice(2));
