"""Retention: pruning old snapshots to their summaries, now (``heapdb prune``) or on a schedule.

A pruned snapshot keeps its ``:Snapshot`` node (still ``ready``, now with ``summary = true`` and
``pruned_at``), its ``:TypeGroup`` and ``:PathGroup`` nodes and whatever else is keyed by its sid
(leak signatures); it loses its ``:Object`` nodes, their ``:REF`` / ``:WEAK_REF`` relationships and
the type listings (object ids and names that ``find`` searches). So the questions that read only
the stored groups (``types``, ``diff --by type|path``, ``growth``, ``leaks --by path`` for the
baseline and target) answer as before, at a fraction of the size; those that read objects refuse it
with :class:`~heapdb.errors.SummaryOnly` (see :meth:`heapdb.queries.base.Asking.snapshot`).

Pruning is two steps, like ``heapdb drop``: :func:`mark` flags the chosen snapshots in one
transaction (from then on they answer as summaries), and the purger (:mod:`.purge`) frees their
objects in bounded transactions, in the background or in the foreground. The purger lists a pruned
snapshot until its objects are freed (``purged``), so a purge killed half-way resumes at the next
heapdb command, as a drop's does.

:func:`choose` says which snapshots go: every ready, full snapshot except the newest ``keep_last``
(by load order: the sid, allocated when a load starts) and those whose tag matches one of the
``keep_tags`` globs (:func:`fnmatch.fnmatchcase`). A snapshot whose references are still being
written is never pruned.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from heapdb.config import PruneSchedule
from heapdb.db import Database
from heapdb.errors import ParameterError, SummaryOnly
from heapdb.loader.store.lifecycle import Say, start_purge
from heapdb.loader.store.schema import ensure_schema
from heapdb.loader.store.snapshots import Snapshot, list_snapshots

# What a pruned snapshot still answers: said once, in the refusal and in the docs.
# Said by the CLI's refusals and the snapshot's web page alike, so in words, not in options.
SUMMARY_ANSWERS = "types, diffs by type or by path, growth, and leaks by path (as baseline or target)"


def _quiet(_: str) -> None:
    pass


def load_again(source: str | None, tag: str) -> str:
    """The command that brings a pruned snapshot's objects back."""
    return f"heapdb load {source or 'FILE'} --tag {tag} --replace"


def summary_only(snapshot: Snapshot) -> SummaryOnly:
    """The refusal of a question that reads objects, for a pruned snapshot."""
    again = f"`{load_again(snapshot.source, snapshot.tag)}`"
    return SummaryOnly(
        f"snapshot {snapshot.tag!r} was pruned on {snapshot.pruned_at or 'an earlier date'}: only its summaries "
        f"are kept, not its objects. It still answers {SUMMARY_ANSWERS}; to ask about its objects, "
        f"load its file again ({again})"
    )


@dataclass(frozen=True)
class PrunePlan:
    """Which ready snapshots a prune frees to summaries, and why each of the others is kept."""

    keep_last: int
    keep_tags: tuple[str, ...]
    pruned: tuple[Snapshot, ...]  # oldest first
    kept: tuple[tuple[Snapshot, str], ...] = field(default=())  # each with the reason, oldest first

    def as_dict(self) -> dict[str, Any]:
        return {
            "keep_last": self.keep_last,
            "keep_tags": list(self.keep_tags),
            "pruned": [{"tag": s.tag, "sid": s.sid} for s in self.pruned],
            "kept": [{"tag": s.tag, "sid": s.sid, "why": why} for s, why in self.kept],
        }


def check_keep_last(keep_last: int) -> None:
    """Refuse keeping fewer than one full snapshot: pruning everything is `heapdb drop`'s job, not this."""
    if keep_last < 1:
        raise ParameterError(
            f"--keep-last must be at least 1 (got {keep_last}): a prune always keeps the newest full snapshot"
        )


