"""Rule sets kept in Neo4j as data: ``:RuleSet`` nodes, one per version of a named rule file.

A team adds a rule file under a name (:func:`add_rule_set`); adding under a name that exists makes
the next version, and the earlier versions stay, so whatever was analysed with version 3 can show
exactly that text later. Each version keeps the file's text as given (``heapdb rules show`` prints
it back byte for byte), its SHA-256 ``digest``, who added it and when. The text is checked with
:func:`heapdb.loader.rules.parse_rules` before anything is written: a bad file stores nothing.

The functions take a :class:`heapdb.db.Database` and return frozen :class:`RuleSetRecord` values.
The data model is in ``docs/data-model.md``; the CLI is ``heapdb rules`` and the REST routes are
``/api/rules`` and ``/api/rules/{name}`` (``GET``; ``POST`` adds, ``DELETE`` removes).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from heapdb import settings
from heapdb.db import Database
from heapdb.errors import NotFound, ParameterError
from heapdb.loader.store.numbering import create_numbered
from heapdb.loader.store.schema import ensure_schema

if TYPE_CHECKING:
    from heapdb.loader.rules import RuleSet

# A rule set's name: what `heapdb rules add --name` takes and the REST route's path segment. A letter
# or digit first, so that a name is never `.`, `..` or an option; then letters, digits, `-`, `_`, `.`.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
MAX_NAME_CHARS = 100
MAX_AUTHOR_CHARS = 200
MAX_TEXT_BYTES = 1 << 20  # a rule file is a page of TOML; a megabyte is far more than any needs
MAX_VERSION = 2**31 - 1  # versions count up from 1; the bound keeps a bad --version out of the driver
_NAME = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class RuleSetRecord:
    """One stored version of a rule set, as its ``:RuleSet`` node records it.

    ``text`` is the rule file exactly as added; ``digest`` its SHA-256 (hex, of the UTF-8 bytes);
    ``added_at`` ISO 8601 UTC; ``author`` None when none was known. A listing leaves the text out
    (``text`` None) and says how many versions the name has (``versions``).
    """

    name: str
    version: int
    digest: str
    added_at: str
    author: str | None = None
    text: str | None = None
    versions: int | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> RuleSetRecord:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in props.items() if k in known and v is not None})

    def as_dict(self) -> dict[str, Any]:
        """The record as plain data (for JSON), leaving out what it lacks."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


def check_name(name: str) -> str:
    """``name`` if it is a valid rule set name, else :class:`ParameterError` saying what a name is."""
    if not _NAME.fullmatch(name):
        raise ParameterError(
            f"bad rule set name {name!r}: use 1 to {MAX_NAME_CHARS} letters, digits, '-', '_' or '.', "
            "starting with a letter or digit"
        )
    return name


def check_version(version: int | None) -> int | None:
    if version is not None and not 1 <= version <= MAX_VERSION:
        raise ParameterError(f"bad rule set version {version!r}: versions are whole numbers from 1")
    return version


