"""The stored queries: ``queries/*.cypher`` files, their headers, their parameters, and running them.

Each file is Cypher a person can paste into the Neo4j Browser, preceded by a header of ``//``
comments::

    // name: top
    // description: The objects that retain most, optionally of one type.
    // param tag: string -- the snapshot's tag
    // param type: string? = null -- only objects of this type
    // param limit: int = 20 in 1..1000 -- how many objects
    //
    // Free text after an empty comment line: notes for the reader, ignored by the parser.

A parameter line is ``param NAME: TYPE [= DEFAULT] [in LO..HI | one of A|B|C] [-- description]``.
Types are ``string``, ``int``, ``bool``, ``list<string>`` and ``list<int>``; a trailing ``?`` allows
``null``. The default is a JSON literal; a parameter without one is required. Values arrive as text
(from the command line or a URL) or as JSON values, and are checked and converted here, so a bad
value is a :class:`ParameterError` (HTTP 422, exit status 1) before Neo4j sees anything. User input
only ever reaches Neo4j as parameters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from heapdb.db import Database, Reader
from heapdb.errors import Forbidden, NotFound, ObjectsLoading, ParameterError, ReferencesLoading, StillLoading
from heapdb.scopes import EVERYTHING, Scope, no_snapshot

TYPES = ("string", "int", "bool", "list<string>", "list<int>")
# What a query may need written in full before it answers (`// needs:`), in the order a load writes them.
T = TypeVar("T")

NEEDS = ("objects", "references")
# The parameters that name a snapshot by its tag (`tags`: several), in the stored queries that take
# one: what a load may still be writing (run), and what a caller's scope is checked against
# (check_scope). tests/test_tokens.py checks that every parameter naming a tag is listed here.
SNAPSHOT_PARAMETERS = ("tag", "before", "after", "baseline", "target", "final", "candidate", "since", "tags")

# Neo4j integers are 64-bit; anything wider would be rejected by the driver with a less clear message.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

_PARAM = re.compile(
    r"^param\s+(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<type>[a-z<>]+)(?P<nullable>\?)?"
    r"(?:\s*=\s*(?P<default>\[\]|null|true|false|-?\d+|\"[^\"]*\"))?"
    r"(?:\s+in\s+(?P<lo>-?\d+)\.\.(?P<hi>-?\d+))?"
    r"(?:\s+one of\s+(?P<choices>[\w|]+))?"
    r"(?:\s+--\s*(?P<description>.*))?$"
)

_MISSING = object()


@dataclass(frozen=True)
class Parameter:
    """One declared parameter of a stored query."""

    name: str
    type: str
    nullable: bool = False
    default: Any = _MISSING
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    description: str = ""

    @property
    def required(self) -> bool:
        return self.default is _MISSING

    def describe_type(self) -> str:
        """The type as the header spells it, with its range or choices (for listings)."""
        text = self.type + ("?" if self.nullable else "")
        if self.minimum is not None:
            text += f" in {self.minimum}..{self.maximum}"
        if self.choices:
            text += f" one of {'|'.join(self.choices)}"
        return text

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "type": self.describe_type(),
            "required": self.required,
            "description": self.description,
        }
        if not self.required:
            out["default"] = self.default
        return out

    def coerce(self, value: Any) -> Any:
        """Check ``value`` (text or a JSON value, a list of those for list types) and convert it."""
        if value is None or (isinstance(value, str) and value == "" and self.nullable and self.type != "string"):
            if self.nullable:
                return None
            raise ParameterError(f"parameter {self.name!r} ({self.describe_type()}) cannot be null")
        if self.type.startswith("list<"):
            items = value if isinstance(value, (list, tuple)) else [value]
            element = self.type[5:-1]
            if element == "int" and self.minimum is None and _plain_ints(items):
                return list(items)  # heapdb's own lists of ids: up to millions, checked at once
            out: list[Any] = []
            for item in items:
                # Text that is a JSON array is spread, so `--param ids=[1,2]` and `ids=1&ids=2` both work.
                if isinstance(item, str) and item.startswith("["):
                    try:
                        spread = json.loads(item)
                    except json.JSONDecodeError:
                        raise ParameterError(f"parameter {self.name!r}: {item!r} is not a JSON list") from None
                    if not isinstance(spread, list):
                        raise ParameterError(f"parameter {self.name!r}: {item!r} is not a JSON list")
                    out.extend(self._scalar(element, x) for x in spread)
                else:
                    out.append(self._scalar(element, item))
            return out
        if isinstance(value, (list, tuple)):
            if len(value) != 1:
                raise ParameterError(f"parameter {self.name!r} takes one value, got {len(value)}")
            value = value[0]
        return self._scalar(self.type, value)

    def _bad(self, kind: str, value: Any) -> ParameterError:
        return ParameterError(f"parameter {self.name!r} must be {kind_text(kind)}, got {value!r}")

    def _scalar(self, kind: str, value: Any) -> Any:
        if kind == "int":
            if isinstance(value, bool):
                raise self._bad(kind, value)
            if isinstance(value, str):
                try:
                    value = int(value.strip(), 10)
                except ValueError:
                    raise self._bad(kind, value) from None
            if not isinstance(value, int) or not INT_MIN <= value <= INT_MAX:
                raise self._bad(kind, value)
            if self.minimum is not None and not self.minimum <= value <= self.maximum:  # type: ignore[operator]
                raise ParameterError(
                    f"parameter {self.name!r} must be between {self.minimum} and {self.maximum}, got {value}"
                )
            return value
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "1", "yes"):
                return True
            if text in ("false", "0", "no"):
                return False
            raise self._bad(kind, value)
        if not isinstance(value, str):
            raise self._bad(kind, value)
        if self.choices and value not in self.choices:
            raise ParameterError(f"parameter {self.name!r} must be one of {', '.join(self.choices)}, got {value!r}")
        return value


def _plain_ints(items: list[Any] | tuple[Any, ...]) -> bool:
    """Whether every item is an int (not a bool) in Neo4j's integer range."""
    return all(type(x) is int for x in items) and (not items or (min(items) >= INT_MIN and max(items) <= INT_MAX))


