"""Flame graphs of memory by retainer path, as standalone SVG: width is bytes.

A pure renderer: it draws a :class:`~heapdb.loader.pathtree.PathNode` tree, which the loader builds
(:func:`build_tree` is re-exported here for the callers that draw rows).

Each frame is one label of a path (``mainthread``, ``__stack``, ``entries``); a frame's width is the
bytes of everything at or below its path, its children sit on top of it, largest first. Hovering a
frame shows its full path, bytes and object count (SVG ``<title>``), so the file can be attached
to a bug report and read in any browser, with no script.
"""

from __future__ import annotations

import hashlib
from html import escape

from heapdb.loader.pathtree import PathNode, build_tree
from heapdb.units import human_bytes, shorten

__all__ = ["WIDTH", "build_tree", "render_svg"]

WIDTH = 1200
FRAME_HEIGHT = 18
TITLE_HEIGHT = 40
FONT = "Verdana, sans-serif"
CHAR_WIDTH = 6.6  # average width of a character at font-size 11, for cutting labels to fit
MIN_WIDTH = 0.5  # frames narrower than this many pixels are left out (their bytes still count above)


def _color(label: str) -> str:
    # Warm colours, stable per label, so the same path looks the same in every report.
    digest = hashlib.blake2b(label.encode(), digest_size=3).digest()
    return f"rgb({205 + digest[0] % 50},{80 + digest[1] % 120},{40 + digest[2] % 40})"


def render_svg(root: PathNode, title: str) -> str:
    """The tree as an SVG document (root at the bottom, as in classic flame graphs)."""
    if root.total_size <= 0:
        raise ValueError("nothing to draw: the tree holds no bytes")
    frames: list[tuple[PathNode, tuple[str, ...], float, int, float]] = []  # frame, path, x, depth, width
    stack: list[tuple[PathNode, tuple[str, ...], float, int]] = [(root, (), 10.0, 0)]
    scale = (WIDTH - 20) / root.total_size
    max_depth = 0
    while stack:
        node, path, x, depth = stack.pop()
        width = node.total_size * scale
        if width < MIN_WIDTH:
            continue
        frames.append((node, path, x, depth, width))
        max_depth = max(max_depth, depth)
        child_x = x
        for child in sorted(node.children.values(), key=lambda c: (-c.total_size, c.name)):
            stack.append((child, (*path, child.name), child_x, depth + 1))
            child_x += child.total_size * scale
    height = TITLE_HEIGHT + (max_depth + 1) * FRAME_HEIGHT + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'font-family="{FONT}" font-size="11">',
        '<rect width="100%" height="100%" fill="#fdf8ee"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="16">{escape(title)}</text>',
        f'<text x="10" y="{height - 10}" fill="#555">width = bytes; {human_bytes(root.total_size)} in '
        f"{root.total_count:,} objects; hover a frame for its path</text>",
    ]
    for node, path, x, depth, width in frames:
        y = height - 30 - (depth + 1) * FRAME_HEIGHT
        full = " / ".join(path) or "all"
        share = node.total_size / root.total_size
        tip = f"{full}\n{human_bytes(node.total_size)} ({share:.1%}) in {node.total_count:,} objects; here: {human_bytes(node.size)} in {node.count:,}"
        fits = int((width - 6) / CHAR_WIDTH)
        label = shorten(node.name, fits) if len(node.name) <= fits or fits > 2 else ""
        out.append(
            f"<g><title>{escape(tip)}</title>"
            f'<rect x="{x:.2f}" y="{y}" width="{width:.2f}" height="{FRAME_HEIGHT - 1}" rx="2" fill="{_color(node.name)}"/>'
            + (f'<text x="{x + 3:.2f}" y="{y + 12.5}">{escape(label)}</text>' if label else "")
            + "</g>"
        )
    out.append("</svg>")
    return "\n".join(out)
