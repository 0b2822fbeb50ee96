"""Java and Android leak status on a real dump: tests/java/LifecycleLeak.java, with stand-ins for
Android's Activity, Fragment, View and Application (tests/java/lifecycle/), run in its own JVM and
dumped with jcmd.

The oracle is what the program made, read back from the dump by brute force: which activities it
destroyed (by the size of the state array each was given), which fragments and views go with them,
which cached views were once attached; each object's first retainer path by a plain breadth-first
search over the references in file order; retained sizes by removing the leaking objects and
walking the heap again. Against that: the leak list of `heapdb analyze --lifecycles` (labels,
reasons, suspects, groups, bytes), the same stored by a load and asked over the CLI, REST and a
page, and the labels `heapdb why` gives a Java path (and does not give anyone else's).
"""

from __future__ import annotations

import json
import shutil
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotComputed, RuleError
from heapdb.loader import analysis, formats
from heapdb.loader.graph import EdgeKind, HeapGraph
from heapdb.loader.inspections import leak_status, lifecycles
from heapdb.loader.inspections.leak_status import LEAKING, NOT_LEAKING, UNKNOWN, Status, label_path
from heapdb.loader.paths import first_paths
from heapdb.loader.rules import compile_rules, load_rules
from heapdb.loader.rules.defaults import default_rules
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import pages
from heapdb.service.app import create_app
from heapdb.service.links import to_json
from heapgen.java import LIFECYCLE_SOURCES, compile_java, dump_program
from tests.support.chromium import ChromiumPage
from tests.support.pages import SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded, load_snapshot

DESTROYED, LIVE, DETACHED = 3, 2, 4  # the program's arguments
GONE_STATE = 5000  # the state array of the activity only a view's context holds


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert all(shutil.which(tool) for tool in ("javac", "java", "jcmd")), "scripts/bootstrap.sh installs a JDK"
    directory = tmp_path_factory.mktemp("lifecycle")
    classes = compile_java(directory / "classes", *LIFECYCLE_SOURCES)
    path = directory / "lifecycle.hprof"
    dump_program(classes, "LifecycleLeak", path, str(DESTROYED), str(LIVE), str(DETACHED))
    return path


@dataclass(frozen=True)
class Made:
    """What the program made, found in the dump by brute force."""

    graph: HeapGraph
    result: analysis.Analysis
    destroyed: list[int]  # the listed destroyed activities (nodes)
    live: list[int]
    gone: int  # the destroyed activity only contextView holds
    fragments: dict[int, int]  # activity -> its fragment
    contents: dict[int, int]  # activity -> its content view
    cached: list[int]  # VIEW_CACHE's views, in list order, after its fillers (the last was never attached)
    context_view: int
    served: int  # the view the input method manager keeps: a known library leak
    manager: int  # that input method manager
    app_class: int  # the class object LifecycleLeak


def field(graph: HeapGraph, node: int, name: str) -> int:
    for e in range(int(graph.edge_start[node]), int(graph.edge_start[node + 1])):
        if graph.edge_kind[e] == EdgeKind.PROPERTY and graph.strings[int(graph.edge_name[e])] == name:
            return int(graph.edge_to[e])
    raise AssertionError(f"no field {name} on {graph.type_name(node)}")


def elements(graph: HeapGraph, array: int) -> list[int]:
    edges = range(int(graph.edge_start[array]), int(graph.edge_start[array + 1]))
    return [int(graph.edge_to[e]) for e in edges if graph.edge_kind[e] == EdgeKind.ELEMENT]


