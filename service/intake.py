"""Snapshots sent to the service: ``POST /api/snapshots`` streams one in and answers at once with a
load job (``202``, ``Location: /api/jobs/{id}``); ``GET /api/jobs[/{id}]`` follows it and
``DELETE /api/jobs/{id}`` cancels it. ``heapdb push`` is the client.

The body is the snapshot file itself, as is or compressed (``Content-Encoding: gzip`` or ``zstd``),
streamed to the spool directory (:func:`heapdb.config.spool_dir`) and decompressed on the way
(:mod:`.spool`). Everything that can be checked before the body is read is: the write token, the
tag, that the tag is free (or ``replace=true``), the encoding, a declared ``Content-Length`` over
the limit, room in the load queue (``HEAPDB_MAX_QUEUED``) and on the spool's disk (the upload must
leave ``HEAPDB_MIN_FREE_BYTES`` free, checked again as it streams in). A bad upload gets a 4xx with what is wrong, and its partial file is removed.

Writes (any ``/api`` request but GET, HEAD and OPTIONS) need ``HEAPDB_API_WRITE_TOKEN`` as the
bearer token; with it unset the service takes no writes at all (403). The write token also reads;
``HEAPDB_API_TOKEN`` only reads.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response

from heapdb import config, settings
from heapdb.db import Database
from heapdb.errors import IntakeFull, LoadError, UploadError, UploadTooLarge
from heapdb.loader.redaction import required
from heapdb.loader.store.lifecycle import check_tag
from heapdb.service import access, jobs, links
from heapdb.service.spool import Spooler, check_room, encoding_of

# Metadata with a query parameter of its own; any other key comes as meta=KEY=VALUE (repeatable).
META_KEYS = ("build", "commit", "branch", "scenario", "platform")
MAX_META_CHARS = 200
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WRITE_BUFFER = 1 << 20  # bytes of body gathered before one trip to the writing thread

router = APIRouter()
MetaValue = Annotated[str | None, Query(max_length=MAX_META_CHARS)]


def is_write(method: str, path: str) -> bool:
    return method in WRITE_METHODS and links.is_api(path)


def bearer(authorization: str) -> str | None:
    scheme, _, given = authorization.partition(" ")
    return given.strip() if scheme.lower() == "bearer" else None


def token_is(given: str | None, token: str | None) -> bool:
    return bool(given and token) and secrets.compare_digest(given.encode(), token.encode())  # type: ignore[union-attr]


def write_refusal(authorization: str, read_token: str | None, write_token: str | None) -> Response | None:
    """Why a write request is refused (403 when the service takes no writes or the token only
    reads, 401 without the write token), or None."""
    given = bearer(authorization)
    if not write_token:
        return JSONResponse(
            {
                "error": "this service takes no writes (uploads, cancels, rule sets): set HEAPDB_API_WRITE_TOKEN where it runs to allow them"
            },
            status_code=403,
        )
    if token_is(given, write_token):
        return None
    if token_is(given, read_token):
        return JSONResponse({"error": "this token only reads: writes need HEAPDB_API_WRITE_TOKEN"}, status_code=403)
    return JSONResponse(
        {"error": "missing or wrong bearer token (Authorization: Bearer <HEAPDB_API_WRITE_TOKEN>)"},
        status_code=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


def add_intake(app: FastAPI, database: Callable[[], Database]) -> None:
    """The upload and job routes, and the job runner started and stopped with the app."""
    runner = jobs.JobRunner(database, config.spool_dir(), settings.MAX_LOADS.value())
    app.state.jobs = runner
    app.include_router(router)
    app.router.on_startup.append(runner.start)
    app.router.on_shutdown.append(runner.stop)


def _runner(request: Request) -> jobs.JobRunner:
    runner: jobs.JobRunner = request.app.state.jobs
    return runner


def _metadata(named: dict[str, str | None], extra: list[str]) -> dict[str, str]:
    meta = {k: v for k, v in named.items() if v is not None}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UploadError(f"meta={item!r} is not KEY=VALUE")
        if len(key) > 100 or len(value) > MAX_META_CHARS:
            raise UploadError(f"meta={item[:50]!r}...: a key is at most 100 characters, a value {MAX_META_CHARS}")
        meta[key] = value
    return meta


def _free_to_load(runner: jobs.JobRunner, tag: str, replace: bool) -> None:
    """Refuse (409) a tag a ready snapshot holds (without replace) or a job is loading already."""
    active = runner.store.active(tag)
    if active is not None:
        raise LoadError(f"load job {active.id} is loading {tag!r} already ({active.phase}): wait for it or cancel it")
    if replace:
        return
    rows = runner.store.db().read(
        "MATCH (s:Snapshot {tag: $tag}) WHERE s.status = 'ready' RETURN s.sid AS sid LIMIT 1", {"tag": tag}
    )
    if rows:
        raise LoadError(f"a snapshot tagged {tag!r} exists already; send replace=true to load over it")


def _room_in_queue(runner: jobs.JobRunner) -> None:
    """Refuse (503, Retry-After) an upload while ``HEAPDB_MAX_QUEUED`` jobs are queued or running."""
    waiting, most = len(runner.store.unfinished_here()), settings.MAX_QUEUED.value()
    if waiting >= most:
        raise IntakeFull(
            f"the service has {waiting} load jobs queued or running, its limit (HEAPDB_MAX_QUEUED={most}): "
            "send the snapshot again later"
        )


def job_json(request: Request, job: jobs.Job) -> dict[str, Any]:
    return {**job.as_dict(), "url": links.path(links.JOB, job_id=job.id)}


@router.post(
    links.SNAPSHOTS,
    status_code=202,
    summary="Upload a snapshot (the body: the file, as is or with Content-Encoding gzip or zstd) to be loaded "
    "as TAG; answers at once with its load job",
    responses={
        202: {"description": "the load job, queued"},
        409: {"description": "the tag is taken"},
        413: {"description": "over the size limit"},
        415: {"description": "an unknown Content-Encoding"},
        422: {"description": "not a snapshot, cut off, a bad tag, or not redacted where HEAPDB_REDACT=always"},
        503: {"description": "the load queue is full (HEAPDB_MAX_QUEUED): try again after Retry-After seconds"},
        507: {"description": "the upload would leave less disk free than HEAPDB_MIN_FREE_BYTES"},
    },
)
async def upload(
    request: Request,
    tag: Annotated[str, Query(description="the snapshot's tag")],
    replace: Annotated[bool, Query(description="load over a snapshot with this tag")] = False,
    check: Annotated[bool, Query(description="only check the request (token, tag, limit); send no body")] = False,
    build: MetaValue = None,
    commit: MetaValue = None,
    branch: MetaValue = None,
    scenario: MetaValue = None,
    platform: MetaValue = None,
    meta: Annotated[list[str], Query(description="more metadata, KEY=VALUE (repeat the key)")] = [],  # noqa: B006
    name: Annotated[
        str,
        Query(
            description="the file's name as the sender knows it, shown as the snapshot's source, cut to "
            f"{MAX_META_CHARS} characters (`heapdb push` sends its file's; empty: none)",
        ),
    ] = "",
    redacted: Annotated[
        bool,
        Query(
            description="the sender redacted the snapshot (`heapdb push --redact`); a service with "
            "HEAPDB_REDACT=always takes nothing else, and checks the file says so",
        ),
    ] = False,
) -> JSONResponse:
    runner = _runner(request)
    try:
        check_tag(tag)
    except LoadError as e:
        raise UploadError(str(e)) from None
    if required() and not redacted:
        raise UploadError(
            "this service takes only redacted snapshots (HEAPDB_REDACT=always): send it with `heapdb push --redact`"
        )
    values = _metadata(
        {"build": build, "commit": commit, "branch": branch, "scenario": scenario, "platform": platform}, meta
    )
    encoding = encoding_of(request.headers.get("content-encoding"), request.headers.get("content-type"))
    limit = settings.MAX_UPLOAD_BYTES.value()
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise UploadTooLarge(
            f"the upload is larger than the service's limit of {limit:,} bytes (HEAPDB_MAX_UPLOAD_BYTES)"
        )
    await anyio.to_thread.run_sync(_free_to_load, runner, tag, replace)
    await anyio.to_thread.run_sync(_room_in_queue, runner)
    reserve = settings.MIN_FREE_BYTES.value()
    check_room(runner.spool, int(declared) if declared.isdigit() else 0, reserve)
    if check:
        return JSONResponse({"ok": True, "max_upload_bytes": limit}, status_code=200)

    job_id = secrets.token_hex(8)
    spooler = Spooler(runner.spool / f"{job_id}.{os.getpid()}.upload", encoding, limit, reserve)
    snapshot = runner.snapshot_file(job_id)
    try:
        pending: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            pending.append(chunk)
            size += len(chunk)
            if size >= WRITE_BUFFER:
                await anyio.to_thread.run_sync(spooler.write, b"".join(pending))
                pending, size = [], 0
        if pending:
            await anyio.to_thread.run_sync(spooler.write, b"".join(pending))
        fmt = await anyio.to_thread.run_sync(spooler.finish)
        os.replace(spooler.path, snapshot)
        job = jobs.new_job(
            job_id, tag, replace=replace, size=spooler.stored, fmt=fmt, meta=values, name=name[:MAX_META_CHARS]
        )
        await anyio.to_thread.run_sync(runner.store.create, job)
    except BaseException:  # a bad upload, a client gone, Neo4j away: nothing stays behind
        spooler.discard()
        snapshot.unlink(missing_ok=True)
        raise
    runner.submit(job_id)
    body = job_json(request, job)
    return JSONResponse(body, status_code=202, headers={"Location": body["url"]})


@router.get(links.JOBS, summary="Load jobs, newest first (the last 100), or those of one tag")
def list_jobs(request: Request, tag: Annotated[str | None, Query(description="only this tag's")] = None) -> Any:
    return [job_json(request, j) for j in _runner(request).store.recent(tag) if access.current().reads(j.tag)]


@router.get(
    links.JOB,
    summary="A load job: its phase (queued, reading, analysing, writing objects, references, done, "
    "failed, cancelled), progress in the phase (0 to 1), error",
)
def get_job(request: Request, job_id: str) -> Any:
    return job_json(request, _runner(request).store.get(job_id))


@router.delete(links.JOB, status_code=202, summary="Cancel a load job: nothing of its snapshot stays visible")
def cancel_job(request: Request, job_id: str) -> Any:
    return job_json(request, _runner(request).cancel(job_id))
