"""Where objects come from in the program: source locations and allocation stacks, as compact arrays.

A reader that knows them attaches them to its :class:`~heapdb.loader.graph.HeapGraph`:

- :class:`SourceLocations`: a script position for some objects (V8 records one for each closure,
  at its function, and for objects made by a constructor, at that constructor). Sparse: only the
  objects that have one cost memory.
- :class:`AllocationTraces`: the call stack each object was allocated from, when the runtime tracked
  allocations (V8 with ``--track-heap-objects`` or DevTools' allocation instrumentation). One int32
  per object names a node of the allocation call tree; the tree and its functions are small.

Lines and columns are kept 0-based, as V8 stores them, and shown 1-based, as DevTools and editors do
(:func:`position_text`). A script whose name is unknown is shown by its id: ``<script 81>``.
A format without columns (Luau) leaves them at -1: ``file:line``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# The frames an allocation stack's text keeps (innermost first), and the most characters it takes:
# enough to name the allocating function and its callers, bounded so a deep recursion costs little.
ALLOCATION_FRAMES = 8
ALLOCATION_TEXT_CHARS = 1000
FRAME_SEPARATOR = " <- "


def position_text(script: str, line: int, column: int) -> str:
    """``file:line:column``, 1-based, from 0-based ``line`` and ``column`` (a negative one is left out)."""
    if line < 0:
        return script
    if column < 0:
        return f"{script}:{line + 1}"
    return f"{script}:{line + 1}:{column + 1}"


_POSITION = re.compile(r"^(?P<script>.*?)(?::(?P<line>\d+)(?::(?P<column>\d+))?)?$", re.DOTALL)


_UNNAMED = re.compile(r"<script (?P<id>\d+)>|<unknown script>")


def parse_position(text: str) -> tuple[str, int, int]:
    """:func:`position_text` read back: (script, 0-based line, 0-based column; -1 where absent).
    The numbers are taken from the end, so a script's own colons (a URL's port) stay in its name."""
    found = _POSITION.match(text)
    assert found is not None  # the pattern matches any text
    line, column = found["line"], found["column"]
    return found["script"], int(line) - 1 if line else -1, int(column) - 1 if column else -1


def script_text(strings: list[str], script: int, script_id: int) -> str:
    """A script's name (``script`` indexes ``strings``), or ``<script ID>`` when unknown or empty."""
    name = strings[script] if script >= 0 else ""
    return name or (f"<script {script_id}>" if script_id >= 0 else "<unknown script>")


