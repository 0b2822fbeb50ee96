"""Inspections: what wastes memory in one snapshot, found from its graph and analysis.

Each inspection is a module of its own with one entry point that takes a
:class:`~heapdb.loader.graph.HeapGraph` and its :class:`~heapdb.loader.analysis.Analysis` and
returns a frozen result of arrays (no Python object per heap object):

- :mod:`.strings`: duplicate strings, grouped by their whole content (memlab's ``string``
  analysis, MAT's duplicate strings).
- :mod:`.dom`: detached DOM, in trees grouped by the path that holds them (memlab's
  ``detached-DOM`` analysis, DevTools' detached elements).
- :mod:`.react`: React components unmounted but alive, by component (memlab's
  ``unmounted-fiber-node`` analysis);
- :mod:`.collections`: Maps, Sets and Arrays still referencing detached DOM or unmounted fibers
  (memlab's ``collections-with-stale`` analysis);
- :mod:`.common`: what they share (the largest objects of a set, a reference by name).

Which objects an inspection looks at is a trait of the snapshot's format
(:class:`~heapdb.loader.formats.protocol.StringKinds`, ``Format.dom``), never a comparison of
format names.
"""
