"""Duplicate strings of Java heap dumps (heapdb.loader.inspections.java_strings) against VisualVM's
heap library and the program's own knowledge.

- A real dump (tests/java/DupStrings.java, JDK 9+ compact strings: 3,000 copies of one 1.6 kB
  configuration text in LATIN1, 500 of one UTF16 text, 200 Strings sharing one value array, an
  interned text): every java.lang.String VisualVM reads and reaches, decoded from its value array
  and coder by the library's elements and grouped by the digest of its characters, is in one of our
  groups with the same copies, ids and retained bytes; the report's top rows are the program's texts.
- Hand-written dumps: a JDK 8 String (char[]) and a JDK 9+ LATIN1 and UTF16 String (byte[] and
  coder) of one text are one content, with the key the same text has in any format.
"""

from __future__ import annotations

import collections
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from heapdb.loader import analysis, formats
from heapdb.loader.graph import HeapGraph
from heapdb.loader.inspections import strings
from heapdb.loader.redaction import Redaction
from heapdb.loader.rules.model import Match, Pattern, PatternKind
from heapdb.loader.store import LoadInput
from heapgen.hprof_writer import BYTE, CHAR, INT, OBJECT, ROOT_JNI_GLOBAL, HprofWriter, standard_classes
from heapgen.java import compile_java, dump_program

VISUALVM_HEAP_JAR = Path("/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar")
COPIES = 3000  # DupStrings' requests
GREETINGS = 500  # of them holding the UTF16 text
SHARED = 200  # Strings over one value array
POOLED = "pool-3000"  # the interned text, held 100 times and copied once


