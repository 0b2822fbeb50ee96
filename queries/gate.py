"""The CI gate and leak signatures across builds: does a candidate build leak where its baseline did not?

:meth:`GateQuestions.gate` compares two loaded builds by retainer-path signature (stored query
``gate-paths``: the groups' totals written at load, so it needs no stable ids and answers at once):

- a **new leak** is a path the candidate holds at least ``min_bytes`` with, that the baseline did not
  hold (or held with less than :data:`NOISE_DIVISOR`-th of the floor: a stray object or two is not
  the same path "being there");
- a **growth** is a path both hold whose retained bytes grew by more than ``max_growth`` (bytes, or
  a percentage of the baseline's reachable heap);
- a **suspect** is a type among the candidate's leak suspects (``heapdb suspects``) that is not
  among the baseline's.

A finding whose path extends another finding's path (the payload arrays under a leaked class's
instances) is part of that finding, not one of its own; a path that grew only because a new leak
appeared beneath it is that new leak. What a build holds "under" a path is the most that path's
group or any longer path's group retains (``gate-paths`` says why). Findings the rules' ``known_leak`` covers
are reported apart and never fail. :meth:`record_gate` remembers the findings as leak signatures
across builds (:mod:`heapdb.loader.store.signatures`); :meth:`history` and :meth:`signatures` read
them back.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any

from heapdb.errors import NotFound, ParameterError
from heapdb.loader.store import Snapshot
from heapdb.loader.store import signatures as history_store
from heapdb.queries import params
from heapdb.queries.base import SnapshotRef
from heapdb.queries.results import GateFinding, GateReport, ObjectRef, SignatureHistory, SignatureObservation
from heapdb.queries.suspects import SuspectQuestions
from heapdb.queries.thresholds import parse_threshold

# A path the baseline held with less than min_bytes / NOISE_DIVISOR counts as absent from it: a few
# objects held the same way by chance do not make a leak of the candidate's "old".
NOISE_DIVISOR = 8
CHECKS: tuple[str, ...] = typing.get_args(typing.get_args(params.Gate.model_fields["fail_on"].annotation)[0])


def threshold_bytes(text: str, reachable_size: int) -> int:
    """A threshold in bytes; a percentage is of ``reachable_size`` (the baseline's reachable heap)."""
    amount, percent = parse_threshold(text)
    return int(amount * reachable_size / 100) if percent else int(amount)


def classify(
    rows: Sequence[dict[str, Any]], *, min_bytes: int, growth_bytes: int, tag: str
) -> tuple[list[GateFinding], list[GateFinding]]:
    """The ``gate-paths`` rows as new-leak and growth findings, outermost paths only, largest first:
    ``(new leaks, growths)``. Pure: no database."""
    noise = min_bytes // NOISE_DIVISOR
    found: list[GateFinding] = []
    for r in rows:
        before, after = r["retained_before"], r["retained_after"]
        if before < noise and after >= min_bytes:
            kind = "new-leak"
        elif before >= noise and after - before > growth_bytes:
            kind = "growth"
        else:
            continue
        found.append(
            GateFinding(
                kind=kind,
                signature=r["sig"],
                path=r["path"],
                hops=list(r["hops"] or []),
                type=r["type"],
                objects_before=r["objects_before"],
                objects_after=r["objects_after"],
                bytes_before=before,
                bytes_after=after,
                why=None if r.get("sample") is None else ObjectRef(tag, r["sample"]),
                known_leak=r.get("known_leak"),
            )
        )
    outermost = _outermost(found)
    return [f for f in outermost if f.kind == "new-leak"], [f for f in outermost if f.kind == "growth"]


def _outermost(findings: list[GateFinding]) -> list[GateFinding]:
    """The findings that name a leak, largest first: outermost new leaks (a new path inside a new path
    is part of it), then outermost growths that neither hold a kept new leak nor lie inside a kept
    finding. A path that "grew" because a new path appeared beneath it (the module context above a
    new array) is that new leak, not a growth of its own."""

    def inside(inner: GateFinding, outer: GateFinding) -> bool:
        return len(outer.hops) < len(inner.hops) and inner.hops[: len(outer.hops)] == outer.hops

    def by_depth(kind: str) -> list[GateFinding]:
        return sorted(
            (f for f in findings if f.kind == kind), key=lambda f: (len(f.hops), -f.bytes_after, f.signature or 0)
        )

    kept: list[GateFinding] = []
    for f in by_depth("new-leak"):
        if not any(inside(f, k) for k in kept):
            kept.append(f)
    leaks = list(kept)
    for f in by_depth("growth"):
        if not any(inside(f, k) for k in kept) and not any(inside(leak, f) for leak in leaks):
            kept.append(f)
    return sorted(kept, key=lambda f: (-f.bytes_after, f.signature or 0))


def _failing(finding: GateFinding, fail_on: Sequence[str]) -> GateFinding:
    check = "new-leaks" if finding.kind == "new-leak" else "growth" if finding.kind == "growth" else "suspects"
    fails = check in fail_on and finding.known_leak is None
    return finding if fails == finding.fails else _replace(finding, fails=fails)


def _replace(finding: GateFinding, **changes: Any) -> GateFinding:
    values = {name: getattr(finding, name) for name in GateFinding.__dataclass_fields__ if name != "growth"}
    return GateFinding(**{**values, **changes})


class GateQuestions(SuspectQuestions):
    def gate(self, baseline: SnapshotRef, candidate: SnapshotRef, p: params.Gate = params.Gate()) -> GateReport:
        """Whether ``candidate`` leaks where ``baseline`` did not (see the module's docstring)."""
        old, new = self.snapshot(baseline), self.snapshot(candidate)
        if old.sid == new.sid:
            raise ParameterError("the gate compares two different snapshots: baseline and candidate are the same")
        growth_bytes = threshold_bytes(p.max_growth, old.reachable_size or 0)
        rows = self._run(
            "gate-paths", baseline=old.tag, candidate=new.tag, min_bytes=p.min_bytes, growth_bytes=growth_bytes
        )
        leaks, growths = classify(rows, min_bytes=p.min_bytes, growth_bytes=growth_bytes, tag=new.tag)
        suspects = self._new_suspects(old, new) if "suspects" in p.fail_on else []
        everything = [_failing(f, p.fail_on) for f in (*leaks, *growths, *suspects)]
        known = [f for f in everything if f.known_leak is not None]
        findings = [f for f in everything if f.known_leak is None]
        findings.sort(key=lambda f: (not f.fails, -f.growth, f.signature or 0))
        limited = _per_kind(findings, p.limit)
        return GateReport(
            baseline=old.tag,
            candidate=new.tag,
            passed=not any(f.fails for f in findings),
            fail_on=list(p.fail_on),
            min_bytes=p.min_bytes,
            max_growth=p.max_growth,
            growth_bytes=growth_bytes,
            reachable_before=old.reachable_size or 0,
            reachable_after=new.reachable_size or 0,
            findings=limited,
            known=known[: p.limit],
        )

    def _new_suspects(self, old: Snapshot, new: Snapshot) -> list[GateFinding]:
        """The candidate's suspect types (objects' types too) that are not among the baseline's."""
        before, after = self.suspects(old, params.Suspects()), self.suspects(new, params.Suspects())
        had = {t.type for t in before.types} | {o.object.type for o in before.objects}
        found: dict[str, GateFinding] = {}
        for o in after.objects:
            if o.object.type not in had and o.object.type not in found:
                found[o.object.type] = GateFinding(
                    kind="suspect",
                    signature=None,
                    path=o.object.type,
                    hops=[o.object.type],
                    type=o.object.type,
                    objects_before=0,
                    objects_after=1,
                    bytes_before=0,
                    bytes_after=o.object.retained_size,
                    why=o.why,
                    known_leak=o.object.known_leak,
                )
        for t in after.types:
            if t.type not in had and t.type not in found:
                found[t.type] = GateFinding(
                    kind="suspect",
                    signature=None,
                    path=t.type,
                    hops=[t.type],
                    type=t.type,
                    objects_before=0,
                    objects_after=t.count,
                    bytes_before=0,
                    bytes_after=t.retained_size,
                    why=None,
                )
        return list(found.values())

    def record_gate(self, report: GateReport) -> None:
        """Remember both builds of ``report`` and its leak signatures (known leaks too) across builds."""
        tracked = [
            history_store.Tracked(f.signature, f.path, tuple(f.hops), f.type, f.known_leak)
            for f in (*report.findings, *report.known)
            if f.signature is not None
        ]
        history_store.record_builds(
            self.database,
            [self.snapshot(report.baseline), self.snapshot(report.candidate)],
            tracked,
            noise=report.min_bytes // NOISE_DIVISOR,
        )

    def history(self, signature: int) -> SignatureHistory:
        """A leak signature's history across the recorded builds (stored query ``signature-history``)."""
        found = self._run("signature", sig=signature)
        if not found:
            raise NotFound(f"no leak signature {signature} is remembered (see `heapdb signatures`)")
        rows = history_store.in_build_order(self._run("signature-history", sig=signature))
        return _history(found[0]["signature"], rows)

    def signatures(self, since: str | None = None) -> list[SignatureHistory]:
        """The remembered leak signatures, first seen earliest first; with ``since`` (a build name or
        a snapshot tag), those first seen in that build or a later one."""
        rows = self._run("signatures")
        builds = {b["build"]: b for b in self._run("builds")}
        key = {name: history_store.order_key(b["number"], b["sid"]) for name, b in builds.items()}
        if since is not None:
            start = builds.get(since) or next((b for b in builds.values() if b["tag"] == since), None)
            if start is None:
                raise NotFound(f"no recorded build or tag {since!r} (see `heapdb signatures`)")
            floor = key[start["build"]]
            rows = [
                r for r in rows if r["signature"]["first_seen"] in key and key[r["signature"]["first_seen"]] >= floor
            ]
        last = (True, 0.0, 0)
        answers = [_history(r["signature"], []) for r in rows]
        return sorted(answers, key=lambda h: (key.get(h.first_seen or "", last), h.signature))


def _per_kind(findings: list[GateFinding], limit: int) -> list[GateFinding]:
    counts: dict[str, int] = {}
    kept = []
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
        if counts[f.kind] <= limit:
            kept.append(f)
    return kept


def _history(props: dict[str, Any], rows: Sequence[Any]) -> SignatureHistory:
    return SignatureHistory(
        signature=props["sig"],
        path=props["path"],
        hops=list(props.get("hops") or []),
        type=props["type"],
        status=props.get("status") or "new",
        first_seen=props.get("first_seen"),
        last_seen=props.get("last_seen"),
        grew=list(props.get("grew") or []),
        known_leak=props.get("known_leak"),
        observations=[
            SignatureObservation(r["build"], r["tag"], r["retained_size"], r["objects"], bool(r["present"]))
            for r in rows
        ],
    )
