"""Store bytes per element of one snapshot in heapdb's model, and in the leaner models it could take.

Each model is imported with neo4j-admin into the same fresh database of a private Neo4j (as
``benchmarks/ingest.py`` runs one), its indexes built, its groups and type listings written as a
rebuild writes them, and its store files measured
with Neo4j stopped (a clean stop checkpoints). So the
figures are what the record formats make of the very rows a load writes, not arithmetic:

- ``heapdb``: the model as stored (docs/data-model.md): each object lists its children in the
  dominator tree, largest first (``dominated_order``, a ``long[]``);
- ``store version 4``: the model before, with no such lists but the ``(sid, dom, retained_size)``
  index, which finds an object's children;
- ``bare references``: references with no properties, their kind as the relationship type (``WEAK_``
  before it where the reference does not retain), their names kept nowhere;
- ``packed figures``: an object's integer and boolean properties other than ``sid``, ``id``,
  ``dom`` and ``retained_size`` in one ``long[]``;
- ``bare references + names on holders``: the references' names kept on the objects holding them,
  as two ``long[]`` in the order of the snapshot's edges: the targets' ids and codes of the
  references' kind and name (the table of those names, one per snapshot, is not counted).

A neo4j-admin import packs records and builds indexes from sorted input, so the ``heapdb`` row is a
rebuilt store, smaller than a transactional load's (``benchmarks/ingest.py`` measures that); the
differences between rows are what each change of model would save. Run from the repository root:

    .venv/bin/python -m benchmarks.footprint FILE [--models "heapdb,bare references"]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.ingest import by_category, file_sizes, private_neo4j, store_dir
from heapdb import db, neo4j_server
from heapdb.cli.steps import analyse_for_store, read_with_progress
from heapdb.loader.store import admin_import
from heapdb.loader.store.batches import DEFAULT_BATCH
from heapdb.loader.store.bulk import NULL, Batch, Kind
from heapdb.loader.store.groups import write_groups, write_listings
from heapdb.loader.store.order import write_order
from heapdb.loader.store.rebuild import StagedSnapshot, check_managed, stage
from heapdb.loader.store.rows import OBJECT_COLUMNS, object_batch
from heapdb.loader.store.schema import CREATE_DOMINATOR_INDEX, SCHEMA
from heapdb.loader.store.summaries import LoadInput

# The properties a packed object keeps as its own: the indexes' keys and the children's list.
KEPT = ("id", "dom", "retained_size", "dominated_order")


@dataclass(frozen=True)
class Model:
    name: str
    bare_references: bool = False
    # The dominator index, in place of each object's list of its children (store version 4).
    dominator_index: bool = False
    packed_figures: bool = False
    names_on_holders: bool = False  # each object lists its references' targets and names

    @property
    def own_objects(self) -> bool:
        return self.packed_figures or self.dominator_index or self.names_on_holders


MODELS = (
    Model("heapdb"),
    Model("store version 4", dominator_index=True),
    Model("bare references", bare_references=True),
    Model("packed figures", packed_figures=True),
    Model("bare references + names on holders", bare_references=True, names_on_holders=True),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, help="the snapshot")
    parser.add_argument(
        "--models", help="model names, separated by commas (default: all): " + ", ".join(m.name for m in MODELS)
    )
    parser.add_argument("--heap", default="3g", help="the private Neo4j's heap")
    parser.add_argument("--pagecache", default="5g", help="the private Neo4j's page cache")
    args = parser.parse_args()
    names = args.models.split(",") if args.models else [m.name for m in MODELS]
    unknown = sorted(set(names) - {m.name for m in MODELS})
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)}")
    chosen = [m for m in MODELS if m.name in names]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="heapdb-bench-footprint-") as tmp:
        work = Path(tmp)
        data, analysed_with = analyse_for_store(read_with_progress(str(args.file))[1], None, lambda _m: None)
        files = admin_import.ImportFiles(work / "heapdb")
        staged = stage(files, data, "footprint", 1, source=str(args.file), analysed_with=analysed_with)
        arguments = [_variant(m, files, data, work / f"model-{i}") for i, m in enumerate(chosen)]
        del data
        rows = []
        with private_neo4j(work / "home", args.heap, args.pagecache):
            for model, model_arguments in zip(chosen, arguments):
                sizes = measure(model, model_arguments, staged, work)
                rows.append((model, sizes))
                _say(f"{model.name}: {sum(sizes.values()) / files.elements:.1f} B per element")
    print(markdown(args.file, files.elements, rows, load_before, os.getloadavg()[0]))


def measure(model: Model, arguments: list[str], staged: StagedSnapshot, work: Path) -> dict[str, int]:
    """Import ``model``'s files (neo4j-admin's ``arguments``) into a fresh database, write the
    snapshot's groups and listings: its store's bytes by kind of file."""
    conn = check_managed()
    p = neo4j_server.paths()
    neo4j_server.stop(say=_say)
    admin_import.run_import(p.instance, conn.database, arguments, work / "import.report", overwrite=True)
    neo4j_server.start(say=_say)
    with db.connect(say=_say) as database:
        for statement in SCHEMA:
            database.write(statement)
        if model.dominator_index:
            database.write(CREATE_DOMINATOR_INDEX)
        with database.session() as session:
            session.run("CALL db.awaitIndexes(3600)").consume()
        write_groups(database, staged.sid, staged.groups, dropped=staged.dropped)
        write_listings(database, staged.sid, iter(staged.listings), len(staged.listings))
    neo4j_server.stop(say=_say)
    return by_category(file_sizes(store_dir(conn.database)))


def _variant(model: Model, files: admin_import.ImportFiles, data: LoadInput, directory: Path) -> list[str]:
    """neo4j-admin's options for ``model``'s files: heapdb's own, or written anew into ``directory``."""
    if not (model.bare_references or model.own_objects):
        return files.arguments()
    variant = admin_import.ImportFiles(directory)
    if model.own_objects:
        _objects(variant, data, model)
    else:
        variant.nodes = files.nodes
        variant.multiline = [p for p in files.multiline if p in files.nodes]
        (directory / "objects.header.csv").write_text(admin_import.OBJECT_HEADER)
    if model.bare_references:
        (directory / "references.header.csv").write_text(admin_import.csv_header([":START_ID", ":END_ID", ":TYPE"], []))
        variant.relationships = [_bare_references(path, directory) for path in files.relationships]
    else:
        variant.relationships = files.relationships
        variant.multiline += [p for p in files.multiline if p in files.relationships]
    return variant.arguments()


