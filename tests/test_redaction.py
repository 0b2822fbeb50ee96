"""Redaction: secrets planted in a real Node heap and a real Java heap never reach the store or a file.

tests/js/secrets.js and tests/java/Secrets.java make their secrets from random bytes at run time (an
API key, an e-mail address also used as a map's key, a password, a PIN) and say what they are. The
snapshots are converted, loaded and pushed redacted; then no stored property (what every Cypher
query, page, JSON twin and MCP tool reads), no page or JSON twin asked, no MCP tool, no written file
and no command output holds a secret, in any of the encodings the store keeps text in. Duplicate
strings answer as before, but for the text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import ConfigError, RuleError
from heapdb.loader import analysis, formats
from heapdb.loader.formats.text import redacted_parts
from heapdb.loader.graph import REDACTED
from heapdb.loader.inspections import strings
from heapdb.loader.redaction import EVERY_STRING, chosen, redacted_strings, redaction_key
from heapdb.loader.rules import parse_rules
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.service import links
from heapdb.service.app import create_app
from heapdb.service.mcp import build_server
from heapgen.java import compile_java, dump_program
from tests.support.serving import served
from tests.support.v8 import write_secrets_snapshot

WRITE = "write-token-for-redaction-tests"


def forms(secret: str) -> list[bytes]:
    """The ways a secret's text could sit in a property: as text, and as the hexadecimal of its first
    characters' Latin-1 and UTF-16 bytes (a Java array's stored values)."""
    head = secret[:16]
    return [
        secret.encode(),
        head.encode("latin-1").hex().encode(),
        head.encode("utf-16-be").hex().encode(),
    ]


def leaks(data: Any, secrets: list[str]) -> list[str]:
    """The secrets found anywhere in ``data`` (text, bytes, or JSON-able values)."""
    if isinstance(data, (bytes, bytearray)):
        blob = bytes(data)
    elif isinstance(data, str):
        blob = data.encode("utf-8", "surrogatepass")
    else:
        blob = json.dumps(
            data, default=lambda v: bytes(v).hex() if isinstance(v, (bytes, bytearray)) else str(v)
        ).encode()
    return [s for s in secrets if any(f in blob for f in forms(s))]


def stored_leaks(database: Database, tag: str, secrets: list[str]) -> list[str]:
    """The secrets in any property of the snapshot ``tag``: its node, its objects, its group and
    listing nodes, and every relationship out of them."""
    (sid,) = database.read("MATCH (s:Snapshot {tag: $tag}) RETURN s.sid AS sid", {"tag": tag})
    found: set[str] = set()
    for query in (
        "MATCH (n) WHERE n.sid = $sid RETURN properties(n) AS p",
        "MATCH (n)-[r]->() WHERE n.sid = $sid RETURN properties(r) AS p",
    ):
        rows = database.read(query, {"sid": sid["sid"]})
        assert rows, query
        for row in rows:
            found.update(leaks(row["p"], secrets))
    return sorted(found)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    return write_secrets_snapshot(tmp_path_factory.mktemp("secrets"))


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One redaction key for the module (as a team would set it everywhere it loads)."""
    value = uuid.uuid4().hex
    before = os.environ.get("HEAPDB_REDACT_KEY")
    os.environ["HEAPDB_REDACT_KEY"] = value
    yield value
    if before is None:
        del os.environ["HEAPDB_REDACT_KEY"]
    else:
        os.environ["HEAPDB_REDACT_KEY"] = before


# -- the rule kind and the choice ------------------------------------------------------------------


def test_redact_rules_parse_and_bad_ones_say_where() -> None:
    rules = parse_rules(
        'version = 1\n[[redact]]\nstrings = [{ glob = "sk_live_*" }, "exact"]\n\n[[redact]]\nnames = { regex = ".*@.*" }\nvalues = true\n'
    )
    first, second = rules.redactions
    assert first.strings is not None and first.strings.matches("sk_live_x") and first.strings.matches("exact")
    assert second.names is not None and second.values and second.strings is None
    for text, problem in (
        ("[[redact]]\n", "expected `strings`"),
        ('[[redact]]\nvalues = "yes"\n', "values: expected true or false"),
        ('[[redact]]\nobject = "x"\n', "unknown key 'object'"),
        ('[[redact]]\nstrings = { regex = "(" }\n', "bad regex"),
    ):
        with pytest.raises(RuleError, match=re.escape(problem)) as e:
            parse_rules("version = 1\n" + text, "team.toml")
        assert re.match(r"team.toml:[0-9]+: redact", str(e.value)), str(e.value)


