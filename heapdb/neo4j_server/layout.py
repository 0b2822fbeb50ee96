"""The managed Neo4j's versions and where its files are: the paths every other part reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heapdb import config

NEO4J_VERSION = "5.26.30"
BROWSER_VERSION = "5.24.0"
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"

Say = Callable[[str], None]


def quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def dist(self) -> Path:
        return self.root / "dist" / NEO4J_VERSION

    @property
    def classpath_file(self) -> Path:
        return self.dist / "classpath.txt"

    @property
    def instance(self) -> Path:
        return self.root / "instance"

    @property
    def conf_dir(self) -> Path:
        return self.instance / "conf"

    @property
    def data(self) -> Path:
        return self.instance / "data"

    @property
    def logs(self) -> Path:
        return self.instance / "logs"

    @property
    def import_dir(self) -> Path:
        return self.instance / "import"

    @property
    def plugins(self) -> Path:
        return self.instance / "plugins"

    @property
    def pid_file(self) -> Path:
        return self.instance / "run" / "neo4j.pid"

    @property
    def started_conf(self) -> Path:
        """The neo4j.conf the running instance started with."""
        return self.instance / "run" / "started.conf"

    @property
    def store(self) -> Path:
        """The databases' store files."""
        return self.data / "databases"

    @property
    def tx_logs(self) -> Path:
        """The databases' transaction logs."""
        return self.data / "transactions"


def paths() -> Paths:
    return Paths(config.data_dir() / "neo4j")