@dataclass
class SourceLocations:
    """Script positions of some objects: entry ``k`` is node ``node[k]`` (ascending, each once)."""

    node: np.ndarray  # int32[k], node indexes, ascending
    script_id: np.ndarray  # int32[k], the runtime's script id
    script: np.ndarray  # int32[k], the script's name as an index into the graph's strings, -1 when unknown
    line: np.ndarray  # int32[k], 0-based
    column: np.ndarray  # int32[k], 0-based

    def validate(self, node_count: int, string_count: int) -> None:
        k = self.node.shape[0]
        for label in ("node", "script_id", "script", "line", "column"):
            array = getattr(self, label)
            if array.dtype != np.int32 or array.ndim != 1 or array.shape[0] != k:
                raise ValueError(f"locations.{label}: expected int32[{k}], got {array.dtype}{list(array.shape)}")
        if k and (self.node.min() < 0 or self.node.max() >= node_count):
            raise ValueError("a location's node is not a node index")
        if k > 1 and bool((self.node[1:] <= self.node[:-1]).any()):
            raise ValueError("locations are not in ascending node order, each node once")
        if k and (self.script.min() < -1 or self.script.max() >= string_count):
            raise ValueError("a location's script is not a string index")

    @classmethod
    def from_texts(cls, nodes: list[int], texts: list[str], intern: Callable[[str], int]) -> SourceLocations:
        """The locations stored as ``file:line:column`` texts (``nodes`` ascending, each once), the
        scripts interned with ``intern``; script ids are not stored, so they come back unknown."""
        parsed = [parse_position(t) for t in texts]
        # A script without a name was stored as its id (script_text): it comes back unnamed.
        unnamed = [_UNNAMED.fullmatch(p[0]) for p in parsed]
        return cls(
            node=np.array(nodes, dtype=np.int32),
            script_id=np.array([int(u["id"]) if u and u["id"] else -1 for u in unnamed], dtype=np.int32),
            script=np.array([-1 if u or not p[0] else intern(p[0]) for p, u in zip(parsed, unnamed)], dtype=np.int32),
            line=np.array([p[1] for p in parsed], dtype=np.int32),
            column=np.array([p[2] for p in parsed], dtype=np.int32),
        )

    def text(self, strings: list[str], node: int) -> str | None:
        """Node ``node``'s location as ``file:line:column``, None when it has none."""
        texts = self.texts(strings, node, node + 1)[1]
        return texts[0] if texts else None

    def texts(self, strings: list[str], lo: int, hi: int) -> tuple[np.ndarray, list[str]]:
        """The locations of nodes ``lo`` to ``hi``: (their offsets in the range, their texts)."""
        return self.texts_of(strings, np.arange(lo, hi, dtype=np.int64))

    def texts_of(self, strings: list[str], nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """The locations of ``nodes`` (ascending): (the offsets in ``nodes`` of those located, their texts)."""
        # Searched as int32, like ``node``: numpy would otherwise copy all of ``node`` to int64 for
        # every call (5 MiB for a row of `heapdb analyze` on a 220 MB V8 snapshot).
        at = np.searchsorted(self.node, nodes.astype(self.node.dtype, copy=False))
        located = at < self.node.shape[0]
        located[located] = self.node[at[located]] == nodes[located]
        rows = at[located]
        if rows.shape[0] == 0:
            return np.empty(0, dtype=np.int64), []
        # Many objects share a position (every instance made by one constructor): format each once.
        keys = np.stack([self.script_id[rows], self.script[rows], self.line[rows], self.column[rows]]).astype(np.int64)
        unique, inverse = np.unique(keys, axis=1, return_inverse=True)
        labels = [
            position_text(script_text(strings, script, sid), line, column)
            for sid, script, line, column in zip(*(row.tolist() for row in unique))
        ]
        return np.flatnonzero(located), [labels[i] for i in inverse.reshape(-1).tolist()]


@dataclass(frozen=True)
class Frame:
    """One call of an allocation stack."""

    function: str
    script: str  # "" when unknown (a builtin)
    line: int  # 0-based, -1 when unknown
    column: int  # 0-based, -1 when unknown

    def text(self) -> str:
        name = self.function or "(anonymous)"
        return f"{name} ({position_text(self.script, self.line, self.column)})" if self.script else name


@dataclass
class AllocationTraces:
    """Allocation stacks: ``trace[i]`` is the call-tree node object ``i`` was allocated under (-1: none).

    The call tree is V8's ``trace_tree``: node ``t``'s caller is ``parent[t]`` (-1 at the top), its
    function ``function[t]`` indexes the function arrays (names and scripts index the graph's strings).
    """

    trace: np.ndarray  # int32[n], a call-tree node, -1 where the object has no recorded allocation
    parent: np.ndarray  # int32[t]
    function: np.ndarray  # int32[t]
    function_name: np.ndarray  # int32[f], string index
    function_script: np.ndarray  # int32[f], string index
    function_script_id: np.ndarray  # int32[f]
    function_line: np.ndarray  # int32[f], 0-based, -1 when unknown
    function_column: np.ndarray  # int32[f], 0-based, -1 when unknown

    def validate(self, node_count: int, string_count: int) -> None:
        t, f = self.parent.shape[0], self.function_name.shape[0]
        for label, length in (
            ("trace", node_count),
            ("parent", t),
            ("function", t),
            ("function_name", f),
            ("function_script", f),
            ("function_script_id", f),
            ("function_line", f),
            ("function_column", f),
        ):
            array = getattr(self, label)
            if array.dtype != np.int32 or array.ndim != 1 or array.shape[0] != length:
                raise ValueError(f"allocations.{label}: expected int32[{length}], got {array.dtype}{list(array.shape)}")
        if node_count and (self.trace.min() < -1 or self.trace.max() >= t):
            raise ValueError("an object's allocation trace is not a call-tree node")
        if t and (
            self.parent.min() < -1 or self.parent.max() >= t or self.function.min() < 0 or self.function.max() >= f
        ):
            raise ValueError("the allocation call tree has a parent or function out of range")
        for label in ("function_name", "function_script"):
            array = getattr(self, label)
            if f and (array.min() < 0 or array.max() >= string_count):
                raise ValueError(f"allocations.{label} is not a string index")

    def stack(self, strings: list[str], node: int, limit: int = ALLOCATION_FRAMES) -> list[Frame]:
        """Object ``node``'s allocation stack, innermost (the allocating function) first, at most
        ``limit`` frames; empty when none was recorded."""
        return self.call_stack(strings, int(self.trace[node]), limit)

    def call_stack(self, strings: list[str], t: int, limit: int = ALLOCATION_FRAMES) -> list[Frame]:
        """The stack of call-tree node ``t`` (see :meth:`stack`)."""
        frames: list[Frame] = []
        # The tree's top node is V8's synthetic "(root)", not a frame of the program.
        while t >= 0 and self.parent[t] >= 0 and len(frames) < limit:
            fn = int(self.function[t])
            frames.append(
                Frame(
                    function=strings[int(self.function_name[fn])],
                    script=strings[int(self.function_script[fn])],
                    line=int(self.function_line[fn]),
                    column=int(self.function_column[fn]),
                )
            )
            t = int(self.parent[t])
        return frames

    def text(self, strings: list[str], node: int) -> str | None:
        """Node ``node``'s allocation stack as :func:`stack_text`, None when none was recorded."""
        return stack_text(self.stack(strings, node)) or None

    def texts(self, strings: list[str], lo: int, hi: int) -> tuple[np.ndarray, list[str]]:
        """The allocation stacks of nodes ``lo`` to ``hi`` as text (:func:`stack_text`): (their offsets
        in the range, their texts), each distinct call-tree node formatted once."""
        return self.texts_of(strings, np.arange(lo, hi, dtype=np.int64))

    def texts_of(self, strings: list[str], nodes: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """The allocation stacks of ``nodes`` as text: (the offsets in ``nodes`` of those with one, their texts)."""
        part = self.trace[nodes]
        where = np.flatnonzero(part >= 0)
        if where.shape[0] == 0:
            return where.astype(np.int64), []
        unique, inverse = np.unique(part[where], return_inverse=True)
        labels = [stack_text(self.call_stack(strings, t)) for t in unique.tolist()]
        keep = [i for i, label in enumerate(labels) if label]
        if len(keep) < len(labels):  # a trace at V8's synthetic root names no frame
            ok = np.isin(inverse.reshape(-1), keep)
            where, inverse = where[ok], inverse.reshape(-1)[ok]
        return where.astype(np.int64), [labels[i] for i in inverse.reshape(-1).tolist()]


def stack_text(frames: list[Frame]) -> str:
    """An allocation stack as one line, innermost first: ``f (a.js:3:5) <- g (a.js:9:1)``, at most
    :data:`ALLOCATION_TEXT_CHARS` characters (cut at a frame, with ``<- ...`` when frames are left out)."""
    text = ""
    for i, frame in enumerate(frames):
        part = frame.text() if i == 0 else FRAME_SEPARATOR + frame.text()
        if len(text) + len(part) > ALLOCATION_TEXT_CHARS - len(FRAME_SEPARATOR + "..."):
            return (text + FRAME_SEPARATOR + "...") if text else part[: ALLOCATION_TEXT_CHARS - 3] + "..."
        text += part
    return text
