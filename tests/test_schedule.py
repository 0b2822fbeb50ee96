"""The order test files start in (tests/support/schedule.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.schedule import LONGEST, longest_first

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Item:
    nodeid: str


def test_the_longest_files_start_first_and_each_file_keeps_its_order() -> None:
    items = [
        Item(n) for n in ("tests/a.py::x", "tests/slow.py::y", "tests/b.py::z", "tests/slow.py::w", "tests/a.py::v")
    ]
    longest_first(items, ("tests/slow.py",))  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "tests/slow.py::y",
        "tests/slow.py::w",
        "tests/a.py::x",
        "tests/b.py::z",
        "tests/a.py::v",
    ]


def test_every_file_named_exists_once() -> None:
    assert len(set(LONGEST)) == len(LONGEST)
    assert [path for path in LONGEST if not (REPO / path).is_file()] == []
