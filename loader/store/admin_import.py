"""Snapshots as neo4j-admin CSV files, and ``neo4j-admin database import full`` run on them.

The offline way into Neo4j (``heapdb rebuild``, :mod:`.rebuild`): several times faster than any
transactional write (docs/benchmarks.md), but only into a database that is stopped and empty. The
rows are the very batches a load sends (:func:`~.writer.object_batch`, :func:`~.writer.reference_batch`,
columns :data:`~.writer.OBJECT_COLUMNS` and :data:`~.writer.REFERENCE_COLUMNS`), so an object
imported here has exactly the properties a load gives it.

The files: one header file per kind of row and one data file per snapshot and kind. Nodes are named
by a number unique across the import (``--id-type=integer``, the importer's fastest), not stored.
A text cell is always quoted, so that an empty name stays an empty string, and a cell with no value
is left empty, so that the property is not set (as the plugin leaves it). Rows holding a line break
in a text go to a file of their own, the only one the importer must parse with multi-line fields
(``--multiline-fields-format=v2``), since doing so for every file costs much of its speed.

neo4j-admin runs from the managed Neo4j's classpath (no Neo4j distribution is installed):
:func:`run_import` takes a Neo4j home (its ``conf/neo4j.conf`` says where the data goes), the
managed instance's for a rebuild, a scratch one for the benchmarks.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from heapdb import neo4j_server, settings
from heapdb.errors import RebuildError
from heapdb.loader.store.batches import DEFAULT_BATCH
from heapdb.loader.store.bulk import NULL, Batch, Column, Kind
from heapdb.loader.store.order import write_order
from heapdb.loader.store.rows import OBJECT_COLUMNS, REFERENCE_COLUMNS, REFERENCE_TYPES, object_batch, reference_batch
from heapdb.loader.store.summaries import LoadInput

OBJECT_LABEL = "Object"
ROOT_LABEL = "Root"
# neo4j-admin's header type for each column kind (a text column has none: string is the default).
_HEADER_TYPES = {Kind.INTEGER: ":long", Kind.TEXT: "", Kind.BOOLEAN: ":boolean", Kind.INTEGERS: ":long[]"}


def csv_header(lead: Sequence[str], columns: Sequence[Column]) -> str:
    """neo4j-admin's header line for ``lead`` fields and then ``columns``."""
    return ",".join([*lead, *(f"{c.key}{_HEADER_TYPES[c.kind]}" for c in columns)]) + "\n"


OBJECT_HEADER = csv_header([":ID", ":LABEL", "sid:long"], OBJECT_COLUMNS)
REFERENCE_HEADER = csv_header([":START_ID", ":END_ID", ":TYPE"], REFERENCE_COLUMNS)


@dataclass
class ImportFiles:
    """The CSV files of one import, in ``directory``; filled snapshot by snapshot (:meth:`add`)."""

    directory: Path
    nodes: list[Path] = field(default_factory=list)
    relationships: list[Path] = field(default_factory=list)
    multiline: list[Path] = field(default_factory=list)  # the files whose texts hold line breaks
    next_node: int = 0  # the import-wide number of the next node
    elements: int = 0  # nodes and relationships written

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "objects.header.csv").write_text(OBJECT_HEADER)
        (self.directory / "references.header.csv").write_text(REFERENCE_HEADER)

    def add(
        self,
        data: LoadInput,
        sid: int,
        ranks: tuple[np.ndarray, np.ndarray] | None = None,
        batch_size: int = DEFAULT_BATCH,
        on_rows: Callable[[int], object] = lambda _n: None,
    ) -> None:
        """Write one analysed snapshot's objects (with the ``:Root`` label on its root) and references."""
        g = data.graph
        first = self.next_node
        ranks = ranks or data.top_ranks()
        order = write_order(data, ranks)  # the early objects carry what suspects reads early on a load
        with DataFile(self, f"objects-{sid}") as out:
            for lo in range(0, g.node_count, batch_size):
                hi = min(g.node_count, lo + batch_size)
                batch = object_batch(data, ranks, order, np.arange(lo, hi, dtype=np.int64))
                labels = np.full(hi - lo, f'"{OBJECT_LABEL}"', dtype=object)
                if lo <= g.root < hi:
                    labels[g.root - lo] = f'"{OBJECT_LABEL};{ROOT_LABEL}"'
                lead = [_integers(np.arange(first + lo, first + hi)), labels, np.full(hi - lo, str(sid), dtype=object)]
                out.write(batch, lead, OBJECT_COLUMNS)
                on_rows(hi - lo)
        self.next_node += g.node_count
        ends = np.arange(first, first + g.node_count, dtype=np.int64)
        sources = g.edge_sources()
        types = np.array([f'"{name}"' for name in REFERENCE_TYPES], dtype=object)
        with DataFile(self, f"references-{sid}", relationships=True) as out:
            for lo in range(0, g.edge_count, batch_size):
                hi = min(g.edge_count, lo + batch_size)
                batch = reference_batch(data, sources, ends, lo, hi)
                cells = batch.cells
                lead = [_integers(cells[:, 0]), _integers(cells[:, 1]), types[cells[:, 2]]]
                out.write(Batch(cells[:, 3:], batch.strings), lead, REFERENCE_COLUMNS)
                on_rows(hi - lo)
        self.elements += g.node_count + g.edge_count

    def arguments(self) -> list[str]:
        """neo4j-admin's options naming these files."""
        args = []
        if self.nodes:
            args.append(f"--nodes={self.directory / 'objects.header.csv'}," + ",".join(map(str, self.nodes)))
        if self.relationships:
            header = self.directory / "references.header.csv"
            args.append(f"--relationships={header}," + ",".join(map(str, self.relationships)))
        if self.multiline:
            args += ["--multiline-fields-format=v2", "--multiline-fields=" + ",".join(map(str, self.multiline))]
        return args


