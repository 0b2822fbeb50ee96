"""The primitive values objects hold, where the format has them: a Java instance's ``int``, ``long``,
``boolean``... fields, and the first elements of a primitive array (an hprof dump writes both).

MAT's Attributes view and DevTools' object properties show them beside an object's references; a
heap graph has no node for them. A reader that has them attaches a :class:`FieldValues` to its
graph, which keeps only where each object's bytes are in the file (memory-mapped) and the
primitive fields of each class. A load stores them as the dump has them, not as text
(docs/data-model.md):

- an object's ``values``: its primitive bytes in hexadecimal, big-endian as in the dump (an
  instance's primitive fields in the order it holds them; an array's length as 4 bytes, then its
  first :data:`ARRAY_ELEMENTS` elements). A ``java.lang.String``'s are 12 hexadecimal digits,
  which Neo4j keeps inside the property record: text such as ``int hash = 0...`` would take a
  128-byte string record for most objects;
- a class object's ``field_layout``: its instances' primitive fields, one ``type name`` line each,
  its own fields first, then its super class's (as an instance holds them).

:func:`decode` turns the two back into ``(type, name, value)``, a value as Java prints it (``1.5``,
``NaN``, ``'x'``); an array is one value ``int[12]``, ``[1, 2, 3, …]`` (a ``char[]`` as its text).
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass

import numpy as np

ARRAY_ELEMENTS = 16  # the first elements of a primitive array a load keeps

# hprof's basic type codes: the type's Java name, its big-endian struct format.
TYPES: dict[int, tuple[str, str]] = {
    4: ("boolean", ">?"),
    5: ("char", ">H"),
    6: ("float", ">f"),
    7: ("double", ">d"),
    8: ("byte", ">b"),
    9: ("short", ">h"),
    10: ("int", ">i"),
    11: ("long", ">q"),
}
BY_NAME = dict(TYPES.values())
LENGTH = ">I"  # an array's length, before its elements


@dataclass(frozen=True)
class PrimitiveField:
    """One primitive field of a class's instances: its name, type code and byte offset in them."""

    name: str
    code: int
    offset: int


