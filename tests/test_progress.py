"""Progress bars: drawn on a terminal (or when forced), silent otherwise, and mirrored to a file for
the service whichever they are."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from heapdb import progress


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "progress.json"
    monkeypatch.setenv(progress.PROGRESS_FILE_VARIABLE, str(path))
    monkeypatch.setattr(progress, "MIRROR_SECONDS", 0.0)  # every update written
    return path


@pytest.mark.parametrize("shown", ["0", "1"])
def test_updates_reach_the_mirror_file(shown: str, mirror: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAPDB_PROGRESS", shown)
    with progress.bar("write objects", total=10, unit="obj") as b:
        assert json.loads(mirror.read_text()) == {"phase": "write objects", "done": 0, "total": 10}
        b.update(3)
        b.update(4)
        assert json.loads(mirror.read_text()) == {"phase": "write objects", "done": 7, "total": 10}


def test_a_bar_is_drawn_only_when_shown(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(progress.PROGRESS_FILE_VARIABLE, raising=False)
    monkeypatch.setenv("HEAPDB_PROGRESS", "1")
    with progress.bar("read snapshot", total=4, unit="B") as b:
        b.update(4)
    assert "read snapshot" in capsys.readouterr().err

    monkeypatch.setenv("HEAPDB_PROGRESS", "0")
    with progress.bar("read snapshot", total=4, unit="B") as b:
        assert isinstance(b, progress.Silent)
        b.update(4)
    assert capsys.readouterr().err == ""


def test_silent_bars_do_not_import_the_bar_library() -> None:
    import subprocess

    code = (
        "import os, sys\n"
        "os.environ['HEAPDB_PROGRESS'] = '0'\n"
        "from heapdb import progress\n"
        "with progress.bar('x', total=1) as b:\n"
        "    b.update(1)\n"
        "print('tqdm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