@pytest.fixture(scope="module")
def made(dump: Path) -> Made:
    graph = formats.read_graph(dump)
    result = analysis.analyze(graph)
    values = graph.values
    assert values is not None
    of_type = {
        t: [v for v in range(graph.node_count) if graph.type_name(v) == t] for t in ("LifecycleLeak$MainActivity",)
    }
    # Each activity's state array has 1000 + 100 i elements, i its number; the first DESTROYED were destroyed.
    by_state = {
        int(values.length[field(graph, a, "state") - values.first]): a for a in of_type["LifecycleLeak$MainActivity"]
    }
    numbered = [by_state[1000 + 100 * i] for i in range(DESTROYED + LIVE)]
    app_class = next(
        v
        for v in range(graph.node_count)
        if graph.node_name(v) == "LifecycleLeak" and graph.type_name(v) == "java.lang.Class"
    )
    cache = field(graph, app_class, "VIEW_CACHE")
    context_view = field(graph, app_class, "contextView")
    activities = [*numbered, by_state[GONE_STATE]]
    return Made(
        graph=graph,
        result=result,
        destroyed=numbered[:DESTROYED],
        live=numbered[DESTROYED:],
        gone=by_state[GONE_STATE],
        fragments={a: field(graph, a, "fragment") for a in activities},
        contents={a: field(graph, a, "content") for a in activities},
        cached=[
            v for v in elements(graph, field(graph, cache, "elementData")) if graph.type_name(v) == "android.view.View"
        ],
        context_view=context_view,
        served=field(graph, field(graph, app_class, "INPUT_METHOD_MANAGER"), "mNextServedView"),
        manager=field(graph, app_class, "INPUT_METHOD_MANAGER"),
        app_class=app_class,
    )


def bfs_paths(graph: HeapGraph) -> dict[int, list[int]]:
    """Every reachable node's first path from the root (root first): breadth first, references in
    file order, weak ones left out."""
    parent = {graph.root: -1}
    queue = deque([graph.root])
    while queue:
        v = queue.popleft()
        for e in range(int(graph.edge_start[v]), int(graph.edge_start[v + 1])):
            w = int(graph.edge_to[e])
            if graph.edge_kind[e] != EdgeKind.WEAK and w not in parent:
                parent[w] = v
                queue.append(w)
    found: dict[int, list[int]] = {}

    def path(v: int) -> list[int]:
        if v not in found:
            found[v] = [v] if parent[v] < 0 else [*path(parent[v]), v]
        return found[v]

    return {v: path(v) for v in parent}


def reachable_bytes(graph: HeapGraph, removed: set[int]) -> int:
    seen = {graph.root}
    queue = deque([graph.root])
    while queue:
        v = queue.popleft()
        for e in range(int(graph.edge_start[v]), int(graph.edge_start[v + 1])):
            w = int(graph.edge_to[e])
            if graph.edge_kind[e] != EdgeKind.WEAK and w not in seen and w not in removed:
                seen.add(w)
                queue.append(w)
    return int(graph.self_size[list(seen)].sum())


@pytest.fixture(scope="module")
def answer(made: Made) -> lifecycles.LifecycleLeaks:
    paths = first_paths(made.graph, made.result.retaining, made.result.transient)
    found = lifecycles.lifecycle_leaks(
        made.graph, made.result, paths, source="dump", inspectors=leak_status.default_inspectors()
    )
    assert found is not None
    return found


def test_the_leak_list_is_what_the_program_leaked(made: Made, answer: lifecycles.LifecycleLeaks) -> None:
    g = made.graph
    destroyed = [*made.destroyed, made.gone]
    leaking = {*destroyed, *(made.fragments[a] for a in destroyed), *(made.contents[a] for a in destroyed)}
    leaking |= {*made.cached[:DETACHED], made.context_view, made.served}
    first = bfs_paths(g)
    outer = {v for v in leaking if not any(u in leaking for u in first[v][:-1])}
    assert answer.leaking == len(leaking) and answer.nested == len(leaking) - len(outer)
    # The program's ways of holding: the listeners, the view cache, the context view's field, and
    # (Android's own leak) the input method manager.
    expected_groups = [set(made.destroyed), set(made.cached[:DETACHED]), {made.context_view}, {made.served}]
    assert outer == set().union(*expected_groups)
    by_example = {g.trace[-1].id: g for g in answer.groups}
    assert answer.signatures == len(answer.groups) == 4
    total = reachable_bytes(g, set())
    for members in expected_groups:
        ids = {int(g.ids[v]) for v in members}
        group = next(r for r in answer.groups if r.example_id in ids)
        assert group.objects == len(members) and by_example[group.example_id] is group
        assert group.retained_size == total - reachable_bytes(g, members)
        largest = max(members, key=lambda v: (int(made.result.retained_size[v]), -int(g.ids[v])))
        assert group.example_id == int(g.ids[largest])
        # The trace is the example's first path, the root left out.
        assert [o.id for o in group.trace] == [int(g.ids[v]) for v in first[largest][1:]]
    assert answer.retained_size == total - reachable_bytes(g, outer)
    # The library's leak is listed apart, after the app's own, with the reference it matched.
    library = answer.groups[-1]
    assert library.example_id == int(g.ids[made.served])
    assert library.library_reference == "android.view.inputmethod.InputMethodManager.mNextServedView"
    assert library.library_leak.startswith("InputMethodManager keeps the view")
    assert all(not r.library_leak for r in answer.groups[:-1])


