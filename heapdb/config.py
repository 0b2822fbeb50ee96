"""Where heapdb keeps its files, and how it finds its Neo4j.

Connection settings are looked up in this order:

1. the environment: ``NEO4J_URI`` (with ``NEO4J_USER``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``) points
   heapdb at any existing Neo4j 5;
2. the ``[neo4j]`` section of the config file (``$XDG_CONFIG_HOME/heapdb/config.toml``), the same keys
   in lower case;
3. otherwise the Neo4j that heapdb manages itself (``heapdb neo4j ...``), whose ports and generated
   password live in the ``[managed]`` section of the same file.

The config file holds a password, so heapdb writes it with mode 0600.
"""

from __future__ import annotations

import os
import secrets
import string
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from heapdb.errors import ConfigError

APP = "heapdb"


def _xdg(variable: str, default: str) -> Path:
    value = os.environ.get(variable)
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / default


def data_dir() -> Path:
    """``$XDG_DATA_HOME/heapdb``: the managed Neo4j's install and its databases."""
    return _xdg("XDG_DATA_HOME", ".local/share") / APP


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/heapdb``: the config file."""
    return _xdg("XDG_CONFIG_HOME", ".config") / APP


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/heapdb``: downloads and other things safe to delete."""
    return _xdg("XDG_CACHE_HOME", ".cache") / APP


def spool_dir() -> Path:
    """``HEAPDB_SPOOL_DIR``, else ``$XDG_DATA_HOME/heapdb/spool``: snapshots uploaded to the service,
    kept until their load ends. On a disk with room for the largest upload times HEAPDB_MAX_LOADS."""
    value = os.environ.get("HEAPDB_SPOOL_DIR")
    return Path(value) if value else data_dir() / "spool"


def config_file() -> Path:
    return config_dir() / "config.toml"


def _total_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _gigabytes(fraction: float, low: int, high: int) -> str:
    """A share of the machine's memory in whole gigabytes, clamped to ``[low, high]``."""
    size = int(_total_memory() * fraction / 2**30)
    return f"{max(low, min(high, size))}g"


@dataclass
class ManagedSettings:
    """How heapdb runs its own Neo4j. Defaults suit a machine that also runs the loader."""

    bolt_port: int = 7687
    http_port: int = 7474
    # The loader holds numpy arrays of a whole snapshot next to Neo4j: on a 24 GB machine this gives
    # Neo4j a 4 GB heap (transaction state of the load batches) and 6 GB of page cache, leaving ~14 GB.
    heap: str = ""
    pagecache: str = ""
    password: str = ""

    def __post_init__(self) -> None:
        self.heap = self.heap or _gigabytes(1 / 6, 1, 8)
        self.pagecache = self.pagecache or _gigabytes(1 / 4, 1, 16)


@dataclass(frozen=True)
class Connection:
    """Where a Neo4j is and how to log in."""

    uri: str
    user: str
    password: str
    database: str = "neo4j"
    managed: bool = False

    def describe(self) -> str:
        kind = "managed Neo4j" if self.managed else "Neo4j"
        return f"{kind} at {self.uri} (database {self.database}, user {self.user})"

    def environment(self) -> dict[str, str]:
        """The variables that make a child ``heapdb`` process (:func:`connection`) reach this Neo4j,
        without a progress bar (nobody watches its terminal)."""
        return {
            "NEO4J_URI": self.uri,
            "NEO4J_USER": self.user,
            "NEO4J_PASSWORD": self.password,
            "NEO4J_DATABASE": self.database,
            "HEAPDB_PROGRESS": "0",
        }


def load_file() -> dict[str, Any]:
    """The config file as a dict (empty when there is none)."""
    path = config_file()
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, OSError) as e:
        raise ConfigError(f"{path}: cannot read the config file: {e}") from None


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def save_file(data: dict[str, dict[str, Any]]) -> None:
    """Write the config file (sections of scalar keys), readable only by its owner."""
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# heapdb settings; written by heapdb, safe to edit.", ""]
    for section, values in data.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in values.items()]
        lines.append("")
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def managed_settings() -> ManagedSettings:
    """The managed Neo4j's settings from the config file, with defaults for what is not set."""
    section = load_file().get("managed", {})
    known = {k: section[k] for k in ("bolt_port", "http_port", "heap", "pagecache", "password") if k in section}
    return ManagedSettings(**known)


