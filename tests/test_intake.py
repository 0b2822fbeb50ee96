"""Snapshots uploaded to a real service process (`heapdb serve`) and loaded by its job runner into the
session's real Neo4j: `heapdb push` and plain HTTP, compressed or not; bad uploads refused with
nothing left behind; tokens; cancelling; a service killed with -9 mid-load and started again; the
service's memory while a big upload streams through it."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import zstandard
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotFound
from heapdb.loader import store
from heapdb.loader.formats import snapbin
from heapdb.loader.formats.snapbin.from_graph import write_graph
from heapdb.loader.formats.snapbin.layout import CHUNK_FIELDS, FILE_HEADER
from heapdb.neo4j_server import free_port
from heapdb.processes import pid_alive
from heapdb.service import jobs
from heapdb.service.app import create_app
from heapgen.synth import synth_graph

READ, WRITE = "read-token-for-tests", "write-token-for-tests"
LIMIT = 64 << 20  # the test service's upload limit


def unique_tag(label: str) -> str:
    return f"intake-{label}-{uuid.uuid4().hex[:8]}"


def wait_until(condition: Callable[[], bool], timeout: float = 300, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


class ServiceProcess:
    """`heapdb serve` as a process of its own on a free port, with the tokens and a spool directory."""

    def __init__(self, spool: Path, log: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.spool = spool
        self.log = log
        self.env = {
            **os.environ,
            "HEAPDB_API_TOKEN": READ,
            "HEAPDB_API_WRITE_TOKEN": WRITE,
            "HEAPDB_SPOOL_DIR": str(spool),
            "HEAPDB_MAX_UPLOAD_BYTES": str(LIMIT),
            "HEAPDB_PROGRESS": "0",
            **env,
        }
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ServiceProcess:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "heapdb", "serve", "--port", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=self.env,
            )

        def up() -> bool:
            assert self.process is not None and self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                return httpx.get(f"{self.url}/api/health", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, 120, "the service to start")
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def client(self, token: str | None = WRITE) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)

    def high_water_mark(self) -> int:
        """The process's peak resident memory in bytes (VmHWM)."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc")


