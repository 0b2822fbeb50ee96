"""An object's retainers tree and containment tree, as DevTools' Retainers pane and MAT's lists of
incoming and outgoing references let a person step through them.

A tree's subject is the object of the page. Each level lists one object's references a page at a
time (:meth:`~heapdb.queries.questions.Questions.references`): for the retainers tree what holds it,
nearest the root first; for the containment tree what it holds, largest first. A node is named by
its *path*, the ids from the subject's first level down to it, so the same object reached two ways
is two nodes, as in DevTools; an object already on its own path is a cycle, marked and not opened.

Which nodes are open is part of the page's URL (``open=in:12.34``, repeatable), so a tree opened
three levels deep is a link like any other; without JavaScript each toggle is a link to the page
with one path more or fewer open, and with it the page's small client fetches the level as a
server-rendered fragment and writes the same URL into the address bar.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from heapdb.errors import ParameterError
from heapdb.loader.store import Snapshot
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Neighbour, ObjectInfo, ReferenceLevel

DIRECTIONS = ("in", "out")  # the retainers tree, the containment tree
LEVEL_ROWS = 20  # references per level, before "more"
MAX_OPEN = 64  # open nodes in one URL: each is one query
MAX_PATH = 64  # levels below the subject
_OPEN = re.compile(r"(in|out):(-?[0-9]{1,19}(?:\.-?[0-9]{1,19})*)")

Path = tuple[int, ...]


@dataclass(frozen=True)
class Branch:
    """One node: the reference that leads to it, its object, and its own level when it is open."""

    direction: str
    path: Path
    neighbour: Neighbour
    cycle: bool  # its object is the subject or already above it on its path
    level: Level | None

    @property
    def object(self) -> ObjectInfo:
        return self.neighbour.object

    @property
    def leaf(self) -> bool:
        """Nothing to open: a cycle, or the root in the retainers tree (nothing holds it)."""
        return self.cycle or (self.object.root and self.direction == "in")


@dataclass(frozen=True)
class Level:
    """A page of one node's references (``path`` empty: the subject's)."""

    direction: str
    path: Path
    offset: int
    total: int
    branches: tuple[Branch, ...]

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.branches)
        return end if end < self.total else None


def open_value(direction: str, path: Path) -> str:
    """How a URL names an open node: ``in:12.34``."""
    return f"{direction}:{'.'.join(map(str, path))}"


def parse_path(text: str) -> Path:
    """``12.34`` as a path; the empty text is the subject's own level."""
    if not text:
        return ()
    match = _OPEN.fullmatch(f"in:{text}")
    if match is None:
        raise ParameterError(f"path: expected object ids joined by dots (12.34), got {text[:80]!r}")
    path = tuple(int(i) for i in match[2].split("."))
    if len(path) > MAX_PATH:
        raise ParameterError(f"path: at most {MAX_PATH} levels, got {len(path)}")
    return path


def parse_open(values: Iterable[str]) -> dict[str, set[Path]]:
    """The open nodes a URL names, by tree; every node above an open one is open too."""
    found: dict[str, set[Path]] = {d: set() for d in DIRECTIONS}
    values = list(values)
    if len(values) > MAX_OPEN:
        raise ParameterError(f"open: at most {MAX_OPEN} open nodes, got {len(values)}")
    for value in values:
        match = _OPEN.fullmatch(value)
        if match is None:
            raise ParameterError(f"open: expected in:ID.ID... or out:ID.ID..., got {value[:80]!r}")
        path = parse_path(match[2])
        found[match[1]] |= {path[:n] for n in range(1, len(path) + 1)}
    return found


def closed(values: Iterable[str], direction: str, path: Path) -> list[str]:
    """``values`` without the node at ``path`` and every node below it."""
    kept = []
    for value in values:
        d, _, text = value.partition(":")
        if d != direction or parse_path(text)[: len(path)] != path:
            kept.append(value)
    return kept


def read_levels(
    ask: Questions, snapshot: Snapshot, subject: int, opened: dict[str, set[Path]]
) -> dict[tuple[str, Path], ReferenceLevel]:
    """The first page of every open node's level, asked side by side: which nodes are open is in the
    URL, so no level waits for the one above it (Neo4j answers each on its own thread)."""
    wanted = [
        (direction, path)
        for direction, paths in opened.items()
        for path in sorted(paths)
        if len(path) < MAX_PATH and path[-1] not in (subject, *path[:-1])  # a cycle is never opened
    ]
    if not wanted:
        return {}
    with ThreadPoolExecutor(min(4, len(wanted))) as pool:
        futures = {
            key: pool.submit(
                ask.references, snapshot, key[1][-1], params.References(direction=key[0], limit=LEVEL_ROWS)
            )
            for key in wanted
        }
        return {key: future.result() for key, future in futures.items()}


def level(
    direction: str,
    subject: int,
    answer: ReferenceLevel,
    path: Path = (),
    answers: dict[tuple[str, Path], ReferenceLevel] | None = None,
) -> Level:
    """``answer``, the level of ``path``'s object (the subject's for ``()``), as rows, with the open
    nodes below it whose levels ``answers`` holds (:func:`read_levels`)."""
    above = {subject, *path}
    branches = []
    for n in answer.references:
        here = (*path, n.object.id)
        cycle = n.object.id in above
        below = None
        if answers and (direction, here) in answers and not cycle:
            below = level(direction, subject, answers[(direction, here)], here, answers)
        branches.append(Branch(direction, here, n, cycle, below))
    return Level(direction, path, answer.offset, answer.total, tuple(branches))
