"""A small writer of synthetic hprof heap dumps for the reader's tests.

It writes what HotSpot and Android write, record for record: the ``JAVA PROFILE 1.0.x`` header,
``STRING`` and ``LOAD_CLASS`` records, and the heap as one ``HEAP_DUMP`` or as ``HEAP_DUMP_SEGMENT``
records closed by ``HEAP_DUMP_END``, holding ``CLASS_DUMP``, ``INSTANCE_DUMP`` (fields in the order
the class's own fields first, then its super class's), ``OBJ_ARRAY_DUMP``, ``PRIM_ARRAY_DUMP``, GC
roots, and for Android ``HEAP_DUMP_INFO`` and ``PRIMITIVE_ARRAY_NODATA``; ``STACK_FRAME`` and
``STACK_TRACE`` records (:meth:`HprofWriter.stack_frame`, :meth:`HprofWriter.stack_trace`), the thread
serial and frame number of Java frame, JNI local and thread roots, and objects' stack trace serials.

Ids are given by the caller (object addresses) or allocated from :attr:`HprofWriter.next_id`.
``offsets`` records where each record starts in the output, for tests that cut or corrupt there.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

TYPE_SIZES = {2: 0, 4: 1, 5: 2, 6: 4, 7: 8, 8: 1, 9: 2, 10: 4, 11: 8}
OBJECT, INT, LONG, BYTE, CHAR = 2, 10, 11, 8, 5

ROOT_UNKNOWN, ROOT_JNI_GLOBAL, ROOT_JNI_LOCAL, ROOT_JAVA_FRAME = 0xFF, 0x01, 0x02, 0x03
ROOT_NATIVE_STACK, ROOT_STICKY_CLASS, ROOT_THREAD_BLOCK, ROOT_MONITOR_USED, ROOT_THREAD_OBJECT = (
    0x04,
    0x05,
    0x06,
    0x07,
    0x08,
)
ROOT_INTERNED_STRING, ROOT_FINALIZING, ROOT_DEBUGGER, ROOT_REFERENCE_CLEANUP = 0x89, 0x8A, 0x8B, 0x8C
ROOT_VM_INTERNAL, ROOT_JNI_MONITOR, ROOT_UNREACHABLE = 0x8D, 0x8E, 0x90
ROOT_EXTRA = {0xFF: 0, 0x01: -1, 0x02: 8, 0x03: 8, 0x04: 4, 0x05: 0, 0x06: 4, 0x07: 0, 0x08: 8}
ROOT_EXTRA.update({0x89: 0, 0x8A: 0, 0x8B: 0, 0x8C: 0, 0x8D: 0, 0x8E: 8, 0x90: 0})


@dataclass
class JavaClass:
    id: int
    name: str  # as the JVM writes it: java/lang/Object, [I, [Ljava/lang/Object;
    super_id: int
    fields: list[tuple[str, int]]  # own instance fields: (name, type code)
    statics: list[tuple[str, int, int]] = field(default_factory=list)  # (name, type, value)
    loader: int = 0


class HprofWriter:
    def __init__(self, id_size: int = 8, version: str = "1.0.2") -> None:
        assert id_size in (4, 8)
        self.id_size = id_size
        self.version = version
        self.next_id = 0x10000
        self.strings: dict[str, int] = {}
        self.classes: dict[int, JavaClass] = {}
        self.top: list[bytes] = []  # STRING and LOAD_CLASS records, in order
        self.sub: list[bytes] = []  # heap-dump sub-records, in order
        self.serial = 0
        self.class_serials: dict[int, int] = {}  # class id -> its LOAD_CLASS serial
        # Each class's instance fields, once its chain of super classes is known to its end: a dump
        # with a deep hierarchy (a test of the reader's bounds) is then written in linear time.
        self._fields: dict[int, list[tuple[str, int]]] = {}

    # -- encoding ------------------------------------------------------------------------------

    def ident(self, value: int) -> bytes:
        return value.to_bytes(self.id_size, "big")

    def value(self, type_code: int, value: int) -> bytes:
        size = TYPE_SIZES[type_code] or self.id_size
        return (value % (1 << (8 * size))).to_bytes(size, "big")

    def alloc(self) -> int:
        self.next_id += 0x10
        return self.next_id

    @staticmethod
    def record(tag: int, body: bytes) -> bytes:
        return struct.pack(">BII", tag, 0, len(body)) + body

    # -- top level -----------------------------------------------------------------------------

    def string(self, text: str) -> int:
        if text not in self.strings:
            sid = self.alloc()
            self.strings[text] = sid
            self.top.append(self.record(0x01, self.ident(sid) + text.encode()))
        return self.strings[text]

    def add_class(
        self,
        name: str,
        super_id: int = 0,
        fields: list[tuple[str, int]] | None = None,
        statics: list[tuple[str, int, int]] | None = None,
        class_id: int | None = None,
        loader: int = 0,
    ) -> int:
        cid = class_id if class_id is not None else self.alloc()
        cls = JavaClass(cid, name, super_id, list(fields or []), list(statics or []), loader)
        self.classes[cid] = cls
        self.serial += 1
        self.class_serials[cid] = self.serial
        name_id = self.string(name)
        self.top.append(
            self.record(
                0x02, struct.pack(">I", self.serial) + self.ident(cid) + struct.pack(">I", 0) + self.ident(name_id)
            )
        )
        body = bytearray(b"\x20")
        body += self.ident(cid) + struct.pack(">I", 0) + self.ident(super_id) + self.ident(loader)
        body += self.ident(0) * 4  # signers, protection domain, two reserved
        body += struct.pack(">I", self.instance_bytes(cid))
        body += struct.pack(">H", 0)  # constant pool
        body += struct.pack(">H", len(cls.statics))
        for sname, t, v in cls.statics:
            body += self.ident(self.string(sname)) + bytes([t]) + self.value(t, v)
        body += struct.pack(">H", len(cls.fields))
        for fname, t in cls.fields:
            body += self.ident(self.string(fname)) + bytes([t])
        self.sub.append(bytes(body))
        return cid

    def hierarchy_fields(self, class_id: int) -> list[tuple[str, int]]:
        """Instance fields in dump order: the class's own, then its super class's..."""
        if class_id in self._fields:
            return self._fields[class_id]
        out: list[tuple[str, int]] = []
        c = self.classes.get(class_id)
        seen = set()
        while c is not None and c.id not in seen:  # a cycle (a test of bad input) stops where it closes
            seen.add(c.id)
            out += c.fields
            if c.super_id in self._fields:
                out += self._fields[c.super_id]
                break
            if c.super_id == 0:
                break
            c = self.classes.get(c.super_id)
        else:
            return out  # a super class not written yet, or a cycle: nothing to remember
        self._fields[class_id] = out
        return out

    def instance_bytes(self, class_id: int) -> int:
        return sum(TYPE_SIZES[t] or self.id_size for _, t in self.hierarchy_fields(class_id))

    def stack_frame(
        self,
        method: str | int,
        source: str | int,
        class_id: int | None,
        line: int,
        frame_id: int | None = None,
        signature: str = "()V",
    ) -> int:
        """A STACK_FRAME; ``method`` and ``source`` are texts (written as STRING records) or raw string
        ids, ``class_id`` a class added before (None: class serial 0), ``line`` > 0, 0, -1, -2 or -3."""
        fid = frame_id if frame_id is not None else self.alloc()
        ids = [m if isinstance(m, int) else self.string(m) for m in (method, signature, source)]
        serial = self.class_serials.get(class_id, 0) if class_id is not None else 0
        body = self.ident(fid) + self.ident(ids[0]) + self.ident(ids[1]) + self.ident(ids[2])
        self.top.append(self.record(0x04, body + struct.pack(">Ii", serial, line)))
        return fid

    def stack_trace(self, serial: int, thread_serial: int, frame_ids: list[int]) -> None:
        """A STACK_TRACE: its frames innermost first."""
        body = struct.pack(">III", serial, thread_serial, len(frame_ids)) + b"".join(self.ident(f) for f in frame_ids)
        self.top.append(self.record(0x05, body))

    # -- heap objects --------------------------------------------------------------------------

    def instance(self, obj_id: int, class_id: int, values: dict[str, int] | None = None, trace: int = 0) -> None:
        """An instance; ``values`` by field name (a hidden field: the nearest class's), others 0;
        ``trace``: its stack trace serial."""
        values = values or {}
        data = b"".join(self.value(t, values.get(name, 0)) for name, t in self.hierarchy_fields(class_id))
        self.sub.append(
            b"\x21"
            + self.ident(obj_id)
            + struct.pack(">I", trace)
            + self.ident(class_id)
            + struct.pack(">I", len(data))
            + data
        )

    def obj_array(self, obj_id: int, array_class_id: int, elements: list[int], trace: int = 0) -> None:
        self.sub.append(
            b"\x22"
            + self.ident(obj_id)
            + struct.pack(">II", trace, len(elements))
            + self.ident(array_class_id)
            + b"".join(self.ident(e) for e in elements)
        )

    def prim_array(self, obj_id: int, type_code: int, length: int, nodata: bool = False) -> None:
        head = (b"\xc3" if nodata else b"\x23") + self.ident(obj_id) + struct.pack(">IIB", 0, length, type_code)
        self.sub.append(head + (b"" if nodata else bytes(length * TYPE_SIZES[type_code])))

    def root(self, tag: int, obj_id: int, thread: int = 0, frame: int = 0) -> None:
        """A GC root; for a JNI local or Java frame root ``thread`` and ``frame`` are its thread serial and
        frame number (-1: none), for a thread root its thread serial and stack trace serial."""
        extra = ROOT_EXTRA[tag]
        if tag in (ROOT_JNI_LOCAL, ROOT_JAVA_FRAME, ROOT_THREAD_OBJECT):
            tail = struct.pack(">II", thread % (1 << 32), frame % (1 << 32))
        else:
            tail = self.ident(0) if extra < 0 else bytes(extra)
        self.sub.append(bytes([tag]) + self.ident(obj_id) + tail)

    def heap_info(self, heap_type: int, name: str) -> None:
        self.sub.append(b"\xfe" + struct.pack(">I", heap_type) + self.ident(self.string(name)))

    def raw_sub(self, data: bytes) -> None:
        self.sub.append(data)

    # -- output --------------------------------------------------------------------------------

    def to_bytes(self, segment_records: int | None = None) -> bytes:
        """The file; ``segment_records``: that many sub-records per HEAP_DUMP_SEGMENT (None: one HEAP_DUMP)."""
        out = bytearray(f"JAVA PROFILE {self.version}".encode() + b"\0")
        out += struct.pack(">IQ", self.id_size, 1_700_000_000_000)
        self.offsets: list[int] = []
        for rec in self.top:
            self.offsets.append(len(out))
            out += rec
        if segment_records is None:
            self.offsets.append(len(out))
            out += self.record(0x0C, b"".join(self.sub))
        else:
            for i in range(0, max(len(self.sub), 1), segment_records):
                self.offsets.append(len(out))
                out += self.record(0x1C, b"".join(self.sub[i : i + segment_records]))
            self.offsets.append(len(out))
            out += self.record(0x2C, b"")
        return bytes(out)


def standard_classes(w: HprofWriter) -> dict[str, int]:
    """java.lang.Object, Class, String-free basics and the java.lang.ref hierarchy, as a JVM writes them."""
    c: dict[str, int] = {}
    c["java.lang.Object"] = w.add_class("java/lang/Object")
    c["java.lang.Class"] = w.add_class("java/lang/Class", c["java.lang.Object"])
    ref = w.add_class(
        "java/lang/ref/Reference",
        c["java.lang.Object"],
        [("referent", OBJECT), ("queue", OBJECT), ("next", OBJECT), ("discovered", OBJECT)],
    )
    c["java.lang.ref.Reference"] = ref
    c["java.lang.ref.WeakReference"] = w.add_class("java/lang/ref/WeakReference", ref)
    c["java.lang.ref.SoftReference"] = w.add_class(
        "java/lang/ref/SoftReference", ref, [("timestamp", LONG)], statics=[("clock", LONG, 7)]
    )
    c["java.lang.ref.PhantomReference"] = w.add_class("java/lang/ref/PhantomReference", ref)
    final = w.add_class("java/lang/ref/FinalReference", ref)
    c["java.lang.ref.FinalReference"] = final
    c["java.lang.ref.Finalizer"] = w.add_class("java/lang/ref/Finalizer", final, [("prev", OBJECT), ("next", OBJECT)])
    c["java.lang.Object[]"] = w.add_class("[Ljava/lang/Object;", c["java.lang.Object"])
    c["int[]"] = w.add_class("[I", c["java.lang.Object"])
    return c
