"""Every question heapdb answers, declared once: the command line, the REST routes, the MCP tools
and the lines of ``heapdb --help`` are generated from :data:`QUESTIONS`.

A :class:`Question` says what a question is called, what it is about (its :class:`Subject`: a
snapshot, an object, two or three snapshots, a series, two builds, a leak signature, a gate run,
nothing), its one-line summary and longer help, the :class:`~heapdb.queries.questions.Questions` method that
answers it, its parameter model (:mod:`heapdb.queries.params`), its text renderer, the drawings it
has and what of a snapshot it reads. The result type is not declared: it is the method's return
annotation (:attr:`Question.result`), so it cannot disagree with what the method returns.

Why the method, model and renderer are named by strings: ``heapdb --help`` lists the questions
from this table, and must stay as quick as a table (no pydantic, numpy or Neo4j driver, which the
parameter models and the questions import; ``tests/test_startup.py`` checks it). The names resolve
on first use, and ``tests/test_registry.py`` resolves every one of them.

Why this module is long: it is the table, one entry of a dozen lines per question, and a question's
help belongs beside its name rather than in a second file.

The front ends: :mod:`heapdb.cli.question_cmd` (commands), :mod:`heapdb.service.question_routes`
(REST, with a response model derived from the result type) and :mod:`heapdb.service.mcp` (tools).
"""

from __future__ import annotations

import functools
import importlib
import typing
from dataclasses import dataclass
from typing import Any, Literal

PartKind = Literal["tag", "object", "tags", "signature", "since", "run"]
Reads = Literal["objects", "references"]


@dataclass(frozen=True)
class Part:
    """One thing a question is about: a positional argument of its method, an argument (or option)
    of its command, a path or query parameter of its route, an argument of its tool."""

    name: str  # the method's and the tool's argument, the command's argument or option
    kind: PartKind  # how each front end types it: a tag, an object id, a list of tags, a signature...
    description: str
    rest: str = ""  # its REST name, when that is not ``name``
    optional: bool = False  # a list of tags a parameter may stand for (growth's --builds): then none is given

    @property
    def rest_name(self) -> str:
        return self.rest or self.name


@dataclass(frozen=True)
class Subject:
    """What a question is about; its kind also says where its REST route hangs (the service's table of
    base paths)."""

    kind: Literal[
        "snapshot", "object", "two snapshots", "three snapshots", "snapshots", "builds", "signature", "gate run", "none"
    ]
    parts: tuple[Part, ...]


def _tag(name: str, description: str) -> Part:
    return Part(name, "tag", description)


TAG = _tag("tag", "The snapshot's tag (`heapdb snapshots` lists them).")
SNAPSHOT = Subject("snapshot", (TAG,))
OBJECT = Subject("object", (TAG, Part("object_id", "object", "The object's id in the snapshot.")))
TWO_SNAPSHOTS = Subject(
    "two snapshots", (_tag("before", "Tag of the earlier snapshot."), _tag("after", "Tag of the later snapshot."))
)
THREE_SNAPSHOTS = Subject(
    "three snapshots",
    (
        _tag("baseline", "Tag of the snapshot before the action."),
        _tag("target", "Tag of the snapshot after the action."),
        _tag("final", "Tag of the snapshot after undoing it."),
    ),
)
SERIES = Subject("snapshots", (Part("tags", "tags", "The snapshots' tags, oldest first (at least three).", "tag"),))
# A series that may be given as a range of loaded builds instead (the question's `builds` parameter).
BUILD_SERIES = Subject(
    "snapshots",
    (Part("tags", "tags", "The snapshots' tags, oldest first (at least three); or none, with builds.", "tag", True),),
)
BUILDS = Subject(
    "builds",
    (
        _tag("baseline", "The tag of the baseline build's loaded snapshot."),
        _tag("candidate", "The tag of the candidate build's loaded snapshot."),
    ),
)
SIGNATURE = Subject("signature", (Part("signature", "signature", "The retainer path's signature.", "sig"),))
SINCE = Subject(
    "none",
    (Part("since", "since", "Only signatures first seen in this build (a build name or tag) or later."),),
)
GATE_RUN = Subject("gate run", (Part("run_id", "run", "The gate run's id (`heapdb gate-runs` lists them).", "id"),))
NOTHING = Subject("none", ())


