"""Redaction: the secrets a heap holds (tokens, e-mail addresses, keys, request bodies) kept out of
the store and out of every file heapdb writes.

A redacting ``heapdb load``, ``convert`` or ``push`` replaces, in the graph it has read and before
anything is written:

- the contents of the string objects a :class:`Redaction` covers (all of them, or those matching
  its patterns) by a placeholder, ``[redacted 1600 chars 3f2a9c0d1e5b7a64]``: the content's length
  in characters and a keyed hash of it (:meth:`Redaction.digest`, a MAC of the content hashes the
  duplicate-strings inspection computes). Equal contents get equal placeholders, however a
  concatenation splits them, so duplicate strings still group, count and weigh as before; without
  the key, a short secret cannot be found by hashing guesses;
- the names of references matching its ``names`` patterns (a map keyed by e-mail addresses; by
  default, the names no program would write as a field name, :data:`DATA_NAMES`);
- with ``values``, every primitive value (a Java object's ``int`` fields, an array's elements, and
  so every Java string's characters: its duplicate strings show placeholders);
  with string patterns, the ``char[]`` and ``byte[]`` arrays whose text they cover (a Java
  string's contents live there).

Types, field names, function names and source locations stay: they are the program, not its data.
The duplicate strings a load stores are worked out from the whole contents first, then their
texts get the same placeholders (:func:`redacted_strings`), so their answers equal an unredacted
load's but for the text, and a redacted file's (:func:`redact_graph`) equal both.
The duplicate objects are worked out from the whole contents too, then shown as the redacted graph
shows them, keyed by a keyed hash (:func:`redacted_objects`).

The key comes from ``HEAPDB_REDACT_KEY``, else from a key file made once in heapdb's config
directory; a team sets the variable everywhere it loads so that its builds hash alike. A graph
redacted says so in ``meta["redacted"]`` (what was covered, and the key's id), which snap.bin files
keep, so a service that requires redaction (``HEAPDB_REDACT=always``) can tell a redacted upload.
Redacting again changes nothing that is a placeholder already.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import struct
from dataclasses import dataclass, field

import numpy as np

from heapdb import config, settings
from heapdb.errors import ConfigError
from heapdb.loader.formats import StringKinds, named
from heapdb.loader.formats.text import redacted_parts, redacted_text
from heapdb.loader.graph import NUMERIC_NAME_KINDS, REDACTED, HeapGraph
from heapdb.loader.inspections import strings
from heapdb.loader.inspections.objects import DuplicateObjects, shown_as
from heapdb.loader.inspections.strings import DuplicateStrings
from heapdb.loader.rules.model import Match, Pattern, PatternKind, RuleSet
from heapdb.loader.values import TYPES, FieldValues

KEY_FILE = "redaction.key"
EVERY_STRING = Match((Pattern(PatternKind.GLOB, "*"),))
# The reference names a plain --redact covers: those a program would not write as a field name.
# A name with a character outside identifiers (an e-mail address, a URL, a path, a key with dashes
# or dots: a map keyed by data), or a long run of letters and digits with both (a token, an id),
# but not the runtime's own "(...)" and "<symbol ...>" names.
DATA_NAMES = Match(
    (
        Pattern(PatternKind.REGEX, r"(?s)(?![(<]).*[^A-Za-z0-9_$].*"),
        Pattern(PatternKind.REGEX, r"(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9_$]{16,}"),
    )
)
_CODES = {name: code for code, (name, _) in TYPES.items()}
_TEXT_ARRAYS = np.array([_CODES["char"], _CODES["byte"]], dtype=np.uint8)  # where a Java string's characters are
_NUMERIC = np.array(sorted(NUMERIC_NAME_KINDS), dtype=np.uint8)  # references named by a number, not a text


@dataclass(frozen=True)
class Redaction:
    """What a redacting load replaces (see the module docstring), and the key its hashes use."""

    strings: Match | None = None  # string contents covered; None: none
    names: Match | None = None  # reference names covered; None: none
    values: bool = False  # every primitive value
    key: bytes = field(default=b"", repr=False)

    def covers(self, text: str) -> bool:
        """Whether a string's content is replaced (a placeholder is one already; empty text tells nothing)."""
        return bool(text) and self.strings is not None and _matches(self.strings, text) and not _placeholder(text)

    def covers_name(self, text: str) -> bool:
        return self.names is not None and _matches(self.names, text) and not _placeholder(text)

    def digest(self, h1: int, h2: int, length: int) -> str:
        """The keyed hash of a content, from its two hashes and length (:func:`strings.contents`):
        64 bits of BLAKE2b in its keyed mode (a MAC), in hex."""
        return hashlib.blake2b(struct.pack("<qqq", h1, h2, length), key=self.key, digest_size=8).hexdigest()

    def placeholder(self, h1: int, h2: int, length: int) -> str:
        return redacted_text(length, self.digest(h1, h2, length))

    def placeholders(self, h1: np.ndarray, h2: np.ndarray, length: np.ndarray) -> list[str]:
        """:meth:`placeholder` of each content (a million take about a second)."""
        blake2b, pack, key = hashlib.blake2b, struct.pack, self.key
        return [
            redacted_text(n, blake2b(pack("<qqq", a, b, n), key=key, digest_size=8).hexdigest())
            for a, b, n in zip(h1.tolist(), h2.tolist(), length.tolist(), strict=True)
        ]

    @property
    def key_id(self) -> str:
        """Names the key without giving it away: equal ids, comparable hashes."""
        return hashlib.blake2b(b"heapdb redaction key id", key=self.key, digest_size=6).hexdigest()

    def described(self) -> str:
        """``meta["redacted"]``: JSON text of what was covered and the key's id."""
        return json.dumps(
            {
                "strings": None if self.strings is None else str(self.strings),
                "names": None if self.names is None else str(self.names),
                "values": self.values,
                "key": self.key_id,
            }
        )


