"""Rows for the writer, packed once and sent either to heapdb's Neo4j plugin or through Cypher.

A batch is a matrix of int64 cells (one column per property, :data:`NULL` where a property is not
set) and a table of the batch's distinct strings, built with numpy rather than a Python list per
row. The plugin (the Java project in ``plugin/`` beside this file, built by ``heapdb neo4j install``)
takes the matrix as bytes and writes it through Neo4j's embedded API; a Neo4j without the plugin gets
the same batch decoded into UNWIND rows (:meth:`Batch.rows`). ``docs/decisions.md`` says why both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

import neo4j
import numpy as np

from heapdb.db import Database, translate_errors

PLUGIN_SOURCE = Path(__file__).resolve().parent / "plugin"
# The version of the plugin's procedures and row encoding this loader speaks (BulkWrite.PROTOCOL).
PROTOCOL = 3
NULL = np.iinfo(np.int64).min  # a cell with no value (BulkWrite.NULL)


class Kind(IntEnum):
    """How a column's int64 cells are read (BulkWrite's column kinds)."""

    INTEGER = 0
    TEXT = 1  # an index into the batch's strings
    BOOLEAN = 2  # 0 or 1
    INTEGERS = 3  # a list of int64: an index into the batch's lists


@dataclass(frozen=True)
class Column:
    key: str  # the property's name
    kind: Kind


@dataclass(frozen=True)
class Batch:
    """Rows of ``lead`` leading cells (a relationship's ends and type) and then one cell per column."""

    cells: np.ndarray  # int64[rows, lead + len(columns)]
    strings: list[str]
    lead: int = 0
    # The batch's lists, end to end: list i is ``list_items[list_ends[i - 1]:list_ends[i]]``.
    list_items: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    list_ends: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.cells.shape[0])

    def rows(self, columns: Sequence[Column]) -> list[list[Any]]:
        """The batch as Python rows for UNWIND: leading cells, then values (None where not set)."""
        decoded: list[list[Any]] = [self.cells[:, i].tolist() for i in range(self.lead)]
        strings = self.strings
        for i, column in enumerate(columns, start=self.lead):
            cells = self.cells[:, i]
            missing = cells == NULL
            if column.kind is Kind.TEXT:
                values: list[Any] = [strings[c] for c in np.where(missing, 0, cells).tolist()]
            elif column.kind is Kind.BOOLEAN:
                values = (cells != 0).tolist()
            elif column.kind is Kind.INTEGERS:
                values = [self.list_at(c) for c in np.where(missing, 0, cells).tolist()]
            else:
                values = cells.tolist()
            if missing.any():
                for j in np.flatnonzero(missing).tolist():
                    values[j] = None
            decoded.append(values)
        return [list(row) for row in zip(*decoded)]

    def list_at(self, i: int) -> list[int]:
        """The batch's list ``i`` (an :data:`Kind.INTEGERS` cell)."""
        ends = self.list_ends
        return self.list_items[ends[i - 1] if i else 0 : ends[i]].tolist() if ends.size else []