@pytest.fixture(scope="module")
def service(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("intake")
    running = ServiceProcess(home / "spool", home / "service.log").start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def small_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("small") / "small.bin"
    write_graph(synth_graph(3000, 12000, seed=3), path)
    return path


@pytest.fixture(scope="module")
def big_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Big enough that its load runs for a while (numba's compilation alone takes seconds)."""
    path = tmp_path_factory.mktemp("big") / "big.bin"
    write_graph(synth_graph(300_000, 1_200_000, seed=11), path)
    return path


def upload(client: httpx.Client, tag: str, content: Any, encoding: str = "identity", **params: str) -> httpx.Response:
    return client.post(
        "/api/snapshots", params={"tag": tag, **params}, content=content, headers={"Content-Encoding": encoding}
    )


def job_of(client: httpx.Client, job_id: str) -> dict[str, Any]:
    response = client.get(f"/api/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def wait_for_phase(client: httpx.Client, job_id: str, phases: tuple[str, ...], timeout: float = 300) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    def reached() -> bool:
        seen.append(job_of(client, job_id))
        return seen[-1]["phase"] in phases

    wait_until(reached, timeout, f"job {job_id} to reach {phases} (last: {seen[-1] if seen else None})")
    return seen[-1]


def spool_files(service: ServiceProcess) -> list[str]:
    return sorted(p.name for p in service.spool.iterdir()) if service.spool.exists() else []


def visible(database: Database, tag: str) -> bool:
    try:
        store.get_snapshot(database, tag)
    except NotFound:
        return False
    return True


def test_push_loads_a_v8_snapshot_as_is_gzip_and_zstd(
    service: ServiceProcess, database: Database, leak_snapshots: dict[str, Path]
) -> None:
    """`heapdb push --wait` for each encoding: the job ends done, and the snapshot answers `top`.
    (The smallest of the leak snapshots: three loads of it.)"""
    leak_snapshot = leak_snapshots["baseline"]
    counts = set()
    for compress in ("none", "gzip", "zstd"):
        tag = unique_tag(f"push-{compress}")
        result = CliRunner().invoke(
            main,
            [
                "push", str(leak_snapshot), "--tag", tag, "--server", service.url, "--token", WRITE,
                "--compress", compress, "--meta", "build=b42", "--meta", "owner=team-x", "--wait", "--json",
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output + result.stderr
        job = __import__("json").loads(result.stdout)
        assert job["phase"] == "done" and job["tag"] == tag and job["format"] == "v8"
        assert job["meta"] == {"build": "b42", "owner": "team-x"}
        counts.add((job["report"]["objects"], job["report"]["references"]))
        with service.client(READ) as reader:
            top = reader.get(f"/api/snapshots/{tag}/top", params={"limit": 3})
            assert top.status_code == 200, top.text
            assert len(top.json()) == 3
            record = reader.get(f"/api/snapshots/{tag}").json()
            assert record["meta"]["build"] == "b42"
            # Its source is the file's name as pushed, never the path of the service's own copy.
            assert record["source"] == leak_snapshot.name
            assert str(service.spool) not in reader.get("/api/snapshots", params={"all": "true"}).text
    assert len(counts) == 1  # the same snapshot whatever the encoding
    assert spool_files(service) == []


def test_a_plain_http_upload_streams_compressed_bodies(
    service: ServiceProcess, database: Database, small_snapshot: Path
) -> None:
    """What curl does: the file as the body, zstd or gzip, then the job's URL until done."""
    raw = small_snapshot.read_bytes()
    for encoding, content in (("zstd", zstandard.ZstdCompressor().compress(raw)), ("gzip", gzip.compress(raw))):
        tag = unique_tag(encoding)
        with service.client() as client:
            response = upload(client, tag, content, encoding, build="b1", branch="main")
            assert response.status_code == 202, response.text
            created = response.json()
            assert response.headers["location"] == created["url"] == f"/api/jobs/{created['id']}"
            assert created["phase"] == "queued" and created["bytes"] == len(raw) and created["format"] == "snapbin"
            done = wait_for_phase(client, created["id"], jobs.ENDED)
            assert done["phase"] == "done", done.get("error")
            assert done["progress"] == 1.0 and done["finished_at"] and done.get("pid") is None
            listed = client.get("/api/jobs", params={"tag": tag}).json()
            assert [j["id"] for j in listed] == [created["id"]]
        stored = store.get_snapshot(database, tag)
        assert stored.object_count == done["report"]["objects"]
        assert stored.source == ""  # no name given: none shown, not the spool's path
    assert spool_files(service) == []


def test_bad_uploads_get_a_clear_4xx_and_leave_nothing(
    service: ServiceProcess, database: Database, small_snapshot: Path
) -> None:
    raw = small_snapshot.read_bytes()
    tag = unique_tag("bad")
    # A zip bomb: a few KB sent, more than the limit once decompressed. A snap.bin as far as the
    # limit (checked as it arrives): one chunk of a kind to skip, as long as the limit.
    skipped = CHUNK_FIELDS.pack(100, 0, 0, 0, LIMIT, LIMIT, 0)
    skipped += struct.pack("<I", zlib.crc32(skipped))
    bomb = zstandard.ZstdCompressor().compress(raw[: FILE_HEADER.size] + skipped + b"\0" * LIMIT)
    gz = gzip.compress(raw)
    cases: list[tuple[str, Any, str, dict[str, str], int, str]] = [
        ("garbage", os.urandom(100_000), "identity", {}, 422, "not a snapshot"),
        ("empty", b"", "identity", {}, 422, "empty"),
        ("bad tag", raw, "identity", {"tag": "."}, 422, "a tag cannot be"),
        ("long tag", raw, "identity", {"tag": "x" * 1001}, 422, "at most 1,000 characters"),
        ("too big", b"\0" * (LIMIT + 1), "identity", {}, 413, "HEAPDB_MAX_UPLOAD_BYTES"),
        ("bomb", bomb, "zstd", {}, 413, "decompressed"),
        ("cut gzip", gz[: len(gz) // 2], "gzip", {}, 422, "ends early"),
        ("corrupt gzip", b"\x1f\x8b" + os.urandom(5000), "gzip", {}, 422, "gzip stream is corrupt"),
        ("brotli", raw, "br", {}, 415, "'br'"),
        ("bad meta", raw, "identity", {"meta": "novalue"}, 422, "KEY=VALUE"),
    ]
    with service.client() as client:
        for name, content, encoding, params, status, says in cases:
            response = upload(client, params.pop("tag", tag), content, encoding, **params)
            assert response.status_code == status, (name, response.text)
            assert says in response.json()["error"], (name, response.text)
            assert spool_files(service) == [], name
        assert client.get("/api/jobs", params={"tag": tag}).json() == []
    assert not visible(database, tag)


def test_a_taken_tag_is_refused_before_the_body(
    service: ServiceProcess, database: Database, small_snapshot: Path
) -> None:
    tag = unique_tag("taken")
    with service.client() as client:
        first = upload(client, tag, small_snapshot.read_bytes())
        assert wait_for_phase(client, first.json()["id"], jobs.ENDED)["phase"] == "done"
        again = upload(client, tag, small_snapshot.read_bytes())
        assert again.status_code == 409 and "replace=true" in again.json()["error"]
        check = client.post("/api/snapshots", params={"tag": tag, "check": "true"})
        assert check.status_code == 409
        replaced = upload(client, tag, small_snapshot.read_bytes(), replace="true")
        assert replaced.status_code == 202
        assert wait_for_phase(client, replaced.json()["id"], jobs.ENDED)["phase"] == "done"


def test_a_truncated_snapshot_fails_its_job_with_the_readers_error(
    service: ServiceProcess, database: Database, small_snapshot: Path, leak_snapshots: dict[str, Path]
) -> None:
    """It looks like a snapshot (its head sniffs), so it is taken; reading it fails, nothing shows.
    (A V8 snapshot: a snap.bin is checked as it arrives, and a cut one refused at once, below.)"""
    raw = leak_snapshots["baseline"].read_bytes()
    tag = unique_tag("truncated")
    with service.client() as client:
        response = upload(client, tag, raw[: len(raw) // 2])
        assert response.status_code == 202, response.text
        ended = wait_for_phase(client, response.json()["id"], jobs.ENDED)
    assert ended["phase"] == "failed"
    assert "the uploaded snapshot" in ended["error"] and "byte" in ended["error"], ended["error"]
    assert str(service.spool) not in ended["error"]
    assert not visible(database, tag)
    assert spool_files(service) == []
    result = CliRunner().invoke(main, ["push", str(small_snapshot), "--tag", tag, "--server", service.url,
                                       "--token", WRITE, "--wait"])  # fmt: skip
    assert result.exit_code == 0, result.stderr  # the tag is free for a good upload


def test_push_says_why_a_load_failed_and_exits_non_zero(
    service: ServiceProcess, leak_snapshots: dict[str, Path], tmp_path: Path
) -> None:
    cut = tmp_path / "cut.heapsnapshot"
    cut.write_bytes(leak_snapshots["baseline"].read_bytes()[:5000])  # sniffs as V8; its load fails
    result = CliRunner().invoke(
        main, ["push", str(cut), "--tag", unique_tag("cut"), "--server", service.url, "--token", WRITE, "--wait"]
    )
    assert result.exit_code == 1
    assert "failed" in result.stderr and "the uploaded snapshot" in result.stderr
    refused = CliRunner().invoke(main, ["push", str(cut), "--tag", ".", "--server", service.url, "--token", WRITE])
    assert refused.exit_code == 1 and "refused (422)" in refused.stderr and "Traceback" not in refused.stderr
    unauthorised = CliRunner().invoke(main, ["push", str(cut), "--tag", "t", "--server", service.url, "--token", READ])
    assert unauthorised.exit_code == 1 and "403" in unauthorised.stderr


def test_writes_need_the_write_token_and_reads_take_either(service: ServiceProcess, small_snapshot: Path) -> None:
    raw = small_snapshot.read_bytes()
    with service.client(None) as anonymous, service.client(READ) as reader, service.client(WRITE) as writer:
        assert upload(anonymous, "t", raw).status_code == 401
        assert upload(reader, "t", raw).status_code == 403
        assert reader.delete("/api/jobs/nothing").status_code == 403
        assert anonymous.get("/api/jobs").status_code == 401
        assert reader.get("/api/jobs").status_code == 200
        assert writer.get("/api/jobs").status_code == 200  # the write token reads too
        assert writer.get("/api/jobs/nothing").status_code == 404
    assert spool_files(service) == []


def test_without_a_write_token_the_service_takes_no_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEAPDB_API_WRITE_TOKEN", raising=False)
    client = TestClient(create_app(token=READ))
    for token in (None, READ):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = client.post("/api/snapshots", params={"tag": "t"}, content=b"x", headers=headers)
        assert response.status_code == 403 and "HEAPDB_API_WRITE_TOKEN" in response.json()["error"]


@pytest.mark.slow
def test_cancelling_a_running_load_leaves_nothing_visible(
    service: ServiceProcess, database: Database, big_snapshot: Path
) -> None:
    tag = unique_tag("cancel")
    with service.client() as client, open(big_snapshot, "rb") as f:
        response = upload(client, tag, f)
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        # Running, with its process recorded (a moment after the phase changes).
        wait_until(lambda: bool(job_of(client, job_id).get("pid")) or job_of(client, job_id)["phase"] in jobs.ENDED)
        running = job_of(client, job_id)
        assert running["phase"] in jobs.RUNNING and running["pid"], running
        cancelled = client.delete(f"/api/jobs/{job_id}")
        assert cancelled.status_code == 202, cancelled.text
        ended = wait_for_phase(client, job_id, jobs.ENDED, timeout=120)
        assert ended["phase"] == "cancelled", ended
        assert client.delete(f"/api/jobs/{job_id}").status_code == 409  # ended already
    assert not pid_alive(running["pid"])
    assert not visible(database, tag)
    assert all(s.status != "ready" for s in store.list_snapshots(database, include_incomplete=True) if s.tag == tag)
    assert spool_files(service) == []


@pytest.mark.slow
def test_the_service_brings_an_older_stores_indexes_up_to_date(database: Database, tmp_path: Path) -> None:
    """A store from before the (sid, dom, retained_size) index, which only a service reads: the
    service drops the old (sid, dom) index before it answers. (A purger at work meanwhile no longer
    blocks it: docs/decisions.md, "The purger commits each batch itself".) The dominator index that
    replaced it is kept only while a snapshot needs it: tests/test_browse.py tests that."""
    database.write("CREATE INDEX heapdb_object_dom IF NOT EXISTS FOR (o:Object) ON (o.sid, o.dom)")
    try:
        ServiceProcess(tmp_path / "spool", tmp_path / "service.log").start().stop()
        names = {r["name"] for r in database.read("SHOW INDEXES YIELD name RETURN name")}
        assert "heapdb_object_dom" not in names and "heapdb_object_id" in names
    finally:
        store.ensure_schema(database)


def test_a_service_killed_mid_load_fails_the_job_at_restart(
    database: Database, big_snapshot: Path, tmp_path: Path, small_snapshot: Path
) -> None:
    """kill -9 while the load writes: its load dies with it; the restarted service marks the job
    failed, the snapshot is invisible and its spool file gone, and the tag loads again."""
    tag = unique_tag("killed")
    first = ServiceProcess(tmp_path / "spool", tmp_path / "service.log").start()
    try:
        with first.client() as client, open(big_snapshot, "rb") as f:
            response = upload(client, tag, f)
            assert response.status_code == 202, response.text
            job_id = response.json()["id"]
            writing = wait_for_phase(client, job_id, ("writing objects", "references", *jobs.ENDED))
            assert writing["phase"] in ("writing objects", "references"), writing
        assert first.process is not None
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
        wait_until(lambda: not pid_alive(writing["pid"]), 30, "the load to die with the service")
    finally:
        first.stop()
    second = ServiceProcess(tmp_path / "spool", tmp_path / "service.log").start()
    try:
        with second.client() as client:
            ended = wait_for_phase(client, job_id, jobs.ENDED, timeout=120)
            assert ended["phase"] == "failed" and f"pid {first.process.pid}" in ended["error"], ended
            wait_until(lambda: not visible(database, tag), 60, "the partial load to be hidden")
            failed = [s for s in store.list_snapshots(database, include_incomplete=True) if s.tag == tag]
            assert [s.status for s in failed] == ["failed"]
            assert spool_files(second) == []
            again = upload(client, tag, small_snapshot.read_bytes())
            assert again.status_code == 202, again.text
            assert wait_for_phase(client, again.json()["id"], jobs.ENDED)["phase"] == "done"
        assert visible(database, tag)
    finally:
        second.stop()


@pytest.mark.slow
def test_the_services_memory_stays_bounded_while_a_big_upload_streams(
    database: Database, leak_snapshots: dict[str, Path], tmp_path: Path
) -> None:
    """600 MB streamed from disk: the service's peak RSS stays far below the file's size."""
    size = 600 << 20
    big = tmp_path / "big-upload.bin"
    with open(big, "wb") as f:
        # Sniffs as V8 (whose upload is not checked as it arrives, unlike a snap.bin); what follows is not one.
        f.write(leak_snapshots["baseline"].read_bytes()[:4096])
        f.truncate(size)
    service = ServiceProcess(tmp_path / "spool", tmp_path / "service.log", HEAPDB_MAX_UPLOAD_BYTES=str(size)).start()
    tag = unique_tag("rss")
    try:
        before = service.high_water_mark()
        with service.client() as client, open(big, "rb") as f:
            response = upload(client, tag, f)
            assert response.status_code == 202, response.text
            assert response.json()["bytes"] == size
            peak = service.high_water_mark()
            print(
                f"service VmHWM before {before / 2**20:.0f} MiB, after a {size >> 20} MiB upload {peak / 2**20:.0f} MiB"
            )
            assert peak < 250 << 20
            assert wait_for_phase(client, response.json()["id"], jobs.ENDED)["phase"] == "failed"
        assert spool_files(service) == []
    finally:
        service.stop()


def test_a_snapbin_streams_in_as_a_chunked_body_and_a_cut_or_bad_one_is_refused_at_once(
    service: ServiceProcess, database: Database, small_snapshot: Path
) -> None:
    """What a producer does while it writes: a chunked body (no Content-Length), a piece at a time.
    One cut off before its trailer, or with a corrupted chunk, is refused (422) as it arrives, its
    error naming the byte, the chunk and the bytes received; one whose sender dies mid-body leaves
    nothing either."""
    raw = small_snapshot.read_bytes()

    def pieces(data: bytes, then: Exception | None = None) -> Iterator[bytes]:
        for start in range(0, len(data), 1000):
            yield data[start : start + 1000]
        if then is not None:
            raise then

    tag = unique_tag("chunked")
    corrupt = bytearray(raw)
    corrupt[len(raw) // 2] ^= 0x40
    with service.client() as client:
        streamed = upload(client, tag, pieces(raw))
        assert streamed.status_code == 202, streamed.text
        assert streamed.request.headers["transfer-encoding"] == "chunked"
        done = wait_for_phase(client, streamed.json()["id"], jobs.ENDED)
        assert done["phase"] == "done", done.get("error")
        assert store.get_snapshot(database, tag).object_count == done["report"]["objects"]
        bad = unique_tag("chunked-bad")
        cut = len(raw) // 2
        # Where the file reader puts the chunk that holds the middle byte: the error names it.
        chunk = max(r.offset for r in snapbin.iter_records(small_snapshot) if 0 < r.offset <= cut)
        errors = []
        for content, at, says in (
            (pieces(raw[:cut]), chunk, f"the stream ends inside the payload ({cut - chunk - 32:,} of "),
            (pieces(bytes(corrupt)), chunk + 32, "chunk payload checksum mismatch (corrupted)"),  # its payload
        ):
            response = upload(client, bad, content)
            assert response.status_code == 422, response.text
            errors.append(response.json()["error"])
            assert says in errors[-1] and errors[-1].startswith(f"the upload at byte {at}, chunk #"), errors[-1]
            assert spool_files(service) == []
        assert f"after {cut:,} bytes" in errors[0]
        with pytest.raises(RuntimeError, match="the producer died"):
            upload(client, bad, pieces(raw[:cut], RuntimeError("the producer died")))
        wait_until(lambda: spool_files(service) == [], 30, "the cut-off upload's spool file to go")
        assert client.get("/api/jobs", params={"tag": bad}).json() == []
    assert not visible(database, bad)


def test_decoders_bound_their_output_and_notice_a_cut(tmp_path: Path) -> None:
    """The spooler on its own: whole streams of several members/frames, cut ones refused."""
    from heapdb.errors import UploadError
    from heapdb.service.spool import Spooler

    data = os.urandom(300_000) + b"\0" * 3_000_000
    two_gzip = gzip.compress(data[:1000]) + gzip.compress(data[1000:])
    two_zstd = zstandard.ZstdCompressor().compress(data[:1000]) + zstandard.ZstdCompressor().compress(data[1000:])
    for encoding, stream in (("gzip", two_gzip), ("zstd", two_zstd), ("gzip", zlib.compress(data, wbits=31))):
        spooler = Spooler(tmp_path / "x", encoding, 10 << 20)
        spooler.format = "test"  # no sniffing: this is about the bytes
        for start in range(0, len(stream), 70_000):
            spooler.write(stream[start : start + 70_000])
        assert spooler.finish() == "test"
        assert (tmp_path / "x").read_bytes() == data
        cut = Spooler(tmp_path / "y", encoding, 10 << 20)
        cut.format = "test"
        cut.write(stream[:-10])
        with pytest.raises(UploadError, match="ends early"):
            cut.finish()
        cut.discard()
        assert not (tmp_path / "y").exists()


def test_the_spooler_stops_when_the_disk_would_fill(tmp_path: Path) -> None:
    """Checked as the upload streams in, since other writers (Neo4j first) fill the disk too."""
    from heapdb.errors import NoSpace
    from heapdb.service.spool import Spooler

    chunk = 4 << 20
    reserve = shutil.disk_usage(tmp_path).free - 3 * chunk  # room for about three chunks
    spooler = Spooler(tmp_path / "x", "identity", 1 << 40, reserve)
    spooler.format = "test"
    written = 0
    with pytest.raises(NoSpace, match="HEAPDB_MIN_FREE_BYTES"):
        for _ in range(64):  # 256 MiB: far past the room left
            spooler.write(b"\0" * chunk)
            written += chunk
    assert 0 < written < 16 * chunk
    spooler.discard()
    assert not (tmp_path / "x").exists()


def test_a_full_queue_or_a_full_disk_refuses_uploads_before_the_body(
    database: Database, small_snapshot: Path, big_snapshot: Path, tmp_path: Path
) -> None:
    # Jobs of this host that have not ended (another test's, whose service was killed) count too.
    waiting = len(jobs.JobStore(lambda: database).unfinished_here())
    queue = ServiceProcess(tmp_path / "spool", tmp_path / "queue.log", HEAPDB_MAX_QUEUED=str(waiting + 1)).start()
    try:
        with queue.client() as client:
            first = upload(client, unique_tag("queued"), big_snapshot.read_bytes())
            assert first.status_code == 202, first.text
            refused = upload(client, unique_tag("full"), small_snapshot.read_bytes())
            assert refused.status_code == 503, refused.text
            assert "HEAPDB_MAX_QUEUED" in refused.json()["error"] and int(refused.headers["Retry-After"]) > 0
            assert client.post("/api/snapshots", params={"tag": unique_tag("full"), "check": "true"}).status_code == 503
            assert all(name.startswith(first.json()["id"]) for name in spool_files(queue))  # the refused left none
            # `heapdb push` told not to wait says so at once; told to, it tries again when the queue frees.
            push = [
                sys.executable,
                "-m",
                "heapdb",
                "push",
                str(small_snapshot),
                "--server",
                queue.url,
                "--token",
                WRITE,
            ]
            env = {**os.environ, "HEAPDB_PROGRESS": "0"}
            hurried = subprocess.run(
                [*push, "--tag", unique_tag("hurried"), "--retry-for", "0"], env=env, capture_output=True, text=True
            )
            assert hurried.returncode != 0 and "(503)" in hurried.stderr and "HEAPDB_MAX_QUEUED" in hurried.stderr
            assert "Traceback" not in hurried.stderr
            patient_tag = unique_tag("patient")
            patient = subprocess.Popen(
                [*push, "--tag", patient_tag, "--retry-for", "10", "--wait"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert patient.stderr is not None
            said = patient.stderr.readline()
            assert "the service cannot take it now" in said and "HEAPDB_MAX_QUEUED" in said, said
            assert "trying again in 10 s" in said, said
            assert client.delete(f"/api/jobs/{first.json()['id']}").status_code == 202
            wait_for_phase(client, first.json()["id"], jobs.ENDED)
            out, err = patient.communicate(timeout=300)
            assert patient.returncode == 0, said + err
            assert f"as {patient_tag!r}" in out
    finally:
        queue.stop()

    free = shutil.disk_usage(tmp_path).free
    full = ServiceProcess(
        tmp_path / "spool2", tmp_path / "full.log", HEAPDB_MIN_FREE_BYTES=str(free + (1 << 30))
    ).start()
    try:
        with full.client() as client:
            tag = unique_tag("nospace")
            refused = upload(client, tag, small_snapshot.read_bytes())
            assert refused.status_code == 507, refused.text
            assert "HEAPDB_MIN_FREE_BYTES" in refused.json()["error"]
            assert spool_files(full) == []
            assert client.get("/api/jobs", params={"tag": tag}).json() == []
    finally:
        full.stop()
    assert not visible(database, tag)
