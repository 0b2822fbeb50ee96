"""``benchmarks/ingest.py`` counts a store's bytes in use: records and index pages that are not all
zeros, not the room the files keep ahead (the figures themselves are measured, not asserted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks import ingest


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
