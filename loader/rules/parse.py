"""Rule files (TOML, docs/rules.md) -> :class:`~heapdb.loader.rules.model.RuleSet`.

Every problem raises :class:`~heapdb.errors.RuleError` naming the file, a line and what was expected
there. TOML syntax errors carry their own line; for the rest (an unknown rule kind, a bad regex, a
weight out of range, a missing key) :class:`_Locator` finds the line of the offending table or key in
the text, since ``tomllib`` returns plain dicts without positions.

Why this module is long: it checks every rule kind's keys and values, each problem with its line;
the checks share the locator and the error wording, which a split would pass between modules.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, cast

from heapdb.errors import ParameterError, RuleError
from heapdb.gatecheck import GATE_CHECKS
from heapdb.loader.graph import EDGE_KIND_NAMES, MAX_OWNS_WEIGHT, EdgeKind
from heapdb.loader.rules.model import (
    DEFAULT_GROUP,
    FIELD_COMPARISONS,
    FORMAT_VERSION,
    GROUP_NAME,
    LIFECYCLE_STATUSES,
    BucketRule,
    FieldTest,
    GateThresholds,
    Group,
    IgnoreRule,
    InternalRule,
    KnownLeakRule,
    LifecycleRule,
    Match,
    ObjectSelector,
    OwnsRule,
    Pattern,
    PatternKind,
    RedactRule,
    ReferenceSelector,
    Rule,
    RuleSet,
    Step,
    TransientRule,
    VerdictRule,
    WeakRule,
)
from heapdb.units import parse_threshold

MAX_WEIGHT = MAX_OWNS_WEIGHT

REFERENCE_KEYS = ("from", "edge", "path", "to")
OBJECT_KEYS = ("type", "name", "kind", "instance_of")
STEP_KEYS = ("name", "kind", "to")

# Rule kind -> the keys its tables take besides ``group`` (``tag`` is another name for ``bucket``).
RULE_KEYS: dict[str, tuple[str, ...]] = {
    "ignore": REFERENCE_KEYS,
    "weak": REFERENCE_KEYS,
    "owns": (*REFERENCE_KEYS, "weight"),
    "owned_by": ("object", "by", "edge", "path", "weight"),
    "bucket": ("name", "object", *REFERENCE_KEYS),
    "tag": ("name", "object", *REFERENCE_KEYS),
    "internal": ("object",),
    "transient": ("object",),
    "known_leak": ("reason", "link", "object", *REFERENCE_KEYS),
    "verdict": ("note", "object", *REFERENCE_KEYS),
    "redact": ("strings", "names", "values"),
    "lifecycle": ("class", "status", "when", "reason"),
}
RULE_KINDS = tuple(RULE_KEYS)
GATE_KEYS = ("max_growth", "min_bytes", "fail_on")
TOP_KEYS = ("version", "groups", "gate", *RULE_KINDS)

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column \d+\)\s*$")


def load_rules(path: str | os.PathLike[str]) -> RuleSet:
    """Read and parse the rule file at ``path``."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as e:
        raise RuleError(path, f"cannot read the rule file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise RuleError(path, f"not UTF-8 text (byte {e.start})") from None
    return parse_rules(text, path)


def parse_rules(text: str, path: str | os.PathLike[str] | None = None) -> RuleSet:
    """Parse a rule file's ``text``; ``path`` only names the file in errors."""
    return _Parser(text, None if path is None else os.fspath(path)).parse()


class _Locator:
    """Finds lines in a TOML text: top-level keys, the N-th ``[[kind]]`` table and keys inside it."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.headers: list[tuple[int, str]] = []  # (0-based line, header text without brackets)
        for i, line in enumerate(self.lines):
            m = re.match(r"\s*(\[\[?)\s*([^\]]*?)\s*\]\]?", line)
            if m:
                self.headers.append((i, m.group(2)))

    def _key_line(self, start: int, stop: int, keys: tuple[str, ...]) -> int | None:
        """The first line in [start, stop) assigning the longest dotted prefix of ``keys``."""
        for depth in range(len(keys), 0, -1):
            dotted = r"\s*\.\s*".join(re.escape(k) for k in keys[:depth])
            pattern = re.compile(rf"\s*{dotted}\s*[=.]")
            for i in range(start, stop):
                if pattern.match(self.lines[i]):
                    return i + 1
        return None

    def top(self, key: str) -> int | None:
        first_header = self.headers[0][0] if self.headers else len(self.lines)
        line = self._key_line(0, first_header, (key,))
        if line is not None:
            return line
        for i, header in self.headers:
            if header == key or header.startswith(key + "."):
                return i + 1
        return None

    def _block(self, kind: str, index: int) -> tuple[int, int] | None:
        """Lines of the ``index``-th ``[[kind]]`` table: (header line, end), 0-based."""
        seen = -1
        for k, (i, header) in enumerate(self.headers):
            if header == kind and self.lines[i].lstrip().startswith("[["):
                seen += 1
                if seen == index:
                    end = self.headers[k + 1][0] if k + 1 < len(self.headers) else len(self.lines)
                    return i, end
        return None

    def rule(self, kind: str, index: int, keys: tuple[str, ...] = ()) -> int | None:
        block = self._block(kind, index)
        if block is None:  # an inline array (kind = [...]): its first line is the best we can do
            return self.top(kind)
        header, end = block
        if keys:
            line = self._key_line(header + 1, end, keys)
            if line is not None:
                return line
        return header + 1

    def table(self, name: str, key: str) -> int | None:
        """The line of ``key`` in the single table ``[name]``."""
        for i, header in self.headers:
            if header == name and not self.lines[i].lstrip().startswith("[["):
                end = next((j for j, _ in self.headers if j > i), len(self.lines))
                return self._key_line(i + 1, end, (key,))
        return None

    def group(self, name: str, keys: tuple[str, ...] = ()) -> int | None:
        for i, header in self.headers:
            if header == f"groups.{name}":
                end = next((j for j, _ in self.headers if j > i), len(self.lines))
                return (self._key_line(i + 1, end, keys) if keys else None) or i + 1
        for i, header in self.headers:
            if header == "groups":
                end = next((j for j, _ in self.headers if j > i), len(self.lines))
                return self._key_line(i + 1, end, (name, *keys)) or i + 1
        return self.top("groups")


# Where a value sits: a function from the key path below the current rule to a line number.
Where = Callable[[tuple[str, ...]], int | None]


class _Parser:
    def __init__(self, text: str, path: str | None) -> None:
        self.text = text
        self.path = path
        self.locate = _Locator(text)
        self.alias: dict[str, str] = {}

    def label(self, keys: tuple[str, ...]) -> str:
        """A key path as the file spells it (owned_by's ``object`` and ``by`` are parsed as ``to``/``from``)."""
        return ".".join((self.alias.get(keys[0], keys[0]), *keys[1:]) if keys else keys)

    def fail(self, problem: str, line: int | None) -> NoReturn:
        raise RuleError(self.path, problem, line=line)

    def parse(self) -> RuleSet:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as e:
            message = str(e)
            m = _TOML_POSITION.search(message)
            self.fail(f"not valid TOML: {_TOML_POSITION.sub('', message)}", int(m.group(1)) if m else None)

        if "version" not in data:
            self.fail(f"expected `version = {FORMAT_VERSION}` at the top of the file", 1)
        version = data["version"]
        if not isinstance(version, int) or isinstance(version, bool):
            self.fail(
                f"version: expected the integer {FORMAT_VERSION}, got {_show(version)}", self.locate.top("version")
            )
        if version != FORMAT_VERSION:
            self.fail(
                f"unknown rule-file version {version} (this heapdb reads version {FORMAT_VERSION})",
                self.locate.top("version"),
            )
        for key in data:
            if key == "library_leak":  # heapdb's lifecycle files had their own kind for these
                self.fail(
                    "library_leak: a reference a library is known to leak through is a [[known_leak]] with "
                    '`from` (the holder: { instance_of = "CLASS" }, or a class object for a static field), '
                    "`edge` (the field) and `reason` (docs/rules.md, known_leak)",
                    self.locate.top(key),
                )
            if key not in TOP_KEYS:
                self.fail(
                    f"unknown rule kind {key!r} (expected one of: {', '.join(RULE_KINDS)}; or version, groups, gate)",
                    self.locate.top(key),
                )

        groups = self.groups(data.get("groups", {}))
        rules: list[tuple[int, Rule]] = []
        for kind in RULE_KINDS:
            if kind not in data:
                continue
            tables = data[kind]
            if isinstance(tables, dict):
                self.fail(
                    f"expected [[{kind}]] tables (an array of tables), got a single [{kind}] table",
                    self.locate.top(kind),
                )
            if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
                self.fail(f"{kind}: expected [[{kind}]] tables, got {_show(tables)}", self.locate.top(kind))
            for index, table in enumerate(tables):
                rule = self.rule(kind, index, table)
                rules.append((rule.line, rule))
        rules.sort(key=lambda pair: pair[0])  # file order across kinds (each kind's tables keep theirs)
        ordered = tuple(rule for _, rule in rules)

        declared = {g.name for g in groups}
        for rule in ordered:
            if rule.group != DEFAULT_GROUP and rule.group not in declared:
                declared.add(rule.group)
                groups.append(Group(rule.group))
        gate = self.gate(data["gate"]) if "gate" in data else None
        return RuleSet(version=version, rules=ordered, groups=tuple(groups), path=self.path, text=self.text, gate=gate)

    def gate(self, table: Any) -> GateThresholds:
        """``[gate]``: the thresholds ``heapdb gate`` takes when the command line does not give them."""
        line = self.locate.top("gate") or 1
        if not isinstance(table, dict):
            self.fail(f"gate: expected a [gate] table, got {_show(table)}", line)
        for key in table:
            if key not in GATE_KEYS:
                self.fail(
                    f"gate: unknown key {key!r} (expected {', '.join(GATE_KEYS)})", self.locate.table("gate", key)
                )

        def size(key: str) -> tuple[float, bool]:  # a size or a percentage, as `heapdb gate` takes them
            value, at = table[key], self.locate.table("gate", key) or line
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                self.fail(f"gate.{key}: expected a size such as 256KiB or 5%, got {_show(value)}", at)
            try:
                amount, percent = parse_threshold(value, f"gate.{key}")
            except ParameterError as e:
                self.fail(str(e), at)
            if key == "min_bytes" and (percent or amount < 1):
                self.fail(f"gate.min_bytes: expected a size of at least 1 byte such as 256KiB, got {value!r}", at)
            return amount, percent

        max_growth = str(table["max_growth"]).strip() if "max_growth" in table and size("max_growth") else None
        min_bytes = int(size("min_bytes")[0]) if "min_bytes" in table else None
        fail_on = table.get("fail_on")
        if fail_on is not None:
            checks, at = ", ".join(GATE_CHECKS), self.locate.table("gate", "fail_on")
            if not isinstance(fail_on, list) or not all(isinstance(c, str) for c in fail_on):
                self.fail(f"gate.fail_on: expected a list of checks ({checks}), got {_show(fail_on)}", at)
            for check in fail_on:
                if check not in GATE_CHECKS:
                    self.fail(f"gate.fail_on: unknown check {check!r} (expected {checks})", at)
            fail_on = tuple(dict.fromkeys(fail_on))
        return GateThresholds(line, max_growth, min_bytes, fail_on)

    def groups(self, value: Any) -> list[Group]:
        if not isinstance(value, dict):
            self.fail(
                f"groups: expected a table of [groups.NAME] tables, got {_show(value)}", self.locate.top("groups")
            )
        out = []
        for name, table in value.items():
            line = self.locate.group(name)
            if not GROUP_NAME.fullmatch(name):
                self.fail(f"group name {name!r}: expected letters, digits, '-' and '_' only", line)
            if not isinstance(table, dict):
                self.fail(f"groups.{name}: expected a table with `enabled` and/or `description`", line)
            for key in table:
                if key not in ("enabled", "description"):
                    self.fail(
                        f"groups.{name}: unknown key {key!r} (expected enabled, description)",
                        self.locate.group(name, (key,)),
                    )
            enabled = table.get("enabled", True)
            if not isinstance(enabled, bool):
                self.fail(
                    f"groups.{name}.enabled: expected true or false, got {_show(enabled)}",
                    self.locate.group(name, ("enabled",)),
                )
            description = table.get("description", "")
            if not isinstance(description, str):
                self.fail(
                    f"groups.{name}.description: expected a string, got {_show(description)}",
                    self.locate.group(name, ("description",)),
                )
            out.append(Group(name, enabled, description, line))
        return out

    # -- rules ----------------------------------------------------------------------------------

    def rule(self, kind: str, index: int, table: dict[str, Any]) -> Rule:
        def where(keys: tuple[str, ...]) -> int | None:
            return self.locate.rule(kind, index, keys)

        self.alias = {}
        line = where(()) or 1
        allowed = (*RULE_KEYS[kind], "group")
        for key in table:
            if key not in allowed:
                self.fail(f"{kind}: unknown key {key!r} (expected {', '.join(allowed)})", where((key,)))
        group = table.get("group", DEFAULT_GROUP)
        if "group" in table and (not isinstance(group, str) or not GROUP_NAME.fullmatch(group)):
            self.fail(
                f"{kind}: group: expected a name of letters, digits, '-' and '_', got {_show(group)}", where(("group",))
            )

        if kind == "owned_by":
            # owns, spelt from the owned object's side: `object` is the target, `by` the owner.
            if "object" not in table:
                self.fail("owned_by: missing `object` (the objects that are owned)", where(()))
            self.alias = renamed = {"to": "object", "from": "by"}
            table = {
                **{k: table[k] for k in ("edge", "path", "weight") if k in table},
                "to": table["object"],
                **({"from": table["by"]} if "by" in table else {}),
            }
            outer = where

            def where(keys: tuple[str, ...]) -> int | None:
                return outer((renamed.get(keys[0], keys[0]), *keys[1:]) if keys else keys)

        if kind in ("ignore", "weak", "owns", "owned_by"):
            references = self.references(kind, table, where, required=True)
            assert references is not None
            if kind == "ignore":
                return IgnoreRule(line, group, references)
            if kind == "weak":
                return WeakRule(line, group, references)
            weight = table.get("weight", 1)
            if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= MAX_WEIGHT:
                self.fail(
                    f"{kind}: weight must be an integer from 1 to {MAX_WEIGHT}, got {_show(weight)}", where(("weight",))
                )
            return OwnsRule(line, group, references, weight)

        if kind == "redact":
            return self.redact(table, line, group, where)
        if kind == "lifecycle":
            return self.lifecycle(table, line, group, where)
        objects = self.object_selector(kind, table["object"], where, ("object",)) if "object" in table else None
        if kind == "internal":
            if objects is None:
                self.fail("internal: missing `object` (the objects the runtime made for itself)", where(()))
            return InternalRule(line, group, objects)
        if kind == "transient":
            if objects is None:
                self.fail("transient: missing `object` (the objects first paths go through last)", where(()))
            return TransientRule(line, group, objects)
        references = self.references(kind, table, where, required=False)
        if kind in ("bucket", "tag"):
            name = self.text_value(kind, table, "name", where)
            if (objects is None) == (references is None):
                self.fail(
                    f"{kind}: expected either `object` (the objects themselves) or from/edge/path/to "
                    "(the targets of references), not both or neither",
                    line,
                )
            return BucketRule(line, group, name, objects, references)
        if objects is None and references is None:
            self.fail(f"{kind}: expected `object` and/or a path (from/edge/path/to) to say what it is about", line)
        if kind == "known_leak":
            reason = self.text_value(kind, table, "reason", where)
            link = table.get("link")
            if link is not None and (not isinstance(link, str) or not re.match(r"https?://\S+$", link)):
                self.fail(f"known_leak: link: expected an http(s) URL, got {_show(link)}", where(("link",)))
            return KnownLeakRule(line, group, reason, objects, references, link)
        note = self.text_value(kind, table, "note", where)
        return VerdictRule(line, group, note, objects, references)

    def redact(self, table: dict[str, Any], line: int, group: str, where: Where) -> RedactRule:
        strings, names = (
            self.match("redact", table[k], where, (k,)) if k in table else None for k in ("strings", "names")
        )
        values = table.get("values", False)
        if not isinstance(values, bool):
            self.fail(f"redact: values: expected true or false, got {_show(values)}", where(("values",)))
        if strings is None and names is None and not values:
            self.fail(
                "redact: expected `strings` (the string contents it covers), `names` (reference names) "
                "and/or `values = true`",
                line,
            )
        return RedactRule(line, group, strings, names, values)

    def lifecycle(self, table: dict[str, Any], line: int, group: str, where: Where) -> LifecycleRule:
        """``[[lifecycle]]``: ``class``, ``status``, ``when`` (field tests, all of which must hold) and
        an optional ``reason`` (made from the tests when missing: ``Activity#mDestroyed is true``)."""
        cls = self.text_value("lifecycle", table, "class", where)
        status = table.get("status")
        if status not in LIFECYCLE_STATUSES:
            self.fail(
                f"lifecycle: status: expected one of {', '.join(LIFECYCLE_STATUSES)}, got {_show(status)}",
                where(("status",)) if "status" in table else line,
            )
        reason = self.text_value("lifecycle", table, "reason", where) if "reason" in table else ""
        when = table.get("when", {})
        if not isinstance(when, dict):
            self.fail(f"lifecycle: when: expected a table of field tests, got {_show(when)}", where(("when",)))
        tests = tuple(self.field_tests(when, (), where))
        if not reason:
            simple = cls.rsplit(".", 1)[-1]
            reason = " and ".join(f"{simple}#{t.describe()}" for t in tests) or f"an instance of {cls}"
        return LifecycleRule(line, group, cls, status, tests, reason)

    def field_tests(self, when: dict[str, Any], prefix: tuple[str, ...], where: Where) -> list[FieldTest]:
        tests = []
        at = where(("when",))
        for key, value in when.items():
            path = (*prefix, *key.split("."))
            name = ".".join(path)
            if not all(path):
                self.fail(f"lifecycle: when: {name!r}: expected a field path such as mContext.mDestroyed", at)
            if isinstance(value, dict) and value and set(value) <= set(FIELD_COMPARISONS):
                if len(value) != 1:
                    self.fail(f"lifecycle: when: {name}: expected one comparison per test, got {sorted(value)}", at)
                ((op, operand),) = value.items()
                operand = cast(bool | int | float | str, operand)  # checked against the comparison just below
                wanted: tuple[type, ...] = (
                    (str,) if op == "instance_of" else (bool, int, float) if op == "not" else (int, float)
                )
                if not isinstance(operand, wanted) or (op in ("above", "below") and isinstance(operand, bool)):
                    expected = "a class name" if wanted == (str,) else "a number"
                    self.fail(f"lifecycle: when: {name}: {op} takes {expected}, got {_show(operand)}", at)
                tests.append(FieldTest(path, op, operand))
            elif isinstance(value, dict):  # a dotted key written as a nested table
                tests += self.field_tests(value, path, where)
            elif value in ("null", "not null"):
                tests.append(FieldTest(path, value))
            elif isinstance(value, (bool, int, float)):
                tests.append(FieldTest(path, "is", value))
            else:
                self.fail(
                    f'lifecycle: when: {name}: expected true, false, a number, "null", "not null" or a table of '
                    f"{', '.join(FIELD_COMPARISONS)}, got {_show(value)}",
                    at,
                )
        return tests

    def text_value(self, kind: str, table: dict[str, Any], key: str, where: Where) -> str:
        if key not in table:
            self.fail(f'{kind}: missing `{key} = "..."`', where(()))
        value = table[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{kind}: {key}: expected a non-empty string, got {_show(value)}", where((key,)))
        return value

    def references(self, kind: str, table: dict[str, Any], where: Where, *, required: bool) -> ReferenceSelector | None:
        present = [k for k in REFERENCE_KEYS if k in table]
        if not present:
            if required:
                self.fail(
                    f"{kind}: expected at least one of from, edge, path, to (which references it is about)", where(())
                )
            return None
        if "edge" in table and "path" in table:
            self.fail(f"{kind}: give `edge` (one reference) or `path` (a chain), not both", where(("path",)))
        source = self.object_selector(kind, table["from"], where, ("from",)) if "from" in table else None
        if "path" in table:
            chain = table["path"]
            if not isinstance(chain, list) or not chain:
                self.fail(
                    f"{kind}: path: expected a non-empty list of references, got {_show(chain)}", where(("path",))
                )
            steps = [self.step(kind, s, where, ("path",)) for s in chain]
        elif "edge" in table:
            steps = [self.step(kind, table["edge"], where, ("edge",))]
        else:
            steps = [Step()]
        if "to" in table:
            if steps[-1].to is not None:
                self.fail(
                    f"{kind}: give `{self.label(('to',))}` in the path's last reference or beside it, not both",
                    where(("to",)),
                )
            to = self.object_selector(kind, table["to"], where, ("to",))
            steps[-1] = Step(steps[-1].name, steps[-1].kind, to)
        return ReferenceSelector(source, tuple(steps))

    def step(self, kind: str, value: Any, where: Where, keys: tuple[str, ...]) -> Step:
        if isinstance(value, str):
            return Step(name=Match((Pattern(PatternKind.EXACT, value),)))
        if not isinstance(value, dict):
            self.fail(
                f"{kind}: {self.label(keys)}: expected an edge name or a table with name, kind, to; got {_show(value)}",
                where(keys),
            )
        for key in value:
            if key not in STEP_KEYS:
                self.fail(
                    f"{kind}: {self.label(keys)}: unknown key {key!r} (expected name, kind, to)", where((*keys, key))
                )
        name = self.match(kind, value["name"], where, (*keys, "name")) if "name" in value else None
        edge_kinds = self.edge_kinds(kind, value["kind"], where, (*keys, "kind")) if "kind" in value else None
        to = self.object_selector(kind, value["to"], where, (*keys, "to")) if "to" in value else None
        return Step(name, edge_kinds, to)

    def edge_kinds(self, kind: str, value: Any, where: Where, keys: tuple[str, ...]) -> frozenset[EdgeKind]:
        names = value if isinstance(value, list) else [value]
        if not names or not all(isinstance(n, str) and n in EDGE_KIND_NAMES for n in names):
            self.fail(
                f"{kind}: {self.label(keys)}: expected an edge kind or a list of them ({', '.join(EDGE_KIND_NAMES)}), "
                f"got {_show(value)}",
                where(keys),
            )
        return frozenset(EdgeKind(EDGE_KIND_NAMES.index(n)) for n in names)

    def object_selector(self, kind: str, value: Any, where: Where, keys: tuple[str, ...]) -> ObjectSelector:
        if isinstance(value, str):  # the shorthand: a type's exact name
            return ObjectSelector(type=Match((Pattern(PatternKind.EXACT, value),)))
        if not isinstance(value, dict) or not value:
            self.fail(
                f"{kind}: {self.label(keys)}: expected a type name or a table with type, name, kind and/or instance_of, "
                f"got {_show(value)}",
                where(keys),
            )
        for key in value:
            if key not in OBJECT_KEYS:
                self.fail(
                    f"{kind}: {self.label(keys)}: unknown key {key!r} (expected type, name, kind, instance_of)",
                    where((*keys, key)),
                )
        fields = {k: self.match(kind, value[k], where, (*keys, k)) for k in OBJECT_KEYS if k in value}
        return ObjectSelector(**fields)

    def match(self, kind: str, value: Any, where: Where, keys: tuple[str, ...]) -> Match:
        items = value if isinstance(value, list) else [value]
        if not items:
            self.fail(f"{kind}: {self.label(keys)}: expected at least one pattern, got an empty list", where(keys))
        return Match(tuple(self.pattern(kind, item, where, keys) for item in items))

    def pattern(self, kind: str, value: Any, where: Where, keys: tuple[str, ...]) -> Pattern:
        label = self.label(keys)
        if isinstance(value, str):
            return Pattern(PatternKind.EXACT, value)
        if isinstance(value, dict) and len(value) == 1:
            ((form, text),) = value.items()
            if form in ("glob", "regex") and isinstance(text, str):
                pattern = Pattern(PatternKind(form), text)
                try:
                    pattern.compiled  # noqa: B018 (compiles, and caches, the regex)
                except re.error as e:
                    self.fail(f"{kind}: {label}: bad regex {text!r}: {e.msg} at position {e.pos}", where(keys))
                return pattern
        self.fail(
            f"{kind}: {label}: expected a string (exact), {{ glob = \"...\" }}, {{ regex = '...' }} "
            f"or a list of these, got {_show(value)}",
            where(keys),
        )


def _show(value: Any) -> str:
    """A TOML value for an error message: its type, and the value when it is short."""
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "a list", dict: "a table"}
    kind = next((v for k, v in kinds.items() if isinstance(value, k)), type(value).__name__)
    text = repr(value)
    return f"{kind} {text}" if len(text) <= 40 and not isinstance(value, (list, dict)) else kind