def _resolve(where: str) -> Any:
    """``"module:attribute"`` imported."""
    module, _, attribute = where.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Question:
    """One question, as every front end offers it."""

    name: str  # the command, the tool, the route's last segment
    subject: Subject
    summary: str  # one line: heapdb --help, the command's help, the route's summary, the tool's first sentence
    ask: str  # the Questions method that answers it
    params: str | None  # its parameter model in heapdb.queries.params (None: it takes none)
    text: str  # its text renderer, "module:function"
    route: str  # the REST path below the subject's base path
    help: str = ""  # the command's further paragraphs, after the summary
    agent: str = ""  # for an agent: how to read the answer and what to ask next (the tool's description)
    lists: tuple[str, ...] = ()  # the answer's lists MCP pages; a list answer is wrapped under the first
    drawings: Literal["graph", "flame", None] = None  # graph: dot and svg; flame: a flame graph (svg)
    reads: tuple[Reads, ...] = ()  # what of a snapshot it reads beyond the stored summaries
    tool: str = ""  # the MCP tool's name, when not ``name``

    @property
    def tool_name(self) -> str:
        return self.tool or self.name

    @property
    def model(self) -> Any:
        """The parameter model class, or None."""
        return None if self.params is None else _resolve(f"heapdb.queries.params:{self.params}")

    @property
    def method(self) -> Any:
        """The unbound :class:`~heapdb.queries.questions.Questions` method."""
        return _method(self.ask)

    @property
    def render_text(self) -> Any:
        return _resolve(self.text)

    @property
    def result(self) -> Any:
        """The answer's type: the method's return annotation."""
        return _return_type(self.ask)

    def answer(self, questions: Any, subject: typing.Sequence[Any], p: Any = None) -> Any:
        """Ask ``questions`` (a :class:`~heapdb.queries.questions.Questions`) this question."""
        return getattr(questions, self.ask)(*subject, *(() if p is None else (p,)))


def _method(name: str) -> Any:
    from heapdb.queries.questions import Questions

    return getattr(Questions, name)


@functools.cache
def _return_type(name: str) -> Any:
    method = _method(name)
    annotation = method.__annotations__["return"]
    # Only the return annotation: the arguments' may name types imported for type checkers only.
    return (
        eval(annotation, vars(importlib.import_module(method.__module__)))
        if isinstance(annotation, str)
        else annotation
    )


