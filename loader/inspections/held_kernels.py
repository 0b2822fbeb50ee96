"""The numba kernels of the "held" inspection (:mod:`.held`): DevTools' breadth-first walk that
avoids some references, and the event handlers of DOM and Node listeners. Imported only where a
graph is inspected, so that the records and the text of a stored answer load no numba.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def reached(edge_start, edge_to, follow, enter, root):  # pragma: no cover - compiled
    """bool[n]: what a breadth-first walk from ``root`` reaches over the references ``follow``
    marks into the objects ``enter`` marks (DevTools' ``bfs`` with a filter)."""
    n = edge_start.shape[0] - 1
    seen = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int32)
    seen[root] = True
    queue[0] = root
    head = 0
    tail = 1
    while head < tail:
        v = queue[head]
        head += 1
        for e in range(edge_start[v], edge_start[v + 1]):
            if not follow[e]:
                continue
            t = edge_to[e]
            if seen[t] or not enter[t]:
                continue
            seen[t] = True
            queue[tail] = t
            tail += 1
    return seen


@numba.njit(cache=True)
def _first_target(edge_start, edge_to, edge_kind, edge_name, v, numeric, string_index, number):
    """The target of ``v``'s first reference named ``string_index`` (string-named kinds) or
    ``number`` (the kinds ``numeric`` marks, named by index); -1 if none."""
    for e in range(edge_start[v], edge_start[v + 1]):
        if numeric[edge_kind[e]]:
            if edge_name[e] == number:
                return edge_to[e]
        elif edge_name[e] == string_index:
            return edge_to[e]
    return -1


@numba.njit(cache=True)
def dom_handlers(
    edge_start, edge_to, edge_kind, edge_name, listeners, numeric, one_index, code_index
):  # pragma: no cover - compiled
    """bool[n]: the event handlers of Blink's ``V8EventListener`` objects (``listeners``), as
    DevTools' ``objectsRetainedByEventHandlers`` finds them: the listener's reference "1" (its
    callback); the callback itself when it has a ``code`` reference (a function), else its first
    referenced object that has one (a framework's wrapper around the handler), else the callback."""
    n = edge_start.shape[0] - 1
    handler = np.zeros(n, dtype=np.bool_)
    for v in listeners:
        callback = _first_target(edge_start, edge_to, edge_kind, edge_name, v, numeric, one_index, 1)
        if callback < 0:
            continue
        if _first_target(edge_start, edge_to, edge_kind, edge_name, callback, numeric, code_index, -1) >= 0:
            handler[callback] = True
            continue
        wrapped = -1
        for e in range(edge_start[callback], edge_start[callback + 1]):
            child = edge_to[e]
            if _first_target(edge_start, edge_to, edge_kind, edge_name, child, numeric, code_index, -1) >= 0:
                wrapped = child
                break
        handler[wrapped if wrapped >= 0 else callback] = True
    return handler


@numba.njit(cache=True)
def emitter_handlers(
    edge_start, edge_to, edge_kind, edge_name, events_index, property_kind, element_kind, function, array
):  # pragma: no cover - compiled
    """bool[n]: the functions Node's EventEmitters keep as listeners: each ``_events`` property's
    object maps an event name (a property) to one function, or to an ``array`` whose elements are
    the functions; ``function`` marks functions (V8's closures)."""
    n = edge_start.shape[0] - 1
    handler = np.zeros(n, dtype=np.bool_)
    for e in range(edge_to.shape[0]):
        if edge_kind[e] != property_kind or edge_name[e] != events_index:
            continue
        events = edge_to[e]
        for f in range(edge_start[events], edge_start[events + 1]):
            if edge_kind[f] != property_kind:
                continue
            value = edge_to[f]
            if function[value]:
                handler[value] = True
            elif array[value]:
                for g in range(edge_start[value], edge_start[value + 1]):
                    if edge_kind[g] == element_kind and function[edge_to[g]]:
                        handler[edge_to[g]] = True
    return handler
