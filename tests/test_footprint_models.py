"""The other models ``benchmarks/footprint.py`` measures hold what they say: each object's references
with their kind and name, and references bare. (heapdb's own lists of each object's children are
tested in tests/test_order.py.) And ``benchmarks/ingest.py`` counts a store's bytes in use: records
and index pages that are not all zeros, not the room the files keep ahead.
The store sizes themselves are measured, not asserted (docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks import footprint, ingest
from heapdb.loader import analysis, store
from heapgen.synth import synth_graph


def _data() -> store.LoadInput:
    graph = synth_graph(3_000, 12_000, seed=7)
    return store.LoadInput.from_analysis(graph, analysis.analyze(graph))


def test_names_on_holders_list_every_reference_with_a_code_per_kind_and_name() -> None:
    data = _data()
    g = data.graph
    targets, names = footprint._out_arrays(data)
    code_of: dict[tuple[int, int], str] = {}
    for node in range(g.node_count):
        edges = g.out_edges(node)
        assert targets[node] == ";".join(str(int(g.ids[g.edge_to[e]])) for e in edges)
        codes = names[node].split(";") if names[node] else []
        assert len(codes) == len(edges)
        for e, code in zip(edges, codes):
            # One code per distinct (kind, name), and never the same code for two of them.
            assert code_of.setdefault((int(g.edge_kind[e]), int(g.edge_name[e])), code) == code
    assert len(set(code_of.values())) == len(code_of)


def test_bare_references_keep_the_ends_and_turn_the_kind_into_the_type(tmp_path: Path) -> None:
    source = tmp_path / "references-1.csv"
    source.write_text(
        '1,2,"REF","property","a, ""quoted"" name"\n3,4,"WEAK_REF","weak","x"\n5,6,"REF","element","12"\n'
    )
    (tmp_path / "out").mkdir()
    target = footprint._bare_references(source, tmp_path / "out")
    assert target.read_text().splitlines() == ['1,2,"PROPERTY"', '3,4,"WEAK_WEAK"', '5,6,"ELEMENT"']


def test_model_names_can_be_chosen_on_the_command_line() -> None:
    names = [m.name for m in footprint.MODELS]
    assert len(set(names)) == len(names)
    assert all("," not in name for name in names)  # --models splits on commas


def test_bytes_in_use_count_the_written_records_and_index_pages(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    written = {"neostore.propertystore.db": (41, [0, 3, 4, 99]), "neostore.nodestore.db": (15, [1, 2])}
    for name, (size, records) in written.items():
        raw = np.zeros(200 * size, dtype=np.uint8)  # room for 200 records, as a file grown ahead
        for r in records:
            raw[r * size + int(rng.integers(size))] = 1 + int(rng.integers(255))  # one byte set is enough
        raw.tofile(tmp_path / name)
    (tmp_path / "schema" / "index").mkdir(parents=True)
    pages = np.zeros(5 * ingest.PAGE_BYTES, dtype=np.uint8)
    pages[2 * ingest.PAGE_BYTES + 17] = 9
    pages.tofile(tmp_path / "schema" / "index" / "index-1")
    (tmp_path / "neostore.counts.db").write_bytes(b"\x01" * 100)  # neither a record store nor an index

    used = ingest.bytes_in_use(tmp_path)
    assert used == {"properties": 4 * 41, "nodes": 2 * 15, "indexes (schema/)": ingest.PAGE_BYTES}
    assert ingest.by_category(ingest.file_sizes(tmp_path))["properties"] == 200 * 41
