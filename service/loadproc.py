"""The child process of a load job: ``heapdb load`` itself, tied to the service that started it.

``python -m heapdb.service.loadproc SERVICE_PID ARGS...`` asks Linux to kill this process when the
thread that started it ends (``PR_SET_PDEATHSIG``), then runs ``heapdb load ARGS...``: a service
killed with -9 takes its loads with it, so none finishes unseen after the service marked it failed.
The load's own lifecycle hides what it wrote (see :mod:`heapdb.loader.store.lifecycle`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def tie_to_parent(parent: int) -> None:
    """Die with the parent; exit at once when it is gone already (it died before the request took)."""
    # Not on Linux: nothing ties the load to the service, whose next start still marks the job failed.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit("heapdb: error: the service that started this load is gone")


def main(argv: list[str]) -> None:
    tie_to_parent(int(argv[0]))
    from heapdb.cli import main as cli

    cli(["load", *argv[1:]], prog_name="heapdb")


if __name__ == "__main__":
    main(sys.argv[1:])
