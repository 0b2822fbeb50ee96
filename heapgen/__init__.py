"""Heap snapshots made on purpose, shared by the tests and the benchmarks. Tests and benchmarks never
import each other: what both need lives here (tests/test_dependencies.py checks it).

- :mod:`heapgen.synth`: synthetic heaps of any size, drawn with numpy from one seed;
- :mod:`heapgen.seeds`: small snapshots of every format, built in Python;
- :mod:`heapgen.hprof_writer`: hprof dumps written record by record;
- :mod:`heapgen.fuzz`: structure-aware mutations of the seeds, and the oracle every case must meet;
- :mod:`heapgen.node`: real V8 snapshots from the Node programs in ``tests/js`` that leak on purpose;
- :mod:`heapgen.chromium`: real V8 snapshots of web pages from a headless Chromium;
- :mod:`heapgen.oracles`: graphs as other tools see them, to compare heapdb's figures with theirs.

Not installed with heapdb: it is development code, beside ``tests/`` and ``benchmarks/``.
"""
