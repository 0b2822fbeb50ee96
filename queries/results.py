"""What the questions answer: typed, frozen results, shared by the CLI, the REST service and renderers.

Results name other objects by :class:`ObjectRef` (a snapshot tag and an object id), never by URL:
each front end turns a reference into what its users follow (the service into a permalink, the
text renderers into a ``heapdb why`` command line), through :func:`to_data`'s ``link`` argument.
:func:`from_data` reads back what :func:`to_data` made with references kept as data (a recorded
gate run's report).

Why this module is long: it is the one table of every answer's type, which the CLI, the REST
models, the MCP tools and the renderers all read; split by question, each front end would import
a dozen modules for what is a list of field declarations.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, TypeVar

from heapdb.loader.inspections.leak_status import PathLabels

T = TypeVar("T")


@dataclass(frozen=True)
class ObjectRef:
    """An object of a stored snapshot, as something to follow: to its why-alive answer."""

    tag: str
    id: int


@dataclass(frozen=True)
class ObjectInfo:
    """One heap object as stored (see docs/data-model.md)."""

    id: int
    type: str
    name: str
    kind: str
    self_size: int
    retained_size: int
    retained_count: int
    distance: int | None
    reachable: bool
    detached: bool = False
    root: bool = False
    verdict: str | None = None  # a verdict rule's note on the object (docs/rules.md)
    known_leak: str | None = None  # the reason of the known leak the object is part of
    location: str | None = None  # its script position, file:line:column (docs/data-model.md)
    allocated_at: str | None = None  # its allocation stack, innermost frame first, where recorded
    bucket: str | None = None  # the bucket (owner) a bucket rule put it in, on loads under rules
    owner: str | None = None  # its owner at the first level (package, category...; heapdb.loader.owners)

    @classmethod
    def from_row(cls, row: dict[str, Any], root_id: int | None = None) -> ObjectInfo:
        return cls(
            id=row["id"],
            type=row["type"],
            name=row["name"],
            kind=row["kind"],
            self_size=row["self_size"],
            retained_size=row["retained_size"],
            retained_count=row["retained_count"],
            distance=row["distance"],
            reachable=bool(row["reachable"]),
            detached=bool(row.get("detached")),
            root=bool(row.get("root")) or (root_id is not None and row["id"] == root_id),
            verdict=row.get("verdict"),
            known_leak=row.get("known_leak"),
            location=row.get("location"),
            allocated_at=row.get("allocated_at"),
            bucket=row.get("bucket"),
            owner=row.get("owner"),
        )


@dataclass(frozen=True)
class Reference:
    """A reference between two objects: its kind (``property``, ``element``...) and name."""

    kind: str
    name: str
    weak: bool = False
    # A :REF the snapshot's rules keep from retaining (ignored, weak, or outranked by an owner;
    # docs/rules.md). Set on an object's references; paths never use one.
    dropped: bool = False

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Reference:
        return cls(kind=row["kind"], name=row["name"], weak=bool(row.get("weak")))


@dataclass(frozen=True)
class RetainerPath:
    """``objects[0]`` (the root) holds ``objects[1]`` through ``references[0]``, and so on to the target."""

    objects: list[ObjectInfo]
    references: list[Reference]

    @property
    def length(self) -> int:
        return len(self.references)


@dataclass(frozen=True)
class WhyAlive:
    """Why an object is alive: retaining paths from the root, shortest first."""

    tag: str
    target: ObjectInfo
    paths: list[RetainerPath]
    ignored: dict[str, list[Any]] = field(default_factory=dict)
    # Java snapshots (hprof): each path's objects labelled LEAKING / NOT_LEAKING / UNKNOWN with a
    # reason, and its suspect references (heapdb.queries.lifecycle.path_labels); None for others.
    leak_status: tuple[PathLabels, ...] | None = None


@dataclass(frozen=True)
class DominatorChain:
    """The immediate dominators from the root down to the target (both included)."""

    tag: str
    target: ObjectInfo
    chain: list[ObjectInfo]


@dataclass(frozen=True)
class Retains:
    """A bounded piece of the target's dominator subtree: what would be freed with it."""

    tag: str
    target: ObjectInfo
    objects: list[ObjectInfo]  # the target first, then level by level, largest first
    edges: list[tuple[int, int]]  # (dominator id, dominated id)
    depth: int
    limit: int
    truncated: bool  # some dominated objects were not listed