def choose(snapshots: Sequence[Snapshot], keep_last: int, keep_tags: Sequence[str] = ()) -> PrunePlan:
    """Which of these snapshots a prune frees (see the module docs); the others with the reason."""
    check_keep_last(keep_last)
    ready = sorted((s for s in snapshots if s.status == "ready"), key=lambda s: s.sid)
    newest = {s.sid for s in ready[-keep_last:]}
    pruned: list[Snapshot] = []
    kept: list[tuple[Snapshot, str]] = []
    for s in ready:
        matched = next((glob for glob in keep_tags if fnmatch.fnmatchcase(s.tag, glob)), None)
        if s.summary:
            kept.append((s, f"pruned already, on {s.pruned_at}"))
        elif s.sid in newest:
            kept.append((s, f"one of the newest {keep_last}"))
        elif matched is not None:
            kept.append((s, f"tag matches {matched!r}"))
        elif not s.references_ready:
            kept.append((s, "its references are still being written"))
        else:
            pruned.append(s)
    return PrunePlan(keep_last, tuple(keep_tags), tuple(pruned), tuple(kept))


def mark(database: Database, sids: Sequence[int]) -> list[int]:
    """Flag these snapshots pruned, in one transaction; returns the sids it flagged.

    Only a snapshot still ready, full and complete is flagged: one dropped, replaced or pruned since
    it was chosen is left as it is. From this transaction on, flagged snapshots answer as summaries.
    """
    if not sids:
        return []
    rows = database.write(
        "MATCH (s:Snapshot) WHERE s.sid IN $sids AND s.status = 'ready' AND coalesce(s.references_ready, true) "
        "AND NOT coalesce(s.summary, false) SET s.summary = true, s.pruned_at = $now RETURN s.sid AS sid ORDER BY sid",
        {"sids": list(sids), "now": datetime.now(UTC).isoformat(timespec="seconds")},
    )
    return [int(row["sid"]) for row in rows]


def prune(
    database: Database,
    keep_last: int,
    keep_tags: Sequence[str] = (),
    *,
    dry_run: bool = False,
    wait: bool = False,
    say: Say = _quiet,
) -> PrunePlan:
    """Prune every snapshot :func:`choose` picks; returns the plan, its ``pruned`` those flagged now.

    ``dry_run`` changes nothing. Otherwise the chosen snapshots are flagged at once (:func:`mark`)
    and their objects freed by the purger: here, with a progress bar, when ``wait``; else in the
    background. Pruning twice prunes nothing more the second time.
    """
    check_keep_last(keep_last)
    ensure_schema(database)
    plan = choose(list_snapshots(database), keep_last, keep_tags)
    if dry_run:
        return plan
    flagged = set(mark(database, [s.sid for s in plan.pruned]))
    plan = PrunePlan(keep_last, plan.keep_tags, tuple(s for s in plan.pruned if s.sid in flagged), plan.kept)
    if wait:
        from heapdb.loader.store import purge  # purge builds on lifecycle, as this does

        purge.purge(database, wait=True, say=say)
    elif flagged:
        start_purge(database)
    return plan


class Scheduler:
    """Prunes on a schedule (:func:`heapdb.config.prune_schedule`) in a daemon thread until stopped; says what each round pruned.

    Each round connects through ``connect`` (the service's own database handle) and frees objects in
    the background purger, as ``heapdb prune`` does, so a round takes a moment whatever the sizes.
    A round that fails (Neo4j away) is said and retried at the next tick.
    """

    def __init__(self, schedule: PruneSchedule, connect: Callable[[], Database], say: Say) -> None:
        check_keep_last(schedule.keep_last)
        self.schedule = schedule
        self._connect = connect
        self._say = say
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heapdb-prune-schedule", daemon=True)

    def start(self) -> None:
        globs = ", ".join(self.schedule.keep_tags) or "none"
        self._say(
            f"pruning every {self.schedule.every:g} s: keeping the newest {self.schedule.keep_last} "
            f"full snapshots and tags matching {globs}"
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def run_once(self) -> PrunePlan:
        plan = prune(self._connect(), self.schedule.keep_last, self.schedule.keep_tags)
        if plan.pruned:
            tags = ", ".join(repr(s.tag) for s in plan.pruned)
            self._say(f"pruned {len(plan.pruned)} snapshot(s) to summaries: {tags}; freeing their objects")
        return plan

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception as e:  # a round that fails is retried at the next tick; the service goes on
                self._say(f"scheduled prune failed: {type(e).__name__}: {e}")
            self._stop.wait(self.schedule.every)
