"""Snapshots for tests: where the shared Luau dumps are, and loading a file into the test database.

A test that compares what Neo4j answers with what the analysis computes needs both sides of one
snapshot: :func:`load_snapshot` reads and analyses the file in process and loads the same analysis
under a fresh tag, so the two cannot drift apart.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heapdb.db import Database
from heapdb.loader import analysis, formats, store
from heapdb.loader.analysis import Analysis
from heapdb.loader.graph import HeapGraph

# Real Luau VM dumps, beside the repository (never copied into it); tests skip when they are absent.
LUAU_FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "luau"


@dataclass
class Loaded:
    """A snapshot loaded under ``tag``, with its graph and analysis in process."""

    tag: str
    graph: HeapGraph
    result: Analysis

    def index(self, object_id: int) -> int:
        return int(np.flatnonzero(self.graph.ids == object_id)[0])

    def id(self, node: int) -> int:
        return int(self.graph.ids[node])


def load_snapshot(database: Database, path: Path, label: str, meta: dict[str, str] | None = None) -> Loaded:
    """Read, analyse and load ``path`` under a unique tag starting with ``test-{label}-``."""
    graph = formats.read_graph(path)
    result = analysis.analyze(graph)
    tag = f"test-{label}-{uuid.uuid4().hex[:8]}"
    store.load(database, store.LoadInput.from_analysis(graph, result), tag, meta=meta)
    return Loaded(tag, graph, result)


def load_synthetic(database: Database, label: str, objects: int, references: int, seed: int) -> Loaded:
    """A synthetic heap (``heapgen.synth``) of that size, analysed and loaded as :func:`load_snapshot` loads a file."""
    from heapgen.synth import synth_graph

    graph = synth_graph(objects, references, seed=seed)
    result = analysis.analyze(graph)
    tag = f"test-{label}-{uuid.uuid4().hex[:8]}"
    store.load(database, store.LoadInput.from_analysis(graph, result), tag)
    return Loaded(tag, graph, result)
