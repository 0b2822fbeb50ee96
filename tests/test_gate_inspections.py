"""The CI gate's inspection checks (heapdb.queries.gate_inspections): the rule on made-up answers,
then real builds through `heapdb gate` (a React app before and after its panels leak, a page with
detached DOM, a Luau dump without a DOM)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader.inspections.dom import DetachedDom, DetachedGroup
from heapdb.loader.inspections.react import UnmountedComponent, UnmountedFibers
from heapdb.loader.inspections.strings import DuplicateString, DuplicateStrings
from heapdb.queries.gate_inspections import findings
from tests.support.chromium import REACT_PANELS
from tests.support.snapshots import LUAU_FIXTURES, Loaded, load_snapshot

KIB = 1024
FLOOR, NOISE, GROWTH = 256 * KIB, 32 * KIB, 100 * KIB


def strings_with(*rows: tuple[str, int]) -> DuplicateStrings:
    return DuplicateStrings(
        source="s",
        strings=0,
        string_bytes=0,
        duplicated=0,
        wasted=0,
        values=len(rows),
        sort="wasted",
        rows=tuple(
            DuplicateString(
                key=key,
                value=f"value of {key}",
                length=10,
                count=3,
                retained_size=2 * wasted,
                wasted=wasted,
                example_id=i,
                owners=(),
            )
            for i, (key, wasted) in enumerate(rows)
        ),
    )


def dom_with(*rows: tuple[int, int]) -> DetachedDom:
    groups = tuple(
        DetachedGroup(
            signature=sig,
            path=f"(root) / holder{sig} → Detached <div>",
            type="Detached <div>",
            trees=1,
            objects=5,
            attached=0,
            retained_size=size,
            example_id=sig,
        )
        for sig, size in rows
    )
    return DetachedDom(
        source="d", objects=0, self_size=0, retained_size=0, trees=0, paths=len(groups), groups=groups, largest=()
    )


def react_with(*rows: tuple[str, int]) -> UnmountedFibers:
    return UnmountedFibers(
        source="r",
        fibers=0,
        self_size=0,
        retained_size=0,
        mounted=0,
        components=len(rows),
        rows=tuple(UnmountedComponent(component=c, fibers=1, retained_size=b, example_id=7, path="p") for c, b in rows),
        largest=(),
    )


def found(check: str, before: object, after: object) -> dict[object, tuple[int, int]]:
    result = findings(check, before, after, min_bytes=FLOOR, noise=NOISE, growth_bytes=GROWTH, tag="cand")
    assert all(f.why is not None and f.why.tag == "cand" for f in result)
    return {f.path: (f.bytes_before, f.bytes_after) for f in result}


def test_a_new_or_grown_content_fails_and_noise_does_not() -> None:
    before = strings_with(("old", 300 * KIB), ("small", NOISE - 1), ("steady", 300 * KIB))
    after = strings_with(
        ("old", 300 * KIB + GROWTH + 1),  # grew past the threshold
        ("small", FLOOR),  # was below the noise: new now it reaches the floor
        ("steady", 300 * KIB + GROWTH),  # grew by exactly the threshold: not past it
        ("fresh", FLOOR - 1),  # new but under the floor
        ("big", 2 * FLOOR),  # new
    )
    assert found("duplicate-strings", before, after) == {
        "value of big": (0, 2 * FLOOR),
        "value of old": (300 * KIB, 300 * KIB + GROWTH + 1),
        "value of small": (NOISE - 1, FLOOR),
    }


def test_detached_dom_is_matched_by_path_signature() -> None:
    before, after = dom_with((1, FLOOR)), dom_with((1, FLOOR + GROWTH), (2, FLOOR))
    result = findings("detached-dom", before, after, min_bytes=FLOOR, noise=NOISE, growth_bytes=GROWTH, tag="c")
    assert [(f.signature, f.kind, f.bytes_before) for f in result] == [(2, "detached-dom", 0)]
    assert result[0].hops == ["(root)", "holder2 → Detached <div>"]


def test_a_new_unmounted_component_fails_whatever_its_bytes() -> None:
    before, after = react_with(("Old", 100)), react_with(("Old", 200), ("Leaky", 300))
    assert found("unmounted-components", before, after) == {"Leaky": (0, 300)}


@pytest.fixture(scope="module")
def builds(database: Database, react_loaded: dict[str, Loaded], dom_page_loaded: Loaded) -> dict[str, Loaded]:
    """The React app and the page as loaded for every module that reads them, and a Luau build
    (the gate records nothing here: ``--no-record``)."""
    luau = load_snapshot(database, LUAU_FIXTURES / "luau-3-final.json", "gate-luau")
    return {**react_loaded, "page": dom_page_loaded, "luau": luau}


def gate(baseline: str, candidate: str, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        main, ["gate", "--baseline", baseline, "--candidate", candidate, "--no-record", *args, "--json"]
    )
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.stdout)


def test_the_gate_fails_on_a_component_leak_only_when_asked(builds: dict[str, Loaded]) -> None:
    mounted, unmounted = builds["mounted"].tag, builds["unmounted"].tag
    code, report = gate(mounted, unmounted)
    assert code == 0 and report["passed"]  # off by default: the verdict stays what it was
    code, report = gate(mounted, unmounted, "--fail-on", "unmounted-components")
    assert code == 1 and not report["passed"]
    leaky = [f for f in report["findings"] if f["path"] == "LeakyPanel"]
    assert leaky and leaky[0]["kind"] == "unmounted-component" and leaky[0]["fails"]
    assert leaky[0]["objects_before"] == 0 and leaky[0]["objects_after"] == REACT_PANELS
    text = CliRunner().invoke(
        main,
        ["gate", "--baseline", mounted, "--candidate", unmounted, "--no-record", "--fail-on", "unmounted-components"],
    )
    assert "FAIL unmounted component" in text.stdout and "LeakyPanel" in text.stdout


def test_the_gate_fails_on_new_detached_dom_and_notes_a_build_without_dom(builds: dict[str, Loaded]) -> None:
    code, report = gate(builds["mounted"].tag, builds["page"].tag, "--fail-on", "detached-dom", "--min-bytes", "1024")
    assert code == 1
    (panels,) = [f for f in report["findings"] if f["kind"] == "detached-dom" and "closedPanels" in f["path"]]
    assert panels["fails"] and panels["signature"] is not None and panels["bytes_before"] == 0
    assert all(not f["fails"] for f in report["findings"] if f["kind"] != "detached-dom")  # not asked for
    code, report = gate(builds["luau"].tag, builds["page"].tag, "--fail-on", "detached-dom")
    assert code == 0 and any("detached-dom not checked: luau snapshots hold no DOM" in n for n in report["notes"])