@pytest.fixture(scope="module")
def java_dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """DupStrings' heap dump, VisualVM's reading of its strings (StringsOracle) and the length of
    the program's configuration text."""
    assert all(shutil.which(tool) for tool in ("javac", "java", "jcmd")), "scripts/bootstrap.sh installs a JDK"
    assert VISUALVM_HEAP_JAR.is_file(), "scripts/bootstrap.sh installs visualvm"
    tmp = tmp_path_factory.mktemp("dup-strings-java")
    classes = compile_java(tmp, "DupStrings.java", "StringsOracle.java", classpath=VISUALVM_HEAP_JAR)
    dump = tmp / "dup.hprof"
    copies, config_length = dump_program(classes, "DupStrings", dump)
    assert int(copies) == COPIES
    table = tmp / "strings.tsv"
    subprocess.run(
        ["java", "-cp", f"{VISUALVM_HEAP_JAR}:{classes}", "StringsOracle", str(dump), str(table)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return dump, table, int(config_length)


def our_groups(graph: HeapGraph, grouped: strings.StringGroups) -> list[tuple[int, int, int, list[int]]]:
    """Every group as (copies, length, retained bytes, sorted ids), sorted."""
    return sorted(
        (
            int(grouped.count[g]),
            int(grouped.length[g]),
            int(grouped.retained_size[g]),
            sorted(graph.ids[grouped.members(g)].tolist()),
        )
        for g in range(grouped.count.shape[0])
    )


def test_strings_group_as_visualvm_reads_them(java_dump: tuple[Path, Path, int]) -> None:
    dump, table, config_length = java_dump
    groups: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    retained: dict[int, int] = {}
    prefix: dict[tuple[str, str], str] = {}
    for line in table.read_text().splitlines():
        string_id, length, size, reached, digest, head = line.split("\t")
        if reached == "1":  # what the root reaches: the rest is garbage, not waste
            groups[(length, digest)].append(int(string_id))
            retained[int(string_id)] = int(size)
            prefix[(length, digest)] = bytes.fromhex(head).decode("utf-16-be", "surrogatepass")
    theirs = sorted(
        (len(ids), int(length), sum(retained[i] for i in ids), sorted(ids)) for (length, _), ids in groups.items()
    )
    graph = formats.read_graph(dump)
    result = analysis.analyze(graph)
    grouped = strings.string_groups(graph, result)
    assert grouped is not None
    assert our_groups(graph, grouped) == theirs

    report = strings.duplicate_strings(graph, result, source="dump", limit=len(groups))
    assert report is not None
    assert report.strings == len(retained) and report.string_bytes == sum(retained.values())
    assert report.duplicated == sum(len(ids) - 1 for ids in groups.values())
    assert report.values == sum(len(ids) > 1 for ids in groups.values())
    # Each row's text is VisualVM's reading of its content.
    by_ids = {tuple(sorted(ids)): key for key, ids in groups.items()}
    for row in report.rows:
        members = grouped.members(int(next(g for g in range(grouped.count.size) if grouped.key(g) == row.key)))
        assert row.value[:40] == prefix[by_ids[tuple(sorted(graph.ids[members].tolist()))]]

    # The program's own knowledge. The configuration's copies: a 24-byte String and its own byte[]
    # (16 bytes of header, one a character, to 8 bytes), one copy's share kept.
    config = report.rows[0]
    assert config.value.startswith("service.option.0=value-0;") and len(config.value) == strings.VALUE_CHARS
    assert config.count == COPIES and config.length == config_length
    each = 24 + (16 + config_length + 7) // 8 * 8
    assert config.retained_size == COPIES * each and config.wasted == (COPIES - 1) * each
    assert config.owners[0].type == "DupStrings$Request" and config.owners[0].copies == COPIES
    # The UTF16 text (and the literal it was copied from): two bytes a character.
    greeting = next(r for r in report.rows if r.value.startswith("Grüße aus Köln, 東京"))
    assert greeting.count == GREETINGS + 1 and greeting.length == len("Grüße aus Köln, 東京 und Ελλάδα: ✓")
    assert greeting.owners[0].type == "DupStrings$Request" and greeting.owners[0].copies == GREETINGS
    # Strings sharing one value array waste only their own 24 bytes each.
    shared = next(r for r in report.rows if r.length == 300)
    assert shared.count == SHARED + 1 and shared.wasted == SHARED * 24
    # An interned text is one object however often it is held: its copy made one group of two.
    pooled = next(r for r in report.rows if r.value == POOLED)
    assert pooled.count == 2
    assert not any(r.value.startswith("near-copy-") for r in report.rows)


def test_the_report_text_names_the_waste(java_dump: tuple[Path, Path, int]) -> None:
    graph = formats.read_graph(java_dump[0])
    report = strings.duplicate_strings(graph, analysis.analyze(graph), source="dump", limit=3)
    assert report is not None
    text = strings.duplicate_strings_text(report)
    assert text.startswith("Duplicate strings in dump: ") and "DupStrings$Request" in text


def test_a_redacting_load_keeps_the_figures_and_shows_no_text(java_dump: tuple[Path, Path, int]) -> None:
    graph = formats.read_graph(java_dump[0])
    result = analysis.analyze(graph)
    plain = LoadInput.from_analysis(graph, result).inspections.strings
    assert plain is not None and plain.rows[0].value.startswith("service.option.0=")
    # Every primitive value (a Java string's characters are its array's), or the strings by pattern.
    for redaction, covered in (
        (Redaction(values=True, key=bytes(32)), sum(r.length > 0 for r in plain.rows)),  # "" hides nothing
        (Redaction(strings=Match((Pattern(PatternKind.GLOB, "service.option.*"),)), key=bytes(32)), 2),
    ):
        redacted = LoadInput.from_analysis(graph, result, redaction=redaction).inspections.strings
        assert redacted is not None
        figures = ("length", "count", "retained_size", "wasted", "example_id", "owners")
        assert [[getattr(r, f) for f in figures] for r in redacted.rows] == [
            [getattr(r, f) for f in figures] for r in plain.rows
        ]
        hidden = [r for r in redacted.rows if r.value.startswith("[redacted ")]
        assert len(hidden) == covered and not any("service.option" in r.value for r in redacted.rows)


# --- hand-written dumps: the two layouts and the two codings ---------------------------------------

TEXT = "Grüße"  # Latin-1: a LATIN1 byte[] can hold it, and so can a UTF16 one


def string_dump(tmp: Path, name: str, jdk8: bool) -> Path:
    """A dump whose roots hold Strings of TEXT: a JDK 8 one over a char[], or a JDK 9+ LATIN1 one and
    a UTF16 one over byte[]s, and one String of another text."""
    w = HprofWriter()
    c = standard_classes(w)
    fields = [("value", OBJECT), ("hash", INT)] + ([] if jdk8 else [("coder", BYTE)])
    string_class = w.add_class("java/lang/String", c["java.lang.Object"], fields)
    w.add_class("[C" if jdk8 else "[B", c["java.lang.Object"])

    def string(data: bytes, code: int, coder: int) -> None:
        array, obj = w.alloc(), w.alloc()
        width = 2 if code == CHAR else 1
        w.raw_sub(b"\x23" + w.ident(array) + struct.pack(">IIB", 0, len(data) // width, code) + data)
        w.instance(obj, string_class, {"value": array, "coder": coder})
        w.root(ROOT_JNI_GLOBAL, obj)

    if jdk8:
        string(TEXT.encode("utf-16-be"), CHAR, 0)
    else:
        string(TEXT.encode("latin-1"), BYTE, 0)
        string(TEXT.encode("utf-16-le"), BYTE, 1)  # as x86-64's JVM holds a UTF16 string
        string("other".encode("latin-1"), BYTE, 0)
    path = tmp / name
    path.write_bytes(w.to_bytes())
    return path


def test_a_text_is_one_content_in_either_layout_and_coding(tmp_path: Path) -> None:
    expected = strings.content_key(*(int(a[0]) for a in strings.text_hashes([TEXT])))
    keys = {}
    for jdk8 in (True, False):
        graph = formats.read_graph(string_dump(tmp_path, f"jdk8-{jdk8}.hprof", jdk8))
        result = analysis.analyze(graph)
        grouped = strings.string_groups(graph, result)
        assert grouped is not None
        keys[jdk8] = {grouped.key(g): int(grouped.count[g]) for g in range(grouped.count.size)}
        report = strings.duplicate_strings(graph, result, source="dump", limit=5)
        assert report is not None
        if not jdk8:
            assert [(r.value, r.count, r.length) for r in report.rows] == [(TEXT, 2, len(TEXT))]
    assert keys[True] == {expected: 1}
    assert keys[False] == {expected: 2, strings.content_key(*(int(a[0]) for a in strings.text_hashes(["other"]))): 1}
