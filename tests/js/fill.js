#!/usr/bin/env node
// Collections of known sizes and capacities, for heapdb's fill inspection (empty, sparse and
// low-fill collections).
//
// Usage: node --expose-gc fill.js <out-file>
//
// Each group sits in a global property named for what it holds, so a test finds its members by
// their holder path. A Map or Set starts with room for 4 entries and doubles when full; a cleared
// one goes back to 4. The counts are printed with the snapshot's path as {"path", "groups"}.

'use strict';

const v8 = require('v8');

const groups = {
  emptyMaps: 30, // new Map(): size 0, room for 4
  emptySets: 20, // new Set(): size 0, room for 4
  emptyArrays: 25, // []: no element store of their own
  smallMaps: 10, // 3 object keys: size 3, room for 4
  clearedMaps: 5, // grown to 100 entries, then cleared: size 0, room for 4
  grownSets: 8, // 9 objects: size 9, room for 16
  holeyArrays: 12, // new Array(50) holding one object: size 1, room for 50
  numberArrays: 6, // [1, 2, 3]: no object referenced, size unknown
};

const made = {
  emptyMaps: Array.from({ length: groups.emptyMaps }, () => new Map()),
  emptySets: Array.from({ length: groups.emptySets }, () => new Set()),
  emptyArrays: Array.from({ length: groups.emptyArrays }, () => []),
  smallMaps: Array.from({ length: groups.smallMaps }, (_, i) => new Map([[{ i }, 1], [{ j: i }, 2], [{ k: i }, 3]])),
  clearedMaps: Array.from({ length: groups.clearedMaps }, () => {
    const map = new Map();
    for (let k = 0; k < 100; k++) map.set({ k }, k);
    map.clear();
    return map;
  }),
  grownSets: Array.from({ length: groups.grownSets }, () => {
    const set = new Set();
    for (let k = 0; k < 9; k++) set.add({ k });
    return set;
  }),
  holeyArrays: Array.from({ length: groups.holeyArrays }, (_, i) => {
    const array = new Array(50);
    array[7] = { i };
    return array;
  }),
  numberArrays: Array.from({ length: groups.numberArrays }, (_, i) => [i + 1, i + 2, i + 3]),
};
Object.assign(globalThis, made);

global.gc();
v8.writeHeapSnapshot(process.argv[2]);
console.log(JSON.stringify({ path: process.argv[2], groups }));
