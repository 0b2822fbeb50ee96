#!/usr/bin/env node
// A small service that wastes memory on duplicate strings, for heapdb's duplicate-strings inspection.
//
// Usage: node --expose-gc dup_strings.js <out-file>
//
// It keeps, per request, its own copy of one 1.6 kB configuration text, decoded from the same bytes
// each time as a file read would (so every copy is a separate, flat string object with the same
// characters): 3,000 copies. It also keeps
// the same greeting built two ways by concatenation ("Hello, " + name + "!" and "Hello, " + (name +
// "!")), so that equal contents of differently shaped cons strings count as one, and a few strings
// only once. It collects garbage, writes one snapshot to <out-file> and prints {"path", "copies"}.

'use strict';

const v8 = require('v8');

const COPIES = 3000;
const CONFIG_BYTES = Buffer.from(JSON.stringify({
  service: 'checkout',
  region: 'eu-west-1',
  features: Array.from({ length: 40 }, (_, i) => `feature-flag-${i}-enabled`),
  limits: { requests: 1000, burst: 50, timeoutMs: 2500 },
  endpoints: Array.from({ length: 12 }, (_, i) => `https://api.example.invalid/v1/resource/${i}`),
}));

class RequestContext {
  constructor(id, config, greeting) {
    this.id = id;
    this.config = config; // a private copy of the same text: the waste
    this.greeting = greeting;
  }
}

function main(argv) {
  const out = argv[0];
  if (!out) {
    process.stderr.write('usage: node --expose-gc dup_strings.js <out-file>\n');
    process.exit(2);
  }
  const contexts = [];
  const names = ['Ada', 'Grace', 'Edsger'];
  for (let id = 0; id < COPIES; id++) {
    const name = names[id % names.length] + ' ' + 'Hopper-Lovelace-Dijkstra'.slice(0, 6 + (id % 3));
    const greeting = id % 2 ? 'Hello, ' + name + '!' : 'Hello, ' + (name + '!');
    contexts.push(new RequestContext(id, CONFIG_BYTES.toString('utf8'), greeting));
  }
  global.contexts = contexts;
  global.unique = ['only once', 'another one'];
  if (typeof global.gc === 'function') global.gc();
  v8.writeHeapSnapshot(out);
  process.stdout.write(JSON.stringify({ path: out, copies: COPIES, length: CONFIG_BYTES.length }) + '\n');
}

main(process.argv.slice(2));
