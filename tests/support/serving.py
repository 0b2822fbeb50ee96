"""An app served by a real uvicorn on a free loopback port, for tests that need real sockets (a
browser, keep-alive connections)."""

from __future__ import annotations

import threading
import time
from typing import Any

from heapdb.neo4j_server import free_port


class served:
    """The app under a real uvicorn on a free loopback port, in a thread, for the ``with`` block."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="critical"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> int:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        return self.port

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
