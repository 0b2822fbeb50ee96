"""`heapdb receive`: a producer streams a snapshot over a socket while it writes it. The stream is
checked chunk by chunk as it arrives (loader/formats/snapbin/stream.py, against the file reader's
own errors as the oracle), spooled, and loaded as `heapdb load` loads the file; a stream cut off,
corrupted, idle or too large is refused, its connection closed, and nothing of it stays: no spool
file, nothing in the catalog. One small load into the session's Neo4j."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from heapdb import mono, settings
from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import FormatError
from heapdb.loader import store
from heapdb.loader.formats import snapbin
from heapdb.loader.formats.snapbin.from_graph import write_graph
from heapdb.loader.formats.snapbin.layout import CHUNK_FIELDS, FILE_HEADER, STRINGS
from heapdb.loader.formats.snapbin.stream import StreamCheck
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.units import human_bytes
from heapgen.synth import synth_graph
from tests.test_mono import MARKERS, triggers  # noqa: F401 - the Mono trigger program (a fixture), built once

CHUNK_OBJECTS = 300  # objects per chunk: the small snapshot streams as a dozen chunks


def unique_tag(label: str) -> str:
    return f"receive-{label}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The snapshot written the normal way: to a file."""
    path = tmp_path_factory.mktemp("receive") / "small.snap.bin"
    write_graph(synth_graph(3000, 12000, seed=5), path, compress=True, chunk_objects=CHUNK_OBJECTS)
    return path


def chunk_holding(path: Path, byte: int) -> tuple[int, int]:
    """The offset and ordinal of the chunk that holds ``byte``, as the file reader reads them."""
    last = max((r for r in snapbin.iter_records(path) if 0 < r.offset <= byte), key=lambda r: r.offset)
    return last.offset, last.index


def read_error(data: bytes, tmp_path: Path) -> FormatError:
    """The file reader's error for ``data`` as a file: the oracle of the stream's."""
    path = tmp_path / "oracle.snap.bin"
    path.write_bytes(data)
    with pytest.raises(FormatError) as raised:
        snapbin.read_graph(path)
    return raised.value


def stream_error(data: bytes, piece: int = 777) -> tuple[FormatError, int]:
    """The stream check's error for ``data`` fed ``piece`` bytes at a time, and how many bytes were
    fed when it came."""
    check = StreamCheck("the stream")
    fed = 0
    with pytest.raises(FormatError) as raised:
        for start in range(0, len(data), piece):
            fed = min(start + piece, len(data))
            check.feed(data[start:fed])
        check.finish()
    return raised.value, fed


def test_a_stream_passes_in_any_pieces_and_every_cut_is_refused_where_the_file_reader_says(
    small: Path, tmp_path: Path
) -> None:
    raw = small.read_bytes()
    for piece in (1, 31, 4096, len(raw)):
        check = StreamCheck("the stream")
        for start in range(0, len(raw), piece):
            check.feed(raw[start : start + piece])
        check.finish()
        assert check.complete and check.received == len(raw)
    for cut in sorted({0, 5, FILE_HEADER.size, FILE_HEADER.size + 7, *range(101, len(raw), 2099), len(raw) - 1}):
        got, _ = stream_error(raw[:cut])
        expected = read_error(raw[:cut], tmp_path)
        assert got.offset == expected.offset, (cut, got, expected)
        if expected.record is not None:  # at a chunk's start the file reader names none; the stream the next one
            assert got.record == expected.record, (cut, got, expected)
        if cut >= FILE_HEADER.size:  # past the header: a cut stream names the bytes it got
            assert f"after {cut:,} bytes, before the end of its trailer chunk" in got.problem, got


def test_a_corrupted_chunk_is_refused_before_the_next_one_arrives_where_the_file_reader_says(
    small: Path, tmp_path: Path
) -> None:
    raw = small.read_bytes()
    ends = sorted(r.offset for r in snapbin.iter_records(small) if r.offset > 0)[1:] + [len(raw)]
    for position in range(3, len(raw), 1531):
        corrupt = bytearray(raw)
        corrupt[position] ^= 0x10
        got, fed = stream_error(bytes(corrupt), piece=64)
        expected = read_error(bytes(corrupt), tmp_path)
        assert (got.offset, got.record, got.problem) == (expected.offset, expected.record, expected.problem)
        # Refused by the piece that completed the bad chunk at the latest, not at the stream's end.
        end = next((e for e in ends if e > position), len(raw))
        assert fed < end + 64, (position, fed, end)