QUESTIONS: tuple[Question, ...] = (
    Question(
        "leaks",
        THREE_SNAPSHOTS,
        "Leak candidates, as memlab finds them: what was allocated between BASELINE and TARGET and is still "
        "alive in FINAL (three loaded snapshots of one process), clustered by retainer path.",
        ask="leaks",
        params="Leaks",
        text="heapdb.renderers.text:leaks_text",
        route="/leaks",
        help="By id (the default), object ids must be stable across the three (V8 ids within one process are). "
        "By path, a retainer path is a candidate when it held more objects in TARGET than in BASELINE and "
        "holds at least as many in FINAL as in TARGET; that works for Luau and snap.bin too. Each "
        "cluster's why-alive graph is also served by `heapdb serve` at the cluster's `why` link.",
        agent="Take snapshots before the suspect action, after it, and after undoing it. Each cluster names its "
        "`path` and a sample object in `why`: pass that to the `why` tool next.",
        lists=("clusters", "known"),
        reads=("objects",),
    ),
    Question(
        "why",
        OBJECT,
        "Why is an object alive: the shortest chains of retaining references from the root.",
        ask="why_alive",
        params="Why",
        text="heapdb.renderers.text:why_text",
        route="/why",
        help="Weak references never count. --ignore-* leave out references or objects, as DevTools' \"ignore "
        "this retainer\" does, to see what else holds the object; --ignore takes a rule file's selector "
        "on one line, e.g. --ignore 'to.type = \"system / Context\"' (docs/rules.md). With --k, further "
        "paths that share nothing with the first but its dominators come first.",
        agent="Each path's `objects` run from the root down, `references` between them; it names the structure "
        "that holds a leak. Use `ignore_name`/`ignore_type`/`ignore_id` to look past a holder, `ignore` for "
        "rule selectors such as 'to.type = \"system / Context\"', `k` for more paths (independent ones "
        "first); then `dominators` for what would free it.",
        lists=("paths",),
        drawings="graph",
        reads=("objects", "references"),
    ),
    Question(
        "dominators",
        OBJECT,
        "The chain of immediate dominators from the root down to an object.",
        ask="dominators",
        params=None,
        text="heapdb.renderers.text:dominators_text",
        route="/dominators",
        agent="Each of them, if freed, would free the object too. The last one above the object is what owns it.",
        lists=("chain",),
        drawings="graph",
        reads=("objects",),
    ),
    Question(
        "retains",
        OBJECT,
        "What an object keeps alive: its dominated subtree, largest first.",
        ask="retains",
        params="Retains",
        text="heapdb.renderers.text:retains_text",
        route="/retains",
        agent="Level by level, each object with the id of its `dominator`. `truncated` says whether there is "
        "more than listed.",
        lists=("objects",),
        drawings="graph",
        reads=("objects",),
    ),
    Question(
        "top",
        SNAPSHOT,
        "The objects that retain most (the root and its synthetic root kinds left out).",
        ask="top",
        params="Top",
        text="heapdb.renderers.text:objects_table",
        route="/top",
        agent="A first look at one snapshot (optionally of one `type`); then `why` or `retains` on what stands out.",
        lists=("objects",),
        reads=("objects",),
    ),
    Question(
        "types",
        SNAPSHOT,
        "Objects per type: count, shallow size, retained size.",
        ask="types",
        params="Types",
        text="heapdb.renderers.text:types_table",
        route="/types",
        agent="With the largest object's retained size, sorted by `sort`. Then `top` with `type` or `find` for "
        "that type's objects.",
        lists=("types",),
    ),
    Question(
        "find",
        SNAPSHOT,
        "Objects of a type whose name contains a text, largest retained first.",
        ask="find",
        params="Find",
        text="heapdb.renderers.text:objects_table",
        route="/find",
        agent="How to get an object id for `why`, `retains` or `object` when you know what you are looking for.",
        lists=("objects",),
        reads=("objects",),
    ),
    Question(
        "instances",
        SNAPSHOT,
        "A page of one type's objects, by retained size, self size or distance, filtered by name, "
        "detachedness, bucket or what is new since another snapshot: DevTools' Summary view opened on a type.",
        ask="instances",
        params="Instances",
        text="heapdb.renderers.text:instances_text",
        route="/instances",
        help="`total` counts the objects that pass the filters; --offset pages through them. --since needs ids "
        "that name the same object in both snapshots (V8 snapshots of one process). --path keeps the objects "
        "one retainer path holds (its `signature` in `diff --by path`).",
        agent="How to walk a type's objects after `types`: page with `offset`, then `why` or `references` on one.",
        lists=("objects",),
        reads=("objects",),
    ),
    Question(
        "references",
        OBJECT,
        "One level of an object's retainers tree (what references it) or containment tree (what it "
        "references), weak references marked, a page at a time.",
        ask="references",
        params="References",
        text="heapdb.renderers.text:references_text",
        route="/references",
        help="Retainers come nearest the root first, unreachable holders last; what it references comes "
        "largest retained first. Ask again for a listed object to go a level further.",
        agent="Step through the retainers tree as DevTools' Retainers pane does: each row's object is the next "
        "level's subject. `weak` references never retain; `dropped` ones are kept from retaining by rules.",
        lists=("references",),
        reads=("objects", "references"),
    ),
    Question(
        "search",
        SNAPSHOT,
        "Search one snapshot: types by name (ignoring case), an object by id (123 or @123), strings by "
        "content; the whole text, its start or anywhere in it.",
        ask="search",
        params="Search",
        text="heapdb.renderers.text:search_text",
        route="/search",
        help="Strings are the format's plain strings, whose names are their contents as stored (cut at the "
        "stored name length); concatenations are not searched. Each kind of match is paged by --offset.",
        agent="Find an object to ask `why` about from what you know: a class name, an id, a text it holds.",
        lists=("types", "strings"),
        reads=("objects",),
    ),
    Question(
        "object",
        OBJECT,
        "One object: its details and its incoming and outgoing references.",
        ask="object",
        params="ObjectDetails",
        text="heapdb.renderers.text:object_text",
        route="",
        agent="Who holds it (`incoming`) and what it holds (`outgoing`).",
        lists=("incoming", "outgoing"),
        reads=("objects", "references"),
    ),
    Question(
        "diff",
        TWO_SNAPSHOTS,
        "What grew between two loaded snapshots, BEFORE and AFTER (tags), per type or per retainer path, "
        "object by object, per row of the stored inspections, or along the dominator tree.",
        ask="diff",
        params="Diff",
        text="heapdb.renderers.text:diff_text",
        route="",
        help="--by object needs ids that name the same object in both snapshots (V8 snapshots of one process); "
        "when the formats or the data say they may not, warnings go to stderr and into the answer.",
        agent="Per type or per retainer path need no stable ids; object by object (new / survived / freed) does. "
        "By inspection: duplicated contents, detached DOM, components, collection types, lifecycle leaks, "
        "what listeners, the console and closures alone hold, global variables and memory by component, "
        "as the gate compares them (`inspection` names each row's). "
        "By dominator: the groups of objects below one place of the dominator tree (matched by the types of "
        "their chain of dominators), with where the growth concentrates; pass a row's `key` as `under` to drill. "
        "Largest growth first. Then `why` on a grown type's objects (`find`), or `leaks` with a third snapshot.",
        lists=("changes", "types"),
        drawings="flame",
    ),
    Question(
        "growth",
        BUILD_SERIES,
        "Types or retainer paths whose size grew at every step across three or more loaded snapshots "
        "(TAGS, oldest first, or --builds: every loaded build, or a range of them), with their per-snapshot series.",
        ask="growth",
        params="Growth",
        text="heapdb.renderers.text:growth_text",
        route="/growth",
        help="Reads the totals stored at load only, so it answers at once at any heap size, for pruned snapshots "
        "too; needs no stable ids. --builds all reads every snapshot loaded with --meta build=N, in build order.",
        agent="Steady growth is the signature of a leak. Give `tags`, or `builds` ('all', or FIRST..LAST) "
        "for a history of loaded builds.",
        lists=("rows",),
    ),
    Question(
        "type-history",
        NOTHING,
        "One type's objects, shallow size and retained size in each loaded build (every build, or a range of "
        "them), oldest first, a page of builds at a time.",
        ask="type_history",
        params="TypeHistory",
        text="heapdb.renderers.ci_report:type_history_text",
        route="/type-history",
        help="Builds are the snapshots loaded with --meta build=N, numbered ones by number; pruned ones answer "
        "too (their per-type totals stay). --offset pages through them.",
        agent="Each row is one build (`build`, `tag`) with the type's `objects`, `self_size` and `retained_size` "
        "there (zeros where it had none); `total` builds in the range, page with `offset`. Then `diff` two "
        "builds by type, or `growth` with `builds`.",
        lists=("rows",),
    ),
    Question(
        "unbound",
        SERIES,
        "Collections, objects and shapes that grew at every step across three or more loaded snapshots of one "
        "process (TAGS, oldest first), with their series (memlab's `unbound-collection`, `unbound-object` and "
        "`unbound-shape`).",
        ask="unbound",
        params="Unbound",
        text="heapdb.loader.inspections.unbound:unbound_growth_text",
        route="/unbound",
        help="Follows each object by id (V8 ids of one process): Maps, Sets, WeakMaps and WeakSets by their "
        "table's references, Arrays and plain Objects by their own; objects of kind object, closure or regexp by "
        "retained size; shapes by their objects, counted at load. --rule memlab applies memlab's own rule; "
        "`heapdb analyze FILE --unbound LATER` answers the same from files "
        '(docs/analysis.md, "Unbound growth").',
        agent="Each collection and object row has its `id` (in the last snapshot: pass it to `why`) and its "
        "`series`, one figure per snapshot (-1: absent there); each shape its `counts` and `sizes`. A collection "
        "or object that grew at every step is a leak's usual holder.",
        lists=("collection_rows", "object_rows", "shape_rows"),
        reads=("objects", "references"),
    ),
    Question(
        "suspects",
        SNAPSHOT,
        "Leak suspects in one snapshot, as Eclipse MAT finds them: objects and types retaining a big share "
        "of the heap, and for each object where inside it the memory accumulates.",
        ask="suspects",
        params="Suspects",
        text="heapdb.renderers.text:suspects_text",
        route="/suspects",
        agent="Then `why` on a suspect's accumulation point.",
        lists=("objects", "types"),
        reads=("objects",),
    ),
    Question(
        "lifelines",
        SNAPSHOT,
        "How the objects of a type are held: their first retainer paths merged from the root down, "
        "with how many of them each step leads to (on a file: heapdb analyze FILE --lifelines TYPE).",
        ask="lifelines",
        params="Lifelines",
        text="heapdb.loader.views:lifelines_text",
        route="/lifelines",
        agent="A tree of `steps`, each with how many of the objects pass through it and what they retain: "
        "answers 'what holds my thousands of X' in one call; then `why` on one of them.",
        lists=("steps",),
        reads=("objects",),
    ),
    Question(
        "heapdomstats",
        SNAPSHOT,
        "Per type, what floats up to the root: objects whose immediate dominator is the root or a root "
        "group, which no object below the root owns (on a file: heapdb analyze FILE --heapdomstats).",
        ask="heapdomstats",
        params="HeapDomStats",
        text="heapdb.loader.views:heapdomstats_text",
        route="/heapdomstats",
        agent="Most retained first: where a leak held from a global or a root shows up.",
        lists=("rows",),
        reads=("objects",),
    ),
    Question(
        "strings",
        SNAPSHOT,
        "Duplicate strings: contents held in more than one string object, the most wasteful first, with their "
        "copies, bytes and the types that own them (memlab's `string` analysis, number for number).",
        ask="strings",
        params="Strings",
        text="heapdb.loader.inspections.strings:duplicate_strings_text",
        route="/strings",
        help="Computed at load for V8, Luau and snap.bin snapshots, so it answers at once; `heapdb analyze FILE "
        "--strings` lists the same from a file. A content is compared whole, concatenations included "
        '(docs/analysis.md, "Duplicate strings").',
        agent="`wasted` is what all copies but one retain; each row's `example_id` is one copy (pass it to `why`), "
        "`owners` the types whose objects hold the copies. The totals cover every string of the snapshot.",
        lists=("rows",),
    ),
    Question(
        "dup-objects",
        SNAPSHOT,
        "Duplicate objects: contents held by more than one object, the most wasteful first, with their copies, "
        "bytes and the types that own them (V8: memlab's `object-shallow` analysis, number for number; Java: "
        "primitive arrays with equal elements).",
        ask="dup_objects",
        params="DupObjects",
        text="heapdb.loader.inspections.objects:duplicate_objects_text",
        route="/dup-objects",
        help="Computed at load for V8 snapshots (an object's class and its properties' shallow values: strings "
        "whole, other objects by id) and Java heap dumps (primitive arrays by type and elements), so it answers at "
        "once; `heapdb analyze FILE --dup-objects` lists the same from a file "
        '(docs/analysis.md, "Duplicate objects").',
        agent="Each row is one content: `count` copies of class `type` whose content reads `value`; `wasted` is "
        "what all copies but one retain, `example_id` one copy (pass it to `why`), `owners` the types whose objects "
        "hold the copies. Share one copy, or build it once. The totals cover every object compared.",
        lists=("rows",),
    ),
    Question(
        "dom",
        SNAPSHOT,
        "Detached DOM: the browser's DOM objects no document holds any more, grouped by the path that keeps "
        "them alive, with their trees, objects and bytes (memlab's `detached-DOM` analysis, object for object).",
        ask="dom",
        params="Dom",
        text="heapdb.loader.inspections.dom:detached_dom_text",
        route="/dom",
        help="Computed at load for V8 snapshots (a browser page's DOM; Node marks a few of its own native objects "
        "detached too), so it answers at once; "
        "`heapdb analyze FILE --dom` lists the same from a file. A detached tree is a detached object no other "
        'detached object dominates (docs/analysis.md, "Detached DOM").',
        agent="Each group is one holder path: fix the last holder on `path` and its `trees` are freed "
        "(`retained_size`). `example_id` is the largest tree's root (pass it to `why`); `largest` lists the "
        "largest detached objects as memlab does. The totals cover every detached object of the snapshot.",
        lists=("groups", "largest"),
    ),
    Question(
        "react",
        SNAPSHOT,
        "Unmounted React components: fiber nodes still alive after React unmounted them, by component, with "
        "what holds each (memlab's `unmounted-fiber-node` analysis, corrected for Chromium's root groups).",
        ask="react",
        params="React",
        text="heapdb.loader.inspections.react:unmounted_fibers_text",
        route="/react",
        help="Computed at load for V8 snapshots, so it answers at once; `heapdb analyze FILE --react` lists the "
        "same from a file. A development build keeps React's component names "
        '(docs/analysis.md, "Unmounted React components").',
        agent="Each row is one component: `fibers` unmounted fibers still alive, retaining `retained_size`; "
        "`path` is what holds its largest one (`example_id`, pass it to `why`). `mounted` counts the fibers still "
        "in a mounted tree; `largest` lists the largest unmounted fibers as memlab does.",
        lists=("rows", "largest"),
    ),
    Question(
        "react-hooks",
        SNAPSHOT,
        "Memory by React component: per component its fibers, what they retain, what their props and state "
        "(the hooks) retain, and the hooks of one fiber, each with the bytes it alone retains (memlab's "
        "`react-hooks` analysis, counting every fiber).",
        ask="react_hooks",
        params="ReactHooks",
        text="heapdb.loader.inspections.react_hooks:component_hooks_text",
        route="/react-hooks",
        help="Computed at load for V8 snapshots, so it answers at once; `heapdb analyze FILE --react-hooks` lists "
        "the same from a file. A development build names the hooks (useState, useMemo...) "
        '(docs/analysis.md, "Memory by React component and hook").',
        agent="Each row is one component: `instances` fibers retaining `retained_size`; `state_size` is what their "
        "hook lists retain, `props_size` their props; `hooks` lists one fiber's hooks (`example_id`, pass it to "
        "`why` or `object`), each `size` the bytes that hook alone retains. A large hook is the state to trim.",
        lists=("rows",),
    ),
    Question(
        "stale",
        SNAPSHOT,
        "Collections holding stale objects: Maps, Sets and Arrays that still reference detached DOM or unmounted "
        "React fibers, most stale bytes first (memlab's `collections-with-stale` analysis).",
        ask="stale",
        params="Stale",
        text="heapdb.loader.inspections.collections:stale_collections_text",
        route="/stale",
        help="Computed at load for V8 snapshots, so it answers at once; `heapdb analyze FILE --stale` lists the "
        'same from a file (docs/analysis.md, "Collections holding stale objects").',
        agent="Each row is one collection (`id`, pass it to `why` or `object`): `stale` of its `children` are "
        "detached DOM or unmounted fibers (`stale_ids`, the first ten), retaining `stale_size`; `path` is what "
        "holds the collection. Removing those entries frees them.",
        lists=("rows",),
    ),
    Question(
        "held",
        SNAPSHOT,
        "What event listeners, the console and closures alone keep alive, grouped by the path that reaches them, "
        "and the global variables the program added (Chrome DevTools' filters, memlab's `global-variable` analysis).",
        ask="held",
        params="Held",
        text="heapdb.loader.inspections.held:held_text",
        route="/held",
        help="Computed at load for V8 snapshots, so it answers at once; `heapdb analyze FILE --held` lists the "
        'same from a file (docs/analysis.md, "Held by listeners, the console and closures").',
        agent="`listeners`, `console` and `closures` each say how many `objects` (`self_size` bytes) only those "
        "holders keep alive: dropping them frees exactly these. Each group is a `path` reaching some of them, with "
        "an `example_id` to pass to `why`. `globals` are the global variables the program added, largest retained "
        "first.",
        lists=("globals",),
    ),
    Question(
        "owners",
        SNAPSHOT,
        "Who owns the memory: per npm package and script file (V8), package and class loader (Java), memory "
        "category and script (Luau), namespace (.NET), package and module (Python), package and library (Dart), "
        "each owner's objects, self size and retained size, largest first (the Dart SDK's owners, MAT's "
        "dominator tree by package).",
        ask="owners",
        params="Owners",
        text="heapdb.loader.owners.table:owners_text",
        route="/owners",
        help="Worked out at load, without rules: an object's owner is its program structure's (a closure's "
        "script, a class's package, a Luau category), else its nearest dominator's that has one; what several "
        "owners' objects reach goes to @shared, what none reaches to @unknown. Bucket rules name owners first. "
        "`heapdb analyze FILE --owners` lists the same from a file; `heapdb diff A B --by owner` compares two "
        '(docs/analysis.md, "Who owns the memory").',
        agent="Each level (`level`) lists owners largest first: `objects` and `self_size` (each byte one owner's: "
        "a level's self sizes add up to the heap) and `retained_size` (what its outermost objects keep alive; an "
        "owner's objects may hold another's). `example_id` is the member retaining most: pass it to `why`. "
        "Compare builds with `diff` by owner.",
        lists=("levels",),
    ),
    Question(
        "fill",
        SNAPSHOT,
        "Empty, sparse and low-fill collections: per collection type how many are empty and how full they are "
        "(a histogram of size over capacity), and the collections whose unused capacity takes most bytes, with "
        "what holds them (Eclipse MAT's collection fill ratio, empty collections and array fill ratio).",
        ask="fill",
        params="Fill",
        text="heapdb.loader.inspections.fill:collection_fill_text",
        route="/fill",
        help="Computed at load for Java (hprof: its collections and object arrays) and V8 snapshots (Maps, Sets "
        "and Arrays), so it answers at once; `heapdb analyze FILE --fill` lists the same from a file "
        '(docs/analysis.md, "Empty and low-fill collections").',
        agent="`types`: per type, `count` collections, `empty` holding nothing, `histogram` of fill ratios (0%, then "
        "tenths up to 100%), `wasted` bytes of unused capacity. Each row is one collection (`id`, pass it to `why` "
        "or `object`) holding `size` of the `capacity` it has room for; `path` is what holds it. Size it to what "
        "it holds, or create it on first use.",
        lists=("types", "rows"),
    ),
    Question(
        "lifecycles",
        SNAPSHOT,
        "Java and Android objects past their lifecycle (destroyed Activities, detached Views, Fragments no "
        "manager holds...), grouped by the references suspected of keeping them, as LeakCanary's Shark labels them.",
        ask="lifecycles",
        params="Lifecycles",
        text="heapdb.loader.inspections.lifecycles:lifecycle_leaks_text",
        route="/lifecycles",
        help="Computed at load for hprof dumps, so it answers at once; `heapdb analyze FILE --lifecycles` lists the "
        "same from a file. The rules are data: the `lifecycle` and `known_leak` rules of heapdb's Java default rules, "
        "and a team's in its rule file or stored rule set (docs/rules.md; docs/analysis.md, \"Java and Android leak "
        "status\"). `heapdb why` labels a Java path's objects the same way.",
        agent="Each group is one bug: its `objects` leaking objects (of `types`) are held through the same `suspects` "
        "references, one of which should have been cleared; `trace` is the example's (`example_id`) path, each "
        "object LEAKING, NOT_LEAKING or UNKNOWN with its `reason`, `suspect` on the references to look at. "
        "`nested` counts leaking objects held through another leaking one (fixed with it).",
        lists=("groups",),
    ),
    Question(
        "gate",
        BUILDS,
        "Fail when the CANDIDATE build leaks where the BASELINE build did not: a retainer-path "
        "signature new in the candidate retaining at least --min-bytes, or a path that grew by more than "
        "--max-growth (bytes such as 2MB, or a percentage of the baseline's reachable heap such as 5%).",
        ask="gate",
        params="Gate",
        text="heapdb.renderers.ci_report:gate_text",
        route="/gate",
        help="Thresholds the command line does not give come from the [gate] table of --rules (a rule file "
        "or a stored rule set's name), else of the rules the candidate was loaded with, else the defaults "
        "shown (docs/rules.md).\n\n"
        "Compares the two loaded snapshots by retainer path (no stable ids needed). Leaks that the "
        "candidate's rules mark as known_leak are reported but never fail. With --record (the default) "
        "both builds and the leak signatures are remembered, so `heapdb history SIGNATURE` shows where "
        "a leak came and went; a build is named by the snapshot's `--meta build=N`, else its tag. The run "
        "itself is remembered too: `heapdb gate-runs` lists the runs, `heapdb gate-run ID` shows one.",
        agent="`passed` is the verdict; the findings are new paths retaining at least `min_bytes`, paths grown "
        "past `max_growth`, new suspect types and the inspections' new or grown rows `fail_on` asks for, each "
        "with its path and a sample object in `why`. Never "
        "records history (the CLI's `heapdb gate --record` does).",
        lists=("findings", "known"),
    ),
    Question(
        "signatures",
        SINCE,
        "The leak signatures `heapdb gate` remembered, in the order they first appeared, with their status: "
        "new, recurring, fixed, or known (a known_leak rule covers it).",
        ask="signatures",
        params=None,
        text="heapdb.renderers.ci_report:signatures_text",
        route="/signatures",
        agent="Each a retainer path with the builds it was first and last seen in. Then `signature` for one's "
        "history build by build.",
        lists=("signatures",),
    ),
    Question(
        "history",
        SIGNATURE,
        "One remembered leak SIGNATURE (as `heapdb gate` prints it) across the recorded builds: its status, "
        "first and last build it was seen in, the builds where it grew, and its retained bytes per build.",
        ask="history",
        params="History",
        text="heapdb.renderers.ci_report:history_text",
        route="",
        help="Builds are listed a page at a time (--offset, --limit); the first and last build, growth and status "
        "are of them all.",
        agent="The signature is a leak cluster's or gate finding's `signature`. `observations` are a page of its "
        "`builds` from `offset`: page with `offset`.",
        lists=("observations",),
        tool="signature",
    ),
    Question(
        "gate-runs",
        NOTHING,
        "The runs of `heapdb gate` that were recorded, newest first: when, the two builds' tags, the verdict "
        "and how many findings failed it.",
        ask="gate_runs",
        params="GateRuns",
        text="heapdb.renderers.ci_report:gate_runs_text",
        route="/gate-runs",
        help="`heapdb gate` records each run with --record (the default). --candidate keeps the runs of one "
        "candidate tag; --offset pages through them.",
        agent="Each run's `id` opens it with `gate-run`: what it decided and why.",
        lists=("runs",),
    ),
    Question(
        "gate-run",
        GATE_RUN,
        "One recorded run of `heapdb gate` as it was decided: its verdict, the thresholds and where each came "
        "from, the findings (known leaks apart) and notes.",
        ask="gate_run",
        params=None,
        text="heapdb.renderers.ci_report:gate_run_text",
        route="",
        help="The report is the one `heapdb gate` printed then, read back whatever has become of its snapshots "
        "and rules since.",
        agent="Read as a `gate` answer: `passed` is the verdict, `thresholds_from` says where the thresholds came "
        "from; a finding's `signature` goes to `signature` for its history.",
        lists=("findings", "known"),
    ),
)

BY_NAME = {q.name: q for q in QUESTIONS}
