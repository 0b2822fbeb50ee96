"""Every setting heapdb reads, declared once: its name, default, parser (with bounds), help, and
whether it is a secret.

Two kinds, one shape (:class:`Setting`):

- :class:`Variable`: an environment variable (``HEAPDB_*``, and ``NEO4J_*`` for a Neo4j of one's
  own). :meth:`Variable.get` reads it when asked, never at import, so a test or a child process
  that changes the environment is heard.
- :class:`Key`: a key of a section of the config file (:func:`heapdb.config.config_file`), which
  :mod:`heapdb.config` reads and hands over (:meth:`Key.get`).

A value that does not parse is a :class:`~heapdb.errors.ConfigError` naming the variable (or the
file and key) and what was expected, whoever reads it. This is the one module that reads a
``HEAPDB_*`` variable: elsewhere the code asks the setting (``settings.MAX_LOADS.value()``) or
names it by ``.name`` (``tests/test_settings.py`` fails on a literal name outside this module).

The settings reference in ``docs/operations.md`` is generated from :data:`SETTINGS`
(``python -m heapdb.settings docs/operations.md``); a test fails when it is stale.

Why this module is long: every setting is declared here, once, with its parser and help; one place
to read them all is the point of it.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from heapdb import docblock
from heapdb.errors import ConfigError
from heapdb.units import human_bytes

T = TypeVar("T")


# --- parsers: text -> value, or ValueError; ``expected`` says what a good value looks like


@dataclass(frozen=True)
class Parser(Generic[T]):
    """How a setting's text becomes its value: ``convert`` raises ValueError on a bad one, and
    ``expected`` says what a good one looks like (in errors and in the reference)."""

    expected: str
    convert: Callable[[str], T]
    show: Callable[[T], str] = str  # a value as the reference shows it


def _whole_number(text: str) -> int:
    text = text.strip()
    if not (text.isascii() and text.isdigit()):  # no sign, no "1_000", no "1e3"
        raise ValueError(text)
    return int(text)


def whole(low: int, high: int | None = None, unit: str = "") -> Parser[int]:
    """A whole number from ``low`` to ``high`` (no upper bound when None)."""

    def convert(text: str) -> int:
        value = _whole_number(text)
        if value < low or (high is not None and value > high):
            raise ValueError(text)
        return value

    what = f"a whole number{' of ' + unit if unit else ''}"
    bound = f" from {low} to {high}" if high is not None else f", {low} or more"
    return Parser(what + bound, convert)


def byte_count(low: int) -> Parser[int]:
    """A number of bytes, at least ``low``; shown with its size in words (``4294967296 (4.0 GiB)``)."""
    parser = whole(low, unit="bytes")
    return Parser(parser.expected, parser.convert, lambda n: f"{n} ({human_bytes(n)})")


def seconds(low: float, high: float | None = None, *, above: bool = False) -> Parser[float]:
    """Seconds from ``low`` (or more than ``low`` when ``above``) to ``high``."""

    def convert(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value < low or (above and value == low) or (high is not None and value > high):
            raise ValueError(text)
        return value

    if high is not None:
        expected = f"seconds from {low:g} to {high:g}"
    else:
        expected = f"seconds, more than {low:g}" if above else f"seconds, at least {low:g}"
    return Parser(expected, convert, lambda v: f"{v:g}")


def text(expected: str = "any text") -> Parser[str]:
    return Parser(expected, str)


def path() -> Parser[Path]:
    return Parser("a path", Path)


def globs() -> Parser[tuple[str, ...]]:
    """Comma-separated ``fnmatch`` globs; blanks between commas are dropped."""
    return Parser(
        "comma-separated globs, e.g. `release-*,v*`",
        lambda t: tuple(g.strip() for g in t.split(",") if g.strip()),
        ",".join,
    )


_MEMORY = re.compile(r"[1-9][0-9]*[kKmMgG]?")


def memory() -> Parser[str]:
    """A Java memory size as ``-Xmx`` and Neo4j's settings take it: ``512m``, ``4g``."""

    def convert(text: str) -> str:
        if not _MEMORY.fullmatch(text.strip()):
            raise ValueError(text)
        return text.strip()

    return Parser("a memory size, e.g. `512m` or `4g`", convert)


