"""A dominator treemap: what an object keeps alive, as nested rectangles sized by retained size.

The view is rooted at one object (the snapshot's root by default); the canvas stands for what its
children in the dominator tree retain, each child a rectangle whose area is proportional to its
retained size, and a child large enough shows its own children inside it, under a band with its
label, down to ``depth`` levels. Bounded so a snapshot of millions of objects lays out fast: at most
``width`` children per object (the rest are merged into one "N others" rectangle), none smaller than
``min_area`` square pixels, one round trip to Neo4j per level
(:meth:`~heapdb.queries.questions.Questions.dominated_largest`). The rectangles are placed by the
``squarify`` package (Bruls, Huizing and van Wijk's squarified treemaps).

An object's self size is not a rectangle of its own: its band stands for it. Within one parent,
the children (the "others" included) fill the parent's inner area exactly, in proportion to their
retained sizes.

Rectangles are coloured by type, or (``colour=owner``) by their object's owner (its package,
category...: heapdb.loader.owners, where a ``[[bucket]]`` rule's bucket comes first), or on a
snapshot stored before owners, the bucket a rule put it in: the same stable hue per name either
way, objects with neither a neutral grey.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import squarify  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field

from heapdb.loader.store import Snapshot
from heapdb.queries.questions import Questions
from heapdb.queries.results import ObjectInfo
from heapdb.units import human_bytes, short_name

WIDTH, HEIGHT = 1200, 720  # the canvas, in SVG user units (about pixels at a desktop width)
BAND = 20  # the label band atop a rectangle whose children are drawn inside it
PAD = 2  # the margin between a parent's edge and its children (left, right, bottom)
MIN_INNER_WIDTH, MIN_INNER_HEIGHT = 48, 28  # a rectangle smaller inside than this shows no children
FONT = 12  # label size, user units
CHAR_WIDTH = 7.0  # a generous average width of a label character at FONT (system sans-serif)
LEGEND_TYPES = 12
NO_OWNER = "(no owner)"  # the legend's name for objects with no owner (a snapshot stored before owners)
MIN_LABEL = 5  # characters a cut label keeps at least, the ellipsis included


class Limits(BaseModel):
    """How much of the dominator tree one view shows (query parameters of the treemap page)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    root: int | None = Field(None, description="The object the view is rooted at (default: the snapshot's root).")
    depth: int = Field(3, ge=1, le=4, description="Levels of nesting.")
    width: int = Field(24, ge=1, le=100, description="Children shown per object; the rest are merged into one.")
    min_area: int = Field(300, ge=16, le=20_000, description="The smallest rectangle drawn, in square pixels.")
    colour: Literal["type", "owner"] = Field(
        "type", description="What a rectangle's fill stands for: its object's type, or its owner (bucket)."
    )


DEFAULTS = Limits()


@dataclass
class Box:
    """One rectangle: an object (``id``), or the merged rest of a parent's children (``id`` None)."""

    id: int | None
    type: str
    name: str
    retained_size: int
    self_size: int
    retained_count: int
    x: float
    y: float
    w: float
    h: float
    depth: int
    parent: int
    others: int = 0  # for a merged rectangle: how many objects it stands for
    nested: bool = False  # its children are drawn inside it, under its band
    owner: str | None = None  # the object's owner, else its bucket (docs/rules.md); None: neither
    children: list[Box] = field(default_factory=list, repr=False)

    @property
    def label(self) -> str:
        if self.id is None:
            return f"{self.others:,} others"
        name = short_name(self.name, 60) if self.name and self.name != self.type else ""
        return f"{self.type} {name}" if name else self.type

    @property
    def accessible_name(self) -> str:
        return f"{self.label}, {human_bytes(self.retained_size)}"

    def inner(self) -> tuple[float, float, float, float]:
        """Where its children go: inside its edges, below its band."""
        return self.x + PAD, self.y + BAND, self.w - 2 * PAD, self.h - BAND - PAD

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("children")
        for key in ("x", "y", "w", "h"):
            out[key] = round(out[key], 3)
        return out


@dataclass
class Treemap:
    """One laid-out view: its root object, the rectangles depth first (a parent before its children)."""

    root: ObjectInfo
    limits: Limits
    boxes: list[Box]
    width: int = WIDTH
    height: int = HEIGHT

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "limits": self.limits.model_dump(exclude={"root"}),
            "canvas": {"width": self.width, "height": self.height, "band": BAND, "pad": PAD},
            "rectangles": [b.as_dict() for b in self.boxes],
        }

    def key(self, box: Box) -> str:
        """What ``box``'s colour stands for in this view: its type, or its owner (NO_OWNER for none)."""
        if self.limits.colour == "owner":
            return box.owner if box.owner is not None else NO_OWNER
        return box.type

    def fill(self, box: Box) -> str:
        """``box``'s fill: by type or by owner as the limits say; a merged rest is never coloured."""
        if box.id is None:
            return colour("", box.depth)
        if self.limits.colour == "owner":
            return owner_colour(box.owner, box.depth)
        return colour(box.type, box.depth)

    def legend(self) -> list[tuple[str, int, str]]:
        """The types (or owners) in view with the bytes of their innermost rectangles (those
        showing no children: what the eye sees of that colour), largest first, each with the
        colour of its largest such rectangle (the shade depends on the depth)."""
        totals: dict[str, int] = {}
        largest: dict[str, Box] = {}
        for box in self.boxes:
            if box.id is not None and not box.nested:
                key = self.key(box)
                totals[key] = totals.get(key, 0) + box.retained_size
                if key not in largest or box.retained_size > largest[key].retained_size:
                    largest[key] = box
        ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:LEGEND_TYPES]
        return [(name, size, self.fill(largest[name])) for name, size in ranked]


