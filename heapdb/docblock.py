"""Generated blocks of the docs: a part of a Markdown file between two marker comments, rewritten
from the code that declares it (the query reference in docs/queries.md, the settings in
docs/operations.md), so that a test can compare the file with the code."""

from __future__ import annotations

from pathlib import Path


def update(file: str | Path, begin: str, end: str, block: str) -> bool:
    """Replace the part of ``file`` from the ``begin`` marker to the ``end`` marker with ``block``
    (markers included); return whether anything changed."""
    file = Path(file)
    before = file.read_text(encoding="utf-8")
    start, stop = before.index(begin), before.index(end) + len(end)
    after = before[:start] + block + before[stop:]
    if after != before:
        file.write_text(after, encoding="utf-8")
    return after != before


def current(file: str | Path, begin: str, end: str) -> str:
    """The block of ``file`` as it stands, markers included (for the tests that keep it up to date)."""
    text = Path(file).read_text(encoding="utf-8")
    return text[text.index(begin) : text.index(end) + len(end)]
