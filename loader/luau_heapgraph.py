"""Luau's own ``heapgraph.py`` path attribution, reproduced exactly, so heapdb's totals can be compared.

Luau ships ``tools/heapgraph.py``: given a baseline dump and a newer one, it says where the *new*
objects (addresses absent from the baseline) hang, as a tree of labelled paths drawn as a flame
graph. Its rules, which this module follows to the letter:

- a breadth-first walk from the dump's listed roots (``mainthread``, ``registry``, in the file's
  order), visiting each address once; an object belongs to the path of the first queue entry for it
  that is taken off the queue;
- only some references start a new path label; the others keep the object at its holder's path:

  ======================  ========================================================
  object                  references followed (label, or "same path")
  ======================  ========================================================
  table                   string keys (same path; always strong), the value under a
                          string key (label: the key's text, unless weak values),
                          other keys and values (same path, unless weak keys/values),
                          array slots (same path), metatable (``__meta``)
  function                env (``__env``), proto (``__proto``), upvalues (label:
                          the proto's ``source``, empty when there is none)
  userdata                metatable (``__meta``)
  thread                  env (``__env``), stack slots (``__stack``)
  proto                   constants and nested protos (same path)
  upvalue                 its object (same path)
  ======================  ========================================================

- weak keys and values come from the table's metatable's string key ``__mode``;
- labels made of heap text (string keys, sources) are cut to
  :data:`~heapdb.units.NAME_LIMIT` characters, lone surrogates escaped;
- each new object adds its size and a count to its path; a path's total is its own plus its
  children's (the flame graph's width). The tree is a :class:`~heapdb.loader.pathtree.PathNode`.

Objects alive only through the VM's unlisted roots are not reached, exactly as in ``heapgraph.py``
(heapdb's own analysis hangs them under "(other roots)" instead).
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

from heapdb.errors import FormatError
from heapdb.loader.formats.luau import load_dump
from heapdb.loader.formats.text import safe_text
from heapdb.loader.pathtree import PathNode
from heapdb.units import shorten

__all__ = ["PathNode", "heapgraph", "heapgraph_files"]


def heapgraph(
    dump: dict[str, Any], baseline: dict[str, Any] | None = None, *, path: str | os.PathLike[str] | None = None
) -> PathNode:
    """The tree of paths to the objects of ``dump`` absent from ``baseline`` (all objects without one)."""
    heap: dict[str, dict[str, Any]] = dump["objects"]
    old = baseline["objects"] if baseline is not None else None
    root = PathNode("")

    # The dump is checked as it is walked: every malformed part is a FormatError naming the object.
    def obj(address: Any) -> dict[str, Any]:
        found = heap.get(address) if isinstance(address, str) else None
        if not isinstance(found, dict):
            raise FormatError(
                path,
                f"a reference to {address!r}, which is not an object of the dump",
                record=f"object {address!r}"[:200],
            )
        return found

    def addresses(o: dict[str, Any], field: str, address: str) -> list[Any]:
        value = o.get(field)
        if value is None:
            return []
        if not isinstance(value, list):
            raise FormatError(path, f"'{field}' must be a list of addresses", record=f"object {address}")
        return value

    def string_at(address: Any) -> str | None:
        if not address:
            return None
        o = obj(address)
        # Bounded (a label is made of it) and encodable.
        return shorten(safe_text(str(o.get("data", "")))) if o.get("type") == "string" else None

    def mode_of(table: dict[str, Any], address: str) -> str:
        meta = table.get("metatable")
        if not meta:
            return ""
        pairs = addresses(obj(meta), "pairs", meta)
        for i in range(0, len(pairs) - 1, 2):
            if string_at(pairs[i]) == "__mode":
                return string_at(pairs[i + 1]) or ""
        return ""

    queue: deque[tuple[str, PathNode]] = deque((address, root.child(name)) for name, address in dump["roots"].items())
    visited: set[str] = set()
    while queue:
        address, node = queue.popleft()
        o = obj(address)
        if address in visited:
            continue
        visited.add(address)
        if old is None or address not in old:
            size = o.get("size", 0)
            if type(size) is not int or not -(1 << 63) <= size < 1 << 63:
                raise FormatError(path, f"'size' {size!r} is not a 64-bit integer"[:200], record=f"object {address}")
            node.count += 1
            node.size += size
        kind = o.get("type")
        follow: list[tuple[Any, PathNode]] = []
        if kind == "table":
            mode = mode_of(o, address)
            weak_keys, weak_values = "k" in mode, "v" in mode
            pairs = addresses(o, "pairs", address)
            for i in range(0, len(pairs) - 1, 2):
                key, value = pairs[i], pairs[i + 1]
                key_text = string_at(key)
                if key_text is not None:
                    follow.append((key, node))  # string keys are always strong
                    if value and not weak_values:
                        follow.append((value, node.child(key_text)))
                else:
                    if key and not weak_keys:
                        follow.append((key, node))
                    if value and not weak_values:
                        follow.append((value, node))
            follow += [(a, node) for a in addresses(o, "array", address)]
            if o.get("metatable"):
                follow.append((o["metatable"], node.child("__meta")))
        elif kind == "function":
            follow.append((o.get("env"), node.child("__env")))
            proto = o.get("proto")
            source = shorten(safe_text(str(obj(proto).get("source", "")))) if proto else ""
            if proto:
                follow.append((proto, node.child("__proto")))
            follow += [(a, node.child(source)) for a in addresses(o, "upvalues", address)]
        elif kind == "userdata":
            if o.get("metatable"):
                follow.append((o["metatable"], node.child("__meta")))
        elif kind == "thread":
            follow.append((o.get("env"), node.child("__env")))
            follow += [(a, node.child("__stack")) for a in addresses(o, "stack", address)]
        elif kind == "proto":
            follow += [(a, node) for a in addresses(o, "constants", address)]
            follow += [(a, node) for a in addresses(o, "protos", address)]
        elif kind == "upvalue" and o.get("object"):
            follow.append((o["object"], node))
        queue.extend((a, n) for a, n in follow if a)
    return root.sum_totals()


def heapgraph_files(final: str | os.PathLike[str], baseline: str | os.PathLike[str] | None = None) -> PathNode:
    """:func:`heapgraph` over dump files, read with the Luau reader's checks."""
    old = load_dump(baseline) if baseline is not None else None
    return heapgraph(load_dump(final), old, path=final)
