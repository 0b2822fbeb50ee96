"""What the web pages' tests share: where their screenshots go, axe-core and the impacts that fail a
page, and a snapshot loaded for one test module's pages."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from heapdb.db import Database
from tests.support.snapshots import Loaded, load_snapshot
from tests.support.v8 import JS_DIR

REPO = Path(__file__).resolve().parents[2]
# Written by the Chromium tests and kept as CI artefacts; HEAPDB_SCREENSHOTS moves them.
SCREENSHOTS = Path(os.environ.get("HEAPDB_SCREENSHOTS", REPO / "test-artifacts" / "screenshots"))
AXE = JS_DIR / "node_modules" / "axe-core" / "axe.min.js"  # from npm, by scripts/bootstrap.sh
IMPACTS = ("serious", "critical")  # axe violations of these impacts fail a page
# The object id a drawing's box links to: the link's last segment, up to its closing quote. Matched
# on the SVG as written, where a tag's slashes are percent-encoded, so that a tag such as
# "objects/3a9f01" never reads as object 3.
LINKED_ID = re.compile(r'xlink:href="[^"]*/objects/(-?\d+)"')


@contextmanager
def loaded_for_pages(
    database: Database, path: Path, label: str, tag: str | None = None, meta: dict[str, str] | None = None
) -> Iterator[Loaded]:
    """``path`` loaded for the module's tests (under ``tag`` when given: the pages' links must carry
    any tag), and left in place: tags are unique."""
    snapshot = load_snapshot(database, path, label, meta)
    if tag is not None:
        database.write("MATCH (s:Snapshot {tag: $old}) SET s.tag = $tag", {"old": snapshot.tag, "tag": tag})
        snapshot = Loaded(tag, snapshot.graph, snapshot.result)
    yield snapshot