@dataclass(frozen=True)
class TypeRow:
    """One type of a snapshot's objects (the root reaches them; synthetic root kinds aside)."""

    type: str
    count: int
    self_size: int
    retained_size: int  # what the type's objects retain together, each byte once (DevTools' rule)
    max_retained_size: int  # the largest single object's retained size


@dataclass(frozen=True)
class Change:
    """One type, retainer path or bucket, before and after (a row of a diff)."""

    label: str  # the type, the path as text, or the bucket's name
    hops: list[str]  # the path as labels (for a type or a bucket: just its name)
    count_before: int
    count_after: int
    size_before: int
    size_after: int
    retained_before: int
    retained_after: int
    count_delta: int = field(init=False)
    size_delta: int = field(init=False)
    retained_delta: int = field(init=False)
    signature: int | None = None  # by path: the path's signature
    # The objects' type: by type, the type; by path, the type its last hop reaches (every object
    # held that way has it), None where the path's objects are not stored (a pruned snapshot).
    type: str | None = None
    # By path, from the path's largest object (its group's first sample) in after, or in before for a
    # path only before has: a verdict rule's note on it, and the reason of the known leak it is part of.
    verdict: str | None = None
    known_leak: str | None = None
    inspection: str | None = None  # by inspection: the gate's check whose row this is (duplicate-strings...)

    def __post_init__(self) -> None:
        # Stored fields rather than properties, so that the JSON form carries them too.
        object.__setattr__(self, "count_delta", self.count_after - self.count_before)
        object.__setattr__(self, "size_delta", self.size_after - self.size_before)
        object.__setattr__(self, "retained_delta", self.retained_after - self.retained_before)


@dataclass(frozen=True)
class Diff:
    before: str
    after: str
    by: str  # "type", "path", "bucket" or "inspection"
    changes: list[Change]
    notes: list[str] = field(default_factory=list)  # by inspection: those either snapshot's load did not compute


@dataclass(frozen=True)
class LeakCluster:
    """Leak candidates held the same way: allocated after the baseline, alive in the final snapshot."""

    signature: int  # the retainer path's signature (the cluster's stable id across snapshots)
    path: str
    hops: list[str]
    type: str
    objects: int
    self_size: int
    retained_size: int
    sample_ids: list[int]
    why: ObjectRef  # the first sample, in the final snapshot
    counts: list[int] | None = None  # by path: objects held this way in baseline, target, final
    known_leak: KnownLeak | None = None  # the known_leak rule that covers it (docs/rules.md)
    verdict: str | None = None  # a verdict rule's note on its largest member (by path: the path's largest object)
    location: str | None = None  # the script position of one of its objects, where recorded
    allocated_at: str | None = None  # the allocation stack of one of its objects, where recorded


@dataclass(frozen=True)
class KnownLeak:
    """Why a leak is known, from the rule set the final snapshot was loaded under."""

    reason: str
    link: str | None = None


@dataclass(frozen=True)
class Leaks:
    """Leak candidates. By id, each cluster's figures are its candidate objects'; by path, they are
    the growth of the path's totals from baseline to final (see :meth:`Questions.leaks`)."""

    baseline: str
    target: str
    final: str
    clusters: list[LeakCluster]
    by: str = "id"
    warnings: list[str] = field(default_factory=list)  # why the answer may be wrong (ids not stable)
    # Clusters a known_leak rule covers, apart from the new ones (by path: the paths whose largest member it covers).
    known: list[LeakCluster] = field(default_factory=list)


@dataclass(frozen=True)
class Sample:
    """An object picked as an example, with its why-alive permalink."""

    id: int
    type: str
    self_size: int
    retained_size: int
    why: ObjectRef
    location: str | None = None  # its script position, where recorded
    allocated_at: str | None = None  # its allocation stack, where recorded


