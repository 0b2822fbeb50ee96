"""The REST service: a thin FastAPI layer over the same functions the CLI calls.

Errors come back as JSON bodies ``{"error": "..."}``: 404 for an unknown snapshot or object, 422 for
bad parameters, 503 when Neo4j cannot be reached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from heapdb import __version__, db
from heapdb.errors import DatabaseUnavailable, HeapdbError, NotFound, QueryError


class DatabaseHandle:
    """Opens the database on first use and again after it was lost, so the service outlives restarts."""

    def __init__(self, connect: Callable[[], db.Database]) -> None:
        self._connect = connect
        self._database: db.Database | None = None
        self._lock = threading.Lock()

    def get(self) -> db.Database:
        with self._lock:
            if self._database is None:
                self._database = self._connect()
            return self._database

    def reset(self) -> None:
        with self._lock:
            if self._database is not None:
                self._database.close()
                self._database = None


def create_app(connect: Callable[[], db.Database] | None = None) -> FastAPI:
    """Build the app. ``connect`` opens the database (default: :func:`heapdb.db.connect`)."""
    app = FastAPI(
        title="heapdb",
        version=__version__,
        description="Heap snapshots from many builds in Neo4j: why is this object alive, what leaked, what holds the heap.",
    )
    handle = DatabaseHandle(connect or (lambda: db.connect(start_managed=False)))
    app.state.database = handle

    @app.exception_handler(HeapdbError)
    async def heapdb_error(request: Request, error: HeapdbError) -> JSONResponse:
        if isinstance(error, DatabaseUnavailable):
            handle.reset()
            return JSONResponse({"error": str(error)}, status_code=503)
        if isinstance(error, NotFound):
            return JSONResponse({"error": str(error)}, status_code=404)
        if isinstance(error, QueryError):
            return JSONResponse({"error": str(error)}, status_code=422)
        return JSONResponse({"error": str(error)}, status_code=400)

    @app.get("/api/health", summary="Whether the service can reach Neo4j")
    def health() -> dict[str, object]:
        rows = handle.get().read("CALL dbms.components() YIELD name, versions, edition RETURN *", timeout=10)
        return {"status": "ok", "heapdb": __version__, "neo4j": [f"{r['name']} {r['versions'][0]} {r['edition']}" for r in rows]}

    return app
