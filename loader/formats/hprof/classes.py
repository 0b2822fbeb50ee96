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
        """Each class's field bytes (own and inherited), reference kind and whether its chain of
        super classes is complete, memoized along the chains: linear in the classes, whatever their
        depth. A cycle of super classes is an error."""
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
        self.is_reference = np.zeros(len(self.classes), dtype=bool)  # java.lang.ref.Reference or a subclass
        # False where the chain reaches a super class the dump lacks (a lost segment held its class
        # dump): the field bytes are then those of the classes known, which an instance holds first.
        self.complete = np.zeros(len(self.classes), dtype=bool)
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
            is_reference = bool(self.is_reference[j]) if done else False
            complete = bool(self.complete[j]) if done else self.classes[chain[-1]]["super"] == 0
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
                is_reference = is_reference or self.names[k] == REFERENCE_CLASS
                self.is_reference[k] = is_reference
                self.complete[k] = complete
        self.field_bytes_ = field_bytes
        self.ref_fields = ref_fields  # object fields over the hierarchy: they shrink with compressed oops

    def field_bytes(self) -> np.ndarray:
        """Each class's instance field bytes, own and inherited (a cycle of super classes is an error)."""
        self._hierarchy()
        return self.field_bytes_

    def reference_fields(
        self, used: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What the edge kernel needs to read the object fields of instances of the classes ``used``
        (indexes) over their hierarchies: each class's own object fields (start per class, byte offset
        among its own fields, name, weak), its super class (``parent``), its nearest class declaring an
        object field (``declaring``) and its instances' weak ``referent`` label. The kernel walks an
        instance's hierarchy through ``declaring``, each step adding a field, so reading them costs
        what the instances' bytes do however deep the classes; each declared field is listed once.

        Only the fields of classes in a used class's hierarchy are named (interned)."""
        intern, id_size = self.dump.strings.intern, self.dump.id_size
        named = np.zeros(len(self.classes), dtype=bool)
        declaring = self.declaring.tolist()
        for i in used.tolist():
            j = declaring[i]
            while j >= 0 and not named[j]:  # the rest of a marked class's chain is marked too
                named[j] = True
                j = declaring[self.parent[j]] if self.parent[j] >= 0 else -1
        start = np.zeros(len(self.classes) + 1, dtype=np.int64)
        offsets: list[int] = []
        names: list[int] = []
        weak: list[int] = []
        for j in np.flatnonzero(named).tolist():
            off = 0
            is_reference = self.names[j] == REFERENCE_CLASS
            for field_name, t in self.classes[j]["fields"]:
                if t == TYPE_OBJECT:
                    offsets.append(off)
                    names.append(intern(field_name))
                    weak.append(1 if is_reference and field_name == "referent" else 0)
                off += BASIC_TYPES[t][1] or id_size
            start[j + 1] = len(offsets)
        np.maximum.accumulate(start, out=start)  # classes not named declare nothing here
        weak_label = np.full(len(self.classes), -1, dtype=np.int64)
        for i in used.tolist():
            if self.is_reference[i]:
                weak_label[i] = intern(f"referent ({self.reference_kind[i] or 'reference'})")
        return (
            start,
            np.asarray(offsets, dtype=np.int64),
            np.asarray(names, dtype=np.int64),
            np.asarray(weak, dtype=np.uint8),
            np.asarray(self.parent, dtype=np.int64),
            self.declaring,
            weak_label,
        )

    def value_layouts(self, used: np.ndarray) -> tuple[np.ndarray, list[tuple[PrimitiveField, ...]]]:
        """The primitive fields of the classes ``used`` (indexes) over the hierarchy, in instance
        order: each class's index into the layouts (-1: unused, or none), and the layouts. Each step
        up the hierarchy (``declaring_values``) adds a field, and a used class has an instance of its
        field bytes: the layouts hold at most a field per byte of the instances of used classes."""
        # Python lists: a step up the hierarchy costs a few list reads, not numpy scalars.
        field_bytes, parent, declaring = self.field_bytes_.tolist(), self.parent, self.declaring_values.tolist()
        index = np.full(len(self.classes), -1, dtype=np.int64)
        found: list[tuple[PrimitiveField, ...]] = []
        own: dict[int, list[tuple[str, int, int]]] = {}  # a class's own primitive fields, found once
        for i in used.tolist():
            fields: list[PrimitiveField] = []
            j = declaring[i]
            while j >= 0:
                base = field_bytes[i] - field_bytes[j]
                if j not in own:
                    own[j] = self._own_values(j)
                fields += [PrimitiveField(name, code, base + off) for name, code, off in own[j]]
                j = declaring[parent[j]] if parent[j] >= 0 else -1
            if fields:
                index[i] = len(found)
                found.append(tuple(fields))
        return index, found

    def _own_values(self, j: int) -> list[tuple[str, int, int]]:
        """Class ``j``'s own primitive fields: name, type code, byte offset among its own fields."""
        out = []
        off = 0
        for field_name, t in self.classes[j]["fields"]:
            if t != TYPE_OBJECT:
                out.append((field_name, int(t), off))
            off += BASIC_TYPES[t][1] or self.dump.id_size
        return out

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