@dataclass(frozen=True)
class Turnover:
    """One type's objects between two snapshots matched by id and type: new, survived, freed."""

    type: str
    new_count: int
    new_size: int  # self sizes, as are the other sizes
    survived_count: int
    survived_size: int
    freed_count: int
    freed_size: int
    samples: list[Sample] = field(default_factory=list)  # the largest new objects, by retained size


@dataclass(frozen=True)
class IdCheck:
    """How far two snapshots' ids agree: ids of ``after`` also in ``before``, and of those how many changed type."""

    after_objects: int
    shared: int
    retyped: int


@dataclass(frozen=True)
class ObjectDiff:
    """A diff by object: per type, what is new, what survived, what was freed (ids must be stable)."""

    before: str
    after: str
    by: str  # "object"
    types: list[Turnover]
    total: Turnover  # over all types, not only those listed
    check: IdCheck
    warnings: list[str]  # why the comparison may be unsafe; empty when ids look stable


@dataclass(frozen=True)
class Growth:
    """A type or retainer path that grew at every step; one value per snapshot in each series."""

    label: str  # the type, or the path as text
    hops: list[str]
    counts: list[int]
    sizes: list[int]  # self sizes
    retained: list[int]
    size_growth: int  # last minus first
    count_growth: int
    signature: int | None = None  # by path: the path's signature
    # The objects' type: by type, the type; by path, the type its last hop reaches (every object
    # held that way has it), None where the path's objects are not stored (a pruned snapshot).
    type: str | None = None
    # By path, from the path's largest object in the newest snapshot: its verdict note and known leak's reason.
    verdict: str | None = None
    known_leak: str | None = None


@dataclass(frozen=True)
class GrowthReport:
    tags: list[str]
    by: str  # "type" or "path"
    rows: list[Growth]


# A growth series longer than this (a history of builds) is shown by its ends, in text and to an agent.
SERIES_SHOWN = 12


