"""Small charts drawn on the server as inline SVG: no script, readable by a screen reader through
their title and description, and the same data always stands in a table beside them."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

from heapdb.renderers.treemap import hue
from heapdb.units import human_bytes

WIDTH, HEIGHT = 720, 240  # the drawing's user units; it scales to the page's width
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 80, 20, 12, 28
TREND_SERIES = 8  # lines drawn at most: more would not be told apart


def line_colour(label: str) -> str:
    """Dark enough on white for a 2-pixel line; the hue is the label's everywhere."""
    return f"hsl({hue(label)} 65% 38%)"


def trend_svg(steps: Sequence[str], series: Sequence[tuple[str, Sequence[int]]], what: str) -> Markup:
    """One line per ``(label, values)``, a value per step (oldest first), on one byte scale from 0.

    ``what`` says what the values are, for the chart's accessible title."""
    drawn = list(series)[:TREND_SERIES]
    top = max((v for _, values in drawn for v in values), default=0) or 1
    room_x, room_y = WIDTH - MARGIN_LEFT - MARGIN_RIGHT, HEIGHT - MARGIN_TOP - MARGIN_BOTTOM

    def x(i: int) -> float:
        return MARGIN_LEFT + (room_x * i / (len(steps) - 1) if len(steps) > 1 else room_x / 2)

    def y(v: int) -> float:
        return MARGIN_TOP + room_y * (1 - v / top)

    parts = [
        f'<svg class="trend" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="trend-title trend-desc">',
        f'<title id="trend-title">{escape(what)} per snapshot, {len(drawn)} largest</title>',
        f'<desc id="trend-desc">From {escape(steps[0])} to {escape(steps[-1])}; the table below has every value.</desc>',
    ]
    for fraction in (0, 0.5, 1):  # a few grid lines, labelled in bytes
        at = y(round(top * fraction))
        parts.append(f'<line class="grid" x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{at:.1f}" y2="{at:.1f}"/>')
        parts.append(
            f'<text class="axis" x="{MARGIN_LEFT - 6}" y="{at + 4:.1f}" text-anchor="end">{human_bytes(top * fraction)}</text>'
        )
    for i, step in enumerate(steps):
        parts.append(
            f'<text class="axis" x="{x(i):.1f}" y="{HEIGHT - 8}" text-anchor="middle">{escape(step[:24])}</text>'
        )
    for label, values in drawn:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        colour = line_colour(label)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"><title>{escape(label)}</title></polyline>'
        )
        for i, v in enumerate(values):
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(label)} in {escape(steps[i])}: {human_bytes(v)}</title></circle>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))