def kind_text(kind: str) -> str:
    return {"int": "an integer", "bool": "true or false", "string": "text"}.get(kind, kind)


@dataclass(frozen=True)
class StoredQuery:
    """A parsed ``.cypher`` file."""

    name: str
    description: str
    parameters: tuple[Parameter, ...]
    cypher: str  # the statement, without the header
    text: str  # the whole file, header included (what people paste)
    notes: str = ""
    filename: str = field(default="")
    # `// needs: objects`: the query reads every object of the snapshot (a scan, or children in the
    # dominator tree), which a load writes after the snapshot starts answering; `// needs: references`:
    # it follows :REF/:WEAK_REF, which a load writes last. Asked of a snapshot still writing them, it
    # is refused, not half-answered (docs/data-model.md, "When a snapshot answers").
    needs: str | None = None

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise ParameterError(
            f"query {self.name!r} has no parameter {name!r} (it takes: {', '.join(p.name for p in self.parameters) or 'none'})"
        )

    def bind(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Check and convert ``values``; fill in defaults. Unknown or missing names are errors."""
        for name in values:
            self.parameter(name)
        bound = {}
        for p in self.parameters:
            if p.name in values:
                bound[p.name] = p.coerce(values[p.name])
            elif p.required:
                raise ParameterError(
                    f"query {self.name!r} needs parameter {p.name!r} ({p.describe_type()}: {p.description})"
                )
            else:
                bound[p.name] = p.default
        return bound

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": [p.as_dict() for p in self.parameters],
            "file": self.filename,
        }

    @property
    def per_snapshot(self) -> bool:
        """Whether it reads the snapshots it names (a required tag), not across them all."""
        return any(p.required and p.name in SNAPSHOT_PARAMETERS for p in self.parameters)

    def check_scope(self, bound: Mapping[str, Any], scope: Scope) -> None:
        """Refuse what ``scope`` may not run: a tag it may not read answers as unknown; a query that
        reads across every snapshot (the builds, the leak signatures, the gate's runs) is the
        administrator's."""
        if scope.everything:
            return
        if not self.per_snapshot:
            raise Forbidden(
                f"query {self.name!r} reads across every team's snapshots: only the service's own tokens may run it"
            )
        for name in SNAPSHOT_PARAMETERS:
            value = bound.get(name)
            for tag in value if isinstance(value, list) else [value]:
                if isinstance(tag, str) and not scope.reads(tag):
                    raise no_snapshot(tag)


def parse(text: str, filename: str = "<query>") -> StoredQuery:
    """Parse a stored query file; a malformed header raises ValueError naming the file and line."""
    lines = text.splitlines()
    header: dict[str, str] = {}
    parameters: list[Parameter] = []
    notes: list[str] = []
    in_notes = False
    body_start = len(lines)
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped.startswith("//"):
            body_start = number - 1
            break
        content = stripped[2:].strip()
        if in_notes:
            notes.append(content)
        elif not content:
            in_notes = True
        elif content.startswith("param "):
            match = _PARAM.match(content)
            if not match or match["type"] not in TYPES:
                raise ValueError(f"{filename}:{number}: cannot read the parameter declaration {content!r}")
            default = json.loads(match["default"]) if match["default"] is not None else _MISSING
            parameters.append(
                Parameter(
                    name=match["name"],
                    type=match["type"],
                    nullable=bool(match["nullable"]),
                    default=default,
                    minimum=int(match["lo"]) if match["lo"] else None,
                    maximum=int(match["hi"]) if match["hi"] else None,
                    choices=tuple(match["choices"].split("|")) if match["choices"] else (),
                    description=(match["description"] or "").strip(),
                )
            )
        else:
            key, sep, value = content.partition(":")
            if not sep or key.strip() not in ("name", "description", "needs"):
                raise ValueError(
                    f"{filename}:{number}: expected 'name:', 'description:', 'needs:' or 'param', got {content!r}"
                )
            if key.strip() == "needs" and value.strip() not in NEEDS:
                raise ValueError(
                    f"{filename}:{number}: a query can need {' or '.join(map(repr, NEEDS))}, got {value.strip()!r}"
                )
            header[key.strip()] = value.strip()
    for key in ("name", "description"):
        if key not in header:
            raise ValueError(f"{filename}: the header has no '{key}:' line")
    cypher = "\n".join(lines[body_start:]).strip()
    if not cypher:
        raise ValueError(f"{filename}: no Cypher after the header")
    declared = {p.name for p in parameters}
    used = set(re.findall(r"\$([A-Za-z_]\w*)", cypher))
    if used != declared:
        raise ValueError(f"{filename}: parameters used {sorted(used)} differ from those declared {sorted(declared)}")
    return StoredQuery(
        name=header["name"],
        description=header["description"],
        parameters=tuple(parameters),
        cypher=cypher,
        text=text,
        notes=" ".join(n for n in notes if n),
        filename=filename,
        needs=header.get("needs"),
    )


@cache
def catalog() -> dict[str, StoredQuery]:
    """Every stored query shipped with heapdb, by name, sorted by name."""
    found = {}
    for entry in resources.files(__package__).iterdir():
        if entry.name.endswith(".cypher"):
            query = parse(entry.read_text(encoding="utf-8"), entry.name)
            if query.name in found:
                raise ValueError(f"{entry.name}: the query name {query.name!r} is used twice")
            found[query.name] = query
    return dict(sorted(found.items()))


def get(name: str) -> StoredQuery:
    """The stored query called ``name``, or :class:`NotFound`."""
    try:
        return catalog()[name]
    except KeyError:
        raise NotFound(f"no stored query {name!r} (see `heapdb queries`: {', '.join(catalog())})") from None


def run(
    database: Database,
    name: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
    scope: Scope = EVERYTHING,
) -> list[dict[str, Any]]:
    """Run a stored query in a read-only transaction with ``timeout`` seconds; return its rows.
    A caller's own query says its ``scope`` (:meth:`StoredQuery.check_scope`); the questions' run
    theirs after checking their snapshots themselves."""
    return reading(database, lambda ask: ask(name, parameters or {}), timeout=timeout, scope=scope)


# A stored query asked within a transaction: its name and parameters in, its rows out (reading).
Ask = Callable[[str, Mapping[str, Any]], list[dict[str, Any]]]


def reading(
    database: Database, work: Callable[[Ask], T], *, timeout: float | None = None, scope: Scope = EVERYTHING
) -> T:
    """``work(ask)`` in one read-only transaction of at most ``timeout`` seconds, where
    ``ask(name, parameters)`` runs a stored query and returns its rows: a question that needs
    several queries pays for one transaction's round trips (:meth:`~heapdb.db.Database.reading`).

    A query that needs a snapshot's objects or references is refused while its load still writes
    them (:func:`still_loading`), checked in the same transaction, once per snapshot and need."""

    def transaction(read: Reader) -> T:
        checked: set[tuple[str, str]] = set()

        def ask(name: str, parameters: Mapping[str, Any]) -> list[dict[str, Any]]:
            query = get(name)
            values = query.bind(parameters)
            query.check_scope(values, scope)
            if query.needs is not None:
                for tag in (values.get(key) for key in SNAPSHOT_PARAMETERS):
                    if isinstance(tag, str) and (tag, query.needs) not in checked:
                        refusal = still_loading(read, tag, query.needs, f"{query.name!r} reads them")
                        if refusal is not None:
                            raise refusal
                        checked.add((tag, query.needs))
            return read(query.cypher, values)

        return work(ask)

    return database.reading(transaction, timeout)


def still_loading(read: Reader, tag: str, needs: str, why: str) -> StillLoading | None:
    """The error for a question that needs all of a snapshot's ``needs`` (one of :data:`NEEDS`)
    while its load is still writing them, read afresh with ``read`` (a database's
    :meth:`~heapdb.db.Database.read`, or a query of a transaction); None when they are all written
    (or the tag has no ready snapshot: the question itself says so). ``why`` ends the first clause."""
    rows = read(
        "MATCH (s:Snapshot {tag: $tag, status: 'ready'}) "
        "RETURN s.objects_ready = false AS objects, s.objects_written AS objects_written, "
        "s.object_count AS object_count, s.references_ready = false AS references, "
        "s.references_written AS references_written, s.reference_count AS reference_count",
        {"tag": tag},
    )
    if not rows:
        return None
    row = rows[0]
    # A load writes the objects before the references: a question that needs the references needs both.
    for what, error in (("objects", ObjectsLoading), ("references", ReferencesLoading)):
        if row[what] and NEEDS.index(what) <= NEEDS.index(needs):
            written, total = row[f"{what}_written"] or 0, row[f"{what[:-1]}_count"] or 0
            share = f" ({written / total:.0%} of {total:,} written)" if total else ""
            return error(
                f"snapshot {tag!r} is still loading its {what}{share}, and {why}; "
                "ask again when `heapdb snapshots` shows them loaded"
            )
    return None