@dataclass
class FieldValues:
    """Where the objects from node ``first`` on keep their bytes in ``buf``, what they are, and the
    layouts of the class objects from node ``first_class`` on."""

    buf: np.ndarray  # uint8: the dump, memory-mapped
    first: int  # the node of object 0 (objects follow the classes, in node order)
    offset: np.ndarray  # int64[k]: where object k's field data or elements start in buf
    length: np.ndarray  # uint32[k]: an instance's field bytes, an array's element count (a u4 in hprof)
    layout: np.ndarray  # int32[k]: an instance's index into ``layouts``; -1 for none
    element: np.ndarray  # uint8[k]: a primitive array's element type code; 0 for other objects
    layouts: list[tuple[PrimitiveField, ...]]
    first_class: int  # the node of class 0
    class_layout: np.ndarray  # int32[c]: class c's instances' index into ``layouts``; -1 for none

    def validate(self, node_count: int) -> None:
        k, c = self.offset.shape[0], self.class_layout.shape[0]
        for label in ("offset", "length", "layout", "element"):
            if getattr(self, label).shape != (k,):
                raise ValueError(f"values.{label}: expected {k} entries")
        if not 0 <= self.first <= node_count - k or not 0 <= self.first_class <= node_count - c:
            raise ValueError("values: the objects or classes are not nodes of the graph")
        for label in ("layout", "class_layout"):
            array = getattr(self, label)
            if array.shape[0] and int(array.max()) >= len(self.layouts):
                raise ValueError(f"values.{label}: a layout that is not one of the layouts")

    def stored_of(self, nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """The ``values`` of ``nodes`` (ascending): (the offsets in ``nodes`` of those holding any,
        their bytes in hexadecimal)."""
        k = nodes.astype(np.int64) - self.first
        inside = (k >= 0) & (k < self.offset.shape[0])
        held = np.zeros(nodes.shape[0], dtype=bool)
        held[inside] = (self.layout[k[inside]] >= 0) | (self.element[k[inside]] != 0)
        at = np.flatnonzero(held)
        objects = k[at]
        found: list[str] = [""] * at.shape[0]
        layouts = self.layout[objects]
        # An instance's bytes a layout at a time: one gather from the dump and one hex string for
        # all its objects, cut in equal parts (a third of the time of one object at a time).
        for layout in np.unique(layouts[layouts >= 0]).tolist():
            rows = np.flatnonzero(layouts == layout)
            columns = self._columns[layout]
            text = self.buf[self.offset[objects[rows]][:, None] + columns].tobytes().hex()
            width = 2 * columns.shape[0]
            for j, row in enumerate(rows.tolist()):
                found[row] = text[j * width : (j + 1) * width]
        for row in np.flatnonzero(layouts < 0).tolist():
            found[row] = self._array_hex(int(objects[row]))
        return at, found

    def layouts_of(self, nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """The ``field_layout`` of ``nodes`` (ascending) that are class objects whose instances hold
        primitive fields: (their offsets in ``nodes``, their layouts as text)."""
        c = nodes.astype(np.int64) - self.first_class
        inside = (c >= 0) & (c < self.class_layout.shape[0])
        held = np.zeros(nodes.shape[0], dtype=bool)
        held[inside] = self.class_layout[c[inside]] >= 0
        at = np.flatnonzero(held)
        return at, [layout_text(self.layouts[int(self.class_layout[i])]) for i in c[at].tolist()]

    @functools.cached_property
    def _columns(self) -> list[np.ndarray]:
        """Where each layout's primitive bytes are in its instances, in the order they are stored."""
        return [
            np.concatenate([np.arange(f.offset, f.offset + struct.calcsize(TYPES[f.code][1])) for f in fields])
            for fields in self.layouts
        ]

    def _array_hex(self, k: int) -> str:
        start, count = int(self.offset[k]), int(self.length[k])
        size = struct.calcsize(TYPES[int(self.element[k])][1])
        elements = self.buf[start : start + size * min(count, ARRAY_ELEMENTS)]
        return struct.pack(LENGTH, count).hex() + elements.tobytes().hex()


def layout_text(fields: tuple[PrimitiveField, ...]) -> str:
    return "\n".join(f"{TYPES[f.code][0]} {f.name}" for f in fields)


def decode(stored: str, layout: str | None, array_type: str | None = None) -> list[tuple[str, str, str]]:
    """An object's stored ``values`` as ``(type, name, value)``: through its class's ``layout`` for
    an instance, or, for a primitive array, its type (``int[]``) as one value ``int[LENGTH]``.
    Empty where the two do not fit together (a layout missing, or not the object's)."""
    try:
        raw = bytes.fromhex(stored)
    except ValueError:
        return []
    if array_type is not None and array_type.endswith("[]") and array_type[:-2] in BY_NAME:
        return _array(raw, array_type[:-2])
    if layout is None:
        return []
    found = []
    at = 0
    for line in layout.splitlines():
        type_name, _, name = line.partition(" ")
        fmt = BY_NAME.get(type_name)
        if fmt is None or at + struct.calcsize(fmt) > len(raw):
            return []
        found.append((type_name, name, _text(type_name, struct.unpack_from(fmt, raw, at)[0])))
        at += struct.calcsize(fmt)
    return found if at == len(raw) else []


def _array(raw: bytes, element: str) -> list[tuple[str, str, str]]:
    fmt = BY_NAME[element]
    size = struct.calcsize(fmt)
    if len(raw) < 4 or (len(raw) - 4) % size:
        return []
    (count,) = struct.unpack_from(LENGTH, raw)
    values = [v for (v,) in struct.iter_unpack(fmt, raw[4:])]
    more = "…" if len(values) < count else ""
    if element == "char":
        body = repr("".join(map(_char, values))) + more
    else:
        body = "[" + ", ".join([*(_text(element, v) for v in values), *([more] if more else [])]) + "]"
    return [(f"{element}[{count}]", "", body)]


def _char(code: int) -> str:
    # A lone surrogate is half of a pair Java splits over two chars: shown as its escape.
    return chr(code) if not 0xD800 <= code <= 0xDFFF else f"\\u{code:04x}"


def _text(type_name: str, value: object) -> str:
    """A value as Java prints it."""
    if type_name == "boolean":
        return "true" if value else "false"
    if type_name == "char":
        return repr(_char(int(value)))  # type: ignore[call-overload]
    if isinstance(value, float):
        if type_name == "float":  # the float's own shortest text, not its double's (0.1, not 0.10000000149011612)
            value = np.float32(value)
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
    return str(value)