def one_of(choices: Mapping[str, Any]) -> Parser[str]:
    """One of the names ``choices`` declares."""

    def convert(text: str) -> str:
        if text.strip() not in choices:
            raise ValueError(text)
        return text.strip()

    return Parser("one of " + ", ".join(f"`{name}`" for name in choices), convert)


_OFF = ("0", "", "false", "no")


def switch() -> Parser[bool]:
    """On or off: ``0``, ``false``, ``no`` and empty are off, anything else on (never refused)."""
    return Parser("1 or 0 (0, false, no or empty: off; anything else: on)", lambda t: t not in _OFF)


# --- settings


@dataclass(frozen=True, kw_only=True)
class Setting(Generic[T]):
    """One setting. ``default`` is the value when it is not set (None: unset means off, or it is
    computed, which ``default_text`` then says); ``blank_is_unset`` makes an empty value count as
    unset, as it does for all but a few that take the empty text as a value."""

    name: str
    parse: Parser[T]
    help: str
    default: T | None = None
    default_text: str = ""
    secret: bool = False
    blank_is_unset: bool = True

    @property
    def fallback(self) -> T:
        """The default, for a setting that has one (a mistake in this module otherwise)."""
        if self.default is None:
            raise TypeError(f"{self.name} has no default")
        return self.default

    def shown_default(self) -> str:
        if self.default_text:
            return self.default_text
        return "unset" if self.default is None else self.parse.show(self.default)

    def _parsed(self, given: str, where: str) -> T | None:
        if self.blank_is_unset and not given.strip():
            return self.default
        try:
            return self.parse.convert(given)
        except ValueError:
            shown = "(secret)" if self.secret else repr(given)
            raise ConfigError(f"{where}={shown}: expected {self.parse.expected}") from None


@dataclass(frozen=True, kw_only=True)
class Variable(Setting[T]):
    """An environment variable."""

    def get(self) -> T | None:
        """The value, or the default when the variable is not set."""
        given = os.environ.get(self.name)
        return self.default if given is None else self._parsed(given, self.name)

    def value(self) -> T:
        """The value, for a variable that has a default (or must be set)."""
        got = self.get()
        if got is None:
            raise ConfigError(f"{self.name} is not set: expected {self.parse.expected}")
        return got


@dataclass(frozen=True, kw_only=True)
class Key(Setting[T]):
    """A key of the config file's ``[section]``."""

    section: str

    def get(self, values: Mapping[str, Any], file: Path) -> T | None:
        """The value in ``values`` (the section as read from ``file``), or the default."""
        given = values.get(self.name)
        if given is None:
            return self.default
        return self._parsed(str(given), f"{file}: [{self.section}] {self.name}")

    def value(self, values: Mapping[str, Any], file: Path) -> T:
        """The value, for a key that has a default (or must be there)."""
        got = self.get(values, file)
        if got is None:
            raise ConfigError(f"{file}: [{self.section}] has no {self.name}: expected {self.parse.expected}")
        return got


# Every setting in this module is a constant below, in the order the reference lists them.

