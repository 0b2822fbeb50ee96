"""Questions over a history of loaded builds: which builds a range names, and one type's totals in each.

A *loaded build* is a ready snapshot loaded with build metadata (``heapdb load --meta build=N``, what
``heapdb gate`` records builds by: :func:`heapdb.loader.store.signatures.build_name`). Builds sort as
the gate's history sorts them: numbered ones by number, the others after them in load order
(:func:`~heapdb.loader.store.signatures.order_key`). A build loaded twice (under two tags) counts once,
its newest load. Pruned snapshots are builds too: the per-type and per-path totals these questions read
are what pruning keeps.

:func:`in_range` picks the builds of a :data:`~heapdb.queries.params.BUILDS_HELP` range: ``growth
--builds all`` reads every build this way (a thousand tags would not fit a URL), and ``type-history``
pages through them.
"""

from __future__ import annotations

from collections.abc import Sequence

from heapdb.errors import NotFound, ParameterError
from heapdb.loader.store import Snapshot
from heapdb.loader.store.signatures import BUILD_META, build_name, build_number, order_key
from heapdb.queries import params
from heapdb.queries.base import Asking
from heapdb.queries.results import TypeHistory, TypeInBuild


def loaded_builds(snapshots: Sequence[Snapshot]) -> list[Snapshot]:
    """The snapshots that are builds (ready, with build metadata), one per build name, in build order."""
    newest: dict[str, Snapshot] = {}
    for s in snapshots:
        if s.status == "ready" and s.meta.get(BUILD_META) not in (None, ""):
            name = build_name(s)
            if name not in newest or newest[name].sid < s.sid:
                newest[name] = s
    return sorted(newest.values(), key=lambda s: order_key(build_number(build_name(s)), s.sid))


def in_range(snapshots: Sequence[Snapshot], builds: str) -> list[Snapshot]:
    """The loaded builds among ``snapshots`` that the range ``builds`` names, in build order.

    An end that is a number takes the builds numbered from (or up to) it, whether or not a build has
    that very number; an end that is not must be a loaded build's name or tag (:class:`NotFound`
    otherwise), and the range runs from (or to) it in build order."""
    ordered = loaded_builds(snapshots)
    first, last = params.build_range(builds)
    start, stop = 0, len(ordered)
    if first is not None:
        start = _position(ordered, first, before=True)
    if last is not None:
        stop = _position(ordered, last, before=False)
    return ordered[start:stop]


def series(refs: Sequence[object], snapshots: Sequence[Snapshot], builds: str) -> list[Snapshot]:
    """The loaded builds of the range ``builds`` as a question's series of snapshots, in place of
    ``refs`` (tags), which must then be empty."""
    if refs:
        raise ParameterError("give the snapshots as tags or as a range of builds (--builds), not both")
    return in_range(snapshots, builds)


def _position(ordered: list[Snapshot], end: str, *, before: bool) -> int:
    """Where a range's end cuts ``ordered``: the index of its first build (``before``), or one past
    its last."""
    number = build_number(end)
    if number is not None:
        numbered = [build_number(build_name(s)) for s in ordered]
        if before:
            return next((i for i, n in enumerate(numbered) if n is None or n >= number), len(ordered))
        return next((i for i, n in enumerate(numbered) if n is None or n > number), len(ordered))
    for i, s in enumerate(ordered):
        if end in (build_name(s), s.tag):
            return i if before else i + 1
    raise NotFound(f"no loaded build or tag {end!r} (builds are snapshots loaded with --meta build=N)")


class BuildQuestions(Asking):
    def build_candidates(self) -> list[Snapshot]:
        """The ready snapshots the caller may read, as records of only what choosing builds needs
        (their sid, tag, metadata and whether they were pruned; stored query ``snapshot-builds``)."""
        found = [Snapshot.from_properties(row["snapshot"]) for row in self._run("snapshot-builds")]
        return [s for s in found if self.scope.reads(s.tag)]

    def type_history(self, p: params.TypeHistory) -> TypeHistory:
        """One type's (``p.type``) objects, shallow and retained size in each loaded build of
        ``p.builds``, a page of builds at a time (``p.offset``, ``p.limit``), oldest first (stored
        query ``type-history``).

        Reads the per-type totals every load stores and every prune keeps, so it answers for builds
        pruned long ago; a build without objects of the type shows zeros."""
        builds = in_range(self.build_candidates(), p.builds)
        page = builds[p.offset : p.offset + p.limit]
        rows = self._run("type-history", tags=[s.tag for s in page], type=p.type) if page else []
        found = {r["tag"]: r for r in rows}
        none = {"objects": 0, "self_size": 0, "retained_size": 0}
        return TypeHistory(
            type=p.type,
            builds=p.builds,
            total=len(builds),
            offset=p.offset,
            rows=[
                TypeInBuild(
                    build=build_name(s),
                    tag=s.tag,
                    summary=s.summary,
                    objects=found.get(s.tag, none)["objects"],
                    self_size=found.get(s.tag, none)["self_size"],
                    retained_size=found.get(s.tag, none)["retained_size"],
                )
                for s in page
            ],
        )