def test_labels_reasons_and_suspects_follow_shark(made: Made, answer: lifecycles.LifecycleLeaks) -> None:
    g = made.graph
    app_class_id = int(g.ids[made.app_class])
    for group in answer.groups[:-1]:  # the app's own leaks; the library's is below
        trace = group.trace
        assert trace[0].status == "" and trace[0].name.startswith("(")  # the root group: no label
        at = next(i for i, o in enumerate(trace) if o.id == app_class_id)
        # Everything up to the program's class is in use; the class itself is never leaking.
        assert all(o.status == NOT_LEAKING for o in trace[1 : at + 1])
        assert trace[at].reason == "a class object lives as long as its class loader"
        assert all(o.reason.startswith("LifecycleLeak↓ is not leaking") for o in trace[1:at])
        # Between the class and the leaking object nothing is known; the last one is leaking.
        assert all(o.status == UNKNOWN and o.reason == "" for o in trace[at + 1 : -1])
        assert trace[-1].status == LEAKING
        # The suspects: from the class's static field to the leaking object, and nothing else.
        assert [i for i, o in enumerate(trace) if o.suspect] == list(range(at, len(trace) - 1))
        hops = [(trace[i].name or trace[i].type, trace[i + 1].reference) for i in range(at, len(trace) - 1)]
        assert group.suspects == lifecycles.suspect_text(hops)
        assert group.signature == lifecycles.suspect_signature(hops)
    reasons = {g.types: g.reason for g in answer.groups}
    assert reasons[("LifecycleLeak$MainActivity",)] == "Activity#mDestroyed is true"
    assert reasons[("android.view.View",)] in (
        "the view was attached to a window and is detached now (View#mAttachInfo is null)",
        "View#mContext is an Activity whose mDestroyed is true and the view was attached to a window and is "
        "detached now (View#mAttachInfo is null)",
    )
    listeners = next(g for g in answer.groups if g.types == ("LifecycleLeak$MainActivity",))
    assert listeners.suspects.startswith("LifecycleLeak.LISTENERS → java.util.ArrayList.elementData → ")
    assert listeners.suspects.endswith(" → LifecycleLeak$MainActivity$1.this$0")
    assert "java.lang.Object[][" in listeners.suspects  # an element, by its index
    # The input method manager is a singleton in use: the one suspect is its field.
    trace = answer.groups[-1].trace
    assert [o.id for o in trace[-3:]] == [int(g.ids[v]) for v in (made.app_class, made.manager, made.served)]
    assert [o.status for o in trace[-3:]] == [NOT_LEAKING, NOT_LEAKING, LEAKING]
    assert trace[-3].reason == "InputMethodManager↓ is not leaking and a class object lives as long as its class loader"
    assert trace[-2].reason == "there is one InputMethodManager for the life of the process"
    assert [i for i, o in enumerate(trace) if o.suspect] == [len(trace) - 2]
    assert answer.groups[-1].suspects == "android.view.inputmethod.InputMethodManager.mNextServedView"


def test_each_object_gets_its_own_status(made: Made) -> None:
    """Status object by object, before any path: what the program set on each."""
    inspectors = leak_status.default_inspectors()
    evaluation = leak_status.Evaluation(inspectors, lifecycles.GraphFacts(made.graph, inspectors.names))
    status = evaluation.status
    for a in [*made.destroyed, made.gone]:
        assert status(a) == Status(LEAKING, "Activity#mDestroyed is true", ("Activity#mFinished is true",))
        assert status(made.fragments[a]).status == LEAKING
        assert status(made.contents[a]).reason == "View#mContext is an Activity whose mDestroyed is true"
    for a in made.live:
        assert status(a) == Status(NOT_LEAKING, "Activity#mDestroyed is false")
        assert status(made.fragments[a]) == Status(NOT_LEAKING, "Fragment#mFragmentManager is not null")
        # Attached, and its context is a live activity.
        assert status(made.contents[a]).reason == "the view is attached to a window (View#mAttachInfo is not null)"
    assert [status(v).status for v in made.cached] == [LEAKING] * DETACHED + [UNKNOWN]  # the last never attached
    app = field(made.graph, made.live[0], "mApplication")
    assert status(app) == Status(NOT_LEAKING, "there is one Application for the life of the process")
    # A running thread is in use: the main thread sleeps in the dump.
    threads = [v for v in range(made.graph.node_count) if made.graph.type_name(v) == "java.lang.Thread"]
    assert threads and any(status(t).reason.startswith("the thread is running") for t in threads)