def default_author() -> str | None:
    """Who adds a rule set when ``--author`` is not given: ``HEAPDB_AUTHOR``, else ``USER``."""
    return settings.AUTHOR.get() or os.environ.get("USER") or None


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def add_rule_set(
    database: Database,
    name: str,
    text: str,
    *,
    author: str | None = None,
    path: str | os.PathLike[str] | None = None,
    use_default_author: bool = True,
) -> RuleSetRecord:
    """Store ``text`` as the next version of the rule set ``name`` (version 1 for a new name).

    The text is parsed first (:func:`heapdb.loader.rules.parse_rules`; ``path`` names the file in
    its errors): a bad rule file raises :class:`~heapdb.errors.RuleError` and nothing is written.
    ``author`` None means :func:`default_author`, or no author with ``use_default_author=False``
    (the REST service: the user it runs as did not write the file).
    """
    from heapdb.loader.rules import parse_rules  # the rules package loads numpy; listing needs none of it

    check_name(name)
    if author is None and use_default_author:
        author = default_author()
    if author is not None and len(author) > MAX_AUTHOR_CHARS:
        raise ParameterError(f"the author is longer than {MAX_AUTHOR_CHARS} characters")
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise ParameterError(f"the rule file is {size:,} bytes; rule sets are at most {MAX_TEXT_BYTES:,}")
    parse_rules(text, path if path is not None else f"<rule set {name}>")
    ensure_schema(database)  # the (name, version) constraint that keeps two adds from taking one number
    properties = {
        "name": name,
        "text": text,
        "digest": digest_of(text),
        "author": author,
        "added_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }

    return RuleSetRecord.from_properties(create_numbered(database, "RuleSet", "version", properties, within="name"))


def list_rule_sets(database: Database, *, all_versions: bool = False) -> list[RuleSetRecord]:
    """The latest version of each rule set by name, or every version (by name, then version); without texts."""
    rows = database.read(
        "MATCH (r:RuleSet) "
        "WITH r.name AS name, collect(r) AS sets ORDER BY name "
        "WITH name, sets, size(sets) AS versions, reduce(m = 0, x IN sets | CASE WHEN x.version > m "
        "THEN x.version ELSE m END) AS latest "
        "UNWIND sets AS r WITH name, versions, latest, r WHERE $all OR r.version = latest "
        "RETURN r {.name, .version, .digest, .author, .added_at, versions: versions} AS r "
        "ORDER BY name, r.version",
        {"all": all_versions},
    )
    return [RuleSetRecord.from_properties(row["r"]) for row in rows]


def get_rule_set(database: Database, name: str, version: int | None = None) -> RuleSetRecord:
    """One version of a rule set with its text (the latest when ``version`` is None), or :class:`NotFound`."""
    check_name(name)
    check_version(version)
    rows = database.read(
        "MATCH (r:RuleSet {name: $name}) WITH r ORDER BY r.version DESC "
        "WITH collect(r) AS sets "
        "WITH sets, [x IN sets WHERE $version IS NULL OR x.version = $version] AS chosen "
        "RETURN size(sets) AS versions, [x IN sets | x.version] AS numbers, "
        "head([x IN chosen | x {.*}]) AS r",
        {"name": name, "version": version},
    )
    row = rows[0] if rows else {"versions": 0, "numbers": [], "r": None}
    if row["r"] is None:
        raise _not_found(name, version, row["numbers"])
    return RuleSetRecord.from_properties({**row["r"], "versions": row["versions"]})


def remove_rule_set(database: Database, name: str, version: int | None = None) -> int:
    """Delete one version of a rule set, or every version when ``version`` is None.

    Returns how many versions were deleted; an unknown name or version raises :class:`NotFound`.
    The numbers of the versions that stay do not change.
    """
    check_name(name)
    check_version(version)
    rows = database.write(
        "MATCH (r:RuleSet {name: $name}) WITH collect(r) AS sets "
        "WITH sets, [x IN sets WHERE $version IS NULL OR x.version = $version] AS chosen "
        "WITH [x IN sets | x.version] AS numbers, chosen "
        "FOREACH (x IN chosen | DETACH DELETE x) "
        "RETURN size(chosen) AS removed, numbers",
        {"name": name, "version": version},
    )
    removed = int(rows[0]["removed"]) if rows else 0
    if not removed:
        raise _not_found(name, version, rows[0]["numbers"] if rows else [])
    return removed


def _not_found(name: str, version: int | None, numbers: list[int]) -> NotFound:
    if not numbers:
        return NotFound(
            f"no rule set named {name!r} (see `heapdb rules list`; add one with `heapdb rules add FILE --name {name}`)"
        )
    listed = ", ".join(str(n) for n in sorted(numbers))
    return NotFound(f"rule set {name!r} has no version {version} (its versions: {listed})")


def rules_of_snapshot(database: Database, snapshot: Any) -> tuple[RuleSet | None, str, str | None]:
    """The team's rules a stored snapshot was loaded with, as they were at its load: its stored rule
    set's version, or its rule file when the file is still there unchanged (same digest). The rule
    set (None: none, or none that can be read as it was), how to name it, and why it cannot be read
    (None when it can, or when the load had no team rules). ``snapshot`` is a
    :class:`heapdb.loader.store.Snapshot`."""
    from heapdb.loader.rules import load_rules, parse_rules

    if snapshot.rules is None:
        return None, "", None
    if snapshot.rules_version is not None:
        try:
            stored = get_rule_set(database, snapshot.rules, snapshot.rules_version)
        except NotFound:
            return None, "", f"its rule set {snapshot.rules} version {snapshot.rules_version} is no longer stored"
        label = f"rule set {stored.name} version {stored.version}"
        return parse_rules(stored.text or "", label), label, None
    path = snapshot.rules
    try:
        with open(path, encoding="utf-8") as f:
            unchanged = digest_of(f.read()) == snapshot.rules_digest
    except (OSError, UnicodeDecodeError):
        unchanged = False
    if not (unchanged and os.path.isfile(path)):
        return None, "", f"its rule file {path} is gone or changed since its load"
    return load_rules(path), f"rule file {path}", None