# The REST service and the MCP server (`heapdb serve`, `heapdb mcp`)
TIMEOUT_RANGE = (0.1, 3600.0)  # seconds a query may run: this variable's bounds and --timeout's
QUERY_TIMEOUT = Variable(
    name="HEAPDB_QUERY_TIMEOUT",
    parse=seconds(*TIMEOUT_RANGE),
    default=30.0,
    help="Seconds each query of the service (and of `heapdb mcp`) may run, unless `--timeout` says otherwise.",
)
API_TOKEN = Variable(
    name="HEAPDB_API_TOKEN",
    parse=text(),
    secret=True,
    default_text="unset: no authentication, and only loopback addresses are served",
    help="The bearer token every `/api` call but `/api/health` (and every MCP request) must send; "
    "pages ask for it once and keep it in a cookie.",
)
API_WRITE_TOKEN = Variable(
    name="HEAPDB_API_WRITE_TOKEN",
    parse=text(),
    secret=True,
    default_text="unset: the service takes no writes",
    help="The bearer token writes need (uploads, cancels, rule sets); it reads too. `heapdb push` sends it.",
)
SCOPED_TOKENS = Variable(
    name="HEAPDB_SCOPED_TOKENS",
    parse=switch(),
    default=False,
    default_text="off: only the environment's tokens",
    help="On: the service and `heapdb mcp` also take the tokens `heapdb tokens create` makes, each reading and "
    "writing only the tags its patterns cover, and every `/api` call needs a token even without "
    "HEAPDB_API_TOKEN (docs/operations.md, Tokens per team).",
)
REDACT_MODES = {
    "off": "redact only when a command is given --redact or [[redact]] rules",
    "always": "redact every load",
}
REDACT = Variable(
    name="HEAPDB_REDACT",
    parse=one_of(REDACT_MODES),
    default="off",
    help="`always`: every `heapdb load`, `convert` and `push` redacts (as with `--redact`), and the service "
    "refuses uploads that do not come redacted (`heapdb push --redact`); docs/rules.md, Redaction.",
)
REDACT_KEY = Variable(
    name="HEAPDB_REDACT_KEY",
    parse=text(),
    secret=True,
    default_text="a key made once in `$XDG_CONFIG_HOME/heapdb/redaction.key`",
    help="The key of redacted strings' hashes; set the same one wherever a team loads, so that equal "
    "contents hash alike across builds.",
)
SPOOL_DIR = Variable(
    name="HEAPDB_SPOOL_DIR",
    parse=path(),
    default_text="`$XDG_DATA_HOME/heapdb/spool`",
    help="Where uploaded snapshots wait until their load ends: on a disk with room for the largest "
    "upload times `HEAPDB_MAX_LOADS`.",
)
MAX_LOADS = Variable(
    name="HEAPDB_MAX_LOADS",
    parse=whole(1, 64),
    default=1,  # each load holds a whole snapshot's arrays in memory
    help="Loads the service runs at once; more wait, queued.",
)
MAX_QUEUED = Variable(
    name="HEAPDB_MAX_QUEUED",
    parse=whole(1, 10_000),
    default=16,  # each waits with its snapshot on the spool's disk
    help="Load jobs queued or running at once; an upload past it is refused (503, `Retry-After`).",
)
MAX_UPLOAD_BYTES = Variable(
    name="HEAPDB_MAX_UPLOAD_BYTES",
    parse=byte_count(1),
    default=16 << 30,
    help="The largest upload, counted as sent and decompressed (413 past it); also the largest stream "
    "`heapdb receive` takes.",
)
MIN_FREE_BYTES = Variable(
    name="HEAPDB_MIN_FREE_BYTES",
    parse=byte_count(0),
    # A load's Neo4j store grows by several times the snapshot's size, and a full disk stops Neo4j
    # for everyone, not only this upload.
    default=4 << 30,
    help="Free disk an upload must leave on the spool's file system (507 otherwise); 0 switches the check off.",
)
PRUNE_KEEP_LAST = Variable(
    name="HEAPDB_PRUNE_KEEP_LAST",
    parse=whole(1),
    default_text="unset: no scheduled pruning",
    help="Prune on a schedule, keeping the newest N snapshots full; setting it turns scheduled pruning on.",
)
PRUNE_KEEP_TAGS = Variable(
    name="HEAPDB_PRUNE_KEEP_TAGS",
    parse=globs(),
    default=(),
    default_text="none",
    help="Tags the scheduled prune keeps full.",
)
PRUNE_EVERY = Variable(
    name="HEAPDB_PRUNE_EVERY",
    parse=seconds(0.0, above=True),
    default=3600.0,
    help="Seconds between scheduled prunes (the first runs at start-up).",
)
ANSWER_WAIT = Variable(
    name="HEAPDB_ANSWER_WAIT",
    parse=seconds(0.0, above=True),
    # Below a client's usual timeout (10 s for heapdb's own, 30 s for most), so that a slow answer
    # comes back as a 503 that says why, while every other request keeps being answered.
    default=5.0,
    help="Seconds a service request waits for an answer that is still being worked out (the first comparison "
    "of two large snapshots, say) before it answers 503 with Retry-After; the work goes on and the next "
    "request for it is answered from it.",
)
REQUESTS_AT_ONCE = Variable(
    name="HEAPDB_REQUESTS_AT_ONCE",
    parse=whole(0, 1024),
    # Measured on 2 cores with 50 clients (docs/benchmarks.md, "Requests that take turns"): 4 at once
    # answered 282 requests a second with a p99 of 328 ms, 8 at once 256 and 358 ms, and no limit
    # (up to 40 threads) 234 and 430 ms.
    default_text="twice the machine's cores",
    help="How many requests the service answers at once; the others wait their turn, first come, first "
    "served, so that a costly question does not slow every other one down with it (the health check "
    "never waits). 0: no limit.",
)
WARM_UP = Variable(
    name="HEAPDB_WARM_UP",
    parse=seconds(0.0, 3600.0),
    default=60.0,
    help="Seconds the service may spend warming up as it starts, before its port opens, so that the first "
    "answers after a restart come about as fast as later ones: the common questions asked once about the "
    "newest snapshots, then those snapshots read into Neo4j's page cache; 0 switches it off, and with it the "
    "look-ahead (the cross-snapshot reports worked out as snapshots change).",
)

