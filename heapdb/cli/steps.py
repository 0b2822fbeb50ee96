"""The read and analyse steps that several commands share, each behind a progress bar."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from heapdb.loader import analysis, formats
from heapdb.loader.graph import HeapGraph
from heapdb.progress import bar


def read_with_progress(path: str | os.PathLike[str]) -> tuple[str, HeapGraph]:
    """Detect ``path``'s format from its content and read it, with a bar over its bytes.

    Returns the format's name and the graph.
    """
    module = formats.detect(path)
    with bar(f"read {Path(path).name}", total=os.path.getsize(path), unit="B") as b:
        graph = module.read_graph(path, on_bytes=b.update)
    return module.NAME, graph


def analyse_with_progress(graph: HeapGraph, **options: Any) -> analysis.Analysis:
    """:func:`heapdb.loader.analysis.analyze` with a bar over its steps."""
    with bar("analyse", total=len(analysis.STEPS), unit="step", unit_scale=False) as b:

        def step(_name: str) -> None:
            b.update(1)

        return analysis.analyze(graph, on_step=step, **options)
