"""Each question's parameters, declared once: names, types, defaults, bounds, choices and help.

The CLI builds its options from these classes (:func:`heapdb.cli.options.question_options`) and the
REST service takes them as query-string models, so ``heapdb top`` and ``GET .../top`` share one
default and one bound, and a new parameter appears in both (and in the OpenAPI document) at once.
Where a question passes a parameter on to a stored query of the same name, the ``.cypher`` header
declares it too, for people running the query by hand; ``tests/test_params.py`` checks that the two
agree.

The classes are frozen pydantic models: building one checks every value. A bad value raises
:class:`~heapdb.errors.ParameterError` (exit status 1, HTTP 422), whoever builds it.

What each question needs to name its subject (a snapshot tag, an object id, a list of tags) is not
here: the CLI takes it as arguments, REST as the URL's path, Python callers as positional arguments.
"""

from __future__ import annotations

import types
import typing
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from heapdb import settings
from heapdb.errors import ParameterError
from heapdb.gatecheck import GateCheck
from heapdb.loader.inspections import collections, dom, fill, held, lifecycles, react, react_hooks, strings, unbound
from heapdb.loader.owners import table as owner_table
from heapdb.queries.ignoring import parse_all
from heapdb.units import parse_threshold

MAX_K = 10  # retainer paths per why-alive answer
MAX_DEPTH = 20  # levels of a dominated subtree
MAX_LIMIT = 1000  # rows of a list of objects, nodes of a subtree (the stored ranks go this far)
MAX_GROUP_LIMIT = 10_000  # rows of a list of types or retainer paths
MAX_SAMPLES = 20  # example objects per row
MAX_OFFSET = 1_000_000_000  # rows a page may pass over (a type's objects, an object's references)
MAX_BUILDS = 10_000  # builds one page of a history may list
DEFAULT_TIMEOUT = settings.QUERY_TIMEOUT.fallback  # seconds per query, the service's and the CLI's
TIMEOUT_RANGE = settings.TIMEOUT_RANGE


def query_timeout(timeout: float | None = None) -> float:
    """Seconds a service's query may run: ``timeout`` when given, else ``HEAPDB_QUERY_TIMEOUT``, else
    :data:`DEFAULT_TIMEOUT`."""
    return timeout if timeout is not None else settings.QUERY_TIMEOUT.value()


class FieldShape(NamedTuple):
    """How a front end offers a parameter: its value's type, its choices, whether it repeats."""

    annotation: Any  # the type of one value (``X`` of ``X | None`` and of ``tuple[X, ...]``)
    choices: tuple[str, ...] | None  # a Literal's values, as text
    repeated: bool  # tuple[X, ...]: given any number of times


def field_shape(info: FieldInfo) -> FieldShape:
    """A parameter model's field as the CLI's options and the question pages' forms offer it."""
    annotation, repeated = info.annotation, False
    if typing.get_origin(annotation) is tuple:
        annotation, repeated = typing.get_args(annotation)[0], True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    literal = typing.get_origin(annotation) is Literal
    return FieldShape(annotation, tuple(str(c) for c in typing.get_args(annotation)) if literal else None, repeated)


class Params(BaseModel):
    """A question's parameters. ``stored`` names the stored queries whose parameters of the same name
    these mirror (checked by a test)."""

    # Extra keys are ignored, not refused: the REST service hands over the whole query string,
    # which also holds keys of the route's own (``format``).
    model_config = ConfigDict(frozen=True, extra="ignore")
    stored: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **values: Any) -> None:
        # Every front end builds parameters through here, so a bad value is one kind of error
        # everywhere (pydantic's own would be an internal error to the CLI and a 500 to REST).
        try:
            super().__init__(**values)
        except ValidationError as e:
            raise ParameterError(describe(e)) from None


def describe(error: ValidationError) -> str:
    """A pydantic error as one line: ``limit: Input should be less than or equal to 1000; ...``."""
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in error.errors())


# Which loaded builds a question over a history reads, said once for each question that takes it
# (`growth --builds`, `type-history --builds`); heapdb.queries.builds resolves it.
BUILDS_HELP = (
    "The loaded builds (snapshots loaded with `--meta build=N`), in build order: 'all', or a range "
    "FIRST..LAST, either end left out for the first or the last build; an end that is a number takes the "
    "builds numbered from or up to it, another must be a loaded build's name or tag."
)


class BuildRange(NamedTuple):
    """A range of builds: its first and last build (None: open at that end)."""

    first: str | None
    last: str | None