class DataFile:
    """One data file, and beside it one for the rows whose texts hold line breaks (if any do)."""

    def __init__(self, files: ImportFiles, stem: str, relationships: bool = False) -> None:
        self.files, self.stem, self.relationships = files, stem, relationships
        # Closed by __exit__: this object is the context manager.
        self.plain = open(files.directory / f"{stem}.csv", "w", encoding="utf-8", errors="surrogatepass")  # noqa: SIM115
        self.multiline: TextIO | None = None

    def __enter__(self) -> DataFile:
        return self

    def write(self, batch: Batch, lead: list[np.ndarray], columns: Sequence[Column]) -> None:
        quoted = [_quote(s) for s in batch.strings]
        broken = np.array([("\n" in s or "\r" in s) for s in batch.strings] + [False], dtype=bool)
        table = np.array([*quoted, ""], dtype=object)  # the last: an empty cell, for NULL
        cells = [*lead]
        lines_break = np.zeros(len(batch), dtype=bool)
        for i, column in enumerate(columns):
            values = batch.cells[:, i]
            missing = values == NULL
            if column.kind is Kind.TEXT:
                codes = np.where(missing, len(quoted), values)
                lines_break |= broken[codes]
                cells.append(table[codes])
            elif column.kind is Kind.BOOLEAN:
                cells.append(np.where(missing, "", np.where(values != 0, "true", "false")).astype(object))
            elif column.kind is Kind.INTEGERS:  # neo4j-admin's array delimiter, ";"
                listed = _integers(batch.list_items)
                ends = batch.list_ends.tolist()
                texts = [";".join(listed[lo:hi]) for lo, hi in zip([0, *ends[:-1]], ends)] + [""]
                cells.append(np.array(texts, dtype=object)[np.where(missing, len(ends), values)])
            else:
                text = _integers(values)
                text[missing] = ""
                cells.append(text)
        rows = np.array([",".join(row) for row in zip(*cells)], dtype=object) if len(batch) else np.empty(0, object)
        if lines_break.any():
            self._multiline().write("".join(line + "\n" for line in rows[lines_break]))
            rows = rows[~lines_break]
        if len(rows):
            self.plain.write("\n".join(rows) + "\n")

    def _multiline(self) -> TextIO:
        if self.multiline is None:
            path = self.files.directory / f"{self.stem}-multiline.csv"
            self.multiline = open(path, "w", encoding="utf-8", errors="surrogatepass")  # noqa: SIM115
            self.files.multiline.append(path)
            (self.files.relationships if self.relationships else self.files.nodes).append(path)
        return self.multiline

    def __exit__(self, *exc: object) -> None:
        self.plain.close()
        (self.files.relationships if self.relationships else self.files.nodes).append(Path(self.plain.name))
        if self.multiline is not None:
            self.multiline.close()


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _integers(values: np.ndarray) -> np.ndarray:
    return values.astype(str).astype(object)


def run_import(
    home: Path,
    database: str,
    inputs: Sequence[str],
    report_file: Path,
    *,
    heap: str | None = None,
    overwrite: bool = False,
) -> float:
    """``neo4j-admin database import full`` of ``inputs`` (its ``--nodes=``/``--relationships=``
    options, :meth:`ImportFiles.arguments` for heapdb's files) into ``database`` of the Neo4j whose home
    is ``home`` (stopped; its ``conf/neo4j.conf`` says where the data lives), with a Java heap of
    ``heap`` (default: ``HEAPDB_IMPORT_HEAP``). Seconds it took; a failed import raises :class:`RebuildError` with the importer's last lines."""
    command = [
        neo4j_server.java_executable(),
        f"-Xmx{heap or settings.IMPORT_HEAP.value()}",
        "-cp",
        os.pathsep.join(neo4j_server.classpath()),
        neo4j_server.ADMIN_TOOL,
        "database",
        "import",
        "full",
        *inputs,
        f"--overwrite-destination={str(overwrite).lower()}",
        "--id-type=integer",
        f"--report-file={report_file}",
        database,
    ]
    env = {**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")}
    started = time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=report_file.parent)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-8:]
        raise RebuildError(f"neo4j-admin import failed (exit {result.returncode}): " + " | ".join(tail))
    return time.monotonic() - started


def scratch_home(directory: Path) -> Path:
    """A Neo4j home of its own under ``directory`` for an import nothing will serve (the benchmarks)."""
    home = directory / "admin-home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "conf" / "neo4j.conf").write_text(
        f"server.directories.data={home / 'data'}\nserver.directories.logs={home / 'logs'}\n"
    )
    return home
