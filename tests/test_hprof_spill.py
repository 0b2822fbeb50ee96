"""The hprof reader with its arrays spilled to memory-mapped files (``HEAPDB_READ_MEMORY``) reads the
same graph as in memory, array for array, and leaves nothing in the cache directory, also when the
dump is refused halfway."""

from __future__ import annotations

import dataclasses
import mmap
import random
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from heapdb import settings
from heapdb.errors import FormatError
from heapdb.loader.formats import hprof
from heapdb.loader.graph import HeapGraph
from heapgen.hprof_writer import HprofWriter, standard_classes
from heapgen.seeds import random_dump
from tests.support.java_fixtures import leak_dump

IN_MEMORY = str(1 << 50)


def read(monkeypatch: pytest.MonkeyPatch, cache: Path, path: Path, budget: str) -> HeapGraph:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv(settings.READ_MEMORY.name, budget)
    return hprof.read_graph(path)


def mapped(array: np.ndarray) -> bool:
    """Whether ``array``'s memory is a mapping (a spilled array), not numpy's own."""
    base: Any = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return isinstance(base.obj if isinstance(base, memoryview) else base, mmap.mmap)


def assert_same(a: Any, b: Any, where: str = "graph") -> None:
    """Equal, array by array (dtype and contents), through the graph's dataclasses, dicts and lists."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b), where
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple) and any(isinstance(x, np.ndarray) for x in a):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def spill_left(cache: Path) -> list[Path]:
    root = cache / "heapdb" / "spill"
    return list(root.rglob("*")) if root.exists() else []


COLUMNS = ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name")


def test_a_real_dump_read_spilled_is_the_same_graph(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = leak_dump(tmp_path_factory, 400, everything=True).dump  # the oracle test's dump, made once
    whole = read(monkeypatch, tmp_path, dump, IN_MEMORY)
    assert not any(mapped(getattr(whole, c)) for c in COLUMNS)
    spilled = read(monkeypatch, tmp_path, dump, "0")
    assert all(mapped(getattr(spilled, c)) for c in COLUMNS)
    assert spilled.values is not None and mapped(spilled.values.offset)
    assert_same(whole, spilled)
    assert spill_left(tmp_path) == []
    # A budget of about half the arrays: the first ones made stay in memory, the later ones spill.
    total = sum(getattr(whole, c).nbytes for c in COLUMNS)
    half = read(monkeypatch, tmp_path, dump, str(total // 2))
    assert not mapped(half.ids) and mapped(half.edge_to)
    assert_same(whole, half)
    assert spill_left(tmp_path) == []


def test_random_dumps_read_spilled_are_the_same_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(40)
    for case in range(12):  # Android ones among them: heaps, arrays without data, allocation traces
        data, _ = random_dump(rng, rng.choice([4, 8]), case % 3 == 0)
        path = tmp_path / f"{case}.hprof"
        path.write_bytes(data)
        assert_same(
            read(monkeypatch, tmp_path, path, IN_MEMORY), read(monkeypatch, tmp_path, path, "0"), f"case {case}"
        )
    assert spill_left(tmp_path) == []


def test_a_dump_refused_after_spilling_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = HprofWriter(4)
    c = standard_classes(w)
    w.instance(0x7000, c["java.lang.Object"])
    # An instance whose field bytes its class does not have: found while the edges are read, after
    # the object columns and the id table have been made (spilled here).
    w.raw_sub(b"\x21" + w.ident(0x8000) + struct.pack(">I", 0) + w.ident(c["java.lang.Object"]) + struct.pack(">I", 4))
    w.raw_sub(bytes(4))
    path = tmp_path / "bad.hprof"
    path.write_bytes(w.to_bytes())
    with pytest.raises(FormatError, match="field bytes do not match") as caught:
        read(monkeypatch, tmp_path, path, "0")
    assert caught.value.offset is not None and caught.value.offset > 0
    assert spill_left(tmp_path) == []
