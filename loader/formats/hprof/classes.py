"""The classes of an hprof dump: each ``CLASS_DUMP`` decoded in Python (one per loaded class:
thousands, not millions), the instance field layout over the class hierarchy (the class's own fields
first, then its super class's, as ``INSTANCE_DUMP`` stores them), weak ``referent`` fields, and the
JVM's reference size, read from two static fields as VisualVM reads it."""

from __future__ import annotations

from typing import Any

import numpy as np

from heapdb.loader.formats.hprof.dump import Dump
from heapdb.loader.formats.hprof.layout import (
    BASIC_TYPES,
    OOP_PROBES,
    REFERENCE_CLASS,
    REFERENCE_KINDS,
    TYPE_LONG,
    TYPE_OBJECT,
)
from heapdb.loader.graph import EdgeKind
from heapdb.loader.values import PrimitiveField


class ClassDumps:
    """The dump's classes, in file order, and what their instances are made of."""

    def __init__(self, dump: Dump, rows: dict[str, np.ndarray]) -> None:
        """Each CLASS_DUMP the walk found (its ``class_off`` and ``class_len`` rows) as a dict: the
        walk has checked its structure."""
        self.dump = dump
        self.classes = self._parse(rows)

    def _parse(self, rows: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        b, ids = self.dump.id_size, self.dump.id_size
        classes = []
        for off, length in zip(rows["class_off"].tolist(), rows["class_len"].tolist(), strict=True):
            raw = bytes(self.dump.buf[off : off + length])
            cid = signed(raw[1 : 1 + ids])
            p = 5 + ids
            sup, loader, signers, domain = (signed(raw[p + k * ids : p + (k + 1) * ids]) for k in range(4))
            p += 6 * ids + 4
            refs: list[tuple[str, int, EdgeKind]] = [
                ("<super>", sup, EdgeKind.INTERNAL),
                ("<classloader>", loader, EdgeKind.INTERNAL),
                ("<signers>", signers, EdgeKind.INTERNAL),
                ("<protection domain>", domain, EdgeKind.INTERNAL),
            ]
            static_bytes = 0
            longs: dict[str, int] = {}  # static long values: oop_size reads two classes' field offsets
            p += 2
            for _ in range(int.from_bytes(raw[p - 2 : p], "big")):
                t = raw[p + 2]
                size = BASIC_TYPES[t][1] or b
                if t == TYPE_OBJECT:
                    refs.append(("<constant pool>", signed(raw[p + 3 : p + 3 + size]), EdgeKind.INTERNAL))
                p += 3 + size
            p += 2
            for _ in range(int.from_bytes(raw[p - 2 : p], "big")):
                name_id = signed(raw[p : p + ids])
                t = raw[p + ids]
                size = BASIC_TYPES[t][1] or b
                if t == TYPE_OBJECT:
                    value = signed(raw[p + ids + 1 : p + ids + 1 + size])
                    refs.append((self.dump.string(name_id) or f"(field 0x{name_id:x})", value, EdgeKind.PROPERTY))
                elif t == TYPE_LONG:
                    longs[self.dump.string(name_id) or ""] = signed(raw[p + ids + 1 : p + ids + 9])
                static_bytes += size
                p += ids + 1 + size
            fields = []
            p += 2
            for _ in range(int.from_bytes(raw[p - 2 : p], "big")):
                name_id = signed(raw[p : p + ids])
                fields.append((self.dump.string(name_id) or f"(field 0x{name_id:x})", raw[p + ids]))
                p += ids + 1
            classes.append(
                {
                    "id": cid,
                    "super": sup,
                    "refs": refs,
                    "fields": fields,
                    "static_bytes": static_bytes,
                    "longs": longs,
                    "offset": off,
                }
            )
        return classes

    def _hierarchy(self) -> None:
        """Each class's field bytes (own and inherited) and reference kind, memoized along the
        super-class chains: linear in the classes, whatever their depth. A cycle of super classes is
        an error."""
        by_id = {c["id"]: i for i, c in enumerate(self.classes)}
        self.names = [self.dump.class_name(c["id"]) for c in self.classes]
        self.parent = [by_id.get(c["super"], -1) if c["super"] else -1 for c in self.classes]
        own_bytes = [sum(BASIC_TYPES[t][1] or self.dump.id_size for _, t in c["fields"]) for c in self.classes]
        own_refs = [sum(t == TYPE_OBJECT for _, t in c["fields"]) for c in self.classes]
        own_values = [sum(t != TYPE_OBJECT for _, t in c["fields"]) for c in self.classes]
        field_bytes = np.full(len(self.classes), -1, dtype=np.int64)
        ref_fields = np.zeros(len(self.classes), dtype=np.int64)
        # The class itself or its nearest super class that declares an object field (-1: none), so
        # that a layout skips the classes that add none to it however deep the chain.
        self.declaring = np.full(len(self.classes), -1, dtype=np.int64)
        self.declaring_values = np.full(len(self.classes), -1, dtype=np.int64)  # the same for primitive fields
        self.reference_kind: list[str | None] = [None] * len(self.classes)
        for i in range(len(self.classes)):
            chain = []
            j = i
            while j >= 0 and field_bytes[j] == -1:
                field_bytes[j] = -2  # on the current chain
                chain.append(j)
                j = self.parent[j]
            if j >= 0 and field_bytes[j] == -2:
                raise self.dump.error(
                    f"the super classes of class 0x{self.classes[j]['id'] & (2**64 - 1):x} form a cycle",
                    int(self.classes[j]["offset"]),
                )
            done = j >= 0
            base = int(field_bytes[j]) if done else 0
            refs = int(ref_fields[j]) if done else 0
            kind = self.reference_kind[j] if done else None
            declaring = int(self.declaring[j]) if done else -1
            declaring_values = int(self.declaring_values[j]) if done else -1
            for k in reversed(chain):
                base += own_bytes[k]
                field_bytes[k] = base
                refs += own_refs[k]
                ref_fields[k] = refs
                declaring = k if own_refs[k] else declaring
                self.declaring[k] = declaring
                declaring_values = k if own_values[k] else declaring_values
                self.declaring_values[k] = declaring_values
                kind = REFERENCE_KINDS.get(self.names[k], kind)
                self.reference_kind[k] = kind
        self.field_bytes_ = field_bytes
        self.ref_fields = ref_fields  # object fields over the hierarchy: they shrink with compressed oops

    def field_bytes(self) -> np.ndarray:
        """Each class's instance field bytes, own and inherited (a cycle of super classes is an error)."""
        self._hierarchy()
        return self.field_bytes_

    def layouts(self, used: np.ndarray) -> tuple[np.ndarray, ...]:
        """The field layouts of the classes ``used`` (indexes): their instances' object fields over
        the hierarchy (byte offset, name, weak). Built only for classes with an instance of the
        right length, so their total is bounded by the file size; each step of a layout's walk up
        the hierarchy adds a field to it (``declaring``), so building them is too."""
        names, parent, reference_kind = self.names, self.parent, self.reference_kind
        field_bytes, declaring = self.field_bytes_, self.declaring
        start = np.zeros(len(self.classes) + 1, dtype=np.int64)
        lay_off: list[int] = []
        lay_name: list[int] = []
        lay_weak: list[int] = []
        intern = self.dump.strings.intern
        used_set = set(used.tolist())
        for i in range(len(self.classes)):
            if i in used_set:
                j = int(declaring[i])
                while j >= 0:  # no cycles: _hierarchy refused them
                    # An instance holds its class's fields first, then each super class's in turn.
                    off = int(field_bytes[i] - field_bytes[j])
                    is_reference = names[j] == REFERENCE_CLASS
                    for field_name, t in self.classes[j]["fields"]:
                        if t == TYPE_OBJECT:
                            weak = is_reference and field_name == "referent"
                            lay_off.append(off)
                            label = f"referent ({reference_kind[i] or 'reference'})" if weak else field_name
                            lay_name.append(intern(label))
                            lay_weak.append(1 if weak else 0)
                        off += BASIC_TYPES[t][1] or self.dump.id_size
                    j = int(declaring[parent[j]]) if parent[j] >= 0 else -1
            start[i + 1] = len(lay_off)
        return (
            start,
            np.asarray(lay_off, dtype=np.int64),
            np.asarray(lay_name, dtype=np.int64),
            np.asarray(lay_weak, dtype=np.uint8),
        )

    def value_layouts(self, used: np.ndarray) -> tuple[np.ndarray, list[tuple[PrimitiveField, ...]]]:
        """The primitive fields of the classes ``used`` (indexes) over the hierarchy, in instance
        order: each class's index into the layouts (-1: unused, or none), and the layouts. Bounded
        as :meth:`layouts` is: each step up the hierarchy (``declaring_values``) adds a field."""
        field_bytes, parent = self.field_bytes_, self.parent
        index = np.full(len(self.classes), -1, dtype=np.int64)
        found: list[tuple[PrimitiveField, ...]] = []
        for i in used.tolist():
            fields: list[PrimitiveField] = []
            j = int(self.declaring_values[i])
            while j >= 0:
                off = int(field_bytes[i] - field_bytes[j])
                for field_name, t in self.classes[j]["fields"]:
                    if t != TYPE_OBJECT:
                        fields.append(PrimitiveField(field_name, int(t), off))
                    off += BASIC_TYPES[t][1] or self.dump.id_size
                j = int(self.declaring_values[parent[j]]) if parent[j] >= 0 else -1
            if fields:
                index[i] = len(found)
                found.append(tuple(fields))
        return index, found

    def oop_size(self, class_names: list[str]) -> int:
        """The JVM's reference size: the id size, unless a 64-bit dump's probe classes show 4-byte
        compressed oops (see ``OOP_PROBES``)."""
        if self.dump.id_size == 4:
            return 4
        by_name = dict(zip(class_names, self.classes, strict=True))
        for name, first, second in OOP_PROBES:
            longs = by_name[name]["longs"] if name in by_name else {}
            if first in longs and second in longs and longs[second] - longs[first] in (4, 8):
                return int(longs[second] - longs[first])
        return self.dump.id_size


def signed(raw: bytes) -> int:
    """A big-endian id as the int64 the arrays hold."""
    return int.from_bytes(raw, "big", signed=len(raw) == 8)