def test_propagation_and_conflicts_as_shark_resolves_them() -> None:
    n, y, u = Status(NOT_LEAKING, "in use"), Status(LEAKING, "gone"), Status(UNKNOWN, "")
    labels = label_path([None, u, n, u, u, y, u, y, u], list("rabcdefgh"))
    assert [o.status for o in labels.objects] == [
        "",
        NOT_LEAKING,
        NOT_LEAKING,
        UNKNOWN,
        UNKNOWN,
        LEAKING,
        LEAKING,
        LEAKING,
        LEAKING,
    ]
    assert labels.objects[1].reason == "b↓ is not leaking"
    assert labels.objects[6].reason == "e↑ is leaking" and labels.objects[7].reason == "e↑ is leaking and gone"
    assert labels.suspects == (2, 3, 4)
    # A not-leaking object after a leaking one resets the leaking side; a conflict says so.
    labels = label_path([y, n, u], list("abc"), leak_trace=True)
    assert [o.status for o in labels.objects] == [NOT_LEAKING, NOT_LEAKING, LEAKING]
    assert labels.objects[0].reason == "b↓ is not leaking. Conflicts with gone"
    assert labels.objects[2].reason == "this is the leaking object" and labels.suspects == (1,)
    # Nothing leaking on a why-alive path: no suspects.
    assert label_path([None, n, u], list("rab")).suspects == ()
    both = leak_status.resolve(["gone"], ["in use"], [], leaking_wins=False)
    assert both == Status(NOT_LEAKING, "in use. Conflicts with gone")
    assert leak_status.resolve(["gone"], ["in use"], [], leaking_wins=True).reason == "gone. Conflicts with in use"


def teams(path: Path) -> leak_status.Inspectors:
    """The lifecycle rules of a team's rule file, followed by the Java defaults, as a load takes them."""
    return leak_status.Inspectors.of(load_rules(path).followed_by(default_rules("java")))


