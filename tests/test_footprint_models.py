"""The other models ``benchmarks/footprint.py`` measures hold what they say: each object's references
with their kind and name, and references bare. (heapdb's own lists of each object's children are
tested in tests/test_order.py.)
The store sizes themselves are measured, not asserted (docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path

from benchmarks import footprint
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
