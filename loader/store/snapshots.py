"""The ``:Snapshot`` node as a typed record, and reading it: :func:`list_snapshots`, :func:`get_snapshot`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from heapdb.db import Database
from heapdb.errors import NotFound
from heapdb.loader.store.schema import FIRST_STORE_VERSION

# The metadata that names a build (the upload's and `heapdb push`'s named fields; any `--meta` key
# may hold them): what lists of snapshots show, in this order. The rest of `meta` is the reader's.
BUILD_META = ("build", "commit", "branch", "scenario", "platform")


# The inspections a load stores on its :Snapshot, each as JSON text of its totals (and, for some, rows).
INSPECTIONS = ("strings", "dom", "react", "hooks", "stale", "shapes", "fill", "objects", "lifecycles", "held", "owners")


@dataclass(frozen=True)
class Snapshot:
    """One load of a snapshot file, as its ``:Snapshot`` node records it.

    ``status`` is ``loading`` until the first objects and the groups are written, then ``ready``
    (``dropping`` while its records are freed); a ready snapshot still writing its other objects
    says ``objects_ready = False``, and one still writing its references ``references_ready = False``. A load that ended without finishing is ``failed``, with the reason
    in ``failure`` and ``purged`` once its records are freed (see :mod:`.lifecycle`). A pruned snapshot
    stays ``ready`` with ``summary = True`` (see :mod:`.prune`). Properties a node lacks (an unfinished load has no ``loaded_at``, a
    finished one no ``pid``) are None; ``meta`` is the stored JSON text decoded.
    """

    sid: int
    tag: str
    status: str
    format: str | None = None
    runtime: str | None = None
    source: str | None = None
    store_version: int = FIRST_STORE_VERSION
    object_count: int | None = None
    reference_count: int | None = None
    total_size: int | None = None
    reachable_size: int | None = None
    unreachable_count: int | None = None
    root_id: int | None = None
    started_at: str | None = None
    ready_at: str | None = None  # when it began to answer questions
    ready_seconds: float | None = None  # from the first write to ready_at
    loaded_at: str | None = None  # when its references were all written too
    load_seconds: float | None = None
    # False while the load still writes objects other than the first ones (see loader/store/order.py).
    objects_ready: bool = True
    objects_written: int | None = None  # how many so far, while they are written
    references_ready: bool = True  # false while the load still writes :REF and :WEAK_REF
    references_written: int | None = None  # how many so far, while they are written
    pid: int | None = None
    host: str | None = None
    heartbeat: str | None = None  # refreshed by a load in progress; see lifecycle
    failure: str | None = None  # why a failed load failed: the error, or which loader went silent when
    failed_at: str | None = None
    purged: bool | None = None  # a failed load's records are freed (the node stays, to be listed)
    # Pruned (`heapdb prune`): its objects and references are freed, its summaries (type and path
    # groups, signatures) kept; still `ready`, it answers the questions that read only those.
    # `purged` then says the objects are all freed (until then the purger is at work on them).
    summary: bool = False
    pruned_at: str | None = None
    # A load analysed under rules (`heapdb load --rules`); all None for the plain analysis.
    rules: str | None = None  # the rule file's absolute path, or the stored rule set's name
    rules_digest: str | None = None  # sha256 of the rule text, in hex
    rules_version: int | None = None  # a stored rule set's version
    rules_disabled_groups: tuple[str, ...] | None = None  # groups switched off with --disable-group
    ambiguous_objects: int | None = None  # objects two owners of the same weight claim
    default_rules: str | None = None  # the runtime's default rule set the load applied (v8, luau, python)
    look_through: bool | None = None  # internal rules applied: objects carry `through` and `holder`
    # The known_leak rules applied: {"reason", "link", "line"} each (stored as JSON text).
    known_leaks: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    # Under bucket rules: each bucket's totals, {"name", "objects", "self_size", "retained_size",
    # "max_retained_size"} each, largest retained first (stored as JSON text; `diff --by bucket`).
    buckets: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    # Where the load computed them: the duplicate strings' totals over all strings, {"strings",
    # "string_bytes", "duplicated", "wasted", "values"} (stored as JSON text; the rows are
    # :StringGroup nodes). None: not computed (docs/analysis.md, "Duplicate strings").
    strings: dict[str, int] | None = field(default=None, hash=False)
    # Where the format has a DOM: the detached DOM's totals, {"objects", "self_size",
    # "retained_size", "trees", "paths", "largest"}, largest being [id, type, self_size,
    # retained_size] rows (stored as JSON text; the groups are :DetachedGroup nodes). None: not
    # computed (docs/analysis.md, "Detached DOM").
    dom: dict[str, Any] | None = field(default=None, hash=False)
    # Where the format has a DOM: the unmounted React components' totals, {"fibers", "self_size",
    # "retained_size", "mounted", "components", "largest"} (JSON text, as dom; the components are
    # :FiberGroup nodes). None: not computed (docs/analysis.md, "Unmounted React components").
    react: dict[str, Any] | None = field(default=None, hash=False)
    # Where the format has a DOM: memory by React component and hook, {"fibers", "components",
    # "rows"}, the rows as ComponentMemory's fields (JSON text). None: not computed
    # (docs/analysis.md, "Memory by React component and hook").
    hooks: dict[str, Any] | None = field(default=None, hash=False)
    # Where the format has a DOM: the collections holding detached DOM or unmounted fibers,
    # {"collections", "stale", "stale_size", "rows"}, the rows as StaleCollection's fields (JSON
    # text). None: not computed (docs/analysis.md, "Collections holding stale objects").
    stale: dict[str, Any] | None = field(default=None, hash=False)
    # Where the format shows objects' contents: the duplicate objects' totals, {"rule", "objects",
    # "object_bytes", "duplicated", "wasted", "contents"} (JSON text; the rows are :ObjectGroup
    # nodes). None: not computed (docs/analysis.md, "Duplicate objects").
    objects: dict[str, Any] | None = field(default=None, hash=False)
    # V8: how many shapes (memlab's unbound-shape) the load counted, {"shapes"} (JSON text; the
    # shapes are :ShapeGroup nodes). None: not computed (docs/analysis.md, "Unbound growth").
    shapes: dict[str, Any] | None = field(default=None, hash=False)
    # Where the format shows capacities: the collections by fill, {"slot_size", "collections",
    # "empty", "wasted", "types", "rows"}, types and rows as FillType's and FillRow's fields (JSON
    # text). None: not computed (docs/analysis.md, "Empty and low-fill collections").
    fill: dict[str, Any] | None = field(default=None, hash=False)
    # Where the format shows classes and fields (hprof): the objects past their lifecycle,
    # {"leaking", "nested", "retained_size", "signatures", "groups"}, the groups as LifecycleLeak's
    # fields (JSON text). None: not computed (docs/analysis.md, "Java and Android leak status").
    lifecycles: dict[str, Any] | None = field(default=None, hash=False)
    # V8: what event listeners, the console and closures alone keep alive, and the globals the
    # program added, {"listeners", "console", "closures" (each {"holders", "objects", "self_size",
    # "retained_size", "paths"}), "global_count", "global_retained", "groups", "globals"}, groups as
    # HeldGroup's fields with their "category", globals as GlobalVariable's (JSON text). None: not
    # computed (docs/analysis.md, "Held by listeners, the console and closures").
    held: dict[str, Any] | None = field(default=None, hash=False)
    # Where the format names owners: memory by owner at each level, {"levels": [{"level", "owners",
    # "rows"}]}, rows as OwnerRow's fields (JSON text; heapdb.loader.owners.table). {"levels": []}
    # for a format that names none; None: not computed (docs/analysis.md, "Who owns the memory").
    owners: dict[str, Any] | None = field(default=None, hash=False)
    meta: dict[str, Any] = field(default_factory=dict, hash=False)  # a dict cannot be hashed; the rest can

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> Snapshot:
        """The record of a node's properties; keys it does not know are ignored."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in props.items() if k in known and v is not None}
        meta = values.get("meta")
        for inspection in INSPECTIONS:
            if isinstance(values.get(inspection), str):
                values[inspection] = json.loads(values[inspection])
        if isinstance(meta, str):
            values["meta"] = json.loads(meta)
        elif isinstance(meta, Mapping):
            values["meta"] = dict(meta)
        for key in ("known_leaks", "buckets"):
            if isinstance(values.get(key), str):
                values[key] = tuple(json.loads(values[key]))
        if "rules_disabled_groups" in values:
            values["rules_disabled_groups"] = tuple(values["rules_disabled_groups"])
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        """The properties as plain data (for JSON), leaving out those the node lacks. Of each
        inspection, its totals: its rows (a hundred collections, a leak's traces) are its question's
        answer, and a listing of many snapshots carrying them all would be megabytes."""
        found = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) not in (None, ())}
        for name in INSPECTIONS:
            if isinstance(found.get(name), dict):
                found[name] = {k: v for k, v in found[name].items() if not isinstance(v, list)}
        return found


def list_snapshots(database: Database, *, include_incomplete: bool = False) -> list[Snapshot]:
    """All snapshots, oldest first; loads in progress, failed or being dropped only when asked for."""
    rows = database.read(
        "MATCH (s:Snapshot) WHERE $all OR s.status = 'ready' RETURN s {.*} AS s ORDER BY s.loaded_at, s.sid",
        {"all": include_incomplete},
    )
    return [Snapshot.from_properties(row["s"]) for row in rows]


def get_snapshot(database: Database, tag: str) -> Snapshot:
    """The ready snapshot with this tag, or :class:`NotFound`."""
    rows = database.read("MATCH (s:Snapshot {tag: $tag, status: 'ready'}) RETURN s {.*} AS s", {"tag": tag})
    if not rows:
        raise NotFound(f"no snapshot tagged {tag!r} (see `heapdb snapshots`)")
    return Snapshot.from_properties(rows[0]["s"])