def _matches(match: Match, text: str) -> bool:
    return match is EVERY_STRING or match.matches(text)


def _placeholder(text: str) -> bool:
    return redacted_parts(text) is not None


def is_redacted(graph: HeapGraph) -> bool:
    """Whether ``graph`` says it was redacted (here or by whoever wrote its file)."""
    return bool(graph.meta.get(REDACTED))


def redaction_key() -> bytes:
    """``HEAPDB_REDACT_KEY``, else the key file in heapdb's config directory (made once, readable by
    its owner only)."""
    given = settings.REDACT_KEY.get() or _key_file()
    # BLAKE2b takes keys of at most 64 bytes: any text the variable holds becomes 32.
    return hashlib.sha256(given.encode("utf-8")).digest()


def _key_file() -> str:
    path = config.config_dir() / KEY_FILE
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # made by another process just now
                return path.read_text().strip()
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
        return path.read_text().strip()
    except OSError as e:
        raise ConfigError(
            f"cannot keep the redaction key in {path}: {e.strerror or e}; set HEAPDB_REDACT_KEY"
        ) from None


def required() -> bool:
    """Whether ``HEAPDB_REDACT=always`` asks every load, convert and push to redact."""
    return settings.REDACT.get() == "always"


def chosen(asked: bool, rule_set: RuleSet | None) -> Redaction | None:
    """The redaction a command applies: the ``[[redact]]`` rules of ``rule_set`` when it has any;
    else everything (every string's contents, reference names that are data, :data:`DATA_NAMES`,
    and every primitive value) when ``--redact`` was ``asked`` or ``HEAPDB_REDACT=always`` says so;
    else None."""
    rules = () if rule_set is None else rule_set.redactions
    if not rules and not (asked or required()):
        return None
    if not rules:
        return Redaction(strings=EVERY_STRING, names=DATA_NAMES, values=True, key=redaction_key())
    contents = tuple(p for r in rules if r.strings is not None for p in r.strings.patterns)
    names = tuple(p for r in rules if r.names is not None for p in r.names.patterns)
    return Redaction(
        strings=Match(contents) if contents else None,
        names=Match(names) if names else None,
        values=any(r.values for r in rules),
        key=redaction_key(),
    )


