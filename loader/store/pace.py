"""A load making way for the questions of the service that runs it.

A service writes, into the file ``HEAPDB_BUSY_FILE`` names, whether it has more questions in flight
than the machine has cores (:mod:`heapdb.service.pressure`). After each write transaction a load
reads that file's first byte; while it says ``1``, the load waits so that its transactions fill
``HEAPDB_LOAD_SHARE`` percent of its time. A load that no service runs has no such file and never
waits.
"""

from __future__ import annotations

import time

from heapdb import settings

BUSY = b"1"


def busy() -> bool:
    """Whether the service that runs this load says it is busy (False when none does, or its file
    cannot be read: a load never waits for a service that is gone)."""
    file = settings.BUSY_FILE.get()
    if file is None:
        return False
    try:
        with open(file, "rb") as f:
            return f.read(1) == BUSY
    except OSError:
        return False


def after_write(seconds: float) -> None:
    """Called after a write transaction that took ``seconds``: wait while the service is busy."""
    share = settings.LOAD_SHARE.value()
    if share < 100 and busy():
        time.sleep(seconds * (100 - share) / share)
