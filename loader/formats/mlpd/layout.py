"""The .mlpd file's layout: its magic numbers, the event types and sub-types the reader walks, the
root sources Mono registers root areas under, and what the reader's kernels report (the format itself
is described in :mod:`heapdb.loader.formats.mlpd`)."""

from __future__ import annotations

from heapdb.loader.graph import SYNTHETIC_KIND

LOG_HEADER_ID = 0x4D505A01  # the file's first four bytes, little-endian
BUF_ID = 0x4D504C01  # every buffer's first four bytes
HEADER_FIXED = 38  # id, major, minor, data version, pointer size, two start times, overhead, flags, pid, port
BUFFER_HEADER = 48  # id, length, time base, pointer base, object base, thread id, method base
# The data versions read: 16 and 17 lay out every event alike (mono/profiler/log.h: 17 only stopped
# emitting two kinds of code buffer); Debian's Mono 6.8 writes 17, which the tests read.
DATA_VERSIONS = (16, 17)

# Event types (the low four bits of an event's first byte).
TYPE_ALLOC, TYPE_GC, TYPE_METADATA, TYPE_METHOD, TYPE_EXCEPTION, TYPE_MONITOR, TYPE_HEAP = range(7)
TYPE_SAMPLE, TYPE_RUNTIME, TYPE_META = 7, 8, 10
# Heap sub-types (the high four bits).
HEAP_START, HEAP_END, HEAP_OBJECT, HEAP_ROOT, HEAP_ROOT_REGISTER, HEAP_ROOT_UNREGISTER = (x << 4 for x in range(6))
# Metadata kinds (the byte after the event's time).
META_CLASS, META_IMAGE, META_ASSEMBLY, META_DOMAIN, META_THREAD, META_CONTEXT, META_VTABLE = range(1, 8)
END_LOAD = 2 << 4
GC_EVENT_START = 0  # MONO_GC_EVENT_START: a collection begins
CODE_BUFFER_SPECIFIC_TRAMPOLINE = 5  # the one code buffer kind that carries a name
COUNTER_PERFCOUNTERS = 1 << 15  # a counter section whose name follows
# Counter value types: how each is written (MonoCounterType).
COUNTER_SIGNED = (0, 2, 3, 7)  # int, word, long, time interval: sleb128
COUNTER_UNSIGNED = (1, 4)  # uint, ulong: uleb128
COUNTER_DOUBLE, COUNTER_STRING = 5, 6

# MonoGCRootSource, in enum order: the kind of the area a root lies in, as Mono registers it.
ROOT_SOURCES = (
    "external",
    "stack",
    "finalizer queue",
    "static",
    "thread static",
    "context static",
    "handle",  # a GC handle table; sgen's say in their names which kind (HANDLE_TABLES)
    "jit",
    "threading",
    "domain",
    "reflection",
    "marshal",
    "thread pool",
    "debugger",
    "runtime handle",
    "ephemeron",
    "toggleref",
)
UNREGISTERED = "unregistered"  # a root whose address lies in no area registered at the heapshot
UNKNOWN_SOURCE = "unknown source"  # an area registered with a source this list does not name
UNKNOWN_CLASS = "(unknown class)"  # an object whose vtable no metadata event names

NODE_KINDS = ["object", "array", "string", SYNTHETIC_KIND]
KIND_OBJECT, KIND_ARRAY, KIND_STRING, KIND_SYNTHETIC = range(4)
STRING_CLASS = "System.String"

# Kernel state (an int64 array): counters, then the first error's code and position.
(
    ST_BUFFERS,
    ST_CLASSES,
    ST_VTABLES,
    ST_REGISTERS,
    ST_HEAPSHOTS,
    ST_ROOT_EVENTS,
    ST_THREADS,
    ST_ERROR,
    ST_ERROR_AT,
) = range(9)
ST_SIZE = 9
ERRORS = {
    1: "the file ends inside a buffer header (expected 48 bytes)",
    2: "expected a buffer id (0x4D504C01)",
    3: "a buffer's length runs past the end of the file",
    4: "an event runs past the end of its buffer",
    5: "a LEB128 number longer than 64 bits",
    6: "an unknown event type",
    7: "an unknown event sub-type",
    8: "an unknown metadata kind",
    9: "an unknown counter value type",
    10: "a HEAP_START while the thread's previous heapshot is still open",
    11: "an object's references come before any object of its heapshot",
}

# Columns of the kernels' row tables (int64[rows, columns]).
B_AT, B_LEN, B_TIME, B_PTR, B_OBJ, B_THREAD = range(6)  # buffers: where their events start, how long
C_PTR, C_NAME_AT, C_NAME_END = range(3)  # classes: MonoClass*, where the name's bytes are
V_PTR, V_CLASS = range(2)  # vtables: MonoVTable*, its MonoClass*
# root areas registered (R_SIZE >= 0) and unregistered (R_SIZE == -1), in file order; the key's
# meaning depends on the source
R_TIME, R_START, R_SIZE, R_SOURCE, R_KEY, R_DESC_AT, R_DESC_END = range(7)
R_COLS = 7
SOURCE_STATIC = 3  # MONO_ROOT_SOURCE_STATIC: its key is the MonoVTable* of the class whose statics these are
SOURCE_GC_HANDLE = 6  # MONO_ROOT_SOURCE_GC_HANDLE
# The root kinds of sgen's strong GC handle tables, by a word of the table's name ("GC Handle Bucket
# (SGen, Normal)"): the names heapdb's Mono profiler module gives the same roots (heapdb/mono/profiler.c).
# Weak handles are never roots of a heapshot.
HANDLE_TABLES = {"Normal": "strong handle", "Pinned": "pinned handle"}
E_BUF, E_AT, E_TIME, E_COUNT = range(4)  # root events: buffer, where the root count is, time, roots
# heapshots: the thread that walked the heap, its start and end (event times; end -1 while open),
# the buffer and position of its first event after HEAP_START and of its HEAP_END, what it holds
# (objects, references, object events), the collections begun and the heap size at its
# end, and its generation-0 objects' bytes
(
    H_THREAD,
    H_START,
    H_END,
    H_FIRST_BUF,
    H_FIRST_AT,
    H_END_BUF,
    H_END_AT,
    H_OBJECTS,
    H_REFS,
    H_EVENTS,
    H_GCS,
    H_HEAP_SIZE,
    H_NURSERY,
) = range(13)
H_COLS = 13
