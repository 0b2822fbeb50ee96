"""Names as data, end to end: any string a runtime can produce loads into Neo4j and is answered back."""

from __future__ import annotations

import json
from pathlib import Path

from heapdb.db import Database
from heapdb.loader.formats.text import MAX_PATH_CHARS
from heapgen.seeds import (
    small_snapshot,
)
from tests.support.snapshots import load_snapshot

ODD = ["Leaky\ud800", "nul\0inside", "bell\x07 esc\x1b[31m", "T" * (1 << 20)]


def test_surrogates_control_characters_and_megabyte_names_load_and_come_back(
    database: Database, tmp_path: Path
) -> None:
    doc = small_snapshot()
    doc["strings"][2:6] = ODD  # the object's constructor, a string's text, a closure's and a native's name
    path = tmp_path / "odd.heapsnapshot"
    path.write_text(json.dumps(doc))
    loaded = load_snapshot(database, path, "odd-names")
    with database.session() as session:
        names = {
            r["name"]
            for r in session.run(
                "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) RETURN o.name AS name", tag=loaded.tag
            )
        }
        paths = [
            r["path"]
            for r in session.run(
                "MATCH (s:Snapshot {tag: $tag}) MATCH (g:PathGroup {sid: s.sid}) RETURN g.path AS path", tag=loaded.tag
            )
        ]
    assert {"Leaky\\ud800", "nul\0inside", "bell\x07 esc\x1b[31m"} <= names
    assert any(name.startswith("T" * 100) for name in names)  # the store may cut a name; it loads
    assert paths and all(len(p) <= MAX_PATH_CHARS for p in paths)
