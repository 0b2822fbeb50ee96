"""Whether a process lives: a zombie (ended, not yet reaped) counts as gone, as `heapdb neo4j stop`
and the loads' lifecycle need."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from heapdb.processes import pid_alive


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_zombie_is_not_alive_though_kill_still_finds_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while _state(child.pid) != "Z":  # ended; nobody has called wait() yet
        assert time.monotonic() < deadline, "the child never ended"
        time.sleep(0.01)
    os.kill(child.pid, 0)  # the kernel still knows the pid...
    assert not pid_alive(child.pid)  # ...but it runs no more
    child.wait()
    assert not pid_alive(child.pid)


def test_a_running_process_is_alive() -> None:
    assert pid_alive(os.getpid())
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as child:
        try:
            assert pid_alive(child.pid)
        finally:
            child.kill()