def save_managed_settings(settings: ManagedSettings) -> None:
    """Store the managed Neo4j's settings, generating its password on first use."""
    if not settings.password:
        # Letters and digits only: Neo4j's admin tool takes the password as a command-line argument,
        # and one starting with "-" (which token_urlsafe gives one time in 32) reads as an option.
        settings.password = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
    data = load_file()
    data["managed"] = asdict(settings)
    save_file(data)


def connection() -> Connection:
    """Resolve where heapdb's Neo4j is: environment, then config file, then the managed instance."""
    env_uri = os.environ.get("NEO4J_URI")
    if env_uri:
        password = os.environ.get("NEO4J_PASSWORD")
        if password is None:
            raise ConfigError("NEO4J_URI is set but NEO4J_PASSWORD is not")
        return Connection(
            uri=env_uri,
            user=os.environ.get("NEO4J_USER", "neo4j"),
            password=password,
            database=os.environ.get("NEO4J_DATABASE", "neo4j"),
        )
    section = load_file().get("neo4j", {})
    if section.get("uri"):
        if "password" not in section:
            raise ConfigError(f"{config_file()}: [neo4j] has a uri but no password")
        return Connection(
            uri=section["uri"],
            user=section.get("user", "neo4j"),
            password=section["password"],
            database=section.get("database", "neo4j"),
        )
    managed = managed_settings()
    return Connection(
        uri=f"bolt://127.0.0.1:{managed.bolt_port}",
        user="neo4j",
        password=managed.password,
        managed=True,
    )


# Seconds each query may run, when no --timeout is given (heapdb.queries.params.query_timeout).
TIMEOUT_VARIABLE = "HEAPDB_QUERY_TIMEOUT"

# Retention on a schedule (`heapdb serve`): see docs/operations.md.
PRUNE_KEEP_LAST = "HEAPDB_PRUNE_KEEP_LAST"  # keep this many newest snapshots full; setting it turns pruning on
PRUNE_KEEP_TAGS = "HEAPDB_PRUNE_KEEP_TAGS"  # comma-separated globs of tags kept full (e.g. release-*,v*)
PRUNE_EVERY = "HEAPDB_PRUNE_EVERY"  # seconds between prunes
DEFAULT_PRUNE_EVERY = 3600.0


@dataclass(frozen=True)
class PruneSchedule:
    """What the service prunes, and how often (see :func:`prune_schedule`)."""

    keep_last: int
    keep_tags: tuple[str, ...] = ()
    every: float = DEFAULT_PRUNE_EVERY


def prune_schedule() -> PruneSchedule | None:
    """The scheduled prune the environment asks for, or None when ``HEAPDB_PRUNE_KEEP_LAST`` is unset."""
    keep_last = os.environ.get(PRUNE_KEEP_LAST, "").strip()
    if not keep_last:
        return None
    every = os.environ.get(PRUNE_EVERY, "").strip() or str(DEFAULT_PRUNE_EVERY)
    try:
        schedule = PruneSchedule(
            keep_last=int(keep_last),
            keep_tags=tuple(g.strip() for g in os.environ.get(PRUNE_KEEP_TAGS, "").split(",") if g.strip()),
            every=float(every),
        )
    except ValueError as e:
        raise ConfigError(
            f"{PRUNE_KEEP_LAST} must be a whole number and {PRUNE_EVERY} a number of seconds "
            f"(got {keep_last!r} and {every!r})"
        ) from e
    if schedule.keep_last < 1 or not schedule.every > 0:
        raise ConfigError(
            f"{PRUNE_KEEP_LAST} must be at least 1 and {PRUNE_EVERY} more than 0 seconds "
            f"(got {schedule.keep_last} and {schedule.every:g})"
        )
    return schedule
