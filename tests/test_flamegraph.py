"""Flame graph SVGs (heapdb/renderers/flamegraph.py)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from heapdb.renderers.flamegraph import WIDTH, build_tree, render_svg

SVG = "{http://www.w3.org/2000/svg}"


def frames(svg: str) -> dict[str, float]:
    """Frame widths by full path, read back from the SVG's tooltips."""
    root = ET.fromstring(svg)
    out = {}
    for group in root.iter(f"{SVG}g"):
        title = group.find(f"{SVG}title")
        rect = group.find(f"{SVG}rect")
        assert title is not None and title.text is not None and rect is not None, (
            "each frame has a tooltip and a rectangle"
        )
        out[title.text.splitlines()[0]] = float(rect.attrib["width"])
    return out


def test_widths_are_proportional_to_bytes_and_children_sit_inside_parents() -> None:
    rows = [
        (["mainthread", "__stack", "entries"], 600, 3),
        (["mainthread", "__stack", "listeners"], 200, 2),
        (["mainthread", "__stack"], 100, 1),
        (["registry"], 100, 1),
    ]
    tree = build_tree(rows)
    assert tree.total_size == 1000 and tree.total_count == 7
    widths = frames(render_svg(tree, "test"))
    full = widths["all"]
    assert full == pytest.approx(WIDTH - 20, abs=0.01)
    assert widths["mainthread"] == pytest.approx(full * 0.9, abs=0.01)
    assert widths["mainthread / __stack / entries"] == pytest.approx(full * 0.6, abs=0.01)
    assert widths["registry"] == pytest.approx(full * 0.1, abs=0.01)


def test_labels_and_tooltips_are_escaped_and_cut_to_fit() -> None:
    name = 'a <weird> "key" & ' + "x" * 500
    svg = render_svg(build_tree([([name], 10, 1), (["other"], 990, 1)]), "<title & more>")
    root = ET.fromstring(svg)  # parses: everything is escaped
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "<title & more>" in texts
    tooltips = [t.text for t in root.iter(f"{SVG}title")]
    assert any((t or "").startswith(name) for t in tooltips), "the full name is in the tooltip"
    assert all(len(t or "") < 300 for t in texts), "labels are cut to the frame"


def test_deep_paths_do_not_recurse() -> None:
    path = [f"next{i}" for i in range(5000)]
    tree = build_tree([(path, 64, 1)])
    assert tree.total_size == 64
    svg = render_svg(tree, "deep")
    assert len(re.findall("<rect", svg)) == 5000 + 2  # the frames, "all", and the background


def test_nothing_to_draw_is_an_error() -> None:
    with pytest.raises(ValueError):
        render_svg(build_tree([]), "empty")