def build_range(text: str) -> BuildRange:
    """``all``, ``FIRST..LAST``, ``FIRST..`` or ``..LAST`` as a :class:`BuildRange`; ValueError otherwise."""
    text = text.strip()
    if text == "all":
        return BuildRange(None, None)
    first, dots, last = text.partition("..")
    if not dots or ".." in last or not (first.strip() or last.strip()):
        raise ValueError(f"expected 'all' or a range FIRST..LAST of builds, got {text[:60]!r}")
    return BuildRange(first.strip() or None, last.strip() or None)


class ObjectDetails(Params):
    stored = ("object",)
    limit: int = Field(20, ge=0, le=MAX_LIMIT, description="References to list in each direction.")


class Find(Params):
    stored = ("find",)
    type: str = Field(min_length=1, description="The objects' type, e.g. a constructor name.")
    name_contains: str = Field("", description="A text the object's name must contain (empty: any name).")
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description="How many objects.")


class Instances(Params):
    """A page of one type's objects: the type page, and DevTools' Summary view opened on a type."""

    stored = ("instances",)
    type: str = Field(min_length=1, description="The objects' type, e.g. a constructor name.")
    sort: Literal["retained_size", "self_size", "distance"] = Field(
        "retained_size",
        description="Retained or self size, largest first, or distance from the root, nearest first.",
    )
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="How many objects to pass over (the page's start).")
    limit: int = Field(50, ge=1, le=MAX_LIMIT, description="How many objects.")
    name_contains: str = Field("", description="A text the object's name must contain (empty: any name).")
    detached: bool | None = Field(None, description="Only detached objects (true), or only attached ones (false).")
    bucket: str | None = Field(None, description="Only objects a bucket rule put in this bucket (owner).")
    owner: str | None = Field(
        None, description="Only objects of this owner (a package, category...: the first level of `owners`)."
    )
    since: str | None = Field(
        None,
        min_length=1,
        description="Only objects new since this snapshot (a tag): no object of the same id and type in it. "
        "Needs ids that name the same object in both (V8 snapshots of one process).",
    )
    path: int | None = Field(
        None,
        description="Only objects whose first retainer path has this signature (a path of `diff --by path`).",
    )


class References(Params):
    """One level of an object's retainers tree or containment tree."""

    stored = ("retainer-level", "containment-level")
    direction: Literal["in", "out"] = Field(
        "in", description="in: what references the object (its retainers); out: what it references (containment)."
    )
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="How many references to pass over (the page's start).")
    limit: int = Field(50, ge=0, le=MAX_LIMIT, description="How many references (0: only how many there are).")


class Search(Params):
    """A search of one snapshot: types by name, an object by id, strings by content."""

    stored = ("type-search",)
    text: str = Field(
        min_length=1,
        max_length=1000,
        description="What to look for: a type name, an id (@123 or 123), a string's content.",
    )
    mode: Literal["exact", "prefix", "contains"] = Field(
        "contains", description="How a name or content must match: whole, its start, or anywhere in it."
    )
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="How many of each kind of match to pass over.")
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="How many of each kind of match.")


class Why(Params):
    k: int = Field(1, ge=1, le=MAX_K, description="How many paths, each ending with a different retaining reference.")
    ignore_name: tuple[str, ...] = Field((), description="A reference name the paths must not use (repeatable).")
    ignore_type: tuple[str, ...] = Field((), description="An object type the paths must not pass through (repeatable).")
    ignore_id: tuple[int, ...] = Field((), description="An object id the paths must not pass through (repeatable).")
    ignore: tuple[str, ...] = Field(
        (),
        description="References the paths must not use, selected as a rule file's [[ignore]] does, on one line: "
        '\'to.type = "system / Context"\', \'from.type = "Emitter", edge.name = { glob = "_*" }\' '
        "(docs/rules.md; repeatable).",
    )

    @field_validator("ignore")
    @classmethod
    def _selectors(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        parse_all(value)  # a bad selector is a ParameterError naming it, before any query runs
        return value

    @property
    def ignores(self) -> bool:
        return bool(self.ignore_name or self.ignore_type or self.ignore_id or self.ignore)


class Retains(Params):
    stored = ("dominated",)
    depth: int = Field(3, ge=1, le=MAX_DEPTH, description="Levels of the dominator tree to show.")
    limit: int = Field(50, ge=1, le=MAX_LIMIT, description="Objects to show in all.")


class Top(Params):
    stored = ("top",)
    type: str | None = Field(None, description="Only objects of this type.")
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="How many objects.")


class Types(Params):
    stored = ("types",)
    sort: Literal["count", "self_size", "retained_size", "max_retained_size"] = Field(
        "self_size", description="The column to sort by, largest first."
    )
    limit: int = Field(50, ge=1, le=MAX_GROUP_LIMIT, description="How many types.")


