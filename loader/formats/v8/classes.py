"""Chrome DevTools' class names for V8 nodes: how a person groups a ``.heapsnapshot``'s objects."""

from __future__ import annotations

import numpy as np

from heapdb.loader.graph import Detachedness

# DevTools class names for node types whose class is not the node's own name.
_CLASS_BY_NODE_TYPE = {"hidden": "(system)", "code": "(compiled code)"}
_NAMED_CLASS_NODE_TYPES = ("object", "native")


def class_names(
    kind: np.ndarray, name: np.ndarray, detachedness: np.ndarray | None, node_types: list[str], strings: list[str]
) -> np.ndarray:
    """DevTools' class name for every node, as string indexes; appends missing names to ``strings``."""
    existing: dict[str, int] = {}
    # Only strings that could be a class name DevTools makes up need a reverse index.
    for i, s in enumerate(strings):
        if s[:1] in ("(", "<") or s.startswith("Detached "):
            existing.setdefault(s, i)

    def index_of(s: str) -> int:
        i = existing.get(s)
        if i is None:
            i = existing[s] = len(strings)
            strings.append(s)
        return i

    per_kind = np.zeros(len(node_types), dtype=np.int32)
    named_kinds = []
    for k, t in enumerate(node_types):
        if t in _NAMED_CLASS_NODE_TYPES:
            named_kinds.append(k)
        else:
            per_kind[k] = index_of(_CLASS_BY_NODE_TYPE.get(t, f"({t})"))
    type_ = per_kind[kind]
    named = np.isin(kind, named_kinds)
    type_[named] = name[named]
    # DOM-like names ("<div id=...>", "Detached <div ...>") group by their tag only.
    candidates = np.flatnonzero(np.bincount(name[named], minlength=len(strings)))
    remap = {}
    for candidate in candidates.tolist():
        short = _short_dom_name(strings[candidate])
        if short != strings[candidate]:
            remap[candidate] = index_of(short)
    if remap:
        src = np.fromiter(remap.keys(), dtype=np.int32)
        dst = np.fromiter(remap.values(), dtype=np.int32)
        hit = named & np.isin(type_, src)
        order = np.argsort(src)
        type_[hit] = dst[order][np.searchsorted(src[order], type_[hit])]
    if detachedness is not None and "native" in node_types:
        detached = (kind == node_types.index("native")) & (detachedness == Detachedness.DETACHED)
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
