"""What Neo4j's logs say: their last lines for error messages, and the progress of a recovery after
an unclean shutdown, followed in ``debug.log`` as Neo4j writes it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from heapdb.neo4j_server.layout import paths


def log_tail(lines: int = 15) -> str:
    """The last lines of Neo4j's logs, for error messages (with debug.log's last recovery lines, if any)."""
    out = []
    for name in ("neo4j.log", "console.log"):
        path = paths().logs / name
        if path.exists():
            text = path.read_text(errors="replace").strip().splitlines()[-lines:]
            if text:
                out.append(f"--- {path} ---\n" + "\n".join(text))
    watch = RecoveryWatch(paths().logs / "debug.log", from_last_start=True)
    watch.poll()
    if watch.lines:
        out.append(f"--- {watch.path} (recovery) ---\n" + "\n".join(watch.lines[-5:]))
    return "\n".join(out) or "(no log written)"


# What Neo4j 5.26 writes to debug.log when a database must replay its transaction logs after an
# unclean shutdown (a kill -9, a crash, a machine gone), per database ("[neo4j/6266ece0]"):
#   [o.n.k.d.Database] [neo4j/6266ece0] Recovery required from position LogPosition{...}
#   [o.n.k.r.Recovery] [neo4j/6266ece0]  10% completed      ... up to 100% completed
#   [o.n.k.d.Database] [neo4j/6266ece0] Recovery in 'full' mode completed. ... Time spent: 15s 98ms.
# and, at every start of the server, "======== Neo4j 5.26.30 ========".
_SERVER_STARTS = "======== Neo4j "
_RECOVERY_REQUIRED = re.compile(r"\[(?P<db>[^/\]]+)/\w+\] Recovery required from position")
_RECOVERY_PERCENT = re.compile(r"\[o\.n\.k\.r\.Recovery\] \[(?P<db>[^/\]]+)/\w+\]\s+(?P<percent>\d+)% completed")
_RECOVERY_DONE = re.compile(r"\[(?P<db>[^/\]]+)/\w+\] Recovery (?:in '\w+' mode )?completed")


class RecoveryWatch:
    """Follows Neo4j's debug.log for recovery after an unclean shutdown: which database, how far.

    Reads only what was appended since the last :meth:`poll` (from the file's end at creation, or
    with ``from_last_start`` from the server's last start marker), and starts over when Neo4j
    rotates the file.
    """

    def __init__(self, path: Path, *, from_last_start: bool = False) -> None:
        self.path = path
        self.progress: dict[str, int] = {}  # database -> percent, for recoveries not yet completed
        self.completed: list[str] = []
        self.lines: list[str] = []  # the recovery lines seen, as written
        self._partial = ""
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        self._offset = size
        if from_last_start and size:
            begin = max(0, size - (32 << 20))  # a rotated debug.log is at most 20 MiB by default
            with open(path, "rb") as f:
                f.seek(begin)
                marker = f.read().rfind(_SERVER_STARTS.encode())
            if marker >= 0:
                self._offset = begin + marker

    @property
    def recovering(self) -> bool:
        """Whether a recovery has begun and not completed."""
        return bool(self.progress)

    def describe(self) -> str:
        return ", ".join(f"database {db!r} at {percent}%" for db, percent in sorted(self.progress.items()))

    def poll(self, say: Callable[[str], None] = lambda _m: None) -> bool:
        """Read what Neo4j appended; say each step of a recovery. True when a recovery advanced."""
        try:
            size = self.path.stat().st_size
            if size < self._offset:  # rotated: the new file holds what followed
                self._offset, self._partial = 0, ""
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return False
        self._offset += len(data)
        text = self._partial + data.decode("utf-8", "replace")
        *complete, self._partial = text.split("\n")
        advanced = False
        for line in complete:
            if _SERVER_STARTS in line:
                self.progress.clear()
            elif m := _RECOVERY_REQUIRED.search(line):
                self.progress[m["db"]] = 0
                say(f"Neo4j is recovering database {m['db']!r} after an unclean shutdown (a kill or a crash)...")
            elif m := _RECOVERY_PERCENT.search(line):
                self.progress[m["db"]] = int(m["percent"])
                say(f"Neo4j recovery of database {m['db']!r}: {m['percent']}%")
            elif m := _RECOVERY_DONE.search(line):
                self.progress.pop(m["db"], None)
                self.completed.append(m["db"])
                spent = line.split("Time spent: ")[-1].rstrip(". ") if "Time spent: " in line else ""
                say(f"Neo4j recovered database {m['db']!r}" + (f" in {spent}" if spent else ""))
            else:
                continue
            self.lines.append(line)
            advanced = True
        return advanced