# Clients and loads
RECEIVE_TIMEOUT = Variable(
    name="HEAPDB_RECEIVE_TIMEOUT",
    parse=seconds(0.0, above=True),
    # A producer writes as it walks the heap, inside a stop-the-world pause: a pause of minutes
    # means it is gone, not slow.
    default=120.0,
    help="Seconds `heapdb receive` waits for a stream's next bytes before it refuses the stream.",
)
LOAD_NICENESS = Variable(
    name="HEAPDB_LOAD_NICENESS",
    parse=whole(0, 19),
    # A load is batch work of seconds to minutes; a question is somebody waiting. When the machine
    # has less CPU than work, the scheduler then serves the questions first and the load takes what
    # is left, which changes nothing on an idle machine.
    default=10,
    help="The niceness (0 to 19, as `nice` counts) that loads (the service's and `heapdb load`'s) and "
    "`heapdb reanalyze` give themselves, so that a service's answers keep their "
    "times while one runs; 0 leaves their priority as it is.",
)
LOAD_SHARE = Variable(
    name="HEAPDB_LOAD_SHARE",
    parse=whole(10, 100, unit="percent"),
    # A load writes with up to two transactions at once, which is two cores of Neo4j's on a small
    # machine: the questions asked meanwhile waited for the CPU. Waiting as long as each
    # transaction took halves that, and loads take about twice as long only while people ask.
    default=50,
    help="While the service answers more questions at once than the machine has cores, the loads it "
    "runs write this percent of the time: after each write transaction a load waits so long that its "
    "transactions fill this share of its time. 100: loads never wait.",
)
BUSY_FILE = Variable(
    name="HEAPDB_BUSY_FILE",
    parse=path(),
    help="A file whose first byte says whether the service has more questions in flight than cores "
    "(`1`) or not (`0`); how the service tells the loads it runs to make way (HEAPDB_LOAD_SHARE).",
)
SERVER = Variable(
    name="HEAPDB_SERVER",
    parse=text("a URL such as http://heapdb.example:8000"),  # click reads it, as --server's envvar
    help="The heapdb service `heapdb push` sends to, when `--server` is not given.",
)
AUTHOR = Variable(
    name="HEAPDB_AUTHOR",
    parse=text(),
    default_text="`$USER`",
    help="Who adds a rule set (`heapdb rules add`), when `--author` is not given.",
)
PROGRESS = Variable(
    name="HEAPDB_PROGRESS",
    parse=switch(),
    blank_is_unset=False,
    default_text="unset: bars on a terminal only",
    help="Progress bars on stderr, forced on (1) or off (0).",
)
PROGRESS_FILE = Variable(
    name="HEAPDB_PROGRESS_FILE",
    parse=path(),
    help="A file every progress bar keeps up to date with its state as one JSON object; "
    "how the service follows the loads it runs.",
)
IMPORT_HEAP = Variable(
    name="HEAPDB_IMPORT_HEAP",
    parse=memory(),
    default="2g",  # the importer keeps its big structures off heap (--max-off-heap-memory)
    help="The Java heap of `heapdb rebuild`'s `neo4j-admin database import`.",
)
MLPD_HEAPSHOT = Variable(
    name="HEAPDB_MLPD_HEAPSHOT",
    parse=whole(0),
    default=0,  # the last: the program's state when it was profiled last
    help="Which heapshot of a Mono log-profiler file (`.mlpd`) heapdb reads: 1 the first, 2 the second, "
    "and so on; 0 the last.",
)
# A reader's arrays are about the dump's size (docs/analysis.md, Memory); the analysis after it
# needs about half as much again, which the rest of the available memory leaves room for.
READ_MEMORY_SHARE = 60  # percent of the memory available when a read starts
READ_MEMORY = Variable(
    name="HEAPDB_READ_MEMORY",
    parse=byte_count(0),
    default_text=f"{READ_MEMORY_SHARE}% of the memory available when the read starts (`MemAvailable`)",
    help="Bytes of arrays the hprof reader keeps in memory; past them it puts its further arrays in "
    "memory-mapped files under `$XDG_CACHE_HOME/heapdb/spill`, deleted as it goes, so that a dump too "
    "big for the memory is read at disk speed rather than failing. 0: every array in a file.",
)