def test_what_a_command_redacts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("HEAPDB_REDACT_KEY", raising=False)
    monkeypatch.delenv("HEAPDB_REDACT", raising=False)
    assert chosen(False, None) is None
    everything = chosen(True, None)
    assert everything is not None and everything.strings is EVERY_STRING and everything.values
    assert everything.names is not None and everything.names.matches("ada@example.invalid")
    assert not everything.names.matches("constructor") and not everything.names.matches("(map descriptors)")
    narrow = chosen(False, parse_rules('version = 1\n[[redact]]\nstrings = { glob = "*secret*" }\n'))
    assert narrow is not None and narrow.covers("a secret here") and not narrow.covers("public")
    assert not narrow.values and narrow.names is None
    assert narrow.covers("[redacted 5 chars 0123456789abcdef]") is False  # already a placeholder
    monkeypatch.setenv("HEAPDB_REDACT", "always")
    assert chosen(False, None) == everything
    monkeypatch.setenv("HEAPDB_REDACT", "sometimes")
    with pytest.raises(ConfigError, match="HEAPDB_REDACT"):
        chosen(False, None)


def test_the_key_is_made_once_kept_private_and_changes_every_hash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("HEAPDB_REDACT_KEY", raising=False)
    made = redaction_key()
    path = tmp_path / "heapdb" / "redaction.key"
    assert path.stat().st_mode & 0o777 == 0o600
    assert redaction_key() == made
    monkeypatch.setenv("HEAPDB_REDACT_KEY", "team key")
    other = redaction_key()
    assert other != made
    redaction = chosen(True, None)
    assert redaction is not None and redaction.key == other
    assert redaction.digest(1, 2, 3) == redaction.digest(1, 2, 3) != redaction.digest(1, 2, 4)
    assert redacted_parts(redaction.placeholder(1, 2, 3)) == (3, redaction.digest(1, 2, 3))


# -- files ---------------------------------------------------------------------------------------


def test_a_redacted_file_holds_no_secret_and_counts_duplicates_alike(
    planted: tuple[Path, list[str]], key: str, tmp_path: Path
) -> None:
    path, secrets = planted
    assert leaks(path.read_bytes(), secrets) == secrets  # they are there to find
    graph = formats.read_graph(path)
    before = strings.duplicate_strings(graph, analysis.analyze(graph), source="", limit=strings.KEPT)
    assert before is not None and any(r.count == 40 and secrets[0] in r.value for r in before.rows)

    v8_copy, snapbin_copy = tmp_path / "redacted.heapsnapshot", tmp_path / "redacted.bin"
    for dest, extra in ((v8_copy, []), (snapbin_copy, ["--no-compress"])):
        done = CliRunner().invoke(main, ["convert", "--redact", str(path), str(dest), *extra])
        assert done.exit_code == 0, done.output
        assert leaks(done.output, secrets) == []
        assert leaks(dest.read_bytes(), secrets) == []
        read = formats.read_graph(dest)
        assert leaks(read.strings, secrets) == [] and leaks(str(read.meta), secrets) == []
    assert json.loads(formats.read_graph(snapbin_copy).meta[REDACTED])["values"] is True

    # The redacted file's duplicate strings are the original's, number for number, under placeholders.
    redacted_graph = formats.read_graph(v8_copy)
    after = strings.duplicate_strings(redacted_graph, analysis.analyze(redacted_graph), source="", limit=strings.KEPT)
    assert after is not None
    figures = ("strings", "string_bytes", "duplicated", "wasted", "values")
    assert [getattr(after, f) for f in figures] == [getattr(before, f) for f in figures]
    expected = redacted_strings(before, graph, chosen(True, None))  # type: ignore[arg-type]
    assert after.rows == expected.rows
    assert all(redacted_parts(r.value) == (r.length, r.key.split("-")[0]) for r in after.rows)


def test_patterns_redact_only_what_they_match(planted: tuple[Path, list[str]], key: str, tmp_path: Path) -> None:
    path, secrets = planted
    rules = tmp_path / "rules.toml"
    rules.write_text('version = 1\n[[redact]]\nstrings = { glob = "*sk_live_*" }\n')
    dest = tmp_path / "narrow.heapsnapshot"
    done = CliRunner().invoke(main, ["convert", "--rules", str(rules), str(path), str(dest)])
    assert done.exit_code == 0, done.output
    api_key, mail, password = secrets
    assert leaks(dest.read_bytes(), secrets) == [mail, password]  # the key is gone; the rest was not asked for


