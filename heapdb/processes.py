"""Whether a process lives, as the managed Neo4j and the loads' lifecycle need to know it."""

from __future__ import annotations

import os
from pathlib import Path


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
