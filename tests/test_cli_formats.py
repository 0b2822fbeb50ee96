"""``heapdb inspect`` and ``heapdb convert``, through click's runner and once through the real executable."""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.loader import formats
from heapdb.loader.formats.snapbin import SnapbinWriter, read_graph
from heapdb.loader.graph import EdgeKind, HeapGraph

HEAPDB = Path(sys.executable).parent / "heapdb"


def sample(path: Path, *, objects: int = 60) -> Path:
    """A small snapshot: a module list holding Item objects, each owning a Blob."""
    with SnapbinWriter(path, chunk_objects=16) as w:
        w.set_metadata(runtime="testrt", runtime_version="1.2.3", gc_count=4)
        w.add_object(1, w.add_type("Module", "module"), 100, [(2, EdgeKind.PROPERTY, "items")])
        w.add_object(
            2, w.add_type("List", "array"), 8 * objects, [(10 + i, EdgeKind.ELEMENT, i) for i in range(objects)]
        )
        for i in range(objects):
            w.add_object(10 + i, "Item", 32, [(1000 + i, EdgeKind.PROPERTY, "blob")])
            w.add_object(1000 + i, w.add_type("Blob", "object"), 500 + i, name=f"blob {i}")
        w.add_root("module", "app", 1)
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_inspect_json_reports_format_metadata_counts_types_and_roots(tmp_path: Path) -> None:
    path = sample(tmp_path / "named-like-v8.heapsnapshot")  # the name must not matter
    code, out, _ = run("inspect", str(path), "--json", "--top", "3")
    assert code == 0
    s = json.loads(out)
    assert s["format"] == "snapbin" and s["version"] == "1.0"
    assert s["metadata"]["runtime"] == "testrt" and s["metadata"]["gc_count"] == 4
    assert s["counts"]["nodes"] == 2 + 60 + 60 + 2 and s["counts"]["edges"] == 1 + 60 + 60 + 1 + 1
    assert [(r["type"], r["count"]) for r in s["top_types_by_count"]][:2] == [("Item", 60), ("Blob", 60)]
    assert s["top_types_by_self_size"][0] == {"type": "Blob", "count": 60, "self_size": sum(500 + i for i in range(60))}
    assert s["roots"] == [{"name": "(module roots)", "type": "(module roots)", "references": 1}]


def test_inspect_text(tmp_path: Path) -> None:
    code, out, _ = run("inspect", str(sample(tmp_path / "s.bin")))
    assert code == 0
    assert "format    snapbin 1.0" in out and "runtime_version          1.2.3" in out
    assert "(module roots)" in out and "Blob" in out


def test_convert_snapbin_to_snapbin_round_trips(tmp_path: Path) -> None:
    source = sample(tmp_path / "a.data")
    dest = tmp_path / "b.data"
    code, out, _ = run("convert", str(source), str(dest), "--no-compress")
    assert code == 0 and "snapbin" in out
    a, b = read_graph(source), read_graph(dest)
    for field in ("ids", "kind", "type", "name", "self_size", "edge_start", "edge_to", "edge_kind", "edge_name"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.strings == b.strings and a.meta == b.meta


def type_counts(g: HeapGraph) -> Counter[str]:
    return Counter(g.type_name(i) for i in range(g.node_count))


@pytest.mark.skipif(
    importlib.util.find_spec("heapdb.loader.formats.heapsnapshot_export") is None,
    reason="the .heapsnapshot exporter is not part of this build",
)
def test_convert_to_heapsnapshot_by_suffix_and_back(tmp_path: Path) -> None:
    source = sample(tmp_path / "a.snapbin")
    chrome = tmp_path / "out.heapsnapshot"
    code, out, err = run("convert", str(source), str(chrome))
    assert code == 0, err
    assert formats.detect(chrome).name == "v8"
    g = formats.read_graph(chrome)
    counts = type_counts(g)
    assert counts["Item"] == 60 and counts["Blob"] == 60 and counts["List"] == 1
    # And back to snap.bin, chosen explicitly although the name says otherwise.
    again = tmp_path / "again.heapsnapshot"
    code, _, err = run("convert", str(chrome), str(again), "--to", "snapbin")
    assert code == 0, err
    assert formats.detect(again).name == "snapbin"
    h = read_graph(again)
    assert type_counts(h)["Item"] == 60 and set(read_graph(source).ids[:122].tolist()) <= set(h.ids.tolist())


def damaged_files(tmp_path: Path) -> dict[str, Path]:
    good = sample(tmp_path / "good.snapbin").read_bytes()
    files: dict[str, bytes] = {
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "flipped": good[:200] + bytes([good[200] ^ 4]) + good[201:],
        "wrong magic": b"PK\x03\x04" + good[4:],
        "garbage after": good + b"junk",
    }
    header = b"\x89SNAPBIN" + struct.pack("<HH", 9, 0)
    files["unknown major"] = header + struct.pack("<I", zlib.crc32(header)) + good[16:]
    out = {}
    for name, data in files.items():
        path = tmp_path / (name.replace(" ", "_") + ".snapbin")
        path.write_bytes(data)
        out[name] = path
    dangling = tmp_path / "dangling.snapbin"
    with SnapbinWriter(dangling) as w:
        w.add_object(1, "T", 8, [(404, EdgeKind.PROPERTY, "gone")])
    out["dangling"] = dangling
    dup = tmp_path / "dup.snapbin"
    with SnapbinWriter(dup) as w:
        w.add_object(1, "T", 8)
        w.add_object(1, "T", 8)
    out["duplicate"] = dup
    return out


@pytest.mark.parametrize("command", ["inspect", "convert"])
def test_bad_input_is_one_line_and_a_non_zero_exit(tmp_path: Path, command: str) -> None:
    for name, path in damaged_files(tmp_path).items():
        args = [command, str(path)] + ([str(tmp_path / "out.snapbin")] if command == "convert" else [])
        code, out, err = run(*args)
        assert code == 1, (name, code, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("heapdb: error: ") and str(path) in lines[0], (name, err)
        assert "Traceback" not in err + out
    code, _, err = run("inspect", str(tmp_path / "missing.snapbin"))
    assert code == 1 and "cannot open" in err


def test_the_real_executable_reports_a_truncated_file_in_one_line(tmp_path: Path) -> None:
    truncated = damaged_files(tmp_path)["truncated"]
    proc = subprocess.run([str(HEAPDB), "inspect", str(truncated)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "truncated" in proc.stderr and str(truncated) in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("format_name", ["V8", "Luau", "hprof", "snap.bin"])
def test_load_help_names_every_format_it_reads(format_name: str) -> None:
    result = CliRunner().invoke(main, ["load", "--help"])
    assert result.exit_code == 0 and format_name in " ".join(result.output.split())
