"""How busy the service is, told to the loads it runs so that they make way for questions.

:class:`~heapdb.service.app.Guard` counts the requests being answered (:data:`IN_FLIGHT`). While
loads run, a thread of the job runner (:class:`Pressure`) looks at that count every
:data:`LOOK_SECONDS` and, every :data:`WINDOW_SECONDS`, writes one byte into a file of its own:
``1`` when some look of the window saw more requests in flight than the machine has cores, else
``0``. Each load the service runs gets the file's path (``HEAPDB_BUSY_FILE``) and reads it after each
write transaction (:mod:`heapdb.loader.store.pace`). A count rather than a latency: it says that
questions are queueing for the CPU now, before their answer times show it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from heapdb import settings
from heapdb.service.turns import Turns

LOOK_SECONDS = 0.02
WINDOW_SECONDS = 0.2


class InFlight:
    """The requests being answered: changed by the event loop's thread alone, read by any."""

    def __init__(self) -> None:
        self.count = 0


IN_FLIGHT = InFlight()
CORES = os.cpu_count() or 1


def request_turns() -> Turns | None:
    """The turns the service's requests take (HEAPDB_REQUESTS_AT_ONCE, by default twice the cores;
    None for no limit): see :mod:`heapdb.service.turns`."""
    size = settings.REQUESTS_AT_ONCE.get()
    size = 2 * CORES if size is None else size
    return Turns(size) if size else None


def busy(in_flight: InFlight = IN_FLIGHT) -> bool:
    """Whether more requests are being answered than the machine has cores: they queue for the CPU."""
    return in_flight.count > CORES


class Pressure:
    """Writes whether the service is busy into ``file`` while a load runs (see the module): one
    thread for the service's life, which looks only while :meth:`running` contexts are open."""

    def __init__(self, file: Path | None = None, in_flight: InFlight = IN_FLIGHT, cores: int | None = None) -> None:
        if file is None:  # a file of its own in the temporary directory, removed by close()
            handle, name = tempfile.mkstemp(prefix="heapdb-busy-")
            os.close(handle)
            file = Path(name)
        self.file = file
        self.in_flight = in_flight
        self.cores = cores or CORES
        self._loads = 0
        self._closed = False
        self._changed = threading.Condition()
        self._write(False)
        threading.Thread(target=self._watch, name="heapdb-pressure", daemon=True).start()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The time a load runs."""
        with self._changed:
            self._loads += 1
            self._changed.notify()
        try:
            yield
        finally:
            with self._changed:
                self._loads -= 1

    def close(self) -> None:
        """End the thread, and remove the file."""
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _watch(self) -> None:
        said = False
        while True:
            with self._changed:
                while self._loads == 0 and not self._closed:
                    if said:
                        self._write(False)
                        said = False
                    self._changed.wait()
                if self._closed:
                    with contextlib.suppress(OSError):
                        self.file.unlink()
                    return
            busy = False
            for _ in range(round(WINDOW_SECONDS / LOOK_SECONDS)):
                busy = busy or self.in_flight.count > self.cores
                time.sleep(LOOK_SECONDS)
            if busy != said:
                self._write(busy)
                said = busy

    def _write(self, busy: bool) -> None:
        # Rewritten in place: a load reads one byte, the old one, the new one or none (not busy).
        with contextlib.suppress(OSError), open(self.file, "wb") as f:
            f.write(b"1" if busy else b"0")
