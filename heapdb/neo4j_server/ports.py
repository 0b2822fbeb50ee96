"""The managed Neo4j's ports on the loopback address: free ones for a new instance, whether a port is
free (or freed in time), whether Bolt answers."""

from __future__ import annotations

import socket
import time


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# A Neo4j just killed holds its ports until the kernel has torn down its process, which for a JVM
# with a heap of gigabytes takes a moment after it stopped answering; a start right after waits.
PORT_RELEASE_SECONDS = 15.0


def port_freed(port: int, seconds: float) -> bool:
    """Whether ``port`` is free now or within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not port_free(port):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.25)
    return True


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bolt_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
