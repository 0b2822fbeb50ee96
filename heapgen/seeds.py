"""Small snapshots of every format, built in Python: the seeds of the readers' tests and of the fuzzer.

- V8: :func:`snapshot_dict` lays out a ``.heapsnapshot`` document from rows of nodes and edges;
  :func:`small_snapshot` is a small one (a leaking object, a closure, a detached DOM node, a
  context), :func:`traced_snapshot` the same with source locations and an allocation trace;
- Luau: :func:`dump_text` writes a heap dump as the VM does; :func:`sample_objects` and
  :data:`SAMPLE_ROOTS` are a small program's objects (threads, closures, tables, strings);
- hprof: :func:`small` is a small dump of a cache, a weak reference and a thread's stack;
  :func:`random_dump` a random object graph, with the model it was written from (sizes, strong
  references, roots) for a brute-force check; and shapes that test the reader's bounds: deep class
  chains (:func:`deep_class_chain`, :func:`field_chain`), empty segments (:func:`with_empty_segments`),
  many records naming one huge string (:func:`shared_name`).

Tests check the readers against them and :mod:`heapgen.fuzz` mutates them, in the test suite and in
``benchmarks/fuzz.py``'s long run alike.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Sequence

from heapgen import hprof_writer as hw
from heapgen.hprof_writer import INT, LONG, OBJECT, HprofWriter, standard_classes

# -- V8 -------------------------------------------------------------------------------------------

NODE_FIELDS = ["type", "name", "id", "self_size", "edge_count", "trace_node_id", "detachedness"]
NODE_TYPES = ["hidden", "array", "string", "object", "code", "closure", "regexp", "number", "native", "synthetic"]
EDGE_FIELDS = ["type", "name_or_index", "to_node"]
EDGE_TYPES = ["context", "element", "property", "internal", "hidden", "shortcut", "weak"]

# (node type, name index, id, self size, [(edge type, name or index, target)]): one row of snapshot_dict.
NodeRow = tuple[str, int, int, int, Sequence[tuple[str, int | str, int]]]


def snapshot_dict(
    nodes: Sequence[NodeRow],
    strings: list[str],
    *,
    detachedness: list[int] | None = None,
    extra_sections: dict | None = None,
) -> dict:
    """A V8 snapshot from (node type, name index, id, self size, [(edge type, name, target)]) rows.

    Edge names that are strings are interned into ``strings``; numbers are kept (element/hidden).
    """
    strings = list(strings)
    flat_nodes: list[int] = []
    flat_edges: list[int] = []
    nf = len(NODE_FIELDS)
    for i, (node_type, name, node_id, size, edges) in enumerate(nodes):
        det = detachedness[i] if detachedness else 0
        flat_nodes += [NODE_TYPES.index(node_type), name, node_id, size, len(edges), 0, det]
        for edge_type, edge_name, target in edges:
            if isinstance(edge_name, str):
                if edge_name not in strings:
                    strings.append(edge_name)
                edge_name = strings.index(edge_name)
            flat_edges += [EDGE_TYPES.index(edge_type), edge_name, target * nf]
    doc = {
        "snapshot": {
            "meta": {
                "node_fields": list(NODE_FIELDS),
                "node_types": [list(NODE_TYPES), "string", "number", "number", "number", "number", "number"],
                "edge_fields": list(EDGE_FIELDS),
                "edge_types": [list(EDGE_TYPES), "string_or_number", "node"],
            },
            "node_count": len(nodes),
            "edge_count": len(flat_edges) // 3,
        },
        "nodes": flat_nodes,
        "edges": flat_edges,
    }
    doc.update(extra_sections or {})
    doc["strings"] = strings
    return doc


def small_snapshot() -> dict:
    strings = ["", "(GC roots)", "Leaky", "hello", "f", '<div id="x" class="y">', "system / Context"]
    return snapshot_dict(
        [
            ("synthetic", 0, 1, 0, [("element", 1, 1), ("shortcut", "global", 2)]),
            ("synthetic", 1, 3, 0, [("element", 0, 2)]),
            ("object", 2, 5, 40, [("property", "greeting", 3), ("property", "fn", 4), ("weak", "w", 5)]),
            ("string", 3, 7, 24, []),
            ("closure", 4, 9, 32, [("context", "ctx", 6)]),
            ("native", 5, 10, 100, []),
            ("hidden", 6, 11, 16, [("internal", "previous", 2), ("hidden", 7, 3)]),
        ],
        strings,
        extra_sections={"locations": [2, 1, 10, 4], "trace_tree": [1, 0, 0, 0, [[2, 0, 0, 0, []]]]},
    )


def traced_snapshot() -> dict:
    """small_snapshot with a declared layout for its source sections, one located closure and one
    traced object (node 2, "Leaky", allocated in function "f" called from the root)."""
    doc = small_snapshot()
    meta = doc["snapshot"]["meta"]
    meta["location_fields"] = ["object_index", "script_id", "line", "column"]
    meta["trace_function_info_fields"] = ["function_id", "name", "script_name", "script_id", "line", "column"]
    meta["trace_node_fields"] = ["id", "function_info_index", "count", "size", "children"]
    nf = len(NODE_FIELDS)
    doc["nodes"][2 * nf + NODE_FIELDS.index("trace_node_id")] = 2
    doc["locations"] = [2 * nf, 8, 0, 0, 4 * nf, 7, 9, 2]
    doc["trace_function_infos"] = [0, 0, 0, 0, 0, 0, 1, 4, 3, 7, 10, 3]  # "(root)"; f in script "hello"
    doc["trace_tree"] = [1, 0, 0, 0, [2, 1, 1, 40, []]]
    strings = doc.pop("strings")
    doc["strings"] = strings
    return doc


# -- Luau ------------------------------------------------------------------------------------------


def luau_string(data: str, size: int = 24) -> dict:
    """A Luau string object of a dump."""
    return {"type": "string", "cat": 0, "size": size, "data": data}


def dump_text(objects: dict[str, dict], roots: dict[str, str], stats: dict | None = None) -> str:
    """A dump laid out like the VM writes it, sentinel included."""
    lines = [f'"{address}":{json.dumps(obj, separators=(",", ":"))},' for address, obj in objects.items()]
    lines.append('"0":{"type":"userdata","cat":0,"size":0}')
    stats = stats or {
        "size": sum(o.get("size", 0) for o in objects.values()),
        "categories": {"0": {"name": "main", "size": 1}, "none": {}},
    }
    return (
        '{"objects":{\n' + "\n".join(lines) + '\n},"roots":' + json.dumps(roots) + ',"stats":' + json.dumps(stats) + "}"
    )


def sample_objects() -> dict[str, dict]:
    return {
        "0x1000": {
            "type": "thread",
            "cat": 0,
            "size": 200,
            "env": "0x1010",
            "source": "@main.luau",
            "line": 1,
            "stack": ["0x1020", "0x1030", "0x1040"],
            "stacknames": ["frame:@main.luau:1:", "cache", None],
        },
        "0x1010": {"type": "table", "cat": 0, "size": 64, "pairs": ["0x1100", "0x1020"]},  # globals: {cache = ...}
        "0x1020": {
            "type": "table",
            "cat": 1,
            "size": 80,
            "pairs": ["0x1110", "0x1030", None, "0x1040"],
            "array": ["0x1050", "0x1060"],
            "metatable": "0x1070",
        },
        "0x1030": {
            "type": "function",
            "cat": 0,
            "size": 48,
            "env": "0x1010",
            "proto": "0x1080",
            "upvalues": ["0x1020"],
            "name": "onTick",
        },
        "0x1040": {"type": "userdata", "cat": 0, "size": 16, "tag": 7, "metatable": "0x1090"},
        "0x1050": luau_string("first"),
        "0x1060": {"type": "buffer", "cat": 1, "size": -2147483000},  # a C int that wrapped
        "0x1070": {"type": "table", "cat": 0, "size": 40, "pairs": ["0x1120", "0x1130"]},  # __index
        "0x1080": {
            "type": "proto",
            "cat": 0,
            "size": 100,
            "source": "@main.luau",
            "line": 3,
            "constants": ["0x1110"],
            "protos": [],
        },
        "0x1090": {"type": "table", "cat": 0, "size": 40, "pairs": ["0x1140", "0x1150"]},  # {__type = "Widget"}
        "0x1100": luau_string("cache"),
        "0x1110": luau_string("handler"),
        "0x1120": luau_string("__index"),
        "0x1130": {"type": "table", "cat": 0, "size": 40},
        "0x1140": luau_string("__type"),
        "0x1150": luau_string("Widget"),
        "0x1160": {"type": "table", "cat": 0, "size": 8},  # registry
    }


SAMPLE_ROOTS = {"mainthread": "0x1000", "registry": "0x1160"}


# -- hprof -----------------------------------------------------------------------------------------


def small(id_size: int = 8, version: str = "1.0.2") -> tuple[HprofWriter, dict[str, int]]:
    """A cache class whose static holds an array of nodes, a weak reference to one, an int array; a
    thread whose main frame holds the weak reference, and a node allocated at a recorded stack."""
    w = HprofWriter(id_size, version)
    c = standard_classes(w)
    c["Node"] = w.add_class("com/example/Node", c["java.lang.Object"], [("next", OBJECT), ("value", INT)])
    c["Cache"] = w.add_class(
        "com/example/Cache", c["java.lang.Object"], statics=[("ENTRIES", OBJECT, 0x9000), ("hits", LONG, 3)]
    )
    w.obj_array(0x9000, c["java.lang.Object[]"], [0x9100, 0, 0x9200])
    w.instance(0x9100, c["Node"], {"next": 0x9200, "value": 7})
    put = w.stack_frame("put", "Cache.java", c["Cache"], 12)
    main = w.stack_frame("main", "Main.java", c["Node"], 45)
    w.stack_trace(1, 0, [])  # HotSpot's dummy trace, named by every object
    w.stack_trace(2, 1, [put, main])  # thread 1's stack (no thread root: the trace names the thread)
    w.stack_trace(3, 0, [put, main])  # an allocation site
    w.instance(0x9200, c["Node"], {"next": 0xDEAD0}, trace=3)  # an id the dump never wrote
    w.instance(0x9300, c["java.lang.ref.WeakReference"], {"referent": 0x9100}, trace=1)
    w.prim_array(0x9400, INT, 3)
    w.root(hw.ROOT_STICKY_CLASS, c["Cache"])
    w.root(hw.ROOT_JAVA_FRAME, 0x9300, thread=1, frame=1)
    w.root(hw.ROOT_JNI_GLOBAL, 0x9400)
    return w, c


DEEP_FIRST_OBJECT = 0x7000_0000  # the deep chain's first instance id: above every class id the writer hands out


def deep_class_chain(classes: int, pad_every: int = 0) -> bytes:
    """An hprof dump of ``classes`` classes each the super class of the next, one instance of each;
    only the first declares a reference field (``next``: the instance of the class above), and every
    ``pad_every``-th class an int field (0: none). Instance ids from DEEP_FIRST_OBJECT, deepest rooted."""
    w = HprofWriter(8)
    c = standard_classes(w)
    chain = [w.add_class("deep/C0", c["java.lang.Object"], [("next", OBJECT), ("n", INT)])]
    for level in range(1, classes):
        padded = pad_every and level % pad_every == 0
        chain.append(w.add_class(f"deep/C{level}", chain[-1], [("pad", INT)] if padded else []))
    for level, class_id in enumerate(chain):
        w.instance(DEEP_FIRST_OBJECT + level, class_id, {"next": DEEP_FIRST_OBJECT + level - 1 if level else 0})
    w.root(hw.ROOT_JNI_GLOBAL, DEEP_FIRST_OBJECT + classes - 1)
    return w.to_bytes()


def with_empty_segments(dump: bytes, count: int) -> bytes:
    """A segmented dump with ``count`` empty HEAP_DUMP_SEGMENT records (9 bytes each) before its end."""
    end = len(dump) - 9  # the HEAP_DUMP_END record closes the file
    assert dump[end] == 0x2C, "not a segmented dump ending in HEAP_DUMP_END"
    return dump[:end] + (b"\x1c" + struct.pack(">II", 0, 0)) * count + dump[end:]


def field_chain(classes: int, type_code: int) -> bytes:
    """An hprof dump (4-byte ids) of ``classes`` classes each the super class of the next and each
    declaring one field of ``type_code``, one instance of each: the deepest instance holds a field
    per class, so the instances hold ``classes**2 / 2`` fields (a byte each for ``boolean``). With
    object fields, each instance's first class's field names the instance before it."""
    w = HprofWriter(4)
    parent = standard_classes(w)["java.lang.Object"]
    for level in range(classes):
        parent = w.add_class(f"chain/C{level}", parent, [(f"f{level}", type_code)])
        previous = DEEP_FIRST_OBJECT + level - 1 if level and type_code == OBJECT else 0
        w.instance(DEEP_FIRST_OBJECT + level, parent, {"f0": previous})
    w.root(hw.ROOT_JNI_GLOBAL, DEEP_FIRST_OBJECT + classes - 1)
    return w.to_bytes(segment_records=1000)


SHARED_NAME_RECORDS = ("classes", "fields", "heaps", "frames")


def shared_name(what: str, records: int, length: int) -> bytes:
    """An hprof dump (4-byte ids) of ``records`` records naming one STRING of ``length`` bytes:
    ``classes`` named by it, a class's ``fields``, Android ``heaps``, or stack ``frames`` of classes
    named by it (each frame its own method), in a trace an instance names."""
    w = HprofWriter(4, "1.0.3")
    c = standard_classes(w)
    name = "x" * length
    if what == "fields":
        w.add_class("Wide", c["java.lang.Object"], [(name, INT)] * records)
    elif what == "heaps":
        for _ in range(records):
            w.heap_info(ord("A"), name)
    else:
        classes = [w.add_class(name, c["java.lang.Object"]) for _ in range(records)]
        if what == "frames":
            frames = [w.stack_frame(f"m{i}", "X.java", cls, 1) for i, cls in enumerate(classes)]
            w.stack_trace(7, 0, frames)
            w.instance(DEEP_FIRST_OBJECT, c["java.lang.Object"], trace=7)
    return w.to_bytes(segment_records=1000)


def random_dump(rng: random.Random, id_size: int, android: bool) -> tuple[bytes, dict]:
    """A random object graph written as hprof, and the model it was written from."""
    w = HprofWriter(id_size, "1.0.3" if android else "1.0.2")
    c = standard_classes(w)
    n = rng.randrange(1, 22)
    objs = [0x100000 + 0x20 * i for i in range(n)]
    dangling = 0xFFF000

    def target() -> int:
        r = rng.random()
        return 0 if r < 0.25 else dangling if r < 0.3 else rng.choice(objs)

    node_cls = w.add_class("app/Node", c["java.lang.Object"], [("a", OBJECT), ("b", OBJECT), ("n", INT)])
    sub_cls = w.add_class("app/Sub", node_cls, [("c", OBJECT), ("a", OBJECT)])  # 'a' hides Node.a
    statics = [(f"s{i}", OBJECT, target()) for i in range(rng.randrange(0, 3))]
    holder = w.add_class("app/Holder", c["java.lang.Object"], statics=statics)
    model_sizes: dict[int, int] = {}
    strong: list[tuple[int, int]] = []
    header = 2 * id_size

    def size(raw: int) -> int:
        return -(-raw // 8) * 8

    for cid, cls in w.classes.items():
        static_bytes = sum(hw.TYPE_SIZES[t] or id_size for _, t, _ in cls.statics)
        model_sizes[cid] = size(header + static_bytes)
        if cls.super_id:
            strong.append((cid, cls.super_id))
        strong += [(cid, v) for _, t, v in cls.statics if t == OBJECT and v]
    choices = ["node", "sub", "weak", "soft", "phantom", "final", "objarr", "intarr"]
    heaps = [(ord("A"), "app"), (ord("I"), "image"), (ord("Z"), "zygote")]
    for obj in objs:
        if android and rng.random() < 0.2:
            w.heap_info(*rng.choice(heaps))
        what = rng.choice(choices)
        if what in ("node", "sub", "weak", "soft", "phantom", "final"):
            cls_id = {
                "node": node_cls,
                "sub": sub_cls,
                "weak": c["java.lang.ref.WeakReference"],
                "soft": c["java.lang.ref.SoftReference"],
                "phantom": c["java.lang.ref.PhantomReference"],
                "final": c["java.lang.ref.Finalizer"],
            }[what]
            fields = w.hierarchy_fields(cls_id)
            values = {name: target() for name, t in fields if t == OBJECT}
            w.instance(obj, cls_id, values)
            model_sizes[obj] = size(header + w.instance_bytes(cls_id))
            strong.append((obj, cls_id))
            is_ref = what not in ("node", "sub")
            for name, t in fields:
                if t == OBJECT and values[name] and not (is_ref and name == "referent"):
                    strong.append((obj, values[name]))
        elif what == "objarr":
            elements = [target() for _ in range(rng.randrange(0, 5))]
            w.obj_array(obj, c["java.lang.Object[]"], elements)
            model_sizes[obj] = size(header + 4 + id_size * len(elements))
            strong += [(obj, c["java.lang.Object[]"])] + [(obj, e) for e in elements if e]
        else:
            length = rng.randrange(0, 40)
            w.prim_array(obj, INT, length, nodata=android and rng.random() < 0.5)
            model_sizes[obj] = size(header + 4 + 4 * length)
            strong.append((obj, c["int[]"]))
    root_tags = list(hw.ROOT_EXTRA) if android else [t for t in hw.ROOT_EXTRA if t < 0x80 or t == 0xFF]
    everything = objs + list(w.classes)
    roots = [(rng.choice(root_tags), rng.choice(everything)) for _ in range(rng.randrange(0, 5))]
    roots.append((hw.ROOT_STICKY_CLASS, holder))
    for tag, obj in roots:
        w.root(tag, obj)
    segmented = rng.choice([None, 1, 3, 50])
    model = {"sizes": model_sizes, "strong": [(s, t) for s, t in strong if t in model_sizes], "roots": roots}
    return w.to_bytes(segment_records=segmented), model