def redact_graph(graph: HeapGraph, redaction: Redaction) -> HeapGraph:
    """A copy of ``graph`` with what ``redaction`` covers replaced (the arrays it does not change
    are shared); ``meta["redacted"]`` says what was covered."""
    table = list(graph.strings)
    name = _redacted_names(graph, redaction, table)
    edge_name = _redacted_edge_names(graph, redaction, table)
    _forget(table, graph, name, edge_name)
    return dataclasses.replace(
        graph,
        strings=table,
        name=name,
        edge_name=edge_name,
        values=_redacted_values(graph.values, redaction),
        meta={**graph.meta, REDACTED: redaction.described()},
    )


def _string_kinds(graph: HeapGraph) -> StringKinds | None:
    declared = named(graph.meta.get("format"))
    return None if declared is None else declared.strings


def _redacted_names(graph: HeapGraph, redaction: Redaction, table: list[str]) -> np.ndarray:
    """The string objects' names, those covered pointing to their whole content's placeholder,
    appended to ``table`` once per content. New entries, not the old ones rewritten: a type or
    field name may share a string's entry."""
    kinds = _string_kinds(graph)
    # A Java string's name is not its content: its value array's elements are (_redacted_values).
    if redaction.strings is None or kinds is None or kinds.instances:
        return graph.name
    found = strings.contents(graph, kinds)
    nodes = np.flatnonzero((found.role != strings.OTHER) & (found.length > 0))
    placeholders = [i for i in np.unique(graph.name[nodes]).tolist() if _placeholder(graph.strings[i])]
    if placeholders:  # a file redacted before: what is a placeholder stays one
        nodes = nodes[~np.isin(graph.name[nodes], placeholders)]
    if nodes.size and redaction.strings is not EVERY_STRING:
        texts = strings.text_of(graph, nodes.tolist(), found.length[nodes].tolist(), kinds)
        nodes = nodes[np.array([redaction.covers(t) for t in texts], dtype=np.bool_)]
    if not nodes.size:
        return graph.name
    # One placeholder per distinct content: h1 < 2^31 and h2 < 2^30 make one int64 key with room.
    key, length = found.h1[nodes] * (1 << 30) + found.h2[nodes], found.length[nodes]
    order = np.lexsort((length, key))
    new = np.ones(order.size, dtype=np.bool_)
    new[1:] = (np.diff(key[order]) != 0) | (np.diff(length[order]) != 0)
    which = np.empty(order.size, dtype=np.int64)
    which[order] = np.cumsum(new) - 1
    heads = nodes[order[new]]
    first = len(table)
    table.extend(redaction.placeholders(found.h1[heads], found.h2[heads], found.length[heads]))
    name = graph.name.copy()
    name[nodes] = (first + which).astype(name.dtype)
    return name


def _redacted_edge_names(graph: HeapGraph, redaction: Redaction, table: list[str]) -> np.ndarray:
    """The references' names, those ``redaction.names`` covers pointing to placeholders appended to
    ``table``, once per name."""
    if redaction.names is None:
        return graph.edge_name
    named_edges = np.flatnonzero(~np.isin(graph.edge_kind, _NUMERIC))
    used = np.unique(graph.edge_name[named_edges]).tolist()
    covered = [i for i in used if redaction.covers_name(graph.strings[i])]
    if not covered:
        return graph.edge_name
    lookup = np.arange(len(table) + len(covered), dtype=np.int64)
    lookup[covered] = np.arange(len(table), len(table) + len(covered))
    table.extend(redaction.placeholders(*strings.text_hashes([graph.strings[i] for i in covered])))
    edge_name = graph.edge_name.copy()
    edge_name[named_edges] = lookup[graph.edge_name[named_edges]].astype(edge_name.dtype)
    return edge_name