# A Neo4j of one's own (docs/scaling.md): NEO4J_URI turns it on. An empty user or password is a value.
NEO4J_URI = Variable(
    name="NEO4J_URI",
    parse=text("a Neo4j URI such as bolt://host:7687"),
    default_text="unset: the `[neo4j]` section, else the managed Neo4j",
    help="The Neo4j 5 heapdb uses instead of the one it manages.",
)
NEO4J_USER = Variable(
    name="NEO4J_USER", parse=text(), default="neo4j", blank_is_unset=False, help="Its user, with `NEO4J_URI`."
)
NEO4J_PASSWORD = Variable(
    name="NEO4J_PASSWORD",
    parse=text(),
    secret=True,
    blank_is_unset=False,
    default_text="unset: an error when `NEO4J_URI` is set",
    help="Its password, with `NEO4J_URI`.",
)
NEO4J_DATABASE = Variable(
    name="NEO4J_DATABASE", parse=text(), default="neo4j", blank_is_unset=False, help="Its database, with `NEO4J_URI`."
)

# The config file's [neo4j] section: the same, for when the environment says nothing.
FILE_URI = Key(
    section="neo4j",
    name="uri",
    parse=NEO4J_URI.parse,
    default_text="unset: the managed Neo4j",
    help="The Neo4j 5 heapdb uses, when `NEO4J_URI` is not set.",
)
FILE_USER = Key(section="neo4j", name="user", parse=text(), default="neo4j", help="Its user.")
FILE_PASSWORD = Key(
    section="neo4j",
    name="password",
    parse=text(),
    secret=True,
    blank_is_unset=False,
    default_text="unset: an error when `uri` is set",
    help="Its password.",
)
FILE_DATABASE = Key(section="neo4j", name="database", parse=text(), default="neo4j", help="Its database.")

# The config file's [managed] section: the Neo4j heapdb runs itself (`heapdb neo4j ...`), written by heapdb.
MANAGED_BOLT_PORT = Key(section="managed", name="bolt_port", parse=whole(1, 65535), default=7687, help="Its Bolt port.")
MANAGED_HTTP_PORT = Key(
    section="managed", name="http_port", parse=whole(1, 65535), default=7474, help="Its HTTP port (Neo4j Browser)."
)


