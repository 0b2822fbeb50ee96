"""The bounded fuzz run of every reader (the long run is ``benchmarks/fuzz.py``), plus the drills' findings.

Each example is one structure-aware mutation of a real seed (:mod:`heapgen.fuzz`), judged by the
oracle: a valid graph or a FormatError with a location, definitely-corrupt input rejected, memory and
time within the stated bounds. A few hundred examples per format, no Neo4j.
"""

from __future__ import annotations

import json
import random
import struct
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heapdb.errors import FormatError
from heapdb.loader.formats import luau, snapbin, v8
from heapdb.loader.formats.snapbin.layout import CHUNK_FIELDS, FILE_HEADER
from heapdb.loader.formats.text import MAX_PATH_CHARS, safe_strings
from heapdb.loader.luau_heapgraph import heapgraph_files
from heapdb.units import NAME_LIMIT
from heapgen.fuzz import FORMATS, _bomb_frame, make_case, memory_bound, run_case, seeds
from heapgen.seeds import (
    SAMPLE_ROOTS,
    dump_text,
    sample_objects,
    small_snapshot,
)

EXAMPLES = {"v8": 600, "luau": 600, "snapbin": 600, "hprof": 600, "mlpd": 300}  # about 3 s each


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzzed_input_is_read_or_rejected_with_a_format_error(fmt: str, tmp_path: Path) -> None:
    @settings(
        max_examples=EXAMPLES[fmt],
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        case = make_case(fmt, rng)
        outcome = run_case(case, tmp_path)
        assert outcome.result in ("accepted", "format_error"), (case.mutation, outcome)

    check()


# -- the drills' findings, one by one --------------------------------------------------------------


def write(tmp_path: Path, text: str | bytes, name: str = "case") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    return path


def v8_text(**meta_changes: object) -> dict:
    doc = small_snapshot()
    doc["snapshot"]["meta"].update(meta_changes)
    return doc


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["snapshot"]["meta"].update(node_types="hidden"),
        lambda d: d["snapshot"]["meta"].update(node_fields=[["type"], "name", "id", "self_size", "edge_count"]),
        lambda d: d["snapshot"]["meta"].update(node_fields=[*d["snapshot"]["meta"]["node_fields"], "id"]),
        lambda d: d["snapshot"].update(meta="[" * 1000 + "]" * 1000),
    ],
    ids=["node_types-string", "node_fields-list", "node_fields-twice", "meta-string"],
)
def test_v8_wrong_shapes_in_the_header_are_format_errors(tmp_path: Path, mutate: object) -> None:
    doc = small_snapshot()
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(FormatError, match="meta"):
        v8.read_graph(write(tmp_path, json.dumps(doc)))


@pytest.mark.parametrize("section", ["snapshot", "strings"])
def test_v8_deep_nesting_is_refused_before_parsing(tmp_path: Path, section: str) -> None:
    text = json.dumps(small_snapshot())
    deep = "[" * 100_000 + "]" * 100_000
    at = text.index('"meta": ') + len('"meta": ') if section == "snapshot" else text.index('"strings": [') + 12
    text = text[:at] + deep + ("," if section == "strings" else ', "x": 1, "m": ') + text[at:]
    with pytest.raises(FormatError, match="nested more than") as caught:
        v8.read_graph(write(tmp_path, text))
    assert caught.value.offset is not None


def test_v8_deep_nesting_in_a_skipped_section_is_fine(tmp_path: Path) -> None:
    doc = small_snapshot()
    text = json.dumps(doc)[:-1] + ', "trace_tree": ' + "[" * 5000 + "]" * 5000 + "}"
    assert v8.read_graph(write(tmp_path, text)).node_count == 7


def test_v8_lone_surrogates_become_escapes(tmp_path: Path) -> None:
    doc = small_snapshot()
    doc["strings"][2] = "Leaky\ud800"
    doc["strings"][3] = "pair \ud83d\ude00 ok, lone \udcff"
    g = v8.read_graph(write(tmp_path, json.dumps(doc)))
    assert "Leaky\\ud800" in g.strings and "pair \U0001f600 ok, lone \\udcff" in g.strings
    for s in g.strings:
        s.encode("utf-8")  # never raises


def test_inspect_prints_control_characters_and_surrogates_as_escapes(tmp_path: Path) -> None:
    """Names go to a terminal escaped: an ANSI sequence or a NUL in a type does not reach it raw."""
    from click.testing import CliRunner

    from heapdb.cli import main

    doc = small_snapshot()
    doc["strings"] = [s + "\x1b[2J\x00\ud800" for s in doc["strings"]]
    result = CliRunner().invoke(main, ["inspect", str(write(tmp_path, json.dumps(doc)))])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x00" not in result.output
    assert "\\x1b[2J\\x00\\ud800" in result.output


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"0x8000000000000000": {"type": "table", "cat": 0, "size": 8}}, "above 0x7fffffffffffffff"),
        ({"0x2000": {"type": "table", "cat": 0, "size": 2**63}}, "out of range"),
        ({"0x2000": {"type": "table", "cat": 0, "size": -(2**63) - 1}}, "out of range"),
        ({"0x2000": {"type": "table", "cat": 0, "size": -(2**40)}}, "out of range"),
        ({"0x2000": {"type": "table", "cat": 0, "size": 8, "pairs": "0x1000"}}, "list of addresses"),
        ({"0x2000": ["not", "an", "object"]}, "expected an object"),
        ({"1_0": {"type": "table", "cat": 0, "size": 8}}, "hexadecimal"),
    ],
)
def test_luau_out_of_range_and_wrong_shapes_are_format_errors(tmp_path: Path, change: dict, match: str) -> None:
    objects = {**sample_objects(), **change}
    with pytest.raises(FormatError, match=match) as caught:
        luau.read_graph(write(tmp_path, dump_text(objects, SAMPLE_ROOTS, {"size": 0})))
    assert caught.value.record is not None


