"""A long history of small builds: one V8 snapshot per build, with steady growth and two leaks.

Build ``n`` (1 to ``builds``) of :func:`build_snapshot` is a small Node-like heap:

- ``global.app.cache.entries`` holds ``RECORDS + n`` ``Record`` objects, each with its own
  ``payload`` string: one more per build, so the ``Record`` type and its retainer path grow at every
  step of the whole history (``heapdb growth``);
- ``global.app.config`` holds a ``CONFIG_BYTES`` native blob, and ``global.app.widgets`` holds ``WIDGETS`` ``Widget`` objects whatever the build (nothing grows there);
- ``global.app.modules`` holds :attr:`Plan.modules` objects, each of a type and under a property of
  its own, the same in every build;
- from build :attr:`Plan.leak_from` on, ``global.leaked.items`` holds ``LEAK_ITEMS`` ``LeakedItem``
  objects plus one per build since, each with a ``LEAK_BYTES`` native blob: a leak the gate finds new
  at that build (it retains more than the gate's 256 KiB floor at once) and that stays;
- from build :attr:`Plan.session_from` to just before :attr:`Plan.session_until`,
  ``global.sessions.list`` holds ``LEAK_ITEMS`` ``Session`` objects, each with such a blob: a leak
  that appears, and is fixed later.

Everything a test asks of such a history is known from the plan alone (:func:`records`,
:meth:`Plan.leaking`), so a test can compute the answers without heapdb. ``benchmarks/history.py``
loads a thousand of these; ``tests/test_build_history.py`` thirty.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from heapgen.seeds import NodeRow, snapshot_dict

RECORDS = 10  # Records in build 0; build n has RECORDS + n
RECORD_BYTES = 48
PAYLOAD_BYTES = 64
WIDGETS = 30
WIDGET_BYTES = 40
LEAK_ITEMS = 20  # a leak's items in its first build
ITEM_BYTES = 32
LEAK_BYTES = 16 * 1024  # each leaked item's blob: LEAK_ITEMS of them pass the gate's 256 KiB floor
# The app's configuration: what the heap holds before any leak, above the gate's noise floor (32 KiB),
# so that the global object holding the leaks is old, and a leak's growth under 10% of the heap.
CONFIG_BYTES = 256 * 1024
MODULE_BYTES = 72


# An item's own child: (edge name, node type, name, self size).
Child = tuple[str, str, str, int]


@dataclass(frozen=True)
class Plan:
    """Where the leaks of a history of ``builds`` builds come and go (build numbers, 1 to ``builds``)."""

    builds: int
    # Parts of the program that never change: each an object of a type of its own held under a
    # property of its own (``global.app.modules.<name>``), so that every build has as many more
    # types and retainer paths for the questions across builds to go through, as a real heap has.
    modules: int = 0

    @property
    def leak_from(self) -> int:
        return max(3, self.builds * 3 // 5)

    @property
    def session_from(self) -> int:
        return max(2, self.builds // 4)

    @property
    def session_until(self) -> int:
        return max(self.session_from + 1, self.builds // 2)

    def leaking(self, n: int) -> bool:
        return n >= self.leak_from

    def sessions(self, n: int) -> bool:
        return self.session_from <= n < self.session_until

    def leaked_items(self, n: int) -> int:
        return LEAK_ITEMS + n - self.leak_from if self.leaking(n) else 0


def module_name(i: int) -> str:
    """The ``i``-th module's name, and its type's: letters only, since retainer paths fold digits."""
    letters = ""
    while True:
        i, digit = divmod(i, 26)
        letters = chr(ord("a") + digit) + letters
        if i == 0:
            return "Module" + letters.capitalize()
        i -= 1


def records(n: int) -> int:
    """How many ``Record`` objects build ``n`` holds."""
    return RECORDS + n


def build_snapshot(n: int, plan: Plan) -> dict:
    """Build ``n``'s heap as a ``.heapsnapshot`` document (:func:`heapgen.seeds.snapshot_dict`)."""
    strings = ["", "(GC roots)", "global", "App", "Cache", "Record", "payload text", "Widget", "LeakHolder"]
    strings += ["LeakedItem", "leaked blob", "SessionStore", "Session", "Config", "config blob", "Modules"]
    name = {s: i for i, s in enumerate(strings)}
    nodes: list[NodeRow] = []
    next_id = iter(range(1, 10**9, 2))

    def add(kind: str, label: str, size: int) -> int:
        nodes.append((kind, name[label], next(next_id), size, []))
        return len(nodes) - 1

    def link(holder: int, edge: str, label: str | int, target: int) -> None:
        kind, node_name, node_id, size, edges = nodes[holder]
        nodes[holder] = (kind, node_name, node_id, size, [*edges, (edge, label, target)])

    def held_list(holder: int, edge: str, kind: str, count: int, size: int, child: Child | None) -> None:
        """``holder.edge`` an array of ``count`` objects of ``kind``, each holding its own ``child``."""
        array = add("array", "", 16 + 8 * count)
        link(holder, "property", edge, array)
        for i in range(count):
            item = add("object", kind, size)
            link(array, "element", i, item)
            if child is not None:
                child_edge, child_kind, child_label, child_size = child
                link(item, "property", child_edge, add(child_kind, child_label, child_size))

    root = add("synthetic", "", 0)
    gc_roots = add("synthetic", "(GC roots)", 0)
    link(root, "element", 1, gc_roots)
    global_object = add("object", "global", 64)
    link(gc_roots, "element", 1, global_object)
    app = add("object", "App", 56)
    link(global_object, "property", "app", app)
    config = add("object", "Config", 120)
    link(app, "property", "config", config)
    link(config, "property", "data", add("native", "config blob", CONFIG_BYTES))
    cache = add("object", "Cache", 40)
    link(app, "property", "cache", cache)
    held_list(
        cache, "entries", "Record", records(n), RECORD_BYTES, ("payload", "string", "payload text", PAYLOAD_BYTES)
    )
    held_list(app, "widgets", "Widget", WIDGETS, WIDGET_BYTES, None)
    if plan.modules:
        modules = add("object", "Modules", 16 + 8 * plan.modules)
        link(app, "property", "modules", modules)
        for i in range(plan.modules):
            label = module_name(i)
            strings.append(label)
            name[label] = len(strings) - 1
            link(modules, "property", label, add("object", label, MODULE_BYTES))
    if plan.leaking(n):
        holder = add("object", "LeakHolder", 32)
        link(global_object, "property", "leaked", holder)
        held_list(
            holder,
            "items",
            "LeakedItem",
            plan.leaked_items(n),
            ITEM_BYTES,
            ("data", "native", "leaked blob", LEAK_BYTES),
        )
    if plan.sessions(n):
        store = add("object", "SessionStore", 32)
        link(global_object, "property", "sessions", store)
        held_list(store, "list", "Session", LEAK_ITEMS, ITEM_BYTES, ("data", "native", "leaked blob", LEAK_BYTES))
    return snapshot_dict(nodes, strings)


def write_build(n: int, plan: Plan, out: Path) -> Path:
    """Build ``n``'s snapshot written to ``out``."""
    out.write_text(json.dumps(build_snapshot(n, plan), separators=(",", ":")))
    return out