# -- the store, pages, twins, MCP ------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(database: Database, planted: tuple[Path, list[str]], key: str) -> tuple[str, str]:
    """The planted snapshot loaded with --redact: its tag, and what the command printed."""
    tag = f"test-redacted-{uuid.uuid4().hex[:8]}"
    done = CliRunner().invoke(main, ["load", "--redact", str(planted[0]), "--tag", tag])
    assert done.exit_code == 0, done.output
    return tag, done.output


def test_a_redacted_load_stores_no_secret(
    database: Database, planted: tuple[Path, list[str]], loaded: tuple[str, str]
) -> None:
    path, secrets = planted
    tag, output = loaded
    assert leaks(output, secrets) == []
    assert stored_leaks(database, tag, secrets) == []
    record = Questions(database).snapshot(tag)
    assert json.loads(record.meta[REDACTED])["strings"] == str(EVERY_STRING)


def test_duplicate_strings_answer_as_the_unredacted_file_does(
    database: Database, planted: tuple[Path, list[str]], loaded: tuple[str, str]
) -> None:
    graph = formats.read_graph(planted[0])
    original = strings.duplicate_strings(graph, analysis.analyze(graph), source=loaded[0], limit=50)
    assert original is not None
    stored = Questions(database).strings(loaded[0], params.Strings(limit=50))
    assert stored == redacted_strings(original, graph, chosen(True, None))  # type: ignore[arg-type]
    assert stored.wasted == original.wasted and stored.rows[0].count == original.rows[0].count


def test_no_page_twin_or_tool_shows_a_secret(
    database: Database, planted: tuple[Path, list[str]], loaded: tuple[str, str]
) -> None:
    secrets, tag = planted[1], loaded[0]
    example = Questions(database).strings(tag, params.Strings(limit=1)).rows[0].example_id
    client = TestClient(create_app(token=""))
    seen: set[str] = set()
    queue = [
        links.page_path(links.SNAPSHOT_PAGE, tag=tag),
        links.page_path(links.OBJECT_PAGE, tag=tag, object_id=example),
        f"/ask/strings?tag={tag}",
        f"/search?tag={tag}&text=sk_live",
        f"/search?tag={tag}&text=example.invalid",
    ]
    # The pages a person reaches from there, each with its JSON twin, breadth first.
    while queue and len(seen) < 40:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        for asked in (url, url.replace("?", links.JSON_SUFFIX + "?", 1) if "?" in url else url + links.JSON_SUFFIX):
            answer = client.get(asked)
            assert answer.status_code in (200, 404), (asked, answer.status_code)
            assert leaks(answer.text, secrets) == [], asked
        queue += [
            href
            for href in re.findall(r'href="(/[^"#]*)"', client.get(url).text)
            if tag in href and not href.startswith(links.STATIC)
        ]
    assert len(seen) >= 20
    assert not re.search(r"\b[0-9]+ objects? found", client.get(f"/search?tag={tag}&text=sk_live").text)

    server = build_server()
    for tool, arguments in (
        ("strings", {"tag": tag, "limit": 20}),
        ("object", {"tag": tag, "object_id": example}),
        ("search", {"tag": tag, "text": "example.invalid"}),
        ("top", {"tag": tag}),
    ):
        result = anyio.run(server.call_tool, tool, arguments)
        assert leaks(str(result), secrets) == [], tool


# -- Java ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def java_secrets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    assert all(shutil.which(tool) for tool in ("javac", "java", "jcmd")), "scripts/bootstrap.sh installs a JDK"
    tmp = tmp_path_factory.mktemp("java-secrets")
    classes = compile_java(tmp, "Secrets.java")
    dump = tmp / "secrets.hprof"
    api_key, password, pin = dump_program(classes, "Secrets", dump)
    return dump, [api_key, password, pin]


def pin_bytes(pin: str) -> str:
    return struct.pack(">i", int(pin)).hex()


def account_values(database: Database, tag: str) -> list[str | None]:
    rows = database.read(
        "MATCH (s:Snapshot {tag: $tag}) MATCH (o:Object {sid: s.sid}) WHERE o.type ENDS WITH 'Secrets$Account' "
        "RETURN o.values AS v",
        {"tag": tag},
    )
    assert len(rows) == 1
    return [r["v"] for r in rows]


