"""Whether a process lives, as the managed Neo4j and the loads' lifecycle need to know it, and the
priority loading work runs at."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from heapdb import settings


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (a zombie, killed but not yet reaped, does not).

    Zombies matter: in a container whose first process reaps no orphans, a Neo4j or a load started by
    a command that has since exited stays a zombie once it ends, and ``kill(pid, 0)`` still finds it.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    try:  # the state follows the command name, which is in parentheses and may hold spaces
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):  # no /proc here: trust kill()
        return True
    return state != "Z"


def lower_priority() -> None:
    """Give this process the niceness of ``HEAPDB_LOAD_NICENESS`` (never raise its priority).

    Call it before the process starts threads: Linux keeps a niceness per thread, and a thread takes
    its starter's when it starts, so the analysis's worker threads and the driver's inherit it.
    """
    wanted = settings.LOAD_NICENESS.value()
    with contextlib.suppress(OSError):  # not allowed here: the load runs as it is
        current = os.nice(0)
        if wanted > current:
            os.nice(wanted - current)