def test_a_teams_rules_and_bad_ones(made: Made, tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text(
        'version = 1\n[[lifecycle]]\nclass = "LifecycleLeak$MainActivity$1"\nstatus = "leaking"\n'
        'when = { "this$0" = { instance_of = "android.app.Activity" }, "this$0.mDestroyed" = true }\n'
    )
    inspectors = teams(team)
    evaluation = leak_status.Evaluation(inspectors, lifecycles.GraphFacts(made.graph, inspectors.names))
    g = made.graph
    holders = [v for v in range(g.node_count) if g.type_name(v) == "LifecycleLeak$MainActivity$1"]
    found = {field(g, v, "this$0"): evaluation.status(v).status for v in holders}
    assert found == {**dict.fromkeys(made.destroyed, LEAKING), **dict.fromkeys(made.live, UNKNOWN)}
    assert evaluation.status(holders[0]).reason.startswith(
        "LifecycleLeak$MainActivity$1#this$0 is an instance of android.app.Activity and"
    )
    # The team's rules come first, heapdb's own follow them.
    assert inspectors.rules[0].cls == "LifecycleLeak$MainActivity$1"
    assert inspectors.rules[1:] == leak_status.default_inspectors().rules
    for bad, says in (
        ("version = 2", ":1: unknown rule-file version 2 .this heapdb reads version 1"),
        ('version = 1\n[[lifecycle]]\nclass = "A"\nstatus = "dead"', ":4: lifecycle: status: expected one of"),
        (
            'version = 1\n[[lifecycle]]\nclass = "A"\nstatus = "leaking"\nwhen = { f = "maybe" }',
            ":5: lifecycle: when: f: expected true, false.* got a string 'maybe'",
        ),
        (
            'version = 1\n[[lifecycle]]\nclass = "A"\nstatus = "leaking"\nwhen = { f = { above = true } }',
            ":5: lifecycle: when: f: above takes a number",
        ),
        ("version = 1\n[[oops]]", ":2: unknown rule kind 'oops'"),
        ('version = 1\n[[lifecycle]]\nstatus = "leaking"', ":2: lifecycle: missing `class"),
        ('version = 1\n[[library_leak]]\nclass = "A"\nfield = "f"', ":2: library_leak: .* is a \\[\\[known_leak\\]\\]"),
        ("version = [", "team.toml: not valid TOML"),
    ):
        team.write_text(bad)
        with pytest.raises(RuleError, match=says):
            teams(team)


def test_known_leaks_match_through_subclasses(made: Made, tmp_path: Path) -> None:
    """The Java default rules' known leaks mark what only Android's references keep (here the view
    the input method manager serves), and `instance_of` selects a class's subclasses' instances."""
    compiled = compile_rules(default_rules("java"), made.graph)
    assert compiled.known_leak is not None
    assert np.flatnonzero(compiled.known_leak >= 0).tolist() == [made.served]
    assert compiled.known_leaks[int(compiled.known_leak[made.served])].reason.startswith("InputMethodManager keeps")
    team = tmp_path / "team.toml"
    team.write_text('version = 1\n[[verdict]]\nnote = "an activity"\nobject.instance_of = "android.app.Activity"\n')
    verdict = compile_rules(load_rules(team), made.graph).verdict
    assert verdict is not None
    assert set(np.flatnonzero(verdict >= 0).tolist()) == {*made.destroyed, *made.live, made.gone}


@pytest.fixture(scope="module")
def loaded(database: Database, dump: Path) -> Loaded:
    return load_snapshot(database, dump, "lifecycle")


def test_stored_answers_as_the_file_does_everywhere(database: Database, loaded: Loaded, made: Made) -> None:
    paths = first_paths(loaded.graph, loaded.result.retaining, loaded.result.transient)
    expected = lifecycles.lifecycle_leaks(loaded.graph, loaded.result, paths, source=loaded.tag, limit=2)
    answer = Questions(database).lifecycles(loaded.tag, params.Lifecycles(limit=2))
    assert answer == expected and len(answer.groups) == 2 and answer.signatures == 4
    as_json = CliRunner().invoke(main, ["lifecycles", loaded.tag, "--limit", "2", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == to_json(answer)
    as_text = CliRunner().invoke(main, ["lifecycles", loaded.tag, "--limit", "2"])
    assert as_text.stdout.strip() == lifecycles.lifecycle_leaks_text(answer) and "~~~" in as_text.stdout
    client = TestClient(create_app(token=""))
    rest = client.get(f"/api/snapshots/{loaded.tag}/lifecycles", params={"limit": 2})
    assert rest.status_code == 200 and rest.json() == to_json(answer)
    assert (
        client.get(f"/api/snapshots/{loaded.tag}/lifecycles", params={"limit": lifecycles.KEPT + 1}).status_code == 422
    )
    page = client.get(f"/ask/lifecycles?tag={loaded.tag}&limit=2")
    assert page.status_code == 200 and "LifecycleLeak.LISTENERS" in page.text
    twin = client.get(f"/ask/lifecycles.json?tag={loaded.tag}&limit=2")
    assert twin.status_code == 200 and "LifecycleLeak.LISTENERS" in twin.text
    # The snapshot's page shows them first, with the other waste.
    snapshot_page = client.get(f"/snapshots/{loaded.tag}")
    assert snapshot_page.status_code == 200 and 'id="lifecycles-summary"' in snapshot_page.text
    assert "LifecycleLeak.LISTENERS" in snapshot_page.text


def answer_library_reason(answer: lifecycles.LifecycleLeaks) -> str:
    return next(g.library_leak for g in answer.groups if g.library_leak)


def test_why_labels_a_java_path_and_no_one_elses(
    database: Database, loaded: Loaded, made: Made, leak_loaded: Loaded
) -> None:
    questions = Questions(database)
    full = lifecycles.lifecycle_leaks(
        loaded.graph,
        loaded.result,
        first_paths(loaded.graph, loaded.result.retaining, loaded.result.transient),
        source="",
    )
    assert full is not None
    for group in full.groups:  # the leaking example's path: labelled as its trace is
        why = questions.why_alive(loaded.tag, group.example_id)
        assert why.leak_status is not None and len(why.leak_status) == 1
        labels, path = why.leak_status[0], why.paths[0]
        assert [o.id for o in path.objects[1:]] == [o.id for o in group.trace]
        assert [o.status for o in labels.objects[1:]] == [o.status for o in group.trace]
        assert [o.reason for o in labels.objects[1:]] == [o.reason for o in group.trace]
        assert [i - 1 for i in labels.suspects] == [i for i, o in enumerate(group.trace) if o.suspect]
    library = questions.why_alive(loaded.tag, int(made.graph.ids[made.served])).leak_status
    assert library is not None and library[0].objects[-2].notes == (
        "library leak: android.view.inputmethod.InputMethodManager.mNextServedView: " + answer_library_reason(full),
    )
    live = int(made.graph.ids[made.live[0]])  # ids are the dump's own: the same graph read twice
    why = questions.why_alive(loaded.tag, live)
    assert why.leak_status is not None
    labels = why.leak_status[0]
    assert labels.objects[-1].status == NOT_LEAKING and labels.objects[-1].reason == "Activity#mDestroyed is false"
    assert all(o.status in ("", NOT_LEAKING) for o in labels.objects) and labels.suspects == ()
    text = CliRunner().invoke(main, ["why", loaded.tag, str(live)])
    assert "NOT_LEAKING: Activity#mDestroyed is false" in text.stdout
    as_json = json.loads(CliRunner().invoke(main, ["why", loaded.tag, str(live), "--json"]).stdout)
    assert as_json["leak_status"][0]["objects"][-1]["status"] == NOT_LEAKING
    # A V8 snapshot's why is as it was: no labels, no marks; its leak list is not computed.
    other = questions.why_alive(leak_loaded.tag, int(leak_loaded.graph.ids[leak_loaded.result.idom.size - 1]))
    assert other.leak_status is None
    with pytest.raises(NotComputed, match="show no Java classes"):
        questions.lifecycles(leak_loaded.tag)


def test_a_person_sees_the_destroyed_activities_first_and_asks_why_in_chromium(
    database: Database, loaded: Loaded
) -> None:
    answer = Questions(database).lifecycles(loaded.tag, params.Lifecycles(limit=pages.WASTE_ROWS))
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=60) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + pages.page_path(pages.SNAPSHOT, tag=loaded.tag))
        summary = browser.evaluate("document.querySelector('#lifecycles-summary').innerText")
        assert f"{answer.leaking:,} Java objects" in summary and f"held {answer.signatures:,} ways" in summary
        rows = browser.evaluate(
            "[...document.querySelectorAll('#lifecycles tbody tr')].map(tr => [...tr.cells].map(c => c.innerText))"
        )
        assert [r[1] for r in rows] == [f"{g.objects:,}" for g in answer.groups]
        assert any("LifecycleLeak.LISTENERS" in r[3] for r in rows)
        browser.screenshot(SCREENSHOTS / "snapshot-lifecycles.png")
        example = answer.groups[0].example_id
        reached = browser.follow(f'#lifecycles tbody tr:first-child a[href$="/objects/{example}"]')
        assert reached == base + pages.object_page(loaded.tag, example)
        # The object page's path carries the same labels: the example itself is LEAKING, with why.
        statuses = browser.evaluate("[...document.querySelectorAll('ol.path .leak-status')].map(e => e.innerText)")
        assert statuses[-1] == "LEAKING" and "NOT_LEAKING" in statuses
        assert browser.evaluate("document.querySelectorAll('ol.path .ref.suspect').length") >= 1
        browser.screenshot(SCREENSHOTS / "object-lifecycle-labels.png")
        browser.goto(base + f"/ask/why?tag={loaded.tag}&object_id={example}")
        text = browser.evaluate("document.querySelector('main').innerText")
        assert "LEAKING" in text and "~~~" in text  # the labels and the suspect references, as the CLI prints them
        browser.screenshot(SCREENSHOTS / "why-lifecycle-labels.png")
        assert browser.problems == [], browser.problems