def _forget(table: list[str], graph: HeapGraph, name: np.ndarray, edge_name: np.ndarray) -> None:
    """Blank the entries of ``table`` that only redacted names used: no writer may reach them."""
    before = len(graph.strings)
    if len(table) == before:
        return
    numeric = np.isin(graph.edge_kind, _NUMERIC)
    used = np.zeros(len(table), dtype=np.bool_)
    used[name] = True
    used[graph.type] = True
    used[edge_name[~numeric]] = True
    was = np.zeros(len(table), dtype=np.bool_)
    was[graph.name] = True
    was[graph.edge_name[~numeric]] = True
    for index in np.flatnonzero(was[:before] & ~used[:before]).tolist():
        table[index] = ""


def _redacted_values(values: FieldValues | None, redaction: Redaction) -> FieldValues | None:
    """No values at all under ``values``; under string patterns, the ``char[]`` and ``byte[]``
    arrays whose text they cover lose theirs (an element type of 0 stores nothing)."""
    if values is None or redaction.values:
        return None
    if redaction.strings is None:
        return values
    text_arrays = np.flatnonzero(np.isin(values.element, _TEXT_ARRAYS))
    if redaction.strings is EVERY_STRING:
        covered = text_arrays
    else:
        covered = np.array([k for k in text_arrays.tolist() if _array_covered(values, k, redaction)], dtype=np.int64)
    if not covered.size:
        return values
    element = values.element.copy()
    element[covered] = 0
    return dataclasses.replace(values, element=element)


def _array_covered(values: FieldValues, k: int, redaction: Redaction) -> bool:
    """Whether a ``char[]`` or ``byte[]``'s whole text is covered: a char[] as UTF-16, a byte[] as
    Latin-1 or as UTF-16 (a compact Java string's two codings)."""
    start, count = int(values.offset[k]), int(values.length[k])
    if int(values.element[k]) == _CODES["char"]:
        texts = [values.buf[start : start + 2 * count].tobytes().decode("utf-16-be", "surrogatepass")]
    else:
        raw = values.buf[start : start + count].tobytes()
        texts = [raw.decode("latin-1")]
        if len(raw) % 2 == 0:
            texts.append(raw.decode("utf-16-le", "replace"))
    return any(redaction.covers(t) for t in texts)


def redacted_strings(report: DuplicateStrings, graph: HeapGraph, redaction: Redaction) -> DuplicateStrings:
    """``report`` (worked out from ``graph``'s whole contents) with the contents ``redaction``
    covers shown as their placeholders and keyed by their hashes: the rows a redacted file gives."""
    kinds = _string_kinds(graph)
    # A Java string's characters are primitive values (its value array's): ``values`` covers them all.
    every = redaction.strings is EVERY_STRING or (kinds is not None and bool(kinds.instances) and redaction.values)
    if kinds is None or (redaction.strings is None and not every):
        return report
    examples = np.flatnonzero(np.isin(graph.ids, [r.example_id for r in report.rows]))
    node_of = dict(zip(graph.ids[examples].tolist(), examples.tolist(), strict=True))
    lengths = [strings.key_parts(r.key)[2] for r in report.rows]
    texts = None if every else strings.text_of(graph, [node_of[r.example_id] for r in report.rows], lengths, kinds)
    rows = []
    for i, row in enumerate(report.rows):
        h1, h2, length = strings.key_parts(row.key)
        if redacted_parts(row.value) is None and length > 0 and (texts is None or redaction.covers(texts[i])):
            digest = redaction.digest(h1, h2, length)
            row = dataclasses.replace(row, value=redacted_text(length, digest), key=f"{digest}-{length}")
        rows.append(row)
    return dataclasses.replace(report, rows=tuple(rows))


def redacted_objects(report: DuplicateObjects, redacted: HeapGraph, redaction: Redaction) -> DuplicateObjects:
    """``report`` (worked out from the whole contents, before redaction) with each content's text
    read from the ``redacted`` graph (its strings' placeholders, no values where they were dropped)
    and its key a keyed hash: a short secret in an array or a property cannot be found from the
    key by hashing guesses. The figures stay an unredacted load's."""

    def keyed(key: str) -> str:
        h1, h2, size = strings.key_parts(key)
        return f"{redaction.digest(h1, h2, size)}-{size}"

    return shown_as(report, redacted, keyed)
