"""The hprof file's layout: the header versions, the record and sub-record tags, root kinds, basic
types, what the reader's kernels report, and the Java names and sizes the graph takes from them
(the format itself is described in :mod:`heapdb.loader.formats.hprof`)."""

from __future__ import annotations

import numpy as np

from heapdb.loader.graph import SYNTHETIC_KIND

VERSIONS = (b"JAVA PROFILE 1.0.1", b"JAVA PROFILE 1.0.2", b"JAVA PROFILE 1.0.3")

# Top-level record tags.
TAG_STRING, TAG_LOAD_CLASS, TAG_HEAP_DUMP, TAG_HEAP_DUMP_SEGMENT, TAG_HEAP_DUMP_END = 0x01, 0x02, 0x0C, 0x1C, 0x2C
TAG_STACK_FRAME, TAG_STACK_TRACE = 0x04, 0x05

# Heap-dump sub-record tags.
SUB_CLASS_DUMP, SUB_INSTANCE_DUMP, SUB_OBJ_ARRAY_DUMP, SUB_PRIM_ARRAY_DUMP = 0x20, 0x21, 0x22, 0x23
SUB_PRIM_ARRAY_NODATA, SUB_HEAP_DUMP_INFO = 0xC3, 0xFE

# Root sub-record tag -> (root kind, bytes after the object id).
ROOT_TAGS: dict[int, tuple[str, int]] = {
    0xFF: ("unknown", 0),
    0x01: ("jni global", -1),  # followed by one more id (the JNI global ref id)
    0x02: ("jni local", 8),
    0x03: ("java frame", 8),
    0x04: ("native stack", 4),
    0x05: ("system class", 0),
    0x06: ("thread block", 4),
    0x07: ("busy monitor", 0),
    0x08: ("thread", 8),
    0x89: ("interned string", 0),
    0x8A: ("finalizing", 0),
    0x8B: ("debugger", 0),
    0x8C: ("reference cleanup", 0),
    0x8D: ("vm internal", 0),
    0x8E: ("jni monitor", 8),
    0x90: ("unreachable", 0),
}
ROOT_KINDS = [kind for kind, _ in ROOT_TAGS.values()]

# hprof basic types: code -> (Java name, size; 0 means the id size).
BASIC_TYPES: dict[int, tuple[str, int]] = {
    2: ("object", 0),
    4: ("boolean", 1),
    5: ("char", 2),
    6: ("float", 4),
    7: ("double", 8),
    8: ("byte", 1),
    9: ("short", 2),
    10: ("int", 4),
    11: ("long", 8),
}
TYPE_OBJECT = 2
TYPE_LONG = 11
# Pairs of static fields holding the Unsafe offsets of two adjacent reference fields: their difference
# is the JVM's reference (oop) size, 4 with compressed oops. VisualVM's heap library guesses the same way.
OOP_PROBES = (
    ("java.lang.Class$Atomic", "annotationDataOffset", "annotationTypeOffset"),
    ("java.util.concurrent.FutureTask", "runnerOffset", "waitersOffset"),
)
ARRAY_CLASS_BY_TYPE = {4: "[Z", 5: "[C", 6: "[F", 7: "[D", 8: "[B", 9: "[S", 10: "[I", 11: "[J"}
_DESCRIPTORS = {
    "Z": "boolean",
    "C": "char",
    "F": "float",
    "D": "double",
    "B": "byte",
    "S": "short",
    "I": "int",
    "J": "long",
}

# Object kinds in the walk's arrays and node kinds in the graph.
K_INSTANCE, K_OBJ_ARRAY, K_PRIM_ARRAY = 1, 2, 3
NODE_KINDS = [SYNTHETIC_KIND, "instance", "object array", "primitive array", "class"]
KIND_CLASS = 4

OBJECT_ALIGNMENT = 8
ARRAY_OVERHEAD = 4  # the length word of an array

REFERENCE_KINDS = {
    "java.lang.ref.SoftReference": "soft",
    "java.lang.ref.WeakReference": "weak",
    "java.lang.ref.PhantomReference": "phantom",
    "java.lang.ref.FinalReference": "finalizer",
    "java.lang.ref.FinalizerReference": "finalizer",  # Android's
}
REFERENCE_CLASS = "java.lang.ref.Reference"

# Kernel state (an int64 array): counters, then the first error's code and position.

# The heap-dump walk's rows: one per object (see ``walk_heap``), then per root, class dump and heap.
OBJECT_ROWS = ("obj_id", "obj_kind", "obj_class", "obj_elem", "obj_off", "obj_len", "obj_heap")
OTHER_ROWS = (
    "root_kind", "root_id", "root_thread", "root_frame", "class_off", "class_len", "heap_type", "heap_name",
)  # fmt: skip
NODATA = 0x80  # set in a primitive array's ``obj_elem`` when it has no data (Android's 0xC3)
ST_OBJECTS, ST_ROOTS, ST_CLASSES, ST_HEAPS, ST_HEAP, ST_ERROR, ST_ERROR_AT, ST_DANGLING = range(8)
ERRORS = {
    1: "a heap-dump sub-record runs past the end of its record",
    2: "an unknown heap-dump sub-record tag",
    3: "an unknown basic type code (expected 2 or 4-11)",
    4: "an instance's field bytes do not match its class's field descriptors",
    5: "a top-level record runs past the end of the file",
    6: "an array length is negative or too large",
    7: "an instance holds fewer bytes than the fields of its class and its super classes known"
    " (a super class is missing)",
}


def align(size: np.ndarray) -> np.ndarray:
    return (size + (OBJECT_ALIGNMENT - 1)) // OBJECT_ALIGNMENT * OBJECT_ALIGNMENT


def java_name(name: str) -> str:
    """A class name as Java source writes it: ``java/util/HashMap$Node`` -> ``java.util.HashMap$Node``,
    ``[Ljava/lang/Object;`` -> ``java.lang.Object[]``, ``[[I`` -> ``int[][]``."""
    dims = len(name) - len(name.lstrip("["))
    base = name[dims:]
    if dims:
        base = base[1:-1] if base.startswith("L") and base.endswith(";") else _DESCRIPTORS.get(base, base)
    return base.replace("/", ".") + "[]" * dims
