"""The gate's answers for people and CI systems: text (:func:`gate_text`, :func:`history_text`,
:func:`signatures_text`, :func:`gate_runs_text`, :func:`gate_run_text`, :func:`type_history_text`), JUnit XML (test results) and Markdown (a job summary).

They live here rather than in :mod:`heapdb.renderers.text`: they are one feature's renderers, and the CLI
imports them only when a gate command runs.

JUnit XML is written with :mod:`xml.etree.ElementTree`, which escapes every text and attribute, so
path texts straight from the heap (any characters at all) cannot break the file; characters XML 1.0
does not allow at all (control characters) are shown as escapes first. Each finding is one test case,
failing when it fails the gate; a gate without findings is one passing case, so the CI system shows
that the gate ran.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from heapdb.queries.results import GateFinding, GateReport, GateRun, GateRuns, SignatureHistory, TypeHistory
from heapdb.renderers.text import _signed, short_name, why_command
from heapdb.units import NAME_LIMIT, human_bytes

SUITE = "heapdb gate"
# What XML 1.0 cannot carry even escaped: C0 controls but tab, newline and carriage return; surrogates.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# A gate finding's kind, for people.
KIND_WORDS = {
    "new-leak": "new leak",
    "growth": "growth",
    "suspect": "new suspect",
    "duplicate-string": "duplicated string",
    "detached-dom": "detached DOM",
    "unmounted-component": "unmounted component",
    "duplicate-object": "duplicated object",
    "collection-fill": "unused collection room",
    "lifecycle-leak": "lifecycle leak",
    "held": "held by one kind of holder",
    "global-variable": "global variable",
    "component-memory": "component memory",
}
# What a finding's path is, where it is not what holds it (a path's and detached DOM's findings).
PATH_WORDS = {
    "duplicate-string": "content",
    "duplicate-object": "content",
    "unmounted-component": "component",
    "collection-fill": "collections of type",
    "lifecycle-leak": "suspect references",
    "held": "kept alive by",
    "global-variable": "global",
    "component-memory": "component",
}


def gate_text(answer: GateReport) -> str:
    """The gate's verdict first, then each finding with its path and a why-alive command line."""
    verdict = "PASSED" if answer.passed else "FAILED"
    lines = [
        f"gate {verdict}: {answer.candidate} against {answer.baseline} (fails on {', '.join(answer.fail_on) or 'nothing'}; "
        f"new paths retaining at least {human_bytes(answer.min_bytes)}, growth over {answer.max_growth} = {human_bytes(answer.growth_bytes)})",
        f"reachable heap: {human_bytes(answer.reachable_before)} → {human_bytes(answer.reachable_after)}"
        f" ({_signed(answer.reachable_after - answer.reachable_before, True).strip()})",
        f"thresholds: {answer.thresholds_from}",
        *(f"note: {note}" for note in answer.notes),
    ]
    for f in answer.findings:
        lines.extend(gate_finding_lines(f))
    if not answer.findings:
        lines.append("no new leak signature, nothing grew past the threshold")
    if answer.known:
        lines.append("known leaks (the rules' known_leak, known library leaks; reported, never fail)")
        for f in answer.known:
            lines.extend(gate_finding_lines(f))
    return "\n".join(lines)


def gate_finding_lines(f: GateFinding) -> list[str]:
    mark = "FAIL" if f.fails and f.known_leak is None else "note"
    signature = f"  signature {f.signature}" if f.signature is not None else ""
    lines = [
        f"{mark} {KIND_WORDS.get(f.kind, f.kind)}: {_signed(f.growth, True).strip()} {short_name(f.type, NAME_LIMIT)}"
        f" ({human_bytes(f.bytes_before)} → {human_bytes(f.bytes_after)}; {f.objects_before:,} → {f.objects_after:,} objects){signature}",
        f"    {PATH_WORDS.get(f.kind, 'held by')}: {f.path}",
    ]
    if f.known_leak:
        lines.append(f"    known: {f.known_leak}")
    if f.verdict:
        lines.append(f"    verdict: {f.verdict}")
    if f.why is not None:
        lines.append(f"    why: {why_command(f.why)}")
    return lines


HISTORY_BAR = 40  # characters of the widest bar in `heapdb history`