def test_a_redacted_java_dump_keeps_no_value(
    database: Database, java_secrets: tuple[Path, list[str]], key: str, tmp_path: Path
) -> None:
    dump, (api_key, password, pin) = java_secrets
    plain = f"test-java-plain-{uuid.uuid4().hex[:8]}"
    redacted = f"test-java-redacted-{uuid.uuid4().hex[:8]}"
    for tag, extra in ((plain, []), (redacted, ["--redact"])):
        done = CliRunner().invoke(main, ["load", str(dump), "--tag", tag, "--rules", "none", *extra])
        assert done.exit_code == 0, done.output
    # Unredacted, the store holds them (the test would see them), redacted it holds none.
    assert stored_leaks(database, plain, [api_key, password]) == sorted([api_key, password])
    assert pin_bytes(pin) in (account_values(database, plain)[0] or "")
    assert stored_leaks(database, redacted, [api_key, password]) == []
    assert account_values(database, redacted) == [None]

    narrow = f"test-java-narrow-{uuid.uuid4().hex[:8]}"
    rules = tmp_path / "rules.toml"
    rules.write_text('version = 1\n[[redact]]\nstrings = { glob = "sk_live_*" }\n')
    done = CliRunner().invoke(main, ["load", str(dump), "--tag", narrow, "--rules", str(rules)])
    assert done.exit_code == 0, done.output
    assert stored_leaks(database, narrow, [api_key, password]) == [password]  # only the key was asked for
    assert pin_bytes(pin) in (account_values(database, narrow)[0] or "")


# -- a service that requires redaction -------------------------------------------------------------


def test_a_service_that_requires_redaction_takes_only_redacted_uploads(
    database: Database, planted: tuple[Path, list[str]], key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, secrets = planted
    monkeypatch.setenv("HEAPDB_REDACT", "always")
    monkeypatch.setenv("HEAPDB_API_WRITE_TOKEN", WRITE)
    monkeypatch.setenv("HEAPDB_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("HEAPDB_PROGRESS", "0")
    with served(create_app(token="")) as port:
        url = f"http://127.0.0.1:{port}"
        auth = {"Authorization": f"Bearer {WRITE}"}
        refused = httpx.post(
            f"{url}{links.SNAPSHOTS}", params={"tag": "plain"}, content=path.read_bytes(), headers=auth
        )
        assert refused.status_code == 422 and "heapdb push --redact" in refused.json()["error"]

        # Saying so is not enough: the file itself must say it was redacted.
        lying = httpx.post(
            f"{url}{links.SNAPSHOTS}",
            params={"tag": "lying", "redacted": "true"},
            content=path.read_bytes(),
            headers=auth,
        )
        assert lying.status_code == 202, lying.text
        job = lying.json()
        for _ in range(600):
            job = httpx.get(f"{url}{job['url']}", headers=auth).json()
            if job["phase"] in ("done", "failed", "cancelled"):
                break
            anyio.run(anyio.sleep, 0.2)
        assert job["phase"] == "failed" and "was not redacted" in job["error"]
        assert leaks(job, secrets) == []

        # A refusal comes before the file is read and redacted: a file no reader takes says nothing.
        unread = tmp_path / "never-read.heapsnapshot"
        unread.write_bytes(b"not a snapshot at all")
        early = CliRunner().invoke(main, ["push", str(unread), "--tag", "early", "--server", url, "--token", "wrong"])
        assert early.exit_code != 0 and "the service refused (401)" in early.output, early.output

        tag = f"test-pushed-{uuid.uuid4().hex[:8]}"
        pushed = CliRunner().invoke(
            main, ["push", str(path), "--tag", tag, "--server", url, "--token", WRITE, "--wait", "--json"]
        )
        assert pushed.exit_code == 0, pushed.output
        assert leaks(pushed.output, secrets) == []
    assert stored_leaks(database, tag, secrets) == []
    assert json.loads(Questions(database).snapshot(tag).meta[REDACTED])["key"]
    assert list((tmp_path / "spool").iterdir()) == []


def test_the_docs_example_parses_and_covers_what_it_says(key: str) -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    section = text[text.index("## Redaction") : text.index("## Examples")]
    (example,) = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    redaction = chosen(False, parse_rules("version = 1\n" + example, "docs/rules.md"))
    assert redaction is not None and redaction.values
    assert redaction.covers("Bearer abc") and redaction.covers("x sk_live_1 y") and not redaction.covers("hello")
    assert redaction.covers_name("ada@example.invalid") and not redaction.covers_name("sessions")