def test_a_decompression_bomb_is_refused_from_its_chunk_header_before_its_payload_comes(small: Path) -> None:
    """The total expansion limit (docs/format.md, 2.2) of a stream counts the bytes received through
    the chunk, so a chunk declaring far more than 256 times that is refused from its header."""
    raw = 700 << 20
    fields = CHUNK_FIELDS.pack(STRINGS, 1, 0, 0, 1000, raw, 0)
    check = StreamCheck("the stream")
    check.feed(small.read_bytes()[: FILE_HEADER.size])
    with pytest.raises(FormatError, match="decompression bomb") as raised:
        check.feed(fields + struct.pack("<I", zlib.crc32(fields)))
    assert "the 1048 bytes received through this chunk" in raised.value.problem


class Receiver:
    """`heapdb receive --listen 127.0.0.1:0` as a process; the port it prints."""

    def __init__(self, spool: Path, *args: str, **env: str) -> None:
        self.spool = spool
        self.process = subprocess.Popen(
            [sys.executable, "-m", "heapdb", "receive", "--listen", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, settings.PROGRESS.name: "0", settings.SPOOL_DIR.name: str(spool), **env},
        )
        assert self.process.stderr is not None
        said = self.process.stderr.readline().decode()
        assert said.startswith("heapdb: listening on 127.0.0.1:"), said + self.process.stderr.read().decode()
        self.port = int(said.rsplit(":", 1)[1])

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=60)

    def end(self, timeout: float = 300) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out.decode(), err.decode()


class Counting:
    """A socket's file that remembers the size of every write: whether a writer streams."""

    def __init__(self, connection: socket.socket) -> None:
        self.file = connection.makefile("wb", buffering=0)
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.writes.append(bytes(data))
        self.file.write(data)
        return len(data)

    def flush(self) -> None:
        self.file.flush()


def test_a_producer_streams_a_snapshot_into_receive_and_it_loads_as_the_file(
    database: Database, small: Path, tmp_path: Path
) -> None:
    """The writer streams (no write holds more than a chunk), the bytes are the file's, and the
    snapshot stored has the file's counts (`heapdb inspect` of the file is the oracle)."""
    tag = unique_tag("good")
    receiver = Receiver(tmp_path / "spool", "--tag", tag, "--json")
    with receiver.connect() as connection:
        producer = Counting(connection)
        write_graph(synth_graph(3000, 12000, seed=5), producer, compress=True, chunk_objects=CHUNK_OBJECTS)  # type: ignore[arg-type]
        producer.file.close()  # the socket's file holds the connection open until it is closed too
    status, out, err = receiver.end()
    assert status == 0, err
    raw = small.read_bytes()
    assert b"".join(producer.writes) == raw
    # One write per header and per chunk payload (a dozen chunks): never the file at once.
    assert len(producer.writes) > 20 and max(map(len, producer.writes)) < len(raw) / 4
    report = json.loads(out)
    assert report["tag"] == tag and list(report["seconds"])[:2] == ["receive", "read"]
    inspected = CliRunner().invoke(main, ["inspect", str(small), "--json"])
    counts = json.loads(inspected.stdout)["counts"]
    stored = store.get_snapshot(database, tag)
    assert (stored.object_count, stored.reference_count, stored.total_size) == (
        counts["nodes"],
        counts["edges"],
        counts["self_size"],
    )
    assert report["objects"] == counts["nodes"] and stored.format == "snapbin"
    assert (stored.source or "").startswith("tcp://127.0.0.1:")
    assert f"heapdb: received {human_bytes(len(raw))} from 127.0.0.1:" in err
    assert list(receiver.spool.iterdir()) == []


