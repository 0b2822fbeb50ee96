"""Where heapdb keeps its files, and how it finds its Neo4j.

Connection settings are looked up in this order:

1. the environment: ``NEO4J_URI`` (with ``NEO4J_USER``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``) points
   heapdb at any existing Neo4j 5;
2. the ``[neo4j]`` section of the config file (``$XDG_CONFIG_HOME/heapdb/config.toml``), the same keys
   in lower case;
3. otherwise the Neo4j that heapdb manages itself (``heapdb neo4j ...``), whose ports and generated
   password live in the ``[managed]`` section of the same file.

The config file holds a password, so heapdb writes it with mode 0600. Every variable and key is
declared in :mod:`heapdb.settings`, which parses it.
"""

from __future__ import annotations

import os
import secrets
import string
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from heapdb import settings
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
    return settings.SPOOL_DIR.get() or data_dir() / "spool"


def config_file() -> Path:
    return config_dir() / "config.toml"


def _total_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _gigabytes(share: settings.MemoryShare) -> str:
    """A share of the machine's memory in whole gigabytes, clamped to its bounds."""
    size = int(_total_memory() / share.divisor / 2**30)
    return f"{max(share.low, min(share.high, size))}g"


@dataclass
class ManagedSettings:
    """How heapdb runs its own Neo4j (the config file's ``[managed]`` section, declared in
    :mod:`heapdb.settings`). Defaults suit a machine that also runs the loader; an empty ``heap`` or
    ``pagecache`` is a share of the machine's memory, an empty password one not generated yet."""

    bolt_port: int = settings.MANAGED_BOLT_PORT.fallback
    http_port: int = settings.MANAGED_HTTP_PORT.fallback
    heap: str = ""
    pagecache: str = ""
    gc: str = settings.MANAGED_GC.fallback
    password: str = ""

    def __post_init__(self) -> None:
        self.heap = self.heap or _gigabytes(settings.HEAP_SHARE)
        self.pagecache = self.pagecache or _gigabytes(settings.PAGECACHE_SHARE)


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
            settings.NEO4J_URI.name: self.uri,
            settings.NEO4J_USER.name: self.user,
            settings.NEO4J_PASSWORD.name: self.password,
            settings.NEO4J_DATABASE.name: self.database,
            settings.PROGRESS.name: "0",
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
    given = {key.name: key.get(section, config_file()) for key in settings.section("managed")}
    return ManagedSettings(**{name: value for name, value in given.items() if value is not None})


def save_managed_settings(managed: ManagedSettings) -> None:
    """Store the managed Neo4j's settings, generating its password on first use."""
    if not managed.password:
        # Letters and digits only: Neo4j's admin tool takes the password as a command-line argument,
        # and one starting with "-" (which token_urlsafe gives one time in 32) reads as an option.
        managed.password = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
    data = load_file()
    data["managed"] = asdict(managed)
    save_file(data)


def connection() -> Connection:
    """Resolve where heapdb's Neo4j is: environment, then config file, then the managed instance."""
    env_uri = settings.NEO4J_URI.get()
    if env_uri:
        password = settings.NEO4J_PASSWORD.get()
        if password is None:
            raise ConfigError(f"{settings.NEO4J_URI.name} is set but {settings.NEO4J_PASSWORD.name} is not")
        return Connection(
            uri=env_uri,
            user=settings.NEO4J_USER.value(),
            password=password,
            database=settings.NEO4J_DATABASE.value(),
        )
    section, file = load_file().get("neo4j", {}), config_file()
    uri = settings.FILE_URI.get(section, file)
    if uri:
        file_password = settings.FILE_PASSWORD.get(section, file)
        if file_password is None:
            raise ConfigError(f"{file}: [neo4j] has a uri but no password")
        return Connection(
            uri=uri,
            user=settings.FILE_USER.value(section, file),
            password=file_password,
            database=settings.FILE_DATABASE.value(section, file),
        )
    managed = managed_settings()
    return Connection(
        uri=f"bolt://127.0.0.1:{managed.bolt_port}",
        user="neo4j",
        password=managed.password,
        managed=True,
    )


# The names other modules (and tests) know these variables by; declared in heapdb.settings.
TIMEOUT_VARIABLE = settings.QUERY_TIMEOUT.name
PRUNE_KEEP_LAST = settings.PRUNE_KEEP_LAST.name
PRUNE_KEEP_TAGS = settings.PRUNE_KEEP_TAGS.name
PRUNE_EVERY = settings.PRUNE_EVERY.name
DEFAULT_PRUNE_EVERY = settings.PRUNE_EVERY.fallback


@dataclass(frozen=True)
class PruneSchedule:
    """What the service prunes, and how often (see :func:`prune_schedule`)."""

    keep_last: int
    keep_tags: tuple[str, ...] = ()
    every: float = DEFAULT_PRUNE_EVERY


def prune_schedule() -> PruneSchedule | None:
    """The scheduled prune the environment asks for (docs/operations.md), or None when
    ``HEAPDB_PRUNE_KEEP_LAST`` is unset."""
    keep_last = settings.PRUNE_KEEP_LAST.get()
    if keep_last is None:
        return None
    try:
        return PruneSchedule(keep_last, settings.PRUNE_KEEP_TAGS.value(), settings.PRUNE_EVERY.value())
    except ConfigError as e:  # say what asked for a schedule, too
        raise ConfigError(f"{e} (scheduled pruning: {PRUNE_KEEP_LAST}={keep_last})") from None