def series_ends(values: Sequence[T]) -> tuple[list[T], list[T]]:
    """A series' first and last few (:data:`SERIES_SHOWN` in all) when it is longer; else all, and none."""
    if len(values) <= SERIES_SHOWN:
        return list(values), []
    return list(values[: SERIES_SHOWN // 2]), list(values[-(SERIES_SHOWN // 2) :])


@dataclass(frozen=True)
class AccumulationPoint:
    """Where a suspect's retained size piles up: no dominated child holds ``ratio`` of it."""

    object: ObjectInfo
    depth: int  # steps down the dominator tree from the suspect
    children: int  # objects it dominates directly
    largest_child: int  # the largest child's retained size
    largest_child_share: float  # largest_child / the point's retained size
    why: ObjectRef


@dataclass(frozen=True)
class SuspectObject:
    object: ObjectInfo
    share: float  # retained size / the snapshot's reachable size
    why: ObjectRef
    accumulation: AccumulationPoint


@dataclass(frozen=True)
class SuspectType:
    type: str
    count: int
    self_size: int
    retained_size: int
    share: float


@dataclass(frozen=True)
class Suspects:
    """MAT-style leak suspects of one snapshot: big single objects and big types."""

    tag: str
    share: float  # the threshold, a share of reachable_size
    ratio: float  # the accumulation point's descent threshold
    reachable_size: int  # summed self sizes of the objects the root reaches (the 100%)
    min_retained: int  # the threshold in bytes
    objects: list[SuspectObject]
    types: list[SuspectType]


@dataclass(frozen=True)
class Neighbour:
    reference: Reference
    object: ObjectInfo


@dataclass(frozen=True)
class ObjectDetails:
    tag: str
    object: ObjectInfo
    incoming: list[Neighbour]
    outgoing: list[Neighbour]
    incoming_count: int
    outgoing_count: int
    values: list[PrimitiveValue] = field(default_factory=list)  # where the format has them (hprof)


@dataclass(frozen=True)
class PrimitiveValue:
    """A primitive value an object holds: a field (``int size = 3``) or an array's first elements
    (``int[12] = [1, 2, …]``, no name), as Java prints it (:func:`heapdb.loader.values.decode`)."""

    type: str
    name: str
    value: str


@dataclass(frozen=True)
class Instances:
    """A page of one type's objects, in ``sort`` order, ``total`` of them passing the filters (at
    least, when ``total`` reached ``counted_to``)."""

    tag: str
    type: str
    sort: str
    offset: int
    total: int
    objects: list[ObjectInfo]
    # A name filter on the listing's own order stops counting here ("this many or more"): a text as
    # common as "e" would otherwise walk every name of a type with a million objects.
    counted_to: int | None = None
    path: str | None = None  # filtered by a retainer path (its signature): the path as text


@dataclass(frozen=True)
class ReferenceLevel:
    """A page of one object's references: what holds it (``direction`` "in", a level of its
    retainers tree) or what it holds ("out", a level of its containment tree); ``total`` in all."""

    tag: str
    object: ObjectInfo
    direction: str
    offset: int
    total: int
    references: list[Neighbour]


@dataclass(frozen=True)
class SearchResults:
    """What a search of one snapshot found: the object with that id, types by name and strings by
    content, a page of each. ``string_total`` stops counting at ``counted_to`` (a search for "e"
    would otherwise count every string of the heap)."""

    tag: str
    text: str
    mode: str
    offset: int
    object: ObjectInfo | None
    types: list[TypeRow]
    type_total: int
    strings: list[ObjectInfo]
    string_total: int
    counted_to: int


@dataclass(frozen=True)
class GateFinding:
    """One reason a candidate build may fail the gate: a leak signature new in it, a path that grew
    past the threshold, or a leak suspect type the baseline did not have."""

    kind: str  # "new-leak", "growth", "suspect", or an inspection's (gate_inspections.CHECKS)
    # The retainer path's signature (None for a suspect type); an inspection row's, its own
    # (heapdb.queries.gate_inspections.signature_of)
    signature: int | None
    path: str  # the path as text (for a suspect: its type; an inspection row: its content, name or suspects)
    hops: list[str]
    type: str  # the type of the path's largest object
    objects_before: int
    objects_after: int
    bytes_before: int  # retained bytes held this way in the baseline
    bytes_after: int  # ... and in the candidate
    why: ObjectRef | None  # the largest object held this way, in the candidate
    known_leak: str | None = None  # the reason of the rules' known_leak that covers it: reported, never fails
    verdict: str | None = None  # a verdict rule's note on the path's largest object (a suspect: on the object)
    fails: bool = True  # whether this finding fails the gate (its kind is in fail_on, it is not known)
    growth: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "growth", self.bytes_after - self.bytes_before)


@dataclass(frozen=True)
class GateReport:
    """``heapdb gate``: does the candidate build leak where the baseline did not?"""

    baseline: str
    candidate: str
    passed: bool
    fail_on: list[str]
    min_bytes: int  # the floor a new path must retain to count
    max_growth: str  # the threshold as given ("10%", "2MB")
    growth_bytes: int  # ... in bytes (a percentage is of the baseline's reachable size)
    reachable_before: int
    reachable_after: int
    findings: list[GateFinding]  # those that fail the gate first, largest first
    known: list[GateFinding] = field(default_factory=list)  # covered by known_leak rules: never fail
    # Where max_growth, min_bytes and fail_on came from: the command, a rule set's [gate], the defaults.
    thresholds_from: str = "heapdb's defaults"
    notes: list[str] = field(default_factory=list)  # a rule set whose [gate] could not be read

    @property
    def failures(self) -> list[GateFinding]:
        return [f for f in self.findings if f.fails]


@dataclass(frozen=True, kw_only=True)
class GateRun(GateReport):
    """A recorded run of the gate (``heapdb gate --record``): its report as it was decided, with the
    run's number and when it was recorded. The report's own fields come first, so that an answer
    reads as the gate's (its findings paged as the gate's are)."""

    id: int
    recorded_at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class GateRunRow:
    """One recorded gate run, in brief."""

    id: int
    recorded_at: str  # ISO 8601, UTC
    baseline: str  # the snapshots' tags
    candidate: str
    passed: bool
    failing: int  # findings that failed the gate


@dataclass(frozen=True)
class GateRuns:
    """A page of the recorded gate runs, newest first."""

    total: int  # runs that pass the filter
    offset: int
    runs: list[GateRunRow]


@dataclass(frozen=True)
class SignatureObservation:
    """A leak signature in one recorded build."""

    build: str
    tag: str | None  # the snapshot the build was recorded from (it may since have been dropped)
    retained_size: int
    objects: int
    present: bool  # it retained at least the noise floor in that build


@dataclass(frozen=True)
class SignatureHistory:
    """A leak signature remembered across builds (docs/ci.md): where it came and went."""

    signature: int
    path: str
    hops: list[str]
    type: str
    status: str  # new, recurring, fixed or known
    first_seen: str | None  # build names
    last_seen: str | None
    grew: list[str]  # the builds where it retained more than in the build before
    known_leak: str | None
    observations: list[SignatureObservation] = field(default_factory=list)  # in build order, a page of them
    builds: int = 0  # the recorded builds it was looked up in, of which ``observations`` are a page from ``offset``
    offset: int = 0


@dataclass(frozen=True)
class TypeInBuild:
    """One type's totals in one loaded build."""

    build: str
    tag: str
    summary: bool  # the build's snapshot was pruned: its objects are gone, these totals stay
    objects: int
    self_size: int
    retained_size: int


@dataclass(frozen=True)
class TypeHistory:
    """One type in each loaded build of a range, a page of builds, oldest first."""

    type: str
    builds: str  # the range asked for ('all', FIRST..LAST)
    total: int  # builds in the range
    offset: int
    rows: list[TypeInBuild]


# Types to_data passes as they are, and each result class's field names, looked up once: every
# answer the service sends goes through to_data, and checking each value of a 50-row answer as a
# dataclass took about 1 ms of the service's CPU per request (a third of what a cached answer costs).
_PLAIN = frozenset({str, int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...]] = {}


def to_data(answer: Any, link: Callable[[ObjectRef], Any]) -> Any:
    """A result (or a list of them) as plain JSON-ready data; each :class:`ObjectRef` as ``link`` makes it."""
    kind = type(answer)
    if kind in _PLAIN:
        return answer
    if kind is list:
        return [to_data(item, link) for item in answer]
    names = _FIELDS.get(kind)
    if names is not None:
        return {name: to_data(getattr(answer, name), link) for name in names}
    if isinstance(answer, ObjectRef):
        return link(answer)
    if is_dataclass(answer) and not isinstance(answer, type):
        _FIELDS[kind] = tuple(f.name for f in fields(answer))
        return to_data(answer, link)
    if isinstance(answer, (list, tuple)):
        return [to_data(item, link) for item in answer]
    if isinstance(answer, dict):
        return {key: to_data(value, link) for key, value in answer.items()}
    return answer


def from_data(cls: type[T], data: Any) -> T:
    """A ``cls`` again from what :func:`to_data` made of one, its object references kept as data
    (``link`` :func:`dataclasses.asdict`: ``{"tag": ..., "id": ...}``). Fields that are computed
    (``init=False``) are computed again; keys the class does not have are passed over."""
    return typing.cast(T, _typed(cls, data))


def _typed(annotation: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(annotation, type) and is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        given = {f.name: _typed(hints[f.name], value[f.name]) for f in fields(annotation) if f.init and f.name in value}
        return annotation(**given)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return [_typed(args[0], item) for item in value]
    if origin is tuple:
        kinds = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        return tuple(_typed(kind, item) for kind, item in zip(kinds, value))
    if origin is dict:
        return {key: _typed(args[1], item) for key, item in value.items()}
    if origin in (typing.Union, types.UnionType):
        chosen = [a for a in args if a is not type(None)]
        return _typed(chosen[0], value) if len(chosen) == 1 else value
    return value