@dataclass(frozen=True)
class MemoryShare:
    """A default memory size: the machine's memory divided by ``divisor``, in whole gigabytes from
    ``low`` to ``high`` (:func:`heapdb.config.ManagedSettings` computes it)."""

    divisor: int
    low: int
    high: int

    def __str__(self) -> str:
        return f"the machine's memory / {self.divisor}, from {self.low}g to {self.high}g"


# The loader holds numpy arrays of a whole snapshot next to Neo4j: on a 24 GB machine these give
# Neo4j a 4 GB heap (transaction state of the load batches) and 6 GB of page cache, leaving ~14 GB.
HEAP_SHARE = MemoryShare(6, 1, 8)
PAGECACHE_SHARE = MemoryShare(4, 1, 16)
MANAGED_HEAP = Key(section="managed", name="heap", parse=memory(), default_text=str(HEAP_SHARE), help="Its Java heap.")
MANAGED_PAGECACHE = Key(
    section="managed", name="pagecache", parse=memory(), default_text=str(PAGECACHE_SHARE), help="Its page cache."
)
# The JVM's garbage collectors it may run with, by the names the config file uses: the name in the
# JVM's -XX:+Use<name>GC flag. G1 is Neo4j's own choice. On a small machine the serial collector
# costs less CPU: 7.3 s of Neo4j's CPU per load of a 52,000-object snapshot against G1's 11.1 s
# (2 cores, 3 GB of heap; G1's concurrent marking and refinement are the difference), for longer
# pauses, which a loader that waits on whole batches does not see. docs/decisions.md.
GARBAGE_COLLECTORS = {"g1": "G1", "parallel": "Parallel", "serial": "Serial"}
MANAGED_GC = Key(
    section="managed",
    name="gc",
    parse=one_of(GARBAGE_COLLECTORS),
    default="g1",
    help="Its JVM's garbage collector: `g1` (Neo4j's own choice), `parallel`, or `serial` (the least CPU on a small machine).",
)
MANAGED_PASSWORD = Key(
    section="managed",
    name="password",
    parse=text(),
    secret=True,
    default_text="generated at install",
    help="The password heapdb generated for it.",
)

SETTINGS: tuple[Setting[Any], ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Setting))


def variable(name: str) -> Variable[Any]:
    """The environment variable declared as ``name``."""
    for s in SETTINGS:
        if isinstance(s, Variable) and s.name == name:
            return s
    raise KeyError(name)


def section(name: str) -> tuple[Key[Any], ...]:
    """The keys of the config file's ``[name]`` section."""
    return tuple(s for s in SETTINGS if isinstance(s, Key) and s.section == name)


# --- the reference in docs/operations.md

BEGIN = "<!-- BEGIN generated from heapdb/settings.py by `python -m heapdb.settings docs/operations.md` -->"
END = "<!-- END generated settings -->"


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _row(s: Setting[Any], label: str) -> str:
    what = s.help + (" A secret: never printed." if s.secret else "")
    cells = [f"`{label}`", s.parse.expected, s.shown_default(), what]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def render() -> str:
    """The generated block, markers included."""
    head = ["| setting | expected | default | what it does |", "|---|---|---|---|"]
    variables = [_row(s, s.name) for s in SETTINGS if isinstance(s, Variable)]
    keys = [_row(s, f"[{s.section}] {s.name}") for s in SETTINGS if isinstance(s, Key)]
    blank_values = ", ".join(f"`{s.name}`" for s in SETTINGS if isinstance(s, Variable) and not s.blank_is_unset)
    return "\n".join(
        [
            BEGIN,
            "",
            f"Environment variables (an empty one counts as unset, but for {blank_values}):",
            "",
            *head,
            *variables,
            "",
            "Keys of the config file, `$XDG_CONFIG_HOME/heapdb/config.toml` (mode 0600; heapdb writes `[managed]`):",
            "",
            *head,
            *keys,
            "",
            END,
        ]
    )


if __name__ == "__main__":
    changed = docblock.update(sys.argv[1], BEGIN, END, render())
    print(f"{sys.argv[1]}: {'updated' if changed else 'already up to date'}")