def history_text(answer: SignatureHistory) -> str:
    """A leak signature's history, with a bar of its retained bytes per build."""
    grew = ", ".join(answer.grew) or "none"
    lines = [
        f"signature {answer.signature}: {answer.status}; first seen {answer.first_seen or '-'}, last seen {answer.last_seen or '-'}; grew in {grew}",
        f"{short_name(answer.type, NAME_LIMIT)} held by: {answer.path}",
    ]
    if answer.known_leak:
        lines.append(f"known: {answer.known_leak}")
    widest = max((o.retained_size for o in answer.observations), default=0)
    names = max((len(o.build) for o in answer.observations), default=0)
    for o in answer.observations:
        bar = "█" * round(HISTORY_BAR * o.retained_size / widest) if widest else ""
        lines.append(f"  {o.build:>{names}}  {human_bytes(o.retained_size):>10}  {bar}")
    lines += _page_line("builds", answer.offset, len(answer.observations), answer.builds)
    return "\n".join(lines)


def _page_line(what: str, offset: int, shown: int, total: int) -> list[str]:
    """Which page of ``total`` rows an answer shows, when it does not show them all."""
    if offset == 0 and shown >= total:
        return []
    more = f"; --offset {offset + shown} for the next" if offset + shown < total else ""
    return [
        f"{what} {offset + 1:,}–{offset + shown:,} of {total:,}{more}"
        if shown
        else f"no {what} past {offset:,} of {total:,}"
    ]


def type_history_text(answer: TypeHistory) -> str:
    """One type's totals per loaded build, a bar of its retained size each."""
    lines = [f"{short_name(answer.type, NAME_LIMIT)} in each loaded build ({answer.builds}), oldest first"]
    widest = max((r.retained_size for r in answer.rows), default=0)
    names = max([5, *(len(r.build) for r in answer.rows)])
    lines.append(
        f"  {'build':>{names}}  {'objects':>10}  {'self size':>10}  {'retained':>10}  (p: pruned to summaries)"
    )
    for r in answer.rows:
        bar = "█" * round(HISTORY_BAR * r.retained_size / widest) if widest else ""
        pruned = "p" if r.summary else " "
        lines.append(
            f"  {r.build:>{names}}  {r.objects:>10,}  {human_bytes(r.self_size):>10}  {human_bytes(r.retained_size):>10} {pruned} {bar}"
        )
    if not answer.total:
        lines.append("no loaded build in that range (builds are snapshots loaded with --meta build=N)")
    lines += _page_line("builds", answer.offset, len(answer.rows), answer.total)
    return "\n".join(lines)


def signatures_text(answers: list[SignatureHistory]) -> str:
    """Remembered leak signatures, one line each."""
    lines = [f"{'status':<10} {'first':>8} {'last':>8}  signature             type / path"]
    for h in answers:
        lines.append(
            f"{h.status:<10} {h.first_seen or '-':>8} {h.last_seen or '-':>8}  {h.signature:<20}  {short_name(h.type, NAME_LIMIT)}"
        )
        lines.append(f"    {h.path}")
    if not answers:
        lines.append("no leak signature is remembered (`heapdb gate` records them)")
    return "\n".join(lines)


def gate_runs_text(answer: GateRuns) -> str:
    """Recorded gate runs, newest first, one line each."""
    lines = [f"{'run':>6}  {'recorded (UTC)':<25}  {'verdict':<7}  {'failing':>7}  candidate against baseline"]
    for r in answer.runs:
        lines.append(
            f"{r.id:>6}  {r.recorded_at:<25}  {'passed' if r.passed else 'FAILED':<7}  {r.failing:>7}  {r.candidate} against {r.baseline}"
        )
    if not answer.runs:
        lines.append("no gate run is recorded here (`heapdb gate` records each run)")
    elif answer.offset + len(answer.runs) < answer.total or answer.offset:
        lines.append(f"runs {answer.offset + 1:,}–{answer.offset + len(answer.runs):,} of {answer.total:,}")
    return "\n".join(lines)


def gate_run_text(answer: GateRun) -> str:
    """A recorded gate run: its number and time, then its report as `heapdb gate` printed it."""
    return f"gate run {answer.id}, recorded {answer.recorded_at}\n" + gate_text(answer)


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


