"""``heapdb push``: send a snapshot to a heapdb service, which loads it (``POST /api/snapshots``)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from heapdb import settings
from heapdb.cli import main
from heapdb.cli.options import key_values
from heapdb.cli.steps import file_redaction, redact_option, redact_rules_option
from heapdb.errors import UploadError
from heapdb.progress import bar
from heapdb.service import links

if TYPE_CHECKING:
    from heapdb.loader.redaction import Redaction

READ_BYTES = 1 << 20  # bytes of the file read (and compressed) at a time
ZSTD_LEVEL = 3  # fast: compressing must keep up with the network
POLL_SECONDS = 1.0  # how often --wait asks how the job does
RETRY_FOR = 600.0  # seconds a push keeps trying a service that answers 503 (--retry-for)
RETRY_AFTER = 10.0  # seconds between tries when a 503 does not say (no Retry-After: its database away)
GZIP_MAGIC, ZSTD_MAGIC = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"
META_PARAMETERS = ("build", "commit", "branch", "scenario", "platform")  # the service's own parameters
ENDED = ("done", "failed", "cancelled")


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


def compressed_already(path: str) -> str | None:
    """``gzip`` or ``zstd`` when the file is compressed already (then it is sent as it is)."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


def body(path: str, compress: str, on_bytes: Any) -> Iterator[bytes]:
    """The file, compressed on the fly (``zstd``, ``gzip`` or ``none``), a piece at a time."""
    import zstandard

    zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL).chunker(chunk_size=READ_BYTES) if compress == "zstd" else None
    gzip = zlib.compressobj(6, zlib.DEFLATED, 31) if compress == "gzip" else None
    with open(path, "rb") as f:
        while data := f.read(READ_BYTES):
            on_bytes(len(data))
            if zstd is not None:
                yield from zstd.compress(data)
            elif gzip is not None:
                yield gzip.compress(data)
            else:
                yield data
    if zstd is not None:
        yield from zstd.finish()
    elif gzip is not None:
        yield gzip.flush()


def _answer(response: Any) -> dict[str, Any]:
    """The service's JSON answer, or its refusal as an error."""
    if response.status_code >= 400:
        raise UploadError(f"the service refused ({response.status_code}): {_answer_text(response)}")
    try:
        return dict(response.json())
    except ValueError:
        raise UploadError(f"the service answered {response.status_code} without JSON: {response.text[:500]}") from None


def _answer_text(response: Any) -> str:
    """What the service said: its JSON ``error``, else the start of its body."""
    try:
        data = response.json()
    except ValueError:
        return str(response.text[:500])
    return str(data.get("error", data)) if isinstance(data, dict) else str(data)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--tag", required=True, help="Name of this snapshot in the database, e.g. build123.")