def test_luau_references_to_non_objects_are_format_errors(tmp_path: Path) -> None:
    objects: dict[str, Any] = sample_objects()
    objects["0x2000"] = ["junk"]
    table = next(a for a, o in objects.items() if o.get("type") == "table")
    objects[table]["metatable"] = "0x2000"
    objects[table]["pairs"] = ["0x2000", "0x2000"]
    path = write(tmp_path, dump_text(objects, SAMPLE_ROOTS, {"size": 0}))
    with pytest.raises(FormatError):
        luau.read_graph(path)
    with pytest.raises(FormatError, match="not an object of the dump"):
        heapgraph_files(path)


def test_luau_deep_nesting_is_refused_before_parsing(tmp_path: Path) -> None:
    text = dump_text(sample_objects(), SAMPLE_ROOTS)
    at = text.index('"stats":') + len('"stats":')
    deep = '{"k":' * 50_000 + "1" + "}" * 50_000
    text = text[:at] + '{"deep": ' + deep + ', "x": ' + text[at:] + "}"
    path = write(tmp_path, text)
    with pytest.raises(FormatError, match="nested more than") as caught:
        luau.read_graph(path)
    assert caught.value.offset == at + len('{"deep": ') + 5 * (luau.MAX_JSON_DEPTH - 2)
    with pytest.raises(FormatError, match="nested more than"):
        heapgraph_files(path)


def test_luau_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    objects = sample_objects()
    objects["0x2000"] = {"type": "string", "cat": 0, "size": 8, "data": "[{" * 5000 + '\\"'}
    g = luau.read_graph(write(tmp_path, dump_text(objects, SAMPLE_ROOTS, {"size": 0})))
    assert "[{" * 5000 + '\\"' in g.strings


def _bomb(tmp_path: Path, chunks: int, size: int) -> Path:
    seed = seeds("snapbin")[0]
    frame = _bomb_frame(size)
    fields = CHUNK_FIELDS.pack(2, 1, 0, 0, len(frame), size, zlib.crc32(frame))
    bomb = fields + struct.pack("<I", zlib.crc32(fields)) + frame
    return write(tmp_path, seed[: FILE_HEADER.size] + bomb * chunks + seed[FILE_HEADER.size :], "bomb.snapbin")


def test_snapbin_decompression_bombs_are_refused_before_they_inflate(tmp_path: Path) -> None:
    path = _bomb(tmp_path, 30, 700 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="decompression bomb"):
            snapbin.read_graph(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < memory_bound(path.stat().st_size) and peak < 1 << 20


def test_snapbin_lone_surrogates_become_escapes(tmp_path: Path) -> None:
    path = tmp_path / "s.snapbin"
    with snapbin.SnapbinWriter(path) as w:
        w.add_object(1, "T\udcff", 8, name="lone \ud800 here")
    g = snapbin.read_graph(path)
    assert "T\\udcff" in g.strings and "lone \\ud800 here" in g.strings


def test_safe_strings_leaves_valid_text_alone() -> None:
    texts = ["", "nul\0", "é", "\U0001f600", "x" * 10_000]
    assert safe_strings(texts) == texts
    assert safe_strings(["a\ud800b\udfff"]) == ["a\\ud800b\\udfff"]


def test_a_megabyte_type_name_makes_bounded_path_texts(tmp_path: Path) -> None:
    from heapdb.loader.analysis import analyze
    from heapdb.loader.paths import describe_path, first_paths, path_hops

    long_type = "T" * (1 << 20)
    strings = ["", "(GC roots)", long_type, "next"]
    rows: list[Any] = [("synthetic", 0, 1, 0, [("element", 1, 1)]), ("synthetic", 1, 3, 0, [("element", 0, 2)])]
    n = 300
    for i in range(n):
        edges = [("property", "next", i + 3)] if i + 1 < n else []
        rows.append(("object", 2 if i % 2 else 3, 5 + 2 * i, 16, edges))
    from heapgen.seeds import snapshot_dict

    g = v8.read_graph(write(tmp_path, json.dumps(snapshot_dict(rows, strings))))
    paths = first_paths(g, analyze(g).retaining)
    deepest = g.node_count - 1
    hops = path_hops(g, paths, deepest)
    assert all(len(h) <= 2 * NAME_LIMIT + 3 for h in hops)
    assert len(describe_path(g, paths, deepest)) <= MAX_PATH_CHARS
    assert hops[1] == "…" and hops[-1].startswith("next → T")
