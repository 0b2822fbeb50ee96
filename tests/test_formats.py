"""The format declarations (heapdb.loader.formats): each reader writes the name its format declares,
detection finds the declaration, the traits are what the later stages act on, and looking a trait
up imports no reader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from heapdb.errors import FormatError
from heapdb.loader import formats
from heapdb.loader.analysis import Semantics, semantics_for
from heapdb.loader.graph import SYNTHETIC_KIND, EdgeKind, HeapGraph
from heapdb.loader.rules.defaults import RUNTIMES, runtime_of
from heapgen.fuzz import seeds


@pytest.mark.parametrize("declared", formats.FORMATS, ids=lambda f: f.name)
def test_detect_returns_the_declaration_whose_reader_writes_its_name(declared: formats.Format, tmp_path: Path) -> None:
    path = tmp_path / "snapshot"  # no suffix: detection goes by the content
    path.write_bytes(seeds(declared.name)[0])
    assert formats.detect(path) is declared
    assert formats.read_graph(path).meta["format"] == declared.name
    assert formats.named(declared.name) is declared


def test_names_are_unique_and_default_rules_exist() -> None:
    assert len({f.name for f in formats.FORMATS}) == len(formats.FORMATS)
    assert all(f.default_rules is None or f.default_rules in RUNTIMES for f in formats.FORMATS)
    assert formats.named("unknown") is None and formats.named(None) is None


def test_an_unknown_file_names_every_format_it_expected(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(FormatError) as e:
        formats.detect(path)
    assert e.value.problem == (
        "not a snapshot heapdb knows (expected snap.bin magic, a V8 .heapsnapshot, a Luau heap dump, "
        "a Java hprof heap dump or a Mono log-profiler .mlpd file)"
    )


def graph_of(meta: dict[str, object]) -> HeapGraph:
    """A root holding one object, with ``meta``."""
    return HeapGraph(
        ids=np.array([1, 2], dtype=np.int64),
        kind=np.array([0, 1], dtype=np.uint8),
        type=np.array([1, 2], dtype=np.int32),
        name=np.array([1, 2], dtype=np.int32),
        self_size=np.array([0, 8], dtype=np.int64),
        edge_start=np.array([0, 1, 1], dtype=np.int64),
        edge_to=np.array([1], dtype=np.int32),
        edge_kind=np.array([EdgeKind.PROPERTY], dtype=np.uint8),
        edge_name=np.array([3], dtype=np.uint32),
        strings=["", "(root)", "Foo", "foo"],
        node_kinds=[SYNTHETIC_KIND, "object"],
        root=0,
        meta=meta,
    )


@pytest.mark.parametrize(
    ("meta", "semantics", "rules"),
    [
        ({"format": "v8"}, Semantics.V8, "v8"),
        ({"format": "luau"}, Semantics.GENERIC, "luau"),
        ({"format": "hprof", "runtime": "java"}, Semantics.GENERIC, "java"),
        ({"format": "snapbin", "runtime": "Python"}, Semantics.GENERIC, "python"),
        ({"format": "snapbin", "runtime": "v8"}, Semantics.GENERIC, "v8"),  # a snap.bin says its runtime
        ({}, Semantics.GENERIC, None),
    ],
)
def test_semantics_and_default_rules_follow_the_declared_traits(
    meta: dict[str, object], semantics: Semantics, rules: str | None
) -> None:
    graph = graph_of(meta)
    assert semantics_for(graph) is semantics
    assert runtime_of(graph) == rules


def test_a_trait_is_read_without_importing_a_reader() -> None:
    """Questions about stored snapshots look traits up; the readers (and numba) stay unloaded."""
    code = (
        "import sys\n"
        "from heapdb.loader import formats\n"
        "assert formats.named('hprof').ids_are_addresses and not formats.named('v8').ids_are_addresses\n"
        "print(sorted(m for m in sys.modules if m == 'numba' or m.startswith('heapdb.loader.formats.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['heapdb.loader.formats.protocol']"