def _case_name(f: GateFinding) -> str:
    signature = f" {f.signature}" if f.signature is not None else ""
    return f"{KIND_WORDS.get(f.kind, f.kind)}{signature}: {f.type}"


def junit_xml(report: GateReport) -> str:
    """The report as a JUnit XML document (one ``testsuite``, one ``testcase`` per finding)."""
    cases = [*report.findings, *report.known]
    failures = sum(1 for f in cases if f.fails and f.known_leak is None)
    suites = ET.Element("testsuites", name=SUITE, tests=str(max(len(cases), 1)), failures=str(failures))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=_xml_text(f"{SUITE}: {report.candidate} against {report.baseline}"),
        tests=str(max(len(cases), 1)),
        failures=str(failures),
        errors="0",
        skipped="0",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("baseline", report.baseline),
        ("candidate", report.candidate),
        ("fail_on", ",".join(report.fail_on)),
        ("min_bytes", str(report.min_bytes)),
        ("max_growth", report.max_growth),
        ("passed", str(report.passed).lower()),
    ):
        ET.SubElement(properties, "property", name=name, value=_xml_text(value))
    for f in cases:
        case = ET.SubElement(suite, "testcase", classname=f"heapdb.gate.{f.kind}", name=_xml_text(_case_name(f)))
        details = _xml_text("\n".join(gate_finding_lines(f)))
        if f.fails and f.known_leak is None:
            failure = ET.SubElement(
                case,
                "failure",
                type=f.kind,
                message=_xml_text(
                    f"{KIND_WORDS.get(f.kind, f.kind)}: {f.type} retains {human_bytes(f.bytes_after)} "
                    f"({human_bytes(f.bytes_before)} in {report.baseline})"
                ),
            )
            failure.text = details
        else:
            ET.SubElement(case, "system-out").text = details
    if not cases:
        ET.SubElement(suite, "testcase", classname="heapdb.gate", name="no new leak signatures")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes and HTML escaped, code spans kept apart."""
    text = _xml_text(text).replace("\n", " ").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|").replace("`", "'")


def markdown(report: GateReport) -> str:
    """The report as Markdown, for a CI job summary (``$GITHUB_STEP_SUMMARY``)."""
    icon = "✅" if report.passed else "❌"
    verdict = "passed" if report.passed else "failed"
    lines = [
        f"## {icon} heapdb gate {verdict}: `{_cell(report.candidate)}` against `{_cell(report.baseline)}`",
        "",
        f"Fails on: {', '.join(report.fail_on) or 'nothing'}. New paths count from {human_bytes(report.min_bytes)}; "
        f"growth over {_cell(report.max_growth)} ({human_bytes(report.growth_bytes)}). "
        f"Reachable heap {human_bytes(report.reachable_before)} → {human_bytes(report.reachable_after)}. "
        f"Thresholds: {_cell(report.thresholds_from)}.",
        *(f"\n> {_cell(note)}" for note in report.notes),
        "",
    ]
    cases = [*report.findings, *report.known]
    if cases:
        lines += [
            "| | finding | type | before | after | signature | held by |",
            "|---|---|---|---:|---:|---|---|",
        ]
        for f in cases:
            mark = "❌" if f.fails and f.known_leak is None else "ℹ️"
            kind = KIND_WORDS.get(f.kind, f.kind) + (f" (known: {_cell(f.known_leak)})" if f.known_leak else "")
            kind += f" (verdict: {_cell(f.verdict)})" if f.verdict else ""
            signature = f"`{f.signature}`" if f.signature is not None else ""
            lines.append(
                f"| {mark} | {kind} | {_cell(f.type)} | {human_bytes(f.bytes_before)} | {human_bytes(f.bytes_after)} "
                f"| {signature} | {_cell(f.path)} |"
            )
        whys = [f for f in cases if f.why is not None]
        if whys:
            lines += ["", "Why are they alive:", ""]
            lines += [f"- `{_cell(why_command(f.why))}`" for f in whys if f.why is not None]
    else:
        lines.append("No new leak signature; nothing grew past the threshold.")
    lines += [
        "",
        "<details><summary>Text report</summary>",
        "",
        "```",
        gate_text(report).replace("```", "'''"),
        "```",
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)
