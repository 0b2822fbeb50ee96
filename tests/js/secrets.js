#!/usr/bin/env node
// A service holding secrets, for heapdb's redaction tests.
//
// Usage: node --expose-gc secrets.js <out-file>
//
// Every secret is made from random bytes at run time, so that none is in this source (a script's
// source is a string in the heap too) and none is the same twice. The program keeps:
// - an API key, inside a configuration text of which it holds 40 separate copies (duplicate
//   strings that redaction must still count);
// - 60 sessions, each with a bearer token built by concatenation ("Bearer " + key + n) and its
//   user's e-mail address;
// - a map (a plain object) keyed by e-mail address, whose keys are the names of its references;
// - a request body with a password, held once.
// It collects garbage, writes one snapshot to <out-file> and prints {"path", "secrets", "copies"}:
// the texts no redacted answer may show.

'use strict';

const crypto = require('crypto');
const v8 = require('v8');

const COPIES = 40;
const SESSIONS = 60;

function token(bytes) {
  return crypto.randomBytes(bytes).toString('hex');
}

function main(argv) {
  const out = argv[0];
  if (!out) {
    process.stderr.write('usage: node --expose-gc secrets.js <out-file>\n');
    process.exit(2);
  }
  const apiKey = ['sk', 'live', token(12)].join('_');
  const mail = [`ada.${token(4)}`, 'example.invalid'].join('@');
  const password = `pw-${token(8)}`;
  const config = Buffer.from(JSON.stringify({ service: 'checkout', apiKey, owner: mail }));
  global.configs = Array.from({ length: COPIES }, () => config.toString('utf8'));
  global.sessions = Array.from({ length: SESSIONS }, (_, n) => ({ auth: 'Bearer ' + apiKey + n, user: mail }));
  global.byMail = {};
  global.byMail[mail] = { visits: 3 };
  global.body = JSON.stringify({ user: mail, password });
  if (typeof global.gc === 'function') global.gc();
  v8.writeHeapSnapshot(out);
  process.stdout.write(JSON.stringify({ path: out, secrets: [apiKey, mail, password], copies: COPIES }) + '\n');
}

main(process.argv.slice(2));