class Diff(Params):
    stored = ("diff-types", "diff-paths")
    by: Literal["type", "path", "object", "bucket", "owner", "inspection", "dominator"] = Field(
        "type",
        description="Group objects by type, or by retainer path (both need no stable ids), "
        "or match them by id and type: new / survived / freed (ids must be stable), "
        "or by the buckets of the rules the snapshots were loaded under ([[bucket]] rules), "
        "or by owner (package, file, category...: see `heapdb owners`; --level picks the level), "
        "or compare the stored inspections' rows (duplicated contents, detached DOM, components, "
        "collection types' unused capacity, lifecycle leaks, what listeners, the console and closures alone "
        "hold, global variables, memory by React component), as the gate does; "
        "or along the dominator tree: objects grouped by the types of their chain of dominators, "
        "level by level (--under drills into a group; both snapshots must be full, not pruned).",
    )
    limit: int = Field(50, ge=1, le=MAX_GROUP_LIMIT, description="Rows to show.")
    samples: int = Field(
        3,
        ge=0,
        le=MAX_SAMPLES,
        description="With by object: the largest new objects to list per type; "
        "by dominator: the members of each group retaining most in AFTER.",
    )
    level: str | None = Field(
        None, description="With by owner: the level of owners to compare (default: the first, package or category)."
    )
    under: str | None = Field(
        None,
        min_length=1,
        description="With by dominator: the group whose groups below to list, by its key (a row's `key`) "
        "or its path of types joined by ' > ' (default: the groups below the root).",
    )


class Leaks(Params):
    stored = ("leaks", "leaks-paths")
    by: Literal["id", "path"] = Field(
        "id",
        description="Match objects by id (memlab's rule; ids must be stable), "
        "or compare retainer paths' totals (no stable ids needed).",
    )
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="Clusters to show.")


class Growth(Params):
    stored = ("growth-types", "growth-paths")
    by: Literal["type", "path"] = Field("type", description="Group objects by type or by retainer path.")
    limit: int = Field(50, ge=1, le=MAX_GROUP_LIMIT, description="Rows to show.")
    builds: str | None = Field(None, min_length=1, max_length=400, description="In place of TAGS: " + BUILDS_HELP)

    @field_validator("builds")
    @classmethod
    def _builds(cls, value: str | None) -> str | None:
        return None if value is None else _checked_builds(value)


def _checked_builds(value: str) -> str:
    build_range(value)  # refused here, before any database is asked
    return value.strip()


class Unbound(Params):
    stored = ("unbound-objects",)
    rule: Literal["every-step", "memlab"] = Field(
        "every-step",
        description="every-step: present in every snapshot and larger at each step; memlab: memlab's own rule "
        "(collections and objects whose figure changed at all, shapes that never shrank and grew once).",
    )
    limit: int = Field(unbound.SHOWN, ge=1, le=MAX_LIMIT, description="Collections, objects and shapes to show, each.")
    min_retained: int = Field(
        unbound.MIN_RETAINED,
        ge=0,
        le=2**40,
        description="Objects must retain at least this many bytes in the last snapshot (memlab's 10 KiB).",
    )
    min_objects: int = Field(
        unbound.MIN_OBJECTS,
        ge=1,
        le=2**40,
        description="Shapes must have at least this many objects in the last snapshot (memlab's 1,000).",
    )


class Suspects(Params):
    stored = ("suspects", "suspect-types")
    share: float = Field(0.1, gt=0, le=1, description="Report what retains at least this share of the reachable heap.")
    ratio: float = Field(
        0.8,
        gt=0.5,
        le=1,
        description="Descend to the accumulation point through children holding at least this share of their parent.",
    )
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="Objects and types to show, each.")


class Gate(Params):
    stored = ("gate-paths",)
    # Text, not bytes: "10MB" and "5%" are what people write in a CI file; heapdb.queries.gate parses them.
    max_growth: str = Field(
        "10%",
        description="A retainer path that grew by more than this fails the gate: bytes (e.g. 2MB, 500KiB, 1048576) "
        "or a percentage of the baseline's reachable heap (e.g. 5%).",
    )
    min_bytes: int = Field(
        256 * 1024,
        ge=1,
        description="A retainer path new in the candidate is a leak when it retains at least this many bytes "
        "(the noise floor).",
    )
    fail_on: tuple[GateCheck, ...] = Field(
        ("new-leaks", "growth"),
        description="What fails the gate (repeatable): new leak signatures, growth past --max-growth, "
        "leak suspects (by type) the baseline did not have; and from the inspections, duplicated string and object "
        "contents, detached DOM paths, unmounted React components, collection types' unused capacity, Java "
        "lifecycle leaks, what listeners, the console or closures alone hold (held), the program's global variables "
        "and memory by React component (react-hooks) new in the candidate or grown past --max-growth.",
    )
    limit: int = Field(20, ge=1, le=MAX_LIMIT, description="Findings to list per kind.")
    rules: str | None = Field(
        None,
        description="The rule set whose [gate] table gives the thresholds not set here: a name stored with "
        "`heapdb rules add` (the CLI also takes a rule file). Default: the rules the candidate was loaded with.",
    )

    @field_validator("max_growth")
    @classmethod
    def _threshold(cls, value: str) -> str:
        parse_threshold(value)  # refused here, before any database is asked
        return value.strip()


