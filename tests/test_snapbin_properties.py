"""Property tests for snap.bin: random graphs round-trip, random damage is a FormatError or harmless.

The oracle is the plain-Python description of the graph the test generated: every object, with its
type, kind, size and ordered references, and the roots grouped by kind under the synthetic root.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heapdb.errors import FormatError
from heapdb.loader.formats.snapbin import SnapbinWriter, read_graph, write_graph
from heapdb.loader.graph import NUMERIC_NAME_KINDS, EdgeKind, HeapGraph

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = st.text(alphabet=st.characters(codec="utf-8"), max_size=6)


@dataclass
class Model:
    objects: list[
        tuple[int, str, str, int, list[tuple[int, EdgeKind, str | int]], str]
    ]  # id, type, kind, size, refs, name
    roots: list[tuple[str, str, int]]  # kind, name, target


@st.composite
def models(draw: st.DrawFn) -> Model:
    ids = draw(
        st.one_of(
            st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=0, max_size=25, unique=True),  # sparse
            st.integers(0, 25).map(lambda n: [2 * i + 1 for i in range(n)]),  # dense, V8-like
        )
    )
    objects = []
    for i in ids:
        refs = []
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(list(EdgeKind)))
            name: str | int = draw(st.integers(0, (1 << 32) - 1)) if kind in NUMERIC_NAME_KINDS else draw(NAMES)
            refs.append((draw(st.sampled_from(ids)), kind, name))
        objects.append(
            (
                i,
                draw(NAMES),
                draw(st.sampled_from(["object", "array", "string", "native"])),
                # Any size, as long as all of them add up to less than 2^62 (MAX_TOTAL_SIZE).
                draw(st.integers(0, (1 << 56) - 1)),
                refs,
                draw(NAMES),
            )
        )
    roots = []
    if ids:
        for _ in range(draw(st.integers(0, 5))):
            roots.append(
                (draw(st.sampled_from(["stack", "module", "handle"])), draw(NAMES), draw(st.sampled_from(ids)))
            )
    return Model(objects, roots)


def write_model(model: Model, path: Path, compress: bool) -> None:
    with SnapbinWriter(path, compress=compress, chunk_objects=4, chunk_refs=6) as w:
        w.set_metadata(runtime="hypothesis")
        for i, tname, kind, size, refs, name in model.objects:
            w.add_object(i, w.add_type(tname, kind), size, refs, name=name or None)
        for kind, name, target in model.roots:
            w.add_root(kind, name, target)


def check_against_model(g: HeapGraph, model: Model) -> None:
    ix = {int(i): n for n, i in enumerate(g.ids)}
    assert g.node_count == len(model.objects) + 1 + len({k for k, _, _ in model.roots})
    for i, tname, kind, size, refs, name in model.objects:
        node = ix[i]
        assert (g.type_name(node), g.node_kinds[g.kind[node]], int(g.self_size[node]), g.node_name(node)) == (
            tname,
            kind,
            size,
            name,
        )
        got = [(int(g.ids[g.edge_to[e]]), EdgeKind(int(g.edge_kind[e])), g.edge_label(e)) for e in g.out_edges(node)]
        assert got == [(t, k, str(n)) for t, k, n in refs]
    assert g.node_name(g.root) == "(root)"
    groups: dict[str, list[tuple[str, int]]] = {}
    for kind, name, target in model.roots:
        groups.setdefault(kind, []).append((name, target))
    got_groups = [int(g.edge_to[e]) for e in g.out_edges(g.root)]
    assert [g.node_name(n) for n in got_groups] == [f"({k} roots)" for k in groups]
    for node, members in zip(got_groups, groups.values()):
        assert [(g.edge_label(e), int(g.ids[g.edge_to[e]])) for e in g.out_edges(node)] == members


def same(a: HeapGraph, b: HeapGraph) -> bool:
    arrays = ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name")
    return (
        all(np.array_equal(getattr(a, f), getattr(b, f)) for f in arrays)
        and a.strings == b.strings
        and a.node_kinds == b.node_kinds
        and a.root == b.root
        and a.meta == b.meta
    )


@SETTINGS
@given(models(), st.booleans())
def test_random_graphs_round_trip(model: Model, compress: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.snapbin"
        write_model(model, path, compress)
        g = read_graph(path)
        check_against_model(g, model)
        write_graph(g, Path(d) / "again.snapbin", compress=not compress, chunk_objects=3)
        assert same(g, read_graph(Path(d) / "again.snapbin"))


@SETTINGS
@given(models(), st.booleans(), st.data())
def test_random_damage_is_a_format_error_or_reads_a_valid_graph(
    model: Model, compress: bool, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.snapbin"
        write_model(model, path, compress)
        raw = path.read_bytes()
        damaged: bytes | bytearray
        if data.draw(st.booleans(), label="truncate"):
            damaged = raw[: data.draw(st.integers(0, len(raw) - 1), label="cut")]
        else:
            at = data.draw(st.integers(0, len(raw) - 1), label="at")
            damaged = bytearray(raw)
            damaged[at] ^= data.draw(st.integers(1, 255), label="xor")
        path.write_bytes(bytes(damaged))
        try:
            g = read_graph(path)
        except FormatError as e:
            assert str(path) in str(e)
        else:  # only damage the format cannot see may pass, and then the graph must still be valid
            g.validate()
