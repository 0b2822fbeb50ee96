"""The settings registry (heapdb/settings.py): it declares every variable the code reads, parses
each with a clear error, and the reference in docs/operations.md is generated from it."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from heapdb import config, docblock, settings
from heapdb.errors import ConfigError
from heapdb.queries import params

REPO = Path(__file__).resolve().parent.parent
REGISTRY = REPO / "heapdb" / "settings.py"
NAME = re.compile(r"\bHEAPDB_[A-Z_]+\b")
DECLARED = {s.name for s in settings.SETTINGS if isinstance(s, settings.Variable)}


def sources() -> list[Path]:
    """The Python files of every folder pyproject.toml installs (heapdb/, loader/, queries/, service/)."""
    folders = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    return sorted({p for folder in folders for p in (REPO / folder).glob("*.py")})


def readers() -> list[Path]:
    """Code that may read or set a variable: heapdb's own and the benchmarks' (the tests keep
    HEAPDB_TEST_* and HEAPDB_SCREENSHOTS, which only they read, to themselves)."""
    return [*sources(), *sorted((REPO / "benchmarks").glob("*.py"))]


def test_every_variable_the_code_names_is_declared() -> None:
    """Messages and docstrings name only declared variables, so no setting goes undocumented."""
    found = {f"{p.relative_to(REPO)}: {n}" for p in sources() for n in NAME.findall(p.read_text()) if n not in DECLARED}
    assert not found, "variables missing from heapdb/settings.py:\n" + "\n".join(sorted(found))


def test_only_the_registry_spells_a_variable_as_a_literal() -> None:
    """A string that is exactly a variable's name is how code reads or sets it (``os.environ.get("X")``,
    ``envvar="X"``): outside the registry, code says ``settings.X.name`` or asks ``settings.X``."""
    literal = []
    for p in readers():
        if p == REGISTRY:
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and (NAME.fullmatch(value) or value in DECLARED):
                literal.append(f"{p.relative_to(REPO)}:{getattr(node, 'lineno', 0)}: {value!r}")
    assert not literal, "read these through heapdb.settings:\n" + "\n".join(literal)


def test_the_walk_finds_the_readers() -> None:
    # The two tests above would pass over an empty list: make sure they look where the code is.
    names = {p.relative_to(REPO).as_posix() for p in sources()}
    assert {"heapdb/config.py", "service/jobs.py", "loader/store/admin_import.py", "queries/params.py"} <= names


def test_each_setting_is_declared_once_with_help() -> None:
    labels = [(getattr(s, "section", ""), s.name) for s in settings.SETTINGS]
    assert len(labels) == len(set(labels))
    assert all(s.help and s.parse.expected for s in settings.SETTINGS)
    assert all(s.name.startswith(("HEAPDB_", "NEO4J_")) for s in settings.SETTINGS if isinstance(s, settings.Variable))
    # The config file's sections, as heapdb.config reads them.
    assert {k.name for k in settings.section("managed")} == set(config.ManagedSettings.__dataclass_fields__)
    assert {k.name for k in settings.section("neo4j")} == {"uri", "user", "password", "database"}


BAD = [
    (settings.QUERY_TIMEOUT, "soon", "seconds from 0.1 to 3600"),
    (settings.QUERY_TIMEOUT, "0", "seconds from 0.1 to 3600"),
    (settings.QUERY_TIMEOUT, "nan", "seconds from 0.1 to 3600"),
    (settings.MAX_LOADS, "0", "a whole number from 1 to 64"),
    (settings.MAX_LOADS, "65", "a whole number from 1 to 64"),
    (settings.MAX_QUEUED, "-3", "a whole number from 1 to 10000"),
    (settings.MAX_UPLOAD_BYTES, "16g", "a whole number of bytes, 1 or more"),
    (settings.MAX_UPLOAD_BYTES, "0", "a whole number of bytes, 1 or more"),
    (settings.MIN_FREE_BYTES, "1e9", "a whole number of bytes, 0 or more"),
    (settings.PRUNE_KEEP_LAST, "0", "a whole number, 1 or more"),
    (settings.PRUNE_EVERY, "0", "seconds, more than 0"),
    (settings.PRUNE_EVERY, "inf", "seconds, more than 0"),
    (settings.IMPORT_HEAP, "2 GB", "a memory size, e.g. `512m` or `4g`"),
    (settings.IMPORT_HEAP, "0g", "a memory size, e.g. `512m` or `4g`"),
]


@pytest.mark.parametrize(("setting", "value", "expected"), BAD, ids=lambda v: str(getattr(v, "name", v)))
def test_a_bad_value_names_the_variable_and_what_it_expects(
    monkeypatch: pytest.MonkeyPatch, setting: settings.Variable[Any], value: str, expected: str
) -> None:
    monkeypatch.setenv(setting.name, value)
    with pytest.raises(ConfigError) as caught:
        setting.get()
    assert str(caught.value) == f"{setting.name}={value!r}: expected {expected}"


GOOD = [
    (settings.QUERY_TIMEOUT, "2.5", 2.5),
    (settings.MAX_LOADS, " 4 ", 4),
    (settings.MIN_FREE_BYTES, "0", 0),
    (settings.PRUNE_KEEP_TAGS, "release-*, v* ,", ("release-*", "v*")),
    (settings.IMPORT_HEAP, "512m", "512m"),
    (settings.PROGRESS, "no", False),
    (settings.PROGRESS, "", False),  # empty is a value here: off, as it always was
    (settings.PROGRESS, "yes", True),
    (settings.SPOOL_DIR, "/srv/spool", Path("/srv/spool")),
]


@pytest.mark.parametrize(("setting", "value", "parsed"), GOOD, ids=lambda v: str(getattr(v, "name", v)))
def test_a_good_value_is_parsed(
    monkeypatch: pytest.MonkeyPatch, setting: settings.Variable[Any], value: str, parsed: object
) -> None:
    monkeypatch.setenv(setting.name, value)
    assert setting.get() == parsed


def test_unset_and_empty_give_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.MAX_QUEUED.name, raising=False)
    assert settings.MAX_QUEUED.value() == 16
    monkeypatch.setenv(settings.MAX_QUEUED.name, "  ")
    assert settings.MAX_QUEUED.value() == 16
    monkeypatch.delenv(settings.SERVER.name, raising=False)
    assert settings.SERVER.get() is None
    with pytest.raises(ConfigError, match="HEAPDB_SERVER is not set: expected a URL"):
        settings.SERVER.value()


def test_the_variables_are_read_when_asked_not_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.IMPORT_HEAP.name, "3g")
    assert settings.IMPORT_HEAP.value() == "3g"
    monkeypatch.setenv(settings.QUERY_TIMEOUT.name, "7")
    assert params.query_timeout() == 7.0
    assert params.query_timeout(2.0) == 2.0


def test_a_secret_is_not_repeated_in_its_error() -> None:
    key = settings.Key(section="s", name="token", parse=settings.whole(1), secret=True, help="h")
    with pytest.raises(ConfigError) as caught:
        key.get({"token": "hunter2"}, Path("/etc/x.toml"))
    assert "hunter2" not in str(caught.value)
    assert str(caught.value) == "/etc/x.toml: [s] token=(secret): expected a whole number, 1 or more"


def test_a_bad_key_in_the_config_file_names_the_file_and_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    file = config.config_file()
    file.parent.mkdir(parents=True)
    file.write_text('[managed]\nbolt_port = 7688\nheap = "3g"\npassword = "pw"\n')
    managed = config.managed_settings()
    assert (managed.bolt_port, managed.http_port, managed.heap, managed.password) == (7688, 7474, "3g", "pw")
    file.write_text('[managed]\nbolt_port = "seven"\n')
    with pytest.raises(ConfigError) as caught:
        config.managed_settings()
    assert str(caught.value) == f"{file}: [managed] bolt_port='seven': expected a whole number from 1 to 65535"
    file.write_text('[managed]\ngc = "serial"\n')
    assert config.managed_settings().gc == "serial"
    file.write_text('[managed]\ngc = "zgc"\n')
    with pytest.raises(ConfigError) as caught:
        config.managed_settings()
    assert str(caught.value) == f"{file}: [managed] gc='zgc': expected one of `g1`, `parallel`, `serial`"


def test_the_connection_comes_from_the_environment_then_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for name in ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
        monkeypatch.delenv(name, raising=False)
    config.save_file({"neo4j": {"uri": "bolt://db:7687", "password": "pw"}})
    assert config.connection() == config.Connection("bolt://db:7687", "neo4j", "pw", "neo4j")
    monkeypatch.setenv("NEO4J_URI", "bolt://other:7687")
    with pytest.raises(ConfigError, match="NEO4J_URI is set but NEO4J_PASSWORD is not"):
        config.connection()
    monkeypatch.setenv("NEO4J_PASSWORD", "")  # an empty password is a password
    monkeypatch.setenv("NEO4J_DATABASE", "heaps")
    assert config.connection() == config.Connection("bolt://other:7687", "neo4j", "", "heaps")


def test_docs_operations_md_lists_the_settings() -> None:
    doc = REPO / "docs" / "operations.md"
    assert docblock.current(doc, settings.BEGIN, settings.END) == settings.render(), (
        "docs/operations.md is stale: run `python -m heapdb.settings docs/operations.md`"
    )
    text = doc.read_text(encoding="utf-8")
    for s in settings.SETTINGS:
        assert f"`{s.name}`" in text or f"] {s.name}`" in text
