"""The CI gate's inspection checks (heapdb.queries.gate_inspections): the rule on made-up answers,
then on the real answers of two builds of a Node service (tests/js/builds.js, before and after its
audit trail leaks: duplicate objects, collection fill), of two runs of a Java program with
Android-like lifecycle leaks, of two settings of tests/js/held.js (more listeners, a global grown and
one added: held, global variables) and of the React app with its panels closed and shown (memory by
component), then real builds through `heapdb gate` and `heapdb diff --by inspection` (the React app
before and after its panels leak, a page with detached DOM, a Luau dump without a DOM).

Why this module is long: each of the nine checks needs its rule shown on answers of two real
snapshots, and the snapshots' fixtures (node programs at two settings, a Java program run twice,
the React app) are shared between the checks that read the same inspection; split, each part
would build its own."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.loader import analysis, formats
from heapdb.loader.inspections import fill, held, lifecycles, objects, react_hooks
from heapdb.loader.inspections.dom import DetachedDom, DetachedGroup
from heapdb.loader.inspections.react import UnmountedComponent, UnmountedFibers
from heapdb.loader.inspections.strings import DuplicateString, DuplicateStrings
from heapdb.loader.paths import first_paths
from heapdb.queries.gate import _observed_in
from heapdb.queries.gate_inspections import findings, rows
from heapdb.service import compare_pages
from heapdb.service.app import create_app
from heapgen.java import LIFECYCLE_SOURCES, compile_java, dump_program
from tests.support.chromium import REACT_PANELS, REACT_ROWS
from tests.support.snapshots import LUAU_FIXTURES, Loaded, load_snapshot
from tests.support.v8 import JS_DIR

KIB, MIB = 1024, 1024 * 1024
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


def held_with(**groups: tuple[tuple[int, int], ...]) -> held.Held:
    """An answer of the held inspection with ``(signature, bytes)`` groups per kind of holder."""

    def by(rows: tuple[tuple[int, int], ...]) -> held.HeldBy:
        made = tuple(held.HeldGroup(sig, f"(root) / holder{sig}", "Object", 1, 1, size, sig) for sig, size in rows)
        return held.HeldBy(len(made), len(made), 0, sum(g.retained_size for g in made), len(made), made)

    kinds = {c: by(groups.get(c, ())) for c in held.CATEGORIES}
    return held.Held("h", kinds["listeners"], kinds["console"], kinds["closures"], 0, 0, ())


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


def test_one_path_held_by_two_kinds_of_holder_is_two_rows() -> None:
    # An object two listeners' closures share is held by listeners alone and by closures alone, by
    # one path: a row for each kind, each with its own signature (neither the path's).
    before, after = held_with(), held_with(listeners=((5, FLOOR),), closures=((5, FLOOR),))
    result = findings("held", before, after, min_bytes=FLOOR, noise=NOISE, growth_bytes=GROWTH, tag="c")
    assert sorted(f.path for f in result) == ["[closures] (root) / holder5", "[event listeners] (root) / holder5"]
    assert len({f.signature for f in result}) == 2 and 5 not in {f.signature for f in result}
    assert all(f.hops == ["(root)", "holder5"] for f in result)
    # Found by the closures only: the listeners' row stays where it was.
    grown = held_with(listeners=((5, FLOOR),), closures=((5, FLOOR + GROWTH + 1),))
    assert [
        f.path for f in findings("held", after, grown, min_bytes=FLOOR, noise=NOISE, growth_bytes=GROWTH, tag="c")
    ] == ["[closures] (root) / holder5"]


# --- real answers of two builds, in process --------------------------------------------------------

REQUESTS, USERS = 3000, 97  # builds.js: requests handled, and the users their sessions name (id % 97)
CLEAN, LEAKING = 2, 3  # builds.js's last build without the audit trail's leak, and its first with it


def inspected(path: Path) -> dict[str, Any]:
    """The stored answers of the inspections the new checks read, as a load computes them."""
    graph = formats.read_graph(path)
    result = analysis.analyze(graph)
    paths = first_paths(graph, result.retaining, result.transient)
    return {
        "duplicate-objects": objects.stored_objects(graph, result),
        "collection-fill": fill.collection_fill(graph, result, paths, source=path.name),
        "lifecycle-leaks": lifecycles.lifecycle_leaks(graph, result, paths, source=path.name),
    }


@pytest.fixture(scope="module")
def node_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    out = tmp_path_factory.mktemp("gate-builds")
    answers = {}
    for build in (CLEAN, LEAKING):
        path = out / f"build-{build}.heapsnapshot"
        node = ["node", "--expose-gc", str(JS_DIR / "builds.js"), str(build), str(path)]
        subprocess.run(node, check=True, capture_output=True)
        answers[build] = inspected(path)
    return answers


def test_new_groups_of_duplicate_objects_fail_and_unchanged_ones_do_not(node_builds: dict) -> None:
    before, after = node_builds[CLEAN]["duplicate-objects"], node_builds[LEAKING]["duplicate-objects"]
    floor = 2 * KIB
    result = findings("duplicate-objects", before, after, min_bytes=floor, noise=floor // 8, growth_bytes=KIB, tag="c")
    # The audit trail keeps every session: those of one user are one content by memlab's shallow rule
    # (which compares the user, not the numbers), one group per user; the clean build keeps 50.
    copies = {f"Session {{user: 'user-{u}'}}": len(range(u, REQUESTS, USERS)) for u in range(USERS)}
    assert {f.path: f.objects_after for f in result} == copies
    assert all(f.kind == "duplicate-object" and f.bytes_before == 0 and f.bytes_after >= floor for f in result)
    assert all(f.signature is not None and f.why is not None for f in result)
    # What both builds hold alike (the module objects' empty {}) is no finding, however large.
    assert any(r.value == "{}" and r.wasted > floor for r in after.rows)
    # Above the largest group's waste, nothing is new.
    top = max(f.bytes_after for f in result)
    assert not findings("duplicate-objects", before, after, min_bytes=top + 1, noise=0, growth_bytes=top, tag="c")


def v8_capacity(pushes: int) -> int:
    """An Array's capacity after ``pushes`` pushes from empty, by V8's growth rule
    (JSObject::NewElementsCapacity: the new length, half of it again, and 16)."""
    capacity = 0
    for length in range(1, pushes + 1):
        if length > capacity:
            capacity = length + (length >> 1) + 16
    return capacity


def test_a_collection_types_unused_capacity_that_grew_fails(node_builds: dict) -> None:
    before, after = node_builds[CLEAN]["collection-fill"], node_builds[LEAKING]["collection-fill"]
    result = findings("collection-fill", before, after, min_bytes=MIB, noise=KIB, growth_bytes=KIB, tag="c")
    # Only Arrays changed: the audit trail, pushed once per request, has the room V8 left it.
    ((array,),) = [result]
    assert (array.kind, array.path, array.type) == ("collection-fill", "Array", "Array")
    assert array.growth == (v8_capacity(REQUESTS) - REQUESTS) * after.slot_size
    assert array.why is not None and array.why.id == next(r.id for r in after.rows if "auditTrail" in r.path)
    # Past the growth threshold only: with a threshold of the growth itself, nothing.
    assert not findings("collection-fill", before, after, min_bytes=MIB, noise=KIB, growth_bytes=array.growth, tag="c")


DESTROYED_BEFORE, DESTROYED_AFTER, LIVE, DETACHED = 1, 3, 2, 4  # LifecycleLeak's arguments in the two runs


@pytest.fixture(scope="module")
def java_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[lifecycles.LifecycleLeaks, lifecycles.LifecycleLeaks]:
    """LifecycleLeak run twice: one destroyed activity and no detached views cached, then three and four."""
    directory = tmp_path_factory.mktemp("gate-lifecycle")
    classes = compile_java(directory / "classes", *LIFECYCLE_SOURCES)
    runs = []
    for n, (destroyed, detached) in enumerate(((DESTROYED_BEFORE, 0), (DESTROYED_AFTER, DETACHED))):
        path = directory / f"run-{n}.hprof"
        dump_program(classes, "LifecycleLeak", path, str(destroyed), str(LIVE), str(detached))
        runs.append(inspected(path)["lifecycle-leaks"])
    return runs[0], runs[1]


def test_a_new_lifecycle_leak_group_fails_whatever_its_bytes_a_grown_one_past_the_threshold(java_runs) -> None:
    before, after = java_runs
    huge = 1 << 40  # no growth passes: only groups new in the second run are found
    result = findings("lifecycle-leaks", before, after, min_bytes=huge, noise=huge, growth_bytes=huge, tag="c")
    old = {g.signature for g in before.groups}
    assert [f.signature for f in result] == [g.signature for g in after.groups if g.signature not in old]
    (cached,) = result  # the views cached after they were detached: new, though small
    assert cached.objects_before == 0 and cached.objects_after == DETACHED and cached.bytes_after < KIB
    assert cached.path.startswith("LifecycleLeak.VIEW_CACHE") and cached.hops[0] == "LifecycleLeak.VIEW_CACHE"
    # The listeners' group holds each destroyed activity: it grew by the two more.
    grown = findings("lifecycle-leaks", before, after, min_bytes=huge, noise=0, growth_bytes=0, tag="c")
    listeners = next(f for f in grown if "LISTENERS" in f.path)
    assert (listeners.objects_before, listeners.objects_after) == (DESTROYED_BEFORE, DESTROYED_AFTER)
    assert listeners.growth > 0 and listeners.known_leak is None


def test_a_library_leak_is_marked_known(java_runs) -> None:
    before, after = java_runs
    library = [g for g in after.groups if g.library_leak]
    assert library, "the program keeps a view in an input method manager: a known library leak"
    # Against a baseline without it (the first run's app leaks only), it is found, and marked known.
    apps_only = dataclasses.replace(before, groups=tuple(g for g in before.groups if not g.library_leak))
    result = findings("lifecycle-leaks", apps_only, after, min_bytes=1, noise=1, growth_bytes=1 << 40, tag="c")
    known = [f for f in result if f.known_leak is not None]
    assert {f.signature for f in known} == {g.signature for g in library}
    assert all(library[0].library_leak in (f.known_leak or "") for f in known[:1])


# --- what listeners and closures alone hold, the globals, memory by component: two settings each ------

LISTENED_BEFORE, LISTENED_AFTER = 5, 25  # tests/js/held.js: listeners on its bus, in the two runs
# What 20 more listeners hold at least: each its own array of held.js's 200 doubles, 8 bytes each.
MORE_PAYLOADS = (LISTENED_AFTER - LISTENED_BEFORE) * 200 * 8
DEFAULT_GLOBALS = {"heldCacheSmall": 100, "heldCacheMedium": 200, "heldCacheLarge": 300}  # held.js's, by length
RESIZED, ADDED = ("heldCacheLarge", 900), ("heldCacheAdded", 2000)  # the second run's globals


def held_answer(path: Path) -> held.Held:
    graph = formats.read_graph(path)
    result = analysis.analyze(graph)
    answer = held.held(graph, result, first_paths(graph, result.retaining, result.transient), source=path.name)
    assert answer is not None
    return answer


@pytest.fixture(scope="module")
def held_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[held.Held, held.Held]:
    """held.js with 5 listeners and its default globals, then with 25, one global grown and one added."""
    directory = tmp_path_factory.mktemp("gate-held")
    settings = ([str(LISTENED_BEFORE)], [str(LISTENED_AFTER), "=".join(map(str, RESIZED)), "=".join(map(str, ADDED))])
    runs = []
    for n, args in enumerate(settings):
        path = directory / f"held-{n}.heapsnapshot"
        subprocess.run(
            ["node", "--expose-gc", str(JS_DIR / "held.js"), str(path), *args], check=True, capture_output=True
        )
        runs.append(held_answer(path))
    return runs[0], runs[1]


def test_what_more_listeners_hold_is_found_by_kind_of_holder(held_runs) -> None:
    before, after = held_runs
    result = findings("held", before, after, min_bytes=16 * KIB, noise=2 * KIB, growth_bytes=16 * KIB, tag="c")
    # The 20 more listeners are what grew: held by listeners alone (the closures), and by closures
    # alone (their contexts, over the payloads); nothing else the program holds changed that much.
    assert sorted(f.path.split("] ")[0] for f in result) == ["[closures", "[event listeners"]
    assert all("heldBus" in f.path and f.kind == "held" and f.hops[0] == "(root)" for f in result)
    for f in result:
        # 20 listeners more, each with its own closure, context and payload.
        assert f.objects_after - f.objects_before == LISTENED_AFTER - LISTENED_BEFORE
        # Their payloads, and the closures and contexts (V8's sizes vary a little from run to run).
        assert MORE_PAYLOADS <= f.growth < 2 * MORE_PAYLOADS and f.why is not None
    assert len({f.signature for f in result}) == 2
    # Past the growth threshold only.
    most = max(f.growth for f in result)
    assert not findings("held", before, after, min_bytes=16 * KIB, noise=2 * KIB, growth_bytes=most, tag="c")


def test_a_new_global_or_one_grown_past_the_threshold_fails(held_runs) -> None:
    before, after = held_runs
    values = {v.name: v.retained_size for v in after.globals}
    # Each cache is an array of objects of one shape: bytes = base + length × per object, the two
    # caches both runs left alone giving base and per object.
    small, medium = values["heldCacheSmall"], values["heldCacheMedium"]
    per = (medium - small) // (DEFAULT_GLOBALS["heldCacheMedium"] - DEFAULT_GLOBALS["heldCacheSmall"])
    base = small - DEFAULT_GLOBALS["heldCacheSmall"] * per

    def size(length: int) -> int:
        return base + length * per

    floor, growth = 64 * KIB, 16 * KIB
    assert size(ADDED[1]) >= floor > size(RESIZED[1]) - size(DEFAULT_GLOBALS[RESIZED[0]]) > growth
    result = {
        f.path: f
        for f in findings("global-variables", before, after, min_bytes=floor, noise=KIB, growth_bytes=growth, tag="c")
    }
    assert set(result) == {ADDED[0], RESIZED[0], "heldBus"}  # the bus holds its 20 more listeners
    assert (result[ADDED[0]].bytes_before, result[ADDED[0]].bytes_after) == (0, size(ADDED[1]))
    grown = result[RESIZED[0]]
    assert (grown.bytes_before, grown.bytes_after) == (size(DEFAULT_GLOBALS[RESIZED[0]]), size(RESIZED[1]))
    assert all(f.kind == "global-variable" and f.objects_after == 1 and f.why is not None for f in result.values())
    assert MORE_PAYLOADS <= result["heldBus"].growth < 2 * MORE_PAYLOADS
    # A floor above the new cache's bytes: it is not new enough to fail.
    above = findings(
        "global-variables", before, after, min_bytes=size(ADDED[1]) + 1, noise=KIB, growth_bytes=growth, tag="c"
    )
    assert ADDED[0] not in {f.path for f in above} and RESIZED[0] in {f.path for f in above}


@pytest.fixture(scope="module")
def react_runs(react_snapshots: dict[str, Path]) -> dict[str, react_hooks.ComponentHooks]:
    found = {}
    for label, path in react_snapshots.items():
        graph = formats.read_graph(path)
        answer = react_hooks.component_hooks(graph, analysis.analyze(graph), source=label)
        assert answer is not None
        found[label] = answer
    return found


def test_components_a_build_renders_more_of_fail_by_name(react_runs) -> None:
    # The build that shows its panels against the one that closed them: what the panels render is
    # new (react_leak.jsx: a section, a heading and a list of REACT_ROWS rows per leaky panel, a
    # section for the clean one); what stays mounted is no new component.
    before, after = react_runs["unmounted"], react_runs["mounted"]
    huge = 1 << 40
    result = findings("react-hooks", before, after, min_bytes=1, noise=1, growth_bytes=huge, tag="c")
    assert {f.path: f.objects_after for f in result} == {
        "li": REACT_PANELS * REACT_ROWS,
        "Row": REACT_PANELS * REACT_ROWS,
        "section": REACT_PANELS + 1,
        "h2": REACT_PANELS,
        "ul": REACT_PANELS,
    }
    assert all(f.kind == "component-memory" and f.objects_before == 0 and f.type == f.path for f in result)
    sizes = {r.component: r.retained_size for r in after.rows}
    assert all(f.bytes_after == sizes[f.path] for f in result)
    # A host component has no hooks to show, so no example; a function component does.
    assert all(f.why is None for f in result if f.path != "Row")
    # The floor: only components retaining at least it are new.
    floor = sizes["Row"]
    assert {
        f.path for f in findings("react-hooks", before, after, min_bytes=floor, noise=1, growth_bytes=huge, tag="c")
    } == {c for c, b in sizes.items() if b >= floor and c in {f.path for f in result}}
    # A component in both grew: past the threshold it fails, at it not.
    had = {r.component: r.retained_size for r in before.rows}
    catalog = sizes["Catalog"] - had["Catalog"]
    assert catalog > 0 and "Catalog" in {
        f.path
        for f in findings("react-hooks", before, after, min_bytes=huge, noise=1, growth_bytes=catalog - 1, tag="c")
    }
    assert "Catalog" not in {
        f.path for f in findings("react-hooks", before, after, min_bytes=huge, noise=1, growth_bytes=catalog, tag="c")
    }


def test_the_new_checks_rows_are_remembered_by_their_own_signature(held_runs, react_runs) -> None:
    # Each row's signature is the same in both runs (the history looks it up in every build's stored
    # inspection, not in the path totals), and differs between checks.
    for check, (before, after) in (
        ("held", held_runs),
        ("global-variables", held_runs),
        ("react-hooks", (react_runs["unmounted"], react_runs["mounted"])),
    ):
        old, new = rows(check, before), rows(check, after)
        both = set(old) & set(new)
        assert both and all(old[s].key == new[s].key for s in both)
        assert (
            _observed_in(findings(check, before, after, min_bytes=1, noise=1, growth_bytes=0, tag="c")[0].kind) == check
        )
    assert not set(rows("held", held_runs[1])) & set(rows("global-variables", held_runs[1]))


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


def test_memory_by_component_fails_the_gate_and_shows_in_the_diff(builds: dict[str, Loaded]) -> None:
    closed, shown = builds["unmounted"].tag, builds["mounted"].tag
    code, report = gate(closed, shown, "--fail-on", "react-hooks", "--min-bytes", "1000", "--max-growth", "1GB")
    assert code == 1 and not report["passed"]
    failing = {f["path"]: f for f in report["findings"] if f["fails"]}
    assert {f["kind"] for f in failing.values()} == {"component-memory"}
    assert failing["Row"]["objects_before"] == 0 and failing["Row"]["objects_after"] == REACT_PANELS * REACT_ROWS
    text = CliRunner().invoke(
        main,
        [
            "gate",
            "--baseline",
            closed,
            "--candidate",
            shown,
            "--no-record",
            "--fail-on",
            "react-hooks",
            "--min-bytes",
            "1000",
            "--max-growth",
            "1GB",
        ],
    )
    assert "FAIL component memory" in text.stdout and "    component: Row" in text.stdout
    # The diff lists every changed row of the three inspections, by the gate's signatures.
    diff = CliRunner().invoke(main, ["diff", closed, shown, "--by", "inspection", "--limit", "500", "--json"])
    answer = json.loads(diff.stdout)
    changes = {(c["inspection"], c["label"]): c for c in answer["changes"]}
    row = changes["react-hooks", "Row"]
    assert (row["count_before"], row["count_after"], row["signature"]) == (
        0,
        REACT_PANELS * REACT_ROWS,
        failing["Row"]["signature"],
    )
    assert {"held", "global-variables"} <= {c["inspection"] for c in answer["changes"]}
    assert not [n for n in answer["notes"] if n.startswith(("held", "global-variables", "react-hooks"))]
    shown_text = CliRunner().invoke(main, ["diff", closed, shown, "--by", "inspection", "--limit", "500"]).stdout
    assert "react-hooks: Row" in shown_text and "held: [closures] (root)" in shown_text
    page = TestClient(create_app()).get(compare_pages.compare_page(closed, shown, "inspection"))
    assert (
        page.status_code == 200 and "react-hooks" in page.text and "global variables, memory by component" in page.text
    )


def test_a_build_without_listeners_or_react_is_noted_not_failed(builds: dict[str, Loaded]) -> None:
    checks = ("held", "global-variables", "react-hooks")
    code, report = gate(builds["luau"].tag, builds["page"].tag, *(a for c in checks for a in ("--fail-on", c)))
    assert code == 0 and not report["findings"]
    assert {n.split(" not checked: ")[0] for n in report["notes"] if " not checked: " in n} == set(checks)
    assert any("luau snapshots hold no JavaScript listeners or closures" in n for n in report["notes"])
