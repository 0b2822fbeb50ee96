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
are reported apart and never fail. A path finding's ``known_leak`` and ``verdict`` are those of the path's
largest object in the candidate (its group's first sample), as for every answer by path.

**Thresholds** (``max_growth``, ``min_bytes``, ``fail_on``) are taken, each on its own, from the
parameters when given there, else from the ``[gate]`` table of a rule set (the one ``rules`` names,
else the rules the candidate was loaded with), else the parameters' defaults; the report says which
came from where (``thresholds_from``). :meth:`record_gate` remembers the findings as leak signatures
across builds (:mod:`heapdb.loader.store.signatures`), and the run itself, its report whole
(:mod:`heapdb.loader.store.gate_runs`); :meth:`history` and :meth:`signatures` read the signatures
back, :mod:`heapdb.queries.gate_runs` the runs.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from heapdb.errors import NotComputed, NotFound, ParameterError
from heapdb.loader.store import Snapshot, gate_runs
from heapdb.loader.store import signatures as history_store
from heapdb.queries import params
from heapdb.queries.base import SnapshotRef
from heapdb.queries.gate_inspections import CHECKS, findings, rows
from heapdb.queries.inspected import InspectedQuestions
from heapdb.queries.results import (
    GateFinding,
    GateReport,
    ObjectRef,
    SignatureHistory,
    SignatureObservation,
    to_data,
)
from heapdb.queries.suspects import SuspectQuestions
from heapdb.units import parse_threshold

if TYPE_CHECKING:
    from heapdb.loader.rules import RuleSet

# A path the baseline held with less than min_bytes / NOISE_DIVISOR counts as absent from it: a few
# objects held the same way by chance do not make a leak of the candidate's "old".
NOISE_DIVISOR = 8


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
                verdict=r.get("verdict"),
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


# The check each kind of finding answers to.
CHECK_OF_KIND = {
    "new-leak": "new-leaks",
    "growth": "growth",
    "suspect": "suspects",
    **{c.kind: check for check, c in CHECKS.items()},
}


def _failing(finding: GateFinding, fail_on: Sequence[str]) -> GateFinding:
    fails = CHECK_OF_KIND[finding.kind] in fail_on and finding.known_leak is None
    return finding if fails == finding.fails else _replace(finding, fails=fails)


def _replace(finding: GateFinding, **changes: Any) -> GateFinding:
    values = {name: getattr(finding, name) for name in GateFinding.__dataclass_fields__ if name != "growth"}
    return GateFinding(**{**values, **changes})


class GateQuestions(InspectedQuestions, SuspectQuestions):
    def gate(
        self,
        baseline: SnapshotRef,
        candidate: SnapshotRef,
        p: params.Gate = params.Gate(),
        rule_file: RuleSet | None = None,
    ) -> GateReport:
        """Whether ``candidate`` leaks where ``baseline`` did not (see the module's docstring).

        ``rule_file`` (a parsed rule file, the CLI's ``--rules FILE``) stands for ``p.rules``."""
        old, new = self.snapshot(baseline), self.snapshot(candidate)
        if old.sid == new.sid:
            raise ParameterError("the gate compares two different snapshots: baseline and candidate are the same")
        p, thresholds_from, notes = self._thresholds(p, new, rule_file)
        growth_bytes = threshold_bytes(p.max_growth, old.reachable_size or 0)
        rows = self._run(
            "gate-paths", baseline=old.tag, candidate=new.tag, min_bytes=p.min_bytes, growth_bytes=growth_bytes
        )
        leaks, growths = classify(rows, min_bytes=p.min_bytes, growth_bytes=growth_bytes, tag=new.tag)
        suspects = self._new_suspects(old, new) if "suspects" in p.fail_on else []
        inspected, not_inspected = self._inspections(old, new, p, growth_bytes)
        notes = [*notes, *not_inspected]
        everything = [_failing(f, p.fail_on) for f in (*leaks, *growths, *suspects, *inspected)]
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
            thresholds_from=thresholds_from,
            notes=notes,
        )

    def _thresholds(
        self, p: params.Gate, candidate: Snapshot, rule_file: RuleSet | None
    ) -> tuple[params.Gate, str, list[str]]:
        """``p`` with the thresholds it leaves unset taken from a rule set's ``[gate]``; where each
        threshold came from; and notes on a rule set that could not be read."""
        rule_set, source, notes = self._gate_rules(p.rules, candidate, rule_file)
        taken = {} if rule_set is None or rule_set.gate is None else rule_set.gate.given()
        taken = {name: value for name, value in taken.items() if name not in p.model_fields_set}
        given = [name for name in ("max_growth", "min_bytes", "fail_on") if name in p.model_fields_set]
        parts = [f"{', '.join(given)} from the command" if given else ""]
        if taken:
            assert rule_set is not None and rule_set.gate is not None
            parts.append(f"{', '.join(taken)} from {source}, [gate] at line {rule_set.gate.line}")
        if len(given) + len(taken) < 3:
            parts.append("the rest heapdb's defaults" if given or taken else "heapdb's defaults")
        return p.model_copy(update=taken), "; ".join(part for part in parts if part), notes

    def _gate_rules(
        self, name: str | None, candidate: Snapshot, rule_file: RuleSet | None
    ) -> tuple[RuleSet | None, str, list[str]]:
        """The rule set whose ``[gate]`` applies, how to name it, and notes when the candidate's own
        rules can no longer be read as they were at its load."""
        from heapdb.loader.rules import parse_rules
        from heapdb.loader.store.rulesets import get_rule_set, rules_of_snapshot

        if rule_file is not None:
            return rule_file, f"rule file {rule_file.path}", []
        if name is not None:
            stored = get_rule_set(self.database, name)
            label = f"rule set {stored.name} version {stored.version}"
            return parse_rules(stored.text or "", label), label, []
        rule_set, label, problem = rules_of_snapshot(self.database, candidate)
        if problem is not None:
            fix = "" if candidate.rules_version is not None else " (give --rules)"
            return (
                None,
                "",
                [f"the candidate's {problem.removeprefix('its ')}: its [gate] thresholds are not applied{fix}"],
            )
        return rule_set, f"the candidate's {label}" if label else "", []

    def _inspections(
        self, old: Snapshot, new: Snapshot, p: params.Gate, growth_bytes: int
    ) -> tuple[list[GateFinding], list[str]]:
        """The findings of the inspection checks ``p.fail_on`` names (:mod:`.gate_inspections`), and a
        note for each that a build's load did not compute."""
        found: list[GateFinding] = []
        notes: list[str] = []
        for check in CHECKS:
            if check not in p.fail_on:
                continue
            try:
                before, after = self.stored_inspection(check, old), self.stored_inspection(check, new)
            except NotComputed as e:
                notes.append(f"{check} not checked: {e}")
                continue
            found += findings(
                check,
                before,
                after,
                min_bytes=p.min_bytes,
                noise=p.min_bytes // NOISE_DIVISOR,
                growth_bytes=growth_bytes,
                tag=new.tag,
            )
        return found, notes

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
                    verdict=o.object.verdict,
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

    def record_gate(self, report: GateReport) -> gate_runs.RecordedRun:
        """Remember both builds of ``report`` and its leak signatures (known leaks too) across builds,
        and the run itself: its report whole, under the next run number (which this returns)."""
        noise = report.min_bytes // NOISE_DIVISOR
        tracked = [
            history_store.Tracked(f.signature, f.path, tuple(f.hops), f.type, f.known_leak, _observed_in(f.kind))
            for f in (*report.findings, *report.known)
            if f.signature is not None
        ]
        compared = [self.snapshot(report.baseline), self.snapshot(report.candidate)]
        history_store.record_builds(
            self.database, compared, tracked, noise=noise, observed=self._observed(tracked, compared, noise)
        )
        # The report's JSON is the API's (to_data), but with sample objects as {tag, id}, not as the
        # service's URLs: the stored run is read back as a GateReport (results.from_data), and the
        # service's routes may change while the run stays.
        return gate_runs.record_run(
            self.database,
            baseline=report.baseline,
            candidate=report.candidate,
            passed=report.passed,
            failing=len(report.failures),
            report=json.dumps(to_data(report, dataclasses.asdict)),
        )

    def _observed(
        self, tracked: Sequence[history_store.Tracked], compared: Sequence[Snapshot], noise: int
    ) -> list[history_store.Observed]:
        """What every recorded build still loaded (and the two ``compared``) held of the inspection
        rows' signatures, those ``tracked`` and those remembered before (so that each is looked up in
        every build, as the paths' are), read from each build's stored inspection: a row missing from
        a build that computed the inspection is observed absent; a build that did not, not observed."""
        wanted: dict[str, set[int]] = {}
        remembered = [(r["signature"].get("inspection"), r["signature"]["sig"]) for r in self._run("signatures")]
        for check, sig in [*((t.inspection, t.sig) for t in tracked), *remembered]:
            if check in CHECKS:
                wanted.setdefault(check, set()).add(sig)
        if not wanted:
            return []
        builds = {history_store.build_name(s): (s.tag, s.sid) for s in compared}
        for b in self._run("builds"):
            builds.setdefault(b["build"], (b["tag"], b["sid"]))
        found = []
        for build, (tag, sid) in builds.items():
            try:
                snapshot = self.snapshot(tag)
            except NotFound:  # dropped since: its observations stay as they were
                continue
            if snapshot.sid != sid:  # its tag now names another load
                continue
            for check, sigs in wanted.items():
                try:
                    held = rows(check, self.stored_inspection(check, snapshot))
                except NotComputed:
                    continue
                for sig in sigs:
                    h = held.get(sig)
                    size, objects = (h.size, h.objects) if h is not None else (0, 0)
                    present = objects > 0 if CHECKS[check].new_at_one else size >= noise
                    found.append(history_store.Observed(sig, build, size, objects, present))
        return found

    def history(self, signature: int, p: params.History = params.History()) -> SignatureHistory:
        """A leak signature's history across the recorded builds (stored query ``signature-history``),
        a page of its builds (``p.offset``, ``p.limit``; its first and last build and status are of
        them all); for a caller who may read only some tags, across the builds of those
        (:meth:`_in_scope`)."""
        found = self._run("signature", sig=signature)
        if not found:
            raise _no_signature(signature)
        rows = history_store.in_build_order(self._run("signature-history", sig=signature))
        if self.scope.everything:
            return _history(found[0]["signature"], rows, p)
        seen = self._in_scope(found[0]["signature"], rows)
        if seen is None:  # none of its builds are the caller's: as unknown
            raise _no_signature(signature)
        return _history(*seen, p)

    def _in_scope(self, props: dict[str, Any], rows: Sequence[Any]) -> tuple[dict[str, Any], list[Any]] | None:
        """A signature as seen from the builds whose tags the caller may read (``rows`` in build
        order): its observations there, and its first and last build, growth and status worked out
        from them alone, so that nothing of another team's builds shows: ``(properties, rows)`` as
        :func:`_history` takes them, or None if none of those builds had it."""
        mine = [r for r in rows if self.scope.reads(r["tag"])]
        if not any(r["present"] for r in mine):
            return None
        summary = history_store.summarise(
            [(r["build"], r["retained_size"], bool(r["present"])) for r in mine],
            known=props.get("known_leak") is not None,
            noise=0,
        )
        builds = {r["build"] for r in mine}
        grew = [b for b in props.get("grew") or [] if b in builds]  # as recorded, with its noise floor
        seen = {**props, "first_seen": summary.first_seen, "last_seen": summary.last_seen, "status": summary.status}
        return {**seen, "grew": grew}, mine

    def signatures(self, since: str | None = None) -> list[SignatureHistory]:
        """The remembered leak signatures, first seen earliest first; with ``since`` (a build name or
        a snapshot tag), those first seen in that build or a later one."""
        rows = self._run("signatures")
        builds = {b["build"]: b for b in self._run("builds") if self.scope.reads(b["tag"])}
        if not self.scope.everything:
            rows = self._signatures_in_scope(rows)
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

    def _signatures_in_scope(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ``signatures`` rows a caller who may read only some tags sees (:meth:`_in_scope`)."""
        observed: dict[int, list[dict[str, Any]]] = {}
        for r in self._run("signature-observations"):
            observed.setdefault(r["sig"], []).append(r)
        kept = []
        for r in rows:
            props = r["signature"]
            seen = self._in_scope(props, history_store.in_build_order(observed.get(props["sig"], [])))
            if seen is not None:
                kept.append({"signature": seen[0]})
        return kept


def _observed_in(kind: str) -> str | None:
    """The inspection check whose rows hold a finding of ``kind``'s signature; None where it is a
    retainer path's (the paths' findings, and detached DOM's, held by a path)."""
    check = CHECK_OF_KIND[kind]
    return check if check in CHECKS and not CHECKS[check].path_rows else None


def _no_signature(signature: int) -> NotFound:
    return NotFound(f"no leak signature {signature} is remembered (see `heapdb signatures`)")


def _per_kind(findings: list[GateFinding], limit: int) -> list[GateFinding]:
    counts: dict[str, int] = {}
    kept = []
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
        if counts[f.kind] <= limit:
            kept.append(f)
    return kept


def _history(props: dict[str, Any], rows: Sequence[Any], p: params.History | None = None) -> SignatureHistory:
    """A signature's answer: with ``p``, a page of its ``rows`` (the builds it was looked up in)."""
    page = rows if p is None else rows[p.offset : p.offset + p.limit]
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
            for r in page
        ],
        builds=len(rows),
        offset=0 if p is None else p.offset,
    )