class GateRuns(Params):
    """A page of the CI gate's recorded runs, newest first."""

    stored = ("gate-runs",)
    candidate: str | None = Field(None, min_length=1, description="Only the runs whose candidate was this tag.")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="How many runs to pass over (the page's start).")
    limit: int = Field(50, ge=1, le=MAX_LIMIT, description="How many runs.")


class TypeHistory(Params):
    """One type's totals in each loaded build, a page of builds at a time."""

    stored = ("type-history",)
    type: str = Field(min_length=1, description="The type, e.g. a constructor name (as `heapdb types` lists it).")
    builds: str = Field("all", min_length=1, max_length=400, description=BUILDS_HELP)
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="How many builds to pass over (the page's start).")
    limit: int = Field(100, ge=1, le=MAX_BUILDS, description="How many builds.")

    @field_validator("builds")
    @classmethod
    def _builds(cls, value: str) -> str:
        return _checked_builds(value)


class History(Params):
    """A page of the builds of one leak signature's history."""

    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="How many builds to pass over (the page's start).")
    limit: int = Field(100, ge=1, le=MAX_BUILDS, description="How many builds.")


class Lifelines(Params):
    stored = ("lifelines",)
    # Required, but declared with an empty default that fails validation: the CLI's options and the
    # REST parameters are built from defaults, and a missing type is then one ParameterError everywhere.
    type: str = Field("", min_length=1, validate_default=True, description="The objects' type (required).")
    name_contains: str = Field("", description="A text the objects' names must contain (empty: any name).")
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description="Branches to show per step; the rest are summed up.")


class Strings(Params):
    stored = ("duplicate-strings",)
    sort: Literal["wasted", "retained_size", "count"] = Field(
        "wasted",
        description="What to rank by, largest first: what all copies but one retain, what all of them retain, "
        "or the number of copies.",
    )
    limit: int = Field(
        20,
        ge=1,
        le=strings.KEPT,
        description=f"How many contents (a load keeps the first {strings.KEPT} of each ranking).",
    )


class DupObjects(Strings):
    """The duplicate strings' ranking and limit, over objects' contents (objects.KEPT is strings')."""

    stored = ("duplicate-objects",)


class Dom(Params):
    stored = ("detached-dom",)
    limit: int = Field(
        20, ge=1, le=dom.KEPT, description=f"How many holder paths (a load keeps the {dom.KEPT} largest)."
    )


class Lifecycles(Params):
    limit: int = Field(
        20,
        ge=1,
        le=lifecycles.KEPT,
        description=f"How many groups of leaking objects (a load keeps the {lifecycles.KEPT} retaining most).",
    )


class Stale(Params):
    limit: int = Field(
        20,
        ge=1,
        le=collections.KEPT,
        description=f"How many collections (a load keeps the {collections.KEPT} with the most stale bytes).",
    )


class Held(Params):
    limit: int = Field(
        20,
        ge=1,
        le=held.KEPT,
        description=f"How many groups per kind of holder, and global variables (a load keeps the {held.KEPT} largest).",
    )


class Fill(Params):
    limit: int = Field(
        20,
        ge=1,
        le=fill.KEPT,
        description=f"How many collections (a load keeps the {fill.KEPT} whose unused capacity takes most bytes).",
    )


class Owners(Params):
    level: str | None = Field(
        None,
        description="One level of owners: package or file (V8), package or class loader (Java), category or "
        "script (Luau), namespace (.NET), package or module (Python), package or library (Dart); "
        "default: every level.",
    )
    limit: int = Field(
        20,
        ge=1,
        le=owner_table.KEPT,
        description=f"How many owners per level (a load keeps the {owner_table.KEPT} largest of each).",
    )


class React(Params):
    stored = ("unmounted-components",)
    limit: int = Field(
        20, ge=1, le=react.KEPT, description=f"How many components (a load keeps the {react.KEPT} largest)."
    )


class ReactHooks(Params):
    limit: int = Field(
        20,
        ge=1,
        le=react_hooks.KEPT,
        description=f"How many components (a load keeps the {react_hooks.KEPT} whose fibers retain most).",
    )


class HeapDomStats(Params):
    stored = ("heapdomstats",)
    limit: int = Field(50, ge=1, le=MAX_GROUP_LIMIT, description="How many types.")
