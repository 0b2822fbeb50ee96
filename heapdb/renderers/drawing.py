"""Graph answers (why-alive paths, dominator chains, dominated subtrees) as GraphViz dot and SVG.

Each answer becomes a :class:`Figure`, a small list of nodes and edges, which :func:`dot` writes out.
Labels carry the object's type, name, id, sizes in human units and source location, cut as
:mod:`heapdb.renderers.text` cuts them; the root is drawn as a grey house, the object asked about in red.
Every label is escaped for DOT (names come straight from the heap: any text at all).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from heapdb.loader.graph import ROOT_NAME
from heapdb.loader.sources import FRAME_SEPARATOR
from heapdb.queries.results import DominatorChain, ObjectInfo, Retains, WhyAlive
from heapdb.renderers.text import reference_label, short_location, short_name
from heapdb.units import NAME_LIMIT, human_bytes


@dataclass
class FigureEdge:
    source: int
    target: int
    label: str = ""
    weak: bool = False


@dataclass
class Figure:
    """Nodes and edges of a graph answer, with the root(s) and the target singled out."""

    title: str
    objects: dict[int, ObjectInfo] = field(default_factory=dict)
    edges: list[FigureEdge] = field(default_factory=list)
    roots: set[int] = field(default_factory=set)
    target: int | None = None

    def add(self, o: ObjectInfo) -> None:
        self.objects.setdefault(o.id, o)
        if o.root:
            self.roots.add(o.id)


def _type(o: ObjectInfo) -> str:
    return short_name(o.type, NAME_LIMIT)


def figure(answer: WhyAlive | DominatorChain | Retains) -> Figure:
    """The graph to draw for an answer."""
    if isinstance(answer, WhyAlive):
        fig = Figure(
            f"why is {_type(answer.target)} @{answer.target.id} alive? ({answer.tag})", target=answer.target.id
        )
        fig.add(answer.target)
        seen: set[tuple[int, int, str]] = set()
        for path in answer.paths:
            for o in path.objects:
                fig.add(o)
            for reference, a, b in zip(path.references, path.objects, path.objects[1:]):
                key = (a.id, b.id, reference.name)
                if key not in seen:
                    seen.add(key)
                    fig.edges.append(FigureEdge(a.id, b.id, reference_label(reference), reference.weak))
        return fig
    if isinstance(answer, DominatorChain):
        fig = Figure(
            f"dominators of {_type(answer.target)} @{answer.target.id} ({answer.tag})", target=answer.target.id
        )
        fig.add(answer.target)
        for o in answer.chain:
            fig.add(o)
        fig.edges = [FigureEdge(a.id, b.id) for a, b in zip(answer.chain, answer.chain[1:])]
        return fig
    cut = f", showing {len(answer.objects) - 1} of {answer.target.retained_count - 1:,}" if answer.truncated else ""
    fig = Figure(
        f"what {_type(answer.target)} @{answer.target.id} keeps alive ({answer.tag}{cut})", target=answer.target.id
    )
    for o in answer.objects:
        fig.add(o)
    fig.edges = [FigureEdge(a, b) for a, b in answer.edges]
    return fig


def dot_string(text: str) -> str:
    """``text`` as a DOT quoted string: backslashes and quotes escaped, line breaks as DOT's ``\\n``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def node_label(o: ObjectInfo) -> str:
    name = short_name(o.name) or (ROOT_NAME if o.root else "")
    lines = [short_name(o.type)]
    if name and name != o.type:
        lines.append(name)
    lines.append(f"@{o.id}  self {human_bytes(o.self_size)}  retained {human_bytes(o.retained_size)}")
    if o.location:
        lines.append("at " + short_location(o.location))
    elif o.allocated_at:  # the allocating frame: the rest of the stack is too long for a label
        lines.append("allocated in " + short_location(o.allocated_at.split(FRAME_SEPARATOR)[0]))
    return "\n".join(lines)


def dot(answer: WhyAlive | DominatorChain | Retains, link: Callable[[int], str] | None = None) -> str:
    """GraphViz dot source for a graph answer (top to bottom, root at the top); ``link`` gives each
    object's URL, which an SVG drawing makes a clickable node."""
    fig = figure(answer)
    out = [
        "digraph heapdb {",
        f"  label={dot_string(fig.title)}; labelloc=t; fontname=Helvetica;",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor="#f7f7f7", fontname=Helvetica, fontsize=11];',
        "  edge [fontname=Helvetica, fontsize=10];",
    ]
    for o in fig.objects.values():
        attributes = [f"label={dot_string(node_label(o))}"]
        if o.id in fig.roots:
            attributes += ["shape=house", 'fillcolor="#d9d9d9"', "penwidth=2", 'tooltip="root"']
        if o.id == fig.target:
            attributes += ['fillcolor="#ffb3b3"', 'color="#cc0000"', "penwidth=2.5", 'tooltip="target"']
        if link is not None:
            attributes += [f"URL={dot_string(link(o.id))}", 'target="_top"']
        out.append(f"  n{_node_key(o.id)} [{', '.join(attributes)}];")
    for e in fig.edges:
        attributes = [f"label={dot_string(e.label)}"] if e.label else []
        if e.weak:
            attributes.append("style=dashed")
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        out.append(f"  n{_node_key(e.source)} -> n{_node_key(e.target)}{suffix};")
    out.append("}")
    return "\n".join(out) + "\n"


def _node_key(object_id: int) -> str:
    # Ids can be negative in principle; DOT identifiers cannot start with a minus sign.
    return str(object_id) if object_id >= 0 else f"m{-object_id}"


def svg(answer: WhyAlive | DominatorChain | Retains, link: Callable[[int], str] | None = None) -> str:
    """The answer drawn as SVG by GraphViz's ``dot`` (the Debian ``graphviz`` package)."""
    import graphviz

    try:
        return graphviz.Source(dot(answer, link)).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        from heapdb.errors import HeapdbError

        raise HeapdbError(
            "GraphViz's `dot` is not installed (apt-get install graphviz); use the dot format instead"
        ) from None
