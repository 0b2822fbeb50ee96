#!/usr/bin/env node
// What event listeners, the console and closures hold, and the globals a program adds: a Node
// program for heapdb's "held" inspection.
//
// Usage: node --expose-gc held.js <out-file> [listeners] [name=length ...]
//
// The optional arguments make a second setting of the same program (the CI gate's tests compare
// two): how many listeners to register (default LISTENERS), and globals to add or resize, each an
// array of `length` objects (the defaults' lengths are 100, 200 and 300).
//
// - GLOBALS globals added to `globalThis`, each an array of its own length (so each retains a
//   different number of bytes);
// - LISTENERS listeners registered on one EventEmitter, each a closure over its own array of
//   LISTENER_ITEMS numbers that nothing else holds;
// - with an inspector session that enabled the Runtime domain (as DevTools does), CONSOLE objects
//   logged to V8's console (inspector.console.log, which prints nothing): V8's inspector then keeps each argument for the console ("DevTools
//   console"), and nothing else holds them.
//
// It collects garbage, writes one snapshot to <out-file> and prints {"path", "globals",
// "listeners", "listenerItems", "console", "consoleItems"}.

'use strict';

const { EventEmitter } = require('events');
const inspector = require('inspector');
const v8 = require('v8');

const GLOBALS = ['heldCacheSmall', 'heldCacheMedium', 'heldCacheLarge'];
const LISTENERS = 25;
const LISTENER_ITEMS = 200;
const CONSOLE = 3;
const CONSOLE_ITEMS = 300;

// In a function of its own, called before the rest allocates: no stack slot keeps the last object.
function logToConsole() {
  // inspector.console is V8's own console: it reports to the inspector and prints nothing.
  for (let i = 0; i < CONSOLE; i++) {
    inspector.console.log({ logged: i, items: new Array(CONSOLE_ITEMS).fill(0).map((_, j) => j + i + 0.25) });
  }
}

// A listener's payload, made where no closure shares the listener's scope: V8 may keep the last
// closure it ran on a handle while it writes the snapshot, and a map callback made beside the
// payload would keep the payload's scope, and so the payload, with it.
function payloadOf(i) {
  return new Array(LISTENER_ITEMS).fill(0).map((_, j) => i * LISTENER_ITEMS + j + 0.5);
}

// In a function of its own too, returned from before the snapshot: no stack slot of the caller
// keeps the last listener's payload, so each payload is held by its listener alone.
function listen(listeners) {
  const bus = new EventEmitter();
  bus.setMaxListeners(listeners + 1);
  for (let i = 0; i < listeners; i++) {
    const payload = payloadOf(i);
    bus.on('tick', () => payload.length);
  }
  return bus;
}

function main(argv) {
  const out = argv[0];
  const listeners = argv[1] === undefined ? LISTENERS : Number(argv[1]);
  const lengths = new Map(GLOBALS.map((name, i) => [name, 100 * (i + 1)]));
  for (const given of argv.slice(2)) {
    const [name, length] = given.split('=');
    lengths.set(name, Number(length));
  }
  if (!out || !Number.isInteger(listeners) || [...lengths.values()].some((n) => !Number.isInteger(n))) {
    process.stderr.write('usage: node --expose-gc held.js <out-file> [listeners] [name=length ...]\n');
    process.exit(2);
  }
  const session = new inspector.Session();
  session.connect();
  session.post('Runtime.enable');
  logToConsole();
  for (const [name, length] of lengths) {
    globalThis[name] = new Array(length).fill(0).map((_, j) => ({ slot: j }));
  }

  globalThis.heldBus = listen(listeners);

  if (typeof global.gc === 'function') global.gc();
  v8.writeHeapSnapshot(out);
  process.stdout.write(
    JSON.stringify({
      path: out,
      globals: [...lengths.keys()],
      listeners,
      listenerItems: LISTENER_ITEMS,
      console: CONSOLE,
      consoleItems: CONSOLE_ITEMS,
    }) + '\n',
  );
  session.disconnect();
}

main(process.argv.slice(2));
