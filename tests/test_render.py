"""Text and GraphViz renderings of answers: escaping of hostile names, root and target marks, and
that GraphViz's own `dot` accepts what heapdb writes."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from heapdb.queries.results import DominatorChain, ObjectInfo, Reference, RetainerPath, Retains, WhyAlive
from heapdb.renderers import drawing, text

HOSTILE = 'say "hi" <b>&amp;</b>\\n back\\slash\nnew line\ttab }];'


def obj(
    object_id: int, type_name: str, name: str = "", *, root: bool = False, self_size: int = 16, retained: int = 2048
) -> ObjectInfo:
    return ObjectInfo(
        id=object_id,
        type=type_name,
        name=name,
        kind="object",
        self_size=self_size,
        retained_size=retained,
        retained_count=3,
        distance=None,
        reachable=True,
        root=root,
    )


def sample_answer() -> WhyAlive:
    root = obj(1, "(synthetic)", "", root=True, self_size=0, retained=10 * 2**20)
    holder = obj(20, 'Klass"<x>', HOSTILE, retained=1536)
    array = obj(30, "(array)", "", retained=1024)
    target = obj(-40, "LeakedItem", "leaked \u00e9t\u00e9", retained=352)
    path = RetainerPath(
        [root, holder, array, target],
        [Reference("property", 'the "cache"'), Reference("internal", "elements"), Reference("element", "3")],
    )
    return WhyAlive(tag="build123", target=target, paths=[path], ignored={"names": ["x"], "types": [], "ids": []})


def test_text_chain_reads_root_first_with_one_hop_per_line() -> None:
    shown = text.why_text(sample_answer())
    lines = shown.splitlines()
    assert lines[0].startswith("why is LeakedItem") and "@-40" in lines[0]
    assert "ignoring names: x" in shown
    chain = lines[lines.index("path 1 (3 references):") + 1 :]
    assert chain[0].strip().startswith("(synthetic) (root)")
    assert chain[1].strip().startswith('--[the "cache"]--> Klass"<x>')
    assert chain[3].strip().startswith("--[[3]]--> LeakedItem")
    assert "(16 B, retained 352 B)" in chain[3]
    # A name with a line break stays on its line.
    assert len(chain) == 4 and "\\n" in chain[1]


def dot_labels(source: str) -> list[str]:
    """The label strings of a DOT source, unescaped the way GraphViz reads them."""
    raw = re.findall(r'label="((?:[^"\\]|\\.)*)"', source)
    return [re.sub(r"\\(.)", r"\1", label) for label in raw]


def test_dot_escapes_labels_and_marks_root_and_target() -> None:
    source = drawing.dot(sample_answer())
    assert source.startswith("digraph heapdb {") and source.rstrip().endswith("}")
    labels = dot_labels(source)
    # Quotes and backslashes survive the round trip; raw line breaks never reach DOT.
    assert any('Klass"<x>' in label for label in labels)
    assert any('say "hi" <b>&amp;</b>' in label for label in labels)
    assert any(label == 'the "cache"' for label in labels) and "[3]" in labels
    assert "\n" not in "".join(re.findall(r'label="((?:[^"\\]|\\.)*)"', source))
    root_line = next(line for line in source.splitlines() if line.strip().startswith("n1 "))
    target_line = next(line for line in source.splitlines() if line.strip().startswith("nm40 "))
    assert "shape=house" in root_line and 'tooltip="root"' in root_line
    assert 'tooltip="target"' in target_line and "#cc0000" in target_line
    assert "10.0 MiB" in source and "1.5 KiB" in source


@pytest.mark.skipif(
    shutil.which("dot") is None, reason="GraphViz's dot is not installed (scripts/bootstrap.sh installs it)"
)
def test_graphviz_accepts_every_graph_answer() -> None:
    why = sample_answer()
    chain = DominatorChain(tag="t", target=why.target, chain=why.paths[0].objects)
    retains = Retains(
        tag="t",
        target=why.paths[0].objects[1],
        objects=why.paths[0].objects[1:],
        edges=[(20, 30), (30, -40)],
        depth=3,
        limit=50,
        truncated=False,
    )
    for answer in (why, chain, retains):
        source = drawing.dot(answer)
        done = subprocess.run(["dot", "-Tplain"], input=source, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        # -Tplain lists every node and edge GraphViz laid out: all of ours, nothing more.
        nodes = [line for line in done.stdout.splitlines() if line.startswith("node ")]
        edges = [line for line in done.stdout.splitlines() if line.startswith("edge ")]
        assert len(nodes) == len(drawing.figure(answer).objects)
        assert len(edges) == len(drawing.figure(answer).edges)
    svg = drawing.svg(why)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "LeakedItem" in svg
    assert "&lt;b&gt;" in svg  # the hostile name is text in the SVG, not markup


def test_figures_merge_shared_hops_of_several_paths() -> None:
    why = sample_answer()
    first = why.paths[0]
    other_holder = obj(50, "Other")
    second = RetainerPath(
        [first.objects[0], other_holder, first.objects[-1]], [Reference("property", "a"), Reference("property", "b")]
    )
    why.paths.append(second)
    fig = drawing.figure(why)
    assert set(fig.objects) == {1, 20, 30, -40, 50}
    assert len(fig.edges) == 5 and fig.roots == {1} and fig.target == -40


def test_megabyte_names_and_types_give_bounded_labels_and_lines() -> None:
    from heapdb.units import NAME_LIMIT

    huge = "T\x1b[31m" + "x" * (1 << 20)
    root = obj(1, "(synthetic)", "", root=True, self_size=0)
    target = obj(2, huge, huge)
    answer = WhyAlive(
        tag="t",
        target=target,
        paths=[RetainerPath([root, target], [Reference("element", "9" * (1 << 20))])],
        ignored={"names": [], "types": [], "ids": []},
    )
    source = drawing.dot(answer)
    assert all(len(label) <= 2 * NAME_LIMIT + 100 for label in dot_labels(source))
    assert len(source) < 10 * NAME_LIMIT + 2000 and "\x1b" not in source
    shown = text.why_text(answer)
    assert max(map(len, shown.splitlines())) < 3 * NAME_LIMIT and "\x1b" not in shown