@click.option(
    "--server",
    envvar=settings.SERVER.name,
    required=True,
    metavar="URL",
    help="The heapdb service, e.g. http://heapdb.example:8000 (default: HEAPDB_SERVER).",
)
@click.option(
    "--meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata to store with the snapshot (repeatable): build, commit, branch, scenario, platform or any key.",
)
@click.option("--replace", is_flag=True, help="Load over an existing snapshot with the same tag.")
@click.option(
    "--token",
    envvar=settings.API_WRITE_TOKEN.name,
    help="The service's write token (default: HEAPDB_API_WRITE_TOKEN).",
)
@click.option(
    "--compress",
    type=click.Choice(["zstd", "gzip", "none"]),
    default="zstd",
    show_default=True,
    help="Compress on the way (a file compressed already is sent as it is).",
)
@click.option(
    "--retry-for",
    type=click.FloatRange(min=0),
    default=RETRY_FOR,
    show_default=True,
    metavar="SECONDS",
    help="While the service answers 503 (its load queue full, its database away), try again when its "
    "Retry-After says, for at most this long (0: never).",
)
@redact_option
@redact_rules_option
@click.option("--wait", is_flag=True, help="Wait for the load to end; exit non-zero if it fails.")
@click.option("--json", "as_json", is_flag=True, help="Print the job as JSON.")
def push(
    file: str,
    tag: str,
    server: str,
    meta: tuple[str, ...],
    replace: bool,
    token: str | None,
    compress: str,
    retry_for: float,
    redact: bool,
    rules: str | None,
    wait: bool,
    as_json: bool,
) -> None:
    """Send the snapshot FILE to a heapdb service, which loads it as TAG in the background.

    The file is streamed (compressed with zstd unless --compress says otherwise) and never held in
    memory; the service answers with a load job at once, whose URL this prints. With --wait it
    follows the job until the snapshot is loaded, and exits with status 1 and the load's error if it
    fails or is cancelled. The service needs its write token (HEAPDB_API_WRITE_TOKEN). While its
    load queue is full (or its database is away) it answers 503; the push then tries again when
    its Retry-After says, within --retry-for.

    With --redact (or HEAPDB_REDACT=always, or [[redact]] rules in --rules FILE), the snapshot is
    read and redacted here and sent as snap.bin: string contents and primitive values never leave
    this machine (docs/rules.md, Redaction). A service running with HEAPDB_REDACT=always takes
    nothing else.
    """
    import httpx

    # The service shows the file's name as the snapshot's source, never the path of its own copy.
    params: list[tuple[str, str | int | float | bool | None]] = [("tag", tag), ("name", os.path.basename(file))]
    if replace:
        params.append(("replace", "true"))
    for key, values in key_values(meta, "--meta").items():
        params.append((key, values[-1]) if key in META_PARAMETERS else ("meta", f"{key}={values[-1]}"))
    redaction = file_redaction(redact, rules)
    if redaction is not None:
        params.append(("redacted", "true"))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    base = server.rstrip("/")
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=httpx.Timeout(60.0)) as client:
            give_up = time.monotonic() + retry_for
            # Checked first, with no body and before the file is read or redacted: a refusal (token,
            # tag, redaction) comes before minutes of work or sending gigabytes.
            limits = _check(client, params, give_up)
            with _to_send(file, redaction) as sending:
                already = compressed_already(sending)
                encoding = already or (None if compress == "none" else compress)
                size = os.path.getsize(sending)
                while True:
                    if encoding is None and size > limits["max_upload_bytes"]:
                        raise UploadError(
                            f"{file} is {size:,} bytes to send; the service takes at most {limits['max_upload_bytes']:,}"
                        )
                    with bar(f"push {os.path.basename(file)}", total=size, unit="B") as b:
                        content = body(sending, "none" if already else compress, b.update)
                        sent = client.post(
                            links.SNAPSHOTS,
                            params=params,
                            content=content,
                            headers={
                                "Content-Encoding": encoding or "identity",
                                "Content-Type": "application/octet-stream",
                            },
                        )
                    if not _unavailable(sent, give_up):  # the queue filled up while the body went: again
                        break
                    limits = _check(client, params, give_up)
            job = _answer(sent)
            _say(f"queued load job {job['id']} for {tag!r}: {base}{job['url']}")
            if wait:
                job = _follow(client, job)
    except httpx.HTTPError as e:
        raise UploadError(f"cannot talk to the service at {base}: {type(e).__name__}: {e}") from None
    if as_json:
        click.echo(json.dumps(job, indent=2))
    elif not wait:
        click.echo(f"{base}{job['url']}")
    if wait and job["phase"] != "done":
        raise UploadError(f"the load of {tag!r} {job['phase']}: {job.get('error') or 'cancelled'}")
    if wait and not as_json:
        report = job.get("report") or {}
        click.echo(
            f"loaded {report.get('objects', 0):,} objects and {report.get('references', 0):,} references as {tag!r}"
        )


@contextlib.contextmanager
def _to_send(file: str, redaction: Redaction | None) -> Iterator[str]:
    """``file`` itself, or with a ``redaction``, a redacted snap.bin copy of it in a scratch
    directory removed afterwards."""
    if redaction is None:
        yield file
        return
    from heapdb.cli.formats_cmd import write_snapshot
    from heapdb.cli.steps import read_with_progress
    from heapdb.loader.redaction import redact_graph

    _, graph = read_with_progress(file)
    with tempfile.TemporaryDirectory(prefix="heapdb-push-") as scratch:
        copy = Path(scratch) / (Path(file).name + ".snap.bin")
        write_snapshot(redact_graph(graph, redaction), copy, "snapbin", compress=True)
        del graph
        yield str(copy)


def _check(client: Any, params: list[tuple[str, str | int | float | bool | None]], give_up: float) -> dict[str, Any]:
    """The service's answer to the upload asked with ``check=true`` (no body): its limits, or the
    refusal it would give the upload, raised; asked again while it is unavailable, within ``give_up``."""
    while True:
        checked = client.post(links.SNAPSHOTS, params=[*params, ("check", "true")])
        if not _unavailable(checked, give_up):
            return _answer(checked)


def _unavailable(response: Any, give_up: float) -> bool:
    """Whether the service refused for now (503: its load queue full, its database away) and there is
    time to try again; if so, says why and waits as its Retry-After says (no later than ``give_up``,
    a ``time.monotonic()``)."""
    if response.status_code != 503:
        return False
    try:
        after = max(1.0, float(response.headers.get("retry-after", RETRY_AFTER)))
    except ValueError:  # an HTTP date, or nothing usable
        after = RETRY_AFTER
    left = give_up - time.monotonic()
    if left <= 0:
        return False
    pause = min(after, left)
    why = _answer_text(response)
    _say(f"the service cannot take it now ({why}); trying again in {pause:.0f} s ({left:.0f} s of --retry-for left)")
    time.sleep(pause)
    return True


def _follow(client: Any, job: dict[str, Any]) -> dict[str, Any]:
    """Poll the job until it ends, saying each phase it enters."""
    phase = job["phase"]
    _say(phase)
    while job["phase"] not in ENDED:
        time.sleep(POLL_SECONDS)
        job = _answer(client.get(job["url"]))
        if job["phase"] != phase:
            phase = job["phase"]
            _say(phase)
    return job