class Strings:
    """A batch's table of distinct strings, and columns of indexes into it."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, texts: Sequence[str | None]) -> np.ndarray:
        out = np.empty(len(texts), dtype=np.int64)
        index, table = self._index, self.table
        for i, text in enumerate(texts):
            if text is None:
                out[i] = NULL
                continue
            found = index.get(text)
            if found is None:
                found = index[text] = len(table)
                table.append(text)
            out[i] = found
        return out

    def codes(self, codes: np.ndarray, text: Callable[[int], str]) -> np.ndarray:
        """A column for integer ``codes`` (string-table indexes, say) that ``text`` turns into strings;
        each distinct code is turned once."""
        if len(codes) == 0:
            return np.empty(0, dtype=np.int64)
        distinct, inverse = np.unique(codes, return_inverse=True)
        return self.add([text(int(c)) for c in distinct.tolist()])[inverse]


def pack(columns: Sequence[np.ndarray], strings: Strings, lead: int = 0, lists: Lists | None = None) -> Batch:
    cells = np.empty((len(columns[0]) if columns else 0, len(columns)), dtype=np.int64)
    for i, values in enumerate(columns):
        cells[:, i] = values
    if lists is None:
        return Batch(cells=cells, strings=strings.table, lead=lead)
    return Batch(cells=cells, strings=strings.table, lead=lead, list_items=lists.items, list_ends=lists.ends)


@dataclass(frozen=True)
class Lists:
    """A batch's lists of int64 (:data:`Kind.INTEGERS` cells index them), end to end."""

    items: np.ndarray  # int64
    ends: np.ndarray  # int64: where each list ends in ``items``

    @classmethod
    def gather(cls, values: np.ndarray, start: np.ndarray, rows: np.ndarray) -> tuple[Lists, np.ndarray]:
        """The lists ``values[start[r]:start[r + 1]]`` of the ``rows`` that have any, and a column
        naming each row's list (NULL for an empty one). Vectorised: one gather of every item."""
        lo, hi = start[rows], start[rows + 1]
        count = hi - lo
        has = count > 0
        ends = np.cumsum(count[has])
        # Each item's position in ``values``: its list's start plus its place in the list.
        first = np.repeat(lo[has] - (ends - count[has]), count[has])
        items = values[first + np.arange(int(ends[-1]) if ends.size else 0)]
        column = np.full(rows.shape[0], NULL, dtype=np.int64)
        column[has] = np.arange(ends.shape[0])
        return cls(items=np.ascontiguousarray(items, dtype=np.int64), ends=ends.astype(np.int64)), column


def plugin_protocol(database: Database) -> int | None:
    """The protocol of the heapdb plugin in the connected Neo4j, or None when it has none."""
    with translate_errors(database.connection), database.session(read_only=True) as session:
        try:
            record = session.run("RETURN heapdb.protocol() AS protocol").single(strict=True)
        except neo4j.exceptions.ClientError:  # an unknown function: no plugin
            return None
    return int(record["protocol"])


CREATE_NODES = (
    "CALL heapdb.createNodes($label, $fixed, $keys, $kinds, $rows, $strings, $string_ends, $lists, $list_ends) "
    "YIELD ids RETURN ids"
)
CREATE_RELATIONSHIPS = (
    "CALL heapdb.createRelationships($types, $keys, $kinds, $rows, $strings, $string_ends) YIELD count RETURN count"
)


def _string_table(strings: Sequence[str]) -> dict[str, bytes]:
    """A batch's strings as the plugin takes them: their UTF-8 bytes end to end, and where each ends
    (int64 little-endian), rather than a list Neo4j would check item by item."""
    encoded = [text.encode("utf-8") for text in strings]
    ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), dtype=np.int64)
    return {"strings": b"".join(encoded), "string_ends": ends.astype("<i8", copy=False).tobytes()}


def create_nodes(
    database: Database, label: str, fixed: dict[str, Any], columns: Sequence[Column], batch: Batch
) -> np.ndarray:
    """Write a batch as nodes through the plugin, in one transaction; their internal ids, in order."""
    parameters = {
        "label": label,
        "fixed": fixed,
        "keys": [c.key for c in columns],
        "kinds": [int(c.kind) for c in columns],
        "rows": batch.cells.astype("<i8", copy=False).tobytes(),
        **_string_table(batch.strings),
        "lists": batch.list_items.astype("<i8", copy=False).tobytes(),
        "list_ends": batch.list_ends.astype("<i8", copy=False).tobytes(),
    }

    def work(tx: neo4j.ManagedTransaction) -> bytes:
        record = tx.run(CREATE_NODES, parameters).single(strict=True)
        return bytes(record["ids"])

    def run() -> bytes:
        with translate_errors(database.connection), database.session() as session:
            return session.execute_write(work)

    return np.frombuffer(database.answering(run), dtype="<i8")


def create_relationships(database: Database, types: Sequence[str], columns: Sequence[Column], batch: Batch) -> None:
    """Write a batch (start and end internal ids, index into ``types``, then ``columns``) as
    relationships through the plugin, in one transaction."""
    parameters = {
        "types": list(types),
        "keys": [c.key for c in columns],
        "kinds": [int(c.kind) for c in columns],
        "rows": batch.cells.astype("<i8", copy=False).tobytes(),
        **_string_table(batch.strings),
    }

    def run() -> None:
        with translate_errors(database.connection), database.session() as session:
            session.execute_write(lambda tx: tx.run(CREATE_RELATIONSHIPS, parameters).consume())

    database.answering(run)
