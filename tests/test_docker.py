"""docker/ is for users with a Docker engine; none runs here, so the files are checked statically."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml
from click.testing import CliRunner

from heapdb import neo4j_server
from heapdb.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "docker"


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DOCKER / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_dockerfile_copies_what_exists_and_runs_a_real_command() -> None:
    instructions = dockerfile_instructions()
    keywords = [k for k, _ in instructions]
    assert keywords[0] == "FROM" and re.match(r"python:3\.1[1-9]", instructions[0][1])
    for keyword, rest in instructions:
        if keyword == "COPY":
            *sources, _ = shlex.split(rest)
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    # Every package directory that pyproject maps into the heapdb namespace is copied into the image.
    import tomllib

    package_dirs = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    )
    copied = {shlex.split(rest)[0] for keyword, rest in instructions if keyword == "COPY"}
    assert {d.split("/")[0] for d in package_dirs} <= copied
    assert any(k == "RUN" and "pip install" in r and " ." in r for k, r in instructions)
    assert "USER" in keywords, "the service must not run as root"

    cmd = [json_arg for k, r in instructions if k == "CMD" for json_arg in yaml.safe_load(r)]
    assert cmd[:2] == ["heapdb", "serve"]
    # The command and its options exist in the CLI of this very checkout.
    result = CliRunner().invoke(main, [*cmd[1:], "--help"])
    assert result.exit_code == 0, result.output
    port = cmd[cmd.index("--port") + 1]
    assert ("EXPOSE", port) in instructions


def test_compose_runs_neo4j_526_and_the_service_with_healthchecks() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    neo4j, heapdb = services["neo4j"], services["heapdb"]
    assert neo4j["image"].startswith("neo4j:5.26")
    assert "healthcheck" in neo4j and "healthcheck" in heapdb
    assert heapdb["depends_on"]["neo4j"]["condition"] == "service_healthy"
    # Named volumes are declared, and the data survives the container.
    named = {v.split(":")[0] for v in neo4j["volumes"]}
    assert named <= set(compose["volumes"]) and any(v.endswith(":/data") for v in neo4j["volumes"])
    # Published ports stay on the host's loopback.
    for service in services.values():
        for mapping in service.get("ports", []):
            assert mapping.startswith("127.0.0.1:"), mapping
    # The service reaches Neo4j by its service name, with the same password variable.
    env = heapdb["environment"]
    assert env["NEO4J_URI"] == "bolt://neo4j:7687"
    assert "${NEO4J_PASSWORD" in neo4j["environment"]["NEO4J_AUTH"] and env["NEO4J_PASSWORD"] == "${NEO4J_PASSWORD}"
    build = heapdb["build"]
    assert (DOCKER / build["context"] / build["dockerfile"]).resolve() == (DOCKER / "Dockerfile").resolve()
    # Neo4j's configuration keys, in the image's env form, name real settings.
    for key in neo4j["environment"]:
        if key.startswith("NEO4J_server_") or key.startswith("NEO4J_dbms_"):
            setting = key[len("NEO4J_") :].replace("__", "\0").replace("_", ".").replace("\0", "_")
            assert setting in {
                "server.memory.heap.initial_size",
                "server.memory.heap.max_size",
                "server.memory.pagecache.size",
                "dbms.usage_report.enabled",
            }, setting


def test_compose_gives_neo4j_heapdbs_plugin_built_from_this_checkout() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    plugin, neo4j = compose["services"]["plugin"], compose["services"]["neo4j"]
    assert neo4j["depends_on"]["plugin"]["condition"] == "service_completed_successfully"
    (shared,) = {v.split(":")[0] for v in plugin["volumes"]}
    assert f"{shared}:/plugins" in neo4j["volumes"] and f"{shared}:/plugins" in plugin["volumes"]
    dockerfile = (DOCKER / plugin["build"]["context"] / plugin["build"]["dockerfile"]).resolve()
    text = dockerfile.read_text()
    # It copies the plugin's Maven project from this repository and builds the jar the loader expects.
    (source,) = re.findall(r"^COPY (\S+) \./$", text, re.MULTILINE)
    assert (ROOT / source).resolve() == neo4j_server.plugin_source()
    assert "mvn -B -q package" in text and f"/{neo4j_server.PLUGIN_JAR}" in text
    assert re.search(r"^FROM maven:\S+-17 ", text, re.MULTILINE), "Neo4j 5.26 runs Java 17 classes"
    # The pom compiles against the Neo4j that heapdb manages unless told otherwise.
    pom = (neo4j_server.plugin_source() / "pom.xml").read_text()
    assert f"<neo4j.version>{neo4j_server.NEO4J_VERSION}</neo4j.version>" in pom
    assert f"<finalName>{neo4j_server.PLUGIN_JAR.removesuffix('.jar')}</finalName>" in pom


def test_dockerignore_keeps_local_environments_out() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and "**/node_modules" in ignored
