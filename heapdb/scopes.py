"""Which snapshots a caller may read and write: a :class:`Scope`, tag patterns in ``fnmatch`` style.

The service's environment tokens (``HEAPDB_API_TOKEN``, ``HEAPDB_API_WRITE_TOKEN``) and every
command run on the machine see everything (:data:`EVERYTHING`). A token made with
``heapdb tokens create --read 'team-a/*' --write 'team-a/*'`` sees the tags its patterns cover: it
reads a tag one of its read or write patterns matches (writing a snapshot implies reading it), and
writes one its write patterns match. A pattern is matched against the whole tag, case-sensitively
(``fnmatchcase``: ``*`` also crosses ``/``, so ``team-a/*`` covers ``team-a/x/y``).

This module is only the rule; :mod:`heapdb.loader.store.tokens` keeps the tokens, and the questions
(:class:`heapdb.queries.base.Asking`), the stored queries (:mod:`heapdb.queries.catalog`) and the
service (:mod:`heapdb.service.access`) apply it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from heapdb.errors import NotFound, ParameterError

MAX_PATTERNS = 20  # per kind: a team's tags fit a few; the bound keeps a token's record small
MAX_PATTERN_CHARS = 200


@dataclass(frozen=True)
class Scope:
    """What one caller may read and write. ``everything``: the administrator (no patterns apply)."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    everything: bool = False

    def reads(self, tag: str) -> bool:
        return self.everything or any(fnmatchcase(tag, p) for p in (*self.read, *self.write))

    def writes(self, tag: str) -> bool:
        return self.everything or any(fnmatchcase(tag, p) for p in self.write)

    def reads_all(self, tags: Iterable[str]) -> bool:
        return all(self.reads(t) for t in tags)


EVERYTHING = Scope(everything=True)


def no_snapshot(tag: str) -> NotFound:
    """What an unknown tag answers; a tag outside the caller's scope answers exactly this too."""
    return NotFound(f"no snapshot tagged {tag!r} (see `heapdb snapshots`)")


def check_patterns(patterns: Sequence[str], kind: str) -> tuple[str, ...]:
    """``patterns`` if each is a usable tag pattern, else :class:`ParameterError` saying why."""
    if len(patterns) > MAX_PATTERNS:
        raise ParameterError(f"at most {MAX_PATTERNS} --{kind} patterns, got {len(patterns)}")
    for p in patterns:
        if not p.strip() or len(p) > MAX_PATTERN_CHARS:
            raise ParameterError(f"--{kind} {p!r}: a pattern is 1 to {MAX_PATTERN_CHARS} characters, not blank")
    return tuple(dict.fromkeys(patterns))  # each once, in the order given