def test_the_mono_module_streams_a_capture_into_receive(
    database: Database,
    triggers: tuple[mono.Build, Path],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    """heapdb's Mono profiler module with output=tcp:HOST:PORT writes as it walks the heap; the
    snapshot `receive` loads holds the objects the program made."""
    built, exe = triggers
    tag = unique_tag("mono")
    receiver = Receiver(tmp_path / "spool", "--tag", tag, "--json")
    argv = mono.mono_command(str(exe), ["call", str(MARKERS)], [f"output=tcp:127.0.0.1:{receiver.port}"])
    subprocess.run(argv, env=mono.environment(built), check=True, capture_output=True, timeout=120)
    status, out, err = receiver.end()
    assert status == 0, err
    rows = {r.type: r for r in Questions(database).types(tag, params.Types(limit=10_000))}
    assert rows["Marker"].count == MARKERS
    assert json.loads(out)["objects"] == store.get_snapshot(database, tag).object_count
    assert list(receiver.spool.iterdir()) == []


def send_then_close(receiver: Receiver, data: bytes) -> None:
    with receiver.connect() as connection:
        connection.sendall(data)


def send_until_refused(receiver: Receiver, data: bytes) -> None:
    """Send ``data``, then keep sending: the receiver closes the connection at the bad chunk."""
    with receiver.connect() as connection, pytest.raises(OSError):  # EPIPE or ECONNRESET
        connection.sendall(data)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            connection.sendall(b"\0" * 65536)


def send_then_idle(receiver: Receiver, data: bytes) -> None:
    assert receiver.process.stderr is not None
    with receiver.connect() as connection:
        connection.sendall(data)
        assert "heapdb: receiving" in receiver.process.stderr.readline().decode()
        with pytest.raises(ConnectionRefusedError):  # one stream without --keep: it listens no more
            receiver.connect()
        receiver.process.wait(60)  # the producer hangs, connected: the receiver gives up on it


def listed(database: Database, tag: str) -> bool:
    return any(s.tag == tag for s in store.list_snapshots(database, include_incomplete=True))


@pytest.mark.parametrize("case", ["cut", "corrupted", "idle", "too large"])
def test_a_bad_stream_is_refused_with_a_clear_error_and_leaves_nothing(
    case: str, database: Database, small: Path, tmp_path: Path
) -> None:
    raw = small.read_bytes()
    middle = len(raw) // 2
    at, index = chunk_holding(small, middle)
    corrupt = bytearray(raw)
    corrupt[middle] ^= 0x01
    cases: dict[str, tuple[Any, bytes, dict[str, str], list[str]]] = {
        "cut": (send_then_close, raw[:middle], {}, [
            f"at byte {at}, chunk #{index} (objects): the stream ends inside the payload",
            f"after {middle:,} bytes, before the end of its trailer chunk",
        ]),
        "corrupted": (send_until_refused, bytes(corrupt), {}, [
            f"at byte {at + 32}, chunk #{index} (objects): chunk payload checksum mismatch (corrupted)",
        ]),
        "idle": (send_then_idle, raw[:middle], {settings.RECEIVE_TIMEOUT.name: "1"}, [
            f"sent nothing for 1 s after {middle:,} bytes ({settings.RECEIVE_TIMEOUT.name})",
        ]),
        "too large": (send_until_refused, raw, {settings.MAX_UPLOAD_BYTES.name: "10000"}, [
            f"is larger than the limit of 9.8 KiB (10,000 bytes, {settings.MAX_UPLOAD_BYTES.name})",
        ]),
    }  # fmt: skip
    send, data, env, says = cases[case]
    tag = unique_tag(case.replace(" ", "-"))
    receiver = Receiver(tmp_path / "spool", "--tag", tag, **env)
    send(receiver, data)
    status, out, err = receiver.end(120)
    assert status == 1 and out == "", err
    assert "heapdb: error: the stream from 127.0.0.1:" in err and "Traceback" not in err, err
    for said in says:
        assert said in err, err
    assert list(receiver.spool.iterdir()) == []
    assert not listed(database, tag)


def test_keep_takes_stream_after_stream_and_a_refused_one_does_not_end_it(small: Path, tmp_path: Path) -> None:
    """Two bad streams, each refused and reported; it listens on until Ctrl-C. No load."""
    raw = small.read_bytes()
    receiver = Receiver(tmp_path / "spool", "--keep", "--tag", unique_tag("keep") + "-{n}")
    assert receiver.process.stderr is not None
    refused = []
    for data in (raw[: len(raw) // 3], raw[:100]):
        send_then_close(receiver, data)
        while "heapdb: error:" not in (line := receiver.process.stderr.readline().decode()):
            assert line, "receive ended"
        refused.append(line)
    assert ["ends inside the payload" in r for r in refused] == [True, True]
    assert receiver.process.poll() is None
    receiver.process.send_signal(signal.SIGINT)
    status, _, err = receiver.end(60)
    assert status == 130 and "interrupted" in err, err
    assert list(receiver.spool.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--listen", "127.0.0.1:0", "--tag", "t", "--keep"], "put {n} in --tag"),
        (["--listen", "no-port", "--tag", "t"], "is not HOST:PORT"),
        (["--listen", "127.0.0.1:99999", "--tag", "t"], "is not HOST:PORT"),
    ],
)
def test_usage_errors_come_before_listening(args: list[str], says: str) -> None:
    result = CliRunner().invoke(main, ["receive", *args])
    assert result.exit_code == 2 and says in result.stderr, result.output