def lay_out(ask: Questions, snapshot: Snapshot, root: ObjectInfo, limits: Limits) -> Treemap:
    """The treemap of what ``root`` dominates, level by level (one query per level)."""
    top: list[Box] = []
    # (object, where its children go, the list they join)
    frontier: list[tuple[ObjectInfo, tuple[float, float, float, float], list[Box]]] = [
        (root, (0.0, 0.0, float(WIDTH), float(HEIGHT)), top)
    ]
    for level in range(1, limits.depth + 1):
        frontier = [f for f in frontier if f[0].retained_count > 1 and f[0].retained_size > f[0].self_size]
        if not frontier:
            break
        # Bytes per square pixel inside each parent: the smallest child worth asking for.
        min_sizes = [
            math.ceil(limits.min_area * (o.retained_size - o.self_size) / (area[2] * area[3]))
            for o, area, _ in frontier
        ]
        found = ask.dominated_largest(snapshot, [o.id for o, _, _ in frontier], limits.width, min_sizes)
        following: list[tuple[ObjectInfo, tuple[float, float, float, float], list[Box]]] = []
        for parent, (x, y, w, h), siblings in frontier:
            answer = found.get(parent.id)
            shown = [c for c in answer.largest if c.retained_size > 0] if answer else []
            rest = parent.retained_size - parent.self_size - sum(c.retained_size for c in shown)
            rest_count = (answer.children if answer else 0) - len(shown)
            items: list[ObjectInfo | None] = [*shown, *([None] if rest > 0 and rest_count > 0 else [])]
            sizes = [c.retained_size if c is not None else rest for c in items]
            # squarify takes sizes largest first (the merged rest too: last, it would be squeezed
            # into thin strips beside a large "others" block).
            order = sorted(range(len(items)), key=lambda i: -sizes[i])
            ordered = [sizes[i] for i in order]
            placed = squarify.squarify(squarify.normalize_sizes(ordered, w, h), x, y, w, h) if items else []
            for i, rect in zip(order, placed, strict=True):
                child = items[i]
                where = (rect["x"], rect["y"], rect["dx"], rect["dy"], level, parent.id)
                if child is None:
                    box = Box(None, "", "", rest, 0, rest_count, *where, others=rest_count)
                else:
                    about = (child.id, child.type, child.name, child.retained_size, child.self_size)
                    box = Box(*about, child.retained_count, *where, owner=child.owner or child.bucket)
                siblings.append(box)
            # Drawn in the order they were listed: largest first.
            siblings.sort(key=lambda b: (b.id is None, -b.retained_size))
            if level == limits.depth:
                continue
            by_id = {c.id: c for c in shown}
            for box in siblings:
                child = by_id.get(box.id) if box.id is not None else None
                inner = box.inner()
                roomy = inner[2] >= MIN_INNER_WIDTH and inner[3] >= MIN_INNER_HEIGHT
                if child is not None and child.retained_count > 1 and roomy:
                    box.nested = True
                    following.append((child, inner, box.children))
        frontier = following
    return Treemap(root, limits, list(_depth_first(top)))


def _depth_first(boxes: list[Box]) -> Iterator[Box]:
    for box in boxes:
        yield box
        yield from _depth_first(box.children)


# --- drawing helpers for the template


def colour(type_name: str, depth: int = 1) -> str:
    """A stable fill per type (the same type is the same colour in every view), light enough for
    dark text; deeper levels a little darker so nesting reads."""
    if not type_name:
        return "#e3e5e8"
    lightness = (88, 80, 73, 68)[min(depth, 4) - 1]
    return f"hsl({hue(type_name)} 62% {lightness}%)"


def owner_colour(owner: str | None, depth: int = 1) -> str:
    """A stable fill per owner (bucket), as :func:`colour` per type; no owner: a neutral grey, a
    shade darker than a merged rest's, deeper levels darker still."""
    if owner is None:
        lightness = (82, 77, 72, 68)[min(depth, 4) - 1]
        return f"hsl(220 4% {lightness}%)"
    return colour(owner, depth)


def hue(name: str) -> int:
    """A stable hue per name: a type has one colour in every view (treemaps, trend charts)."""
    return zlib.crc32(name.encode("utf-8")) % 360


def fit(text: str, room: float) -> str:
    """``text`` cut (with an ellipsis) to what fits in ``room`` user units at the label size."""
    chars = int(room // CHAR_WIDTH)
    if chars < min(len(text), MIN_LABEL):  # a stub like "(c…" says nothing: no label
        return ""
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


@dataclass(frozen=True)
class Label:
    """One line of text drawn on a rectangle."""

    x: float
    y: float
    text: str
    end: bool = False  # anchored at its right end
    size: bool = False  # the bytes (drawn muted)


def labels(box: Box) -> list[Label]:
    """What a rectangle says, where it fits: in its band (name left, size right) when its children
    are drawn inside it, else a name line and, room allowing, a size line. Text never leaves its
    rectangle (widths are estimated generously)."""
    size = human_bytes(box.retained_size)
    room = box.w - 8
    size_room = len(size) * CHAR_WIDTH
    left, top = box.x + 4, box.y + 14.5
    if box.h < 17 or room < 2 * CHAR_WIDTH:
        return []
    if box.nested:
        if room >= size_room + 5 * CHAR_WIDTH:
            name = fit(box.label, room - size_room - CHAR_WIDTH)
            return [Label(left, top, name), Label(box.x + box.w - 4, top, size, end=True, size=True)]
        return [Label(left, top, fit(box.label, room))]
    lines = [Label(left, top, fit(box.label, room))]
    if box.h >= 34 and room >= size_room:
        lines.append(Label(left, top + 15, size, size=True))
    return [line for line in lines if line.text]