def _bare_references(source: Path, directory: Path) -> Path:
    """A references file rewritten with no properties, the kind as the type."""
    target = directory / source.name
    with (
        source.open(newline="", encoding="utf-8", errors="surrogatepass") as inp,
        target.open("w", encoding="utf-8") as out,
    ):
        for start, end, type_name, kind, *_name in csv.reader(inp):  # start, end, REF or WEAK_REF, kind, name
            kind = kind.upper() or "NONE"
            out.write(f'{start},{end},"{kind if type_name == "REF" else "WEAK_" + kind}"\n')
    return target


# The objects' columns a packed object folds into its one array, and those it keeps as properties.
_FIGURES = [i for i, c in enumerate(OBJECT_COLUMNS) if c.kind is not Kind.TEXT and c.key not in KEPT]
_OWN = [i for i in range(len(OBJECT_COLUMNS)) if i not in _FIGURES]
# Store version 4's: all but the children's list.
_VERSION_4 = [i for i, c in enumerate(OBJECT_COLUMNS) if c.key != "dominated_order"]


def _objects(files: admin_import.ImportFiles, data: LoadInput, model: Model) -> None:
    """The objects as admin_import writes them, with the model's arrays: their figures (unset as 0,
    so that the array stays bit-packed) or their references; or, as store version 4, without their
    children's list."""
    g = data.graph
    ranks = data.top_ranks()
    order = write_order(data, ranks)
    own = _OWN if model.packed_figures else _VERSION_4 if model.dominator_index else list(range(len(OBJECT_COLUMNS)))
    extra = (
        ["f:long[]"] if model.packed_figures else ["out:long[]", "out_names:long[]"] if model.names_on_holders else []
    )
    header = admin_import.csv_header([":ID", ":LABEL", "sid:long", *extra], [OBJECT_COLUMNS[i] for i in own])
    (files.directory / "objects.header.csv").write_text(header)
    targets, names = _out_arrays(data) if model.names_on_holders else (None, None)
    with admin_import.DataFile(files, "objects-1") as out:
        for lo in range(0, g.node_count, DEFAULT_BATCH):
            hi = min(g.node_count, lo + DEFAULT_BATCH)
            batch = object_batch(data, ranks, order, np.arange(lo, hi, dtype=np.int64))
            arrays = []
            if targets is not None and names is not None:
                arrays = [targets[lo:hi], names[lo:hi]]
            elif model.packed_figures:
                figures = batch.cells[:, _FIGURES]
                figures = np.where(figures == NULL, 0, figures).astype(str)
                arrays = [np.array([";".join(row) for row in figures], dtype=object)]
            labels = np.full(hi - lo, '"Object"', dtype=object)
            if lo <= g.root < hi:
                labels[g.root - lo] = '"Object;Root"'
            lead = [np.arange(lo, hi).astype(str).astype(object), labels, np.full(hi - lo, "1", dtype=object), *arrays]
            kept = Batch(batch.cells[:, own], batch.strings, list_items=batch.list_items, list_ends=batch.list_ends)
            out.write(kept, lead, [OBJECT_COLUMNS[i] for i in own])


def _out_arrays(data: LoadInput) -> tuple[np.ndarray, np.ndarray]:
    """Per object, its references' targets (ids) and their kind-and-name codes, as array cells
    (empty: no property)."""
    g = data.graph
    label = (g.edge_kind.astype(np.int64) << 32) | g.edge_name.astype(np.int64)
    codes = np.unique(label, return_inverse=True)[1].reshape(-1).astype(str)
    ids = g.ids[g.edge_to].astype(str)
    targets = np.full(g.node_count, "", dtype=object)
    names = np.full(g.node_count, "", dtype=object)
    start = g.edge_start.tolist()
    for i in range(g.node_count):
        lo, hi = start[i], start[i + 1]
        if hi > lo:
            targets[i] = ";".join(ids[lo:hi])
            names[i] = ";".join(codes[lo:hi])
    return targets, names


def _say(message: str) -> None:
    print(f"[footprint] {message}", file=sys.stderr, flush=True)


def markdown(
    file: Path, elements: int, rows: list[tuple[Model, dict[str, int]]], load_before: float, load_after: float
) -> str:
    kinds = sorted({k for _, sizes in rows for k in sizes})
    lines = [
        f"{file}: {elements:,} objects and references; load average {load_before:.2f} before, {load_after:.2f} after",
        "",
        "| model | B per element | " + " | ".join(f"{k}, MB" for k in kinds) + " | total, MB |",
        "|---|---:|" + "---:|" * (len(kinds) + 1),
    ]
    for model, sizes in rows:
        total = sum(sizes.values())
        cells = [f"{sizes.get(k, 0) / 1e6:,.1f}" for k in kinds]
        lines.append(f"| {model.name} | {total / elements:.1f} | " + " | ".join(cells) + f" | {total / 1e6:,.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
