"""The rule sets over REST: read by anyone who may read, written (added, removed) with the write token.

``GET /api/rules`` and ``/api/rules/{name}`` list and show the stored versions; ``POST
/api/rules/{name}`` adds the body, a rule file, as the next version of the name (checked first, so a
bad file stores nothing); ``DELETE /api/rules/{name}`` removes one version or all. The write token is
checked by the service's guard (:func:`heapdb.service.intake.is_write` names every write), before
any of this runs. The work is :mod:`heapdb.loader.store.rulesets`', as for ``heapdb rules``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import anyio.to_thread
from fastapi import FastAPI, Query, Request
from fastapi import Path as FastAPIPath
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from heapdb.db import Database
from heapdb.errors import RuleError, UploadTooLarge
from heapdb.service import links


def add_rule_routes(app: FastAPI, database: Callable[[], Database]) -> None:
    """The ``/api/rules`` routes on ``app``, each opening the database through ``database()``."""

    @app.get(links.RULES, summary="The rule sets stored in the database: the latest version of each, or every version")
    def rule_sets(
        all_versions: Annotated[bool, Query(description="list every version, not only the latest")] = False,
    ) -> list[dict[str, Any]]:
        from heapdb.loader.store import rulesets

        return [r.as_dict() for r in rulesets.list_rule_sets(database(), all_versions=all_versions)]

    @app.get(links.RULE, summary="One rule set with its text: the latest version, or ?version=")
    def rule_set(
        name: Annotated[str, FastAPIPath(min_length=1, max_length=100, description="the rule set's name")],
        version: Annotated[int | None, Query(ge=1, description="this version")] = None,
    ) -> dict[str, Any]:
        from heapdb.loader.store import rulesets

        # rulesets checks the name and the version's upper bound (a 422 either way).
        return rulesets.get_rule_set(database(), name, version).as_dict()

    @app.post(
        links.RULE,
        status_code=201,
        summary="Add a rule set: the body is the rule file (text/plain or application/toml), checked, then stored "
        "as the next version of NAME (version 1 for a new name); needs the write token",
        responses={
            201: {"description": "the stored version with its text; Location: /api/rules/{name}?version=N"},
            401: {"description": "a missing or wrong bearer token"},
            403: {"description": "the service takes no writes (HEAPDB_API_WRITE_TOKEN unset), or the token only reads"},
            413: {"description": "a body over the rule sets' limit (1 MiB)"},
            415: {"description": "another Content-Type, a charset other than UTF-8, or a Content-Encoding"},
            422: {"description": "a bad rule file (its line and what was expected), not UTF-8, or a bad name"},
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "description": "the rule file (docs/rules.md), UTF-8, stored byte for byte as sent",
                "content": {media: {"schema": {"type": "string"}} for media in RULE_MEDIA},
            }
        },
    )
    async def add_rules(
        request: Request,
        name: Annotated[str, FastAPIPath(min_length=1, max_length=100, description="the rule set's name")],
        author: Annotated[str | None, Query(max_length=200, description="who adds it (default: none recorded)")] = None,
    ) -> JSONResponse:
        from heapdb.loader.store import rulesets

        rulesets.check_name(name)  # before the body is read
        text = await _rule_text(request, name, rulesets.MAX_TEXT_BYTES)
        record = await anyio.to_thread.run_sync(
            lambda: rulesets.add_rule_set(database(), name, text, author=author or None, use_default_author=False)
        )
        return JSONResponse(
            record.as_dict(),
            status_code=201,
            headers={"Location": f"{links.path(links.RULE, name=name)}?version={record.version}"},
        )

    @app.delete(
        links.RULE,
        summary="Remove a rule set: every version, or ?version= only (the others keep their numbers); "
        "needs the write token",
        responses={
            200: {"description": "how many versions were removed: {name, version (when given), removed}"},
            401: {"description": "a missing or wrong bearer token"},
            403: {"description": "the service takes no writes (HEAPDB_API_WRITE_TOKEN unset), or the token only reads"},
            404: {"description": "an unknown name or version"},
            422: {"description": "a bad name or version"},
        },
    )
    def remove_rules(
        name: Annotated[str, FastAPIPath(min_length=1, max_length=100, description="the rule set's name")],
        version: Annotated[int | None, Query(ge=1, description="only this version")] = None,
    ) -> dict[str, Any]:
        from heapdb.loader.store import rulesets

        removed = rulesets.remove_rule_set(database(), name, version)
        answer: dict[str, Any] = {"name": name, "version": version, "removed": removed}
        return {k: v for k, v in answer.items() if v is not None}


RULE_MEDIA = ("text/plain", "application/toml", "application/octet-stream")


async def _rule_text(request: Request, name: str, limit: int) -> str:
    """The rule file in a request's body, read up to ``limit`` bytes (413 past it) and decoded as UTF-8."""
    content_type = request.headers.get("content-type", "")
    media, *options = (p.strip().lower() for p in content_type.split(";"))
    charset = next((o.partition("=")[2].strip('"') for o in options if o.startswith("charset=")), "utf-8")
    if media not in ("", *RULE_MEDIA) or charset not in ("utf-8", "utf8", "us-ascii"):
        raise StarletteHTTPException(
            415,
            "send the rule file as UTF-8 text/plain, application/toml or application/octet-stream, "
            f"not Content-Type: {content_type}",
        )
    if request.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
        raise StarletteHTTPException(415, "send the rule file as it is, without a Content-Encoding")
    too_large = UploadTooLarge(f"the rule file is larger than {limit:,} bytes, the limit of a rule set")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:  # stop reading: the rest of the body is never held
            raise too_large
        chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as e:
        raise RuleError(f"<rule set {name}>", f"not UTF-8 text (byte {e.start})") from None
