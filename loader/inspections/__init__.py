"""Inspections: what wastes memory in one snapshot, found from its graph and analysis.

Each inspection is a module of its own with one entry point that takes a
:class:`~heapdb.loader.graph.HeapGraph` and its :class:`~heapdb.loader.analysis.Analysis` and
returns a frozen result of arrays (no Python object per heap object):

- :mod:`.strings`: duplicate strings, grouped by their whole content (memlab's ``string``
  analysis, MAT's duplicate strings).
- :mod:`.objects`: duplicate objects, grouped by their visible contents (memlab's
  ``object-shallow`` analysis for V8; primitive arrays for hprof);
- :mod:`.dom`: detached DOM, in trees grouped by the path that holds them (memlab's
  ``detached-DOM`` analysis, DevTools' detached elements).
- :mod:`.react`: React components unmounted but alive, by component (memlab's
  ``unmounted-fiber-node`` analysis);
- :mod:`.react_hooks`: memory by React component, with one fiber's hooks (memlab's ``react-hooks``
  analysis, over every fiber);
- :mod:`.collections`: Maps, Sets and Arrays still referencing detached DOM or unmounted fibers
  (memlab's ``collections-with-stale`` analysis);
- :mod:`.unbound`: across a series of snapshots, the collections, objects and shapes that grew at
  every step (memlab's ``unbound-*`` analyses); a load stores the shape table it needs;
- :mod:`.fill`: empty, sparse and low-fill collections, size against capacity (MAT's collection
  and array fill ratios), with :mod:`.fill_v8` for V8's Maps, Sets and Arrays;
- :mod:`.lifecycles`: Java and Android objects past their lifecycle, grouped by their suspect
  references (LeakCanary's Shark), with :mod:`.leak_status` for the rules' reading (the ``lifecycle``
  rules of the Java default rules and a team's), one object's status and a path's labels, which
  ``why`` shares;
- :mod:`.held`: what event listeners, the console and closures alone keep alive (Chrome DevTools'
  filters), and the global variables a program added (memlab's ``global-variable`` analysis),
  with :mod:`.held_kernels`;
- :mod:`.common`: what they share (the largest objects of a set, a reference by name).

Which objects an inspection looks at is a trait of the snapshot's format
(:class:`~heapdb.loader.formats.protocol.StringKinds`, ``Format.dom``), never a comparison of
format names.
"""
