"""Chrome DevTools' class names for V8 nodes: how a person groups a ``.heapsnapshot``'s objects."""

from __future__ import annotations

import numpy as np

from heapdb.loader.graph import Detachedness, string_positions

# DevTools class names for node types whose class is not the node's own name.
_CLASS_BY_NODE_TYPE = {"hidden": "(system)", "code": "(compiled code)"}
_NAMED_CLASS_NODE_TYPES = ("object", "native")


def class_names(
    kind: np.ndarray, name: np.ndarray, detachedness: np.ndarray | None, node_types: list[str], strings: list[str]
) -> np.ndarray:
    """DevTools' class name for every node, as string indexes; appends missing names to ``strings``."""
    named = np.array([t in _NAMED_CLASS_NODE_TYPES for t in node_types])[kind]
    # DOM-like names ("<div id=...>", "Detached <div ...>") group by their tag only.
    candidates = np.flatnonzero(np.bincount(name[named], minlength=len(strings))).tolist()
    short_names = {c: _short_dom_name(strings[c]) for c in candidates}
    short_names = {c: short for c, short in short_names.items() if short != strings[c]}
    detached = None
    if detachedness is not None and "native" in node_types:
        detached = (kind == node_types.index("native")) & (detachedness == Detachedness.DETACHED)

    # Every class name this function can look up is known before any is looked up: find the first
    # index of each in one pass over ``strings`` rather than indexing all of them.
    wanted = {_CLASS_BY_NODE_TYPE.get(t, f"({t})") for t in node_types if t not in _NAMED_CLASS_NODE_TYPES}
    wanted.update(short_names.values())
    if detached is not None:
        for c in np.flatnonzero(np.bincount(name[detached], minlength=len(strings))).tolist():
            label = short_names.get(c, strings[c])
            if not label.startswith("Detached "):
                wanted.add("Detached " + label)
    existing: dict[str, int] = {}
    for i in string_positions(strings, wanted):
        existing.setdefault(strings[i], i)

    def index_of(s: str) -> int:
        i = existing.get(s)
        if i is None:
            i = existing[s] = len(strings)
            strings.append(s)
        return i

    per_kind = np.zeros(len(node_types), dtype=np.int32)
    for k, t in enumerate(node_types):
        if t not in _NAMED_CLASS_NODE_TYPES:
            per_kind[k] = index_of(_CLASS_BY_NODE_TYPE.get(t, f"({t})"))
    type_ = np.where(named, name, per_kind[kind])
    remap = {c: index_of(short) for c, short in short_names.items()}
    if remap:
        src = np.fromiter(remap.keys(), dtype=np.int32)
        dst = np.fromiter(remap.values(), dtype=np.int32)
        hit = named & np.isin(type_, src)
        order = np.argsort(src)
        type_[hit] = dst[order][np.searchsorted(src[order], type_[hit])]
    if detached is not None:
        for class_index in np.flatnonzero(np.bincount(type_[detached], minlength=len(strings))).tolist():
            label = strings[class_index]
            if not label.startswith("Detached "):
                type_[detached & (type_ == class_index)] = index_of("Detached " + label)
    return type_


def _short_dom_name(name: str) -> str:
    """``<div id="a">`` → ``<div>``, ``Detached <div id="a">`` → ``Detached <div>``; others unchanged."""
    start = 0 if name.startswith("<") else 10 if name.startswith("Detached <") else -1
    if start < 0:
        return name
    space = name.find(" ", start)
    return name if space == -1 else name[:space] + ">"
