"""Rule sets stored in Neo4j (heapdb.loader.store.rulesets), through the store functions, `heapdb rules` and
the REST routes, against the session's real Neo4j. Each test uses its own names; the database is shared."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from markupsafe import escape

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotFound, ParameterError, RuleError
from heapdb.loader.store import rulesets
from heapdb.service import rule_pages
from heapdb.service.app import create_app

FIRST = """version = 1

# Closure contexts yield to any other holder.
[[weak]]
to.type = "system / Context"
"""

# CRLF line ends and no final newline: stored and shown back as they are.
SECOND = 'version = 1\r\n\r\n[[ignore]]\r\nto = "(object shape)"\r\n\r\n[[bucket]]\r\nname = "app"\r\nobject.type = "x"'


BAD = """version = 1

[[owns]]
from = "LeakyCache"
weight = 300
"""


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def names(records: list[rulesets.RuleSetRecord], name: str) -> list[rulesets.RuleSetRecord]:
    return [r for r in records if r.name == name]


def test_add_list_show_remove_with_versions(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAPDB_AUTHOR", "alice")
    name = unique_name("team")
    first = rulesets.add_rule_set(database, name, FIRST)
    assert (first.name, first.version, first.author) == (name, 1, "alice")
    assert first.digest == hashlib.sha256(FIRST.encode()).hexdigest()
    assert first.text == FIRST and first.added_at.endswith("+00:00")
    second = rulesets.add_rule_set(database, name, SECOND, author="bob")
    assert (second.version, second.author) == (2, "bob")

    latest = names(rulesets.list_rule_sets(database), name)
    assert [(r.version, r.versions, r.text) for r in latest] == [(2, 2, None)]  # listings leave the text out
    every = names(rulesets.list_rule_sets(database, all_versions=True), name)
    assert [(r.version, r.author) for r in every] == [(1, "alice"), (2, "bob")]

    assert rulesets.get_rule_set(database, name).text == SECOND
    old = rulesets.get_rule_set(database, name, 1)
    assert (old.text, old.digest, old.versions) == (FIRST, first.digest, 2)

    assert rulesets.remove_rule_set(database, name, 1) == 1
    with pytest.raises(NotFound, match=r"has no version 1 \(its versions: 2\)"):
        rulesets.get_rule_set(database, name, 1)
    assert rulesets.get_rule_set(database, name).version == 2  # the version that stays keeps its number
    third = rulesets.add_rule_set(database, name, FIRST)
    assert third.version == 3
    assert rulesets.remove_rule_set(database, name) == 2
    assert names(rulesets.list_rule_sets(database, all_versions=True), name) == []
    with pytest.raises(NotFound, match="heapdb rules list"):
        rulesets.get_rule_set(database, name)
    with pytest.raises(NotFound, match="no rule set named"):
        rulesets.remove_rule_set(database, name)


def test_a_bad_rule_file_or_name_stores_nothing(database: Database) -> None:
    name = unique_name("bad")
    with pytest.raises(RuleError, match=r"^team\.toml:5: owns: weight must be"):
        rulesets.add_rule_set(database, name, BAD, path="team.toml")
    with pytest.raises(RuleError, match=r"^<rule set bad-[0-9a-f]+>:5:"):
        rulesets.add_rule_set(database, name, BAD)
    assert names(rulesets.list_rule_sets(database, all_versions=True), name) == []
    for bad in ("", "-x", "a b", "../etc", "a/b", "x" * 101, "é"):
        with pytest.raises(ParameterError, match="bad rule set name"):
            rulesets.add_rule_set(database, bad, FIRST)
    with pytest.raises(ParameterError, match="bad rule set version"):
        rulesets.get_rule_set(database, name, 0)
    with pytest.raises(ParameterError, match="at most"):
        rulesets.add_rule_set(database, name, FIRST + "#" * rulesets.MAX_TEXT_BYTES)
    assert names(rulesets.list_rule_sets(database, all_versions=True), name) == []


def test_adds_at_once_take_distinct_versions(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    name = unique_name("race")
    rulesets.ensure_schema(database)
    monkeypatch.setattr(rulesets, "ensure_schema", lambda database: None)  # the adds meet in the write itself
    got: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def add() -> None:
        try:
            start.wait()
            got.append(rulesets.add_rule_set(database, name, FIRST, author="t").version)
        except BaseException as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=add) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(got) == [1, 2, 3, 4, 5, 6]
    rulesets.remove_rule_set(database, name)


def test_cli_round_trip(database: Database, tmp_path: Path) -> None:
    name = unique_name("cli")
    path = tmp_path / "team.toml"
    path.write_bytes(SECOND.encode())
    runner = CliRunner()

    added = runner.invoke(main, ["rules", "add", str(path), "--name", name, "--author", "carol", "--json"])
    assert added.exit_code == 0, added.stderr
    record = json.loads(added.stdout)
    assert (record["name"], record["version"], record["author"]) == (name, 1, "carol")
    assert record["digest"] == hashlib.sha256(path.read_bytes()).hexdigest()
    again = runner.invoke(main, ["rules", "add", "-", "--name", name], input=FIRST)
    assert again.exit_code == 0, again.stderr
    assert f"added rule set {name!r} version 2" in again.stdout

    shown = runner.invoke(main, ["rules", "show", name, "--version", "1"])
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout_bytes == path.read_bytes()  # `heapdb rules show N > f.toml` gives the file back
    assert runner.invoke(main, ["rules", "show", name]).stdout_bytes == FIRST.encode()
    as_json = json.loads(runner.invoke(main, ["rules", "show", name, "--json"]).stdout)
    assert (as_json["version"], as_json["versions"], as_json["text"]) == (2, 2, FIRST)

    listed = json.loads(runner.invoke(main, ["rules", "list", "--json"]).stdout)
    assert [(r["name"], r["version"], r["versions"]) for r in listed if r["name"] == name] == [(name, 2, 2)]
    assert all("text" not in r for r in listed)
    every = json.loads(runner.invoke(main, ["rules", "list", "--all-versions", "--json"]).stdout)
    assert [r["version"] for r in every if r["name"] == name] == [1, 2]
    table = runner.invoke(main, ["rules", "list"])
    assert table.exit_code == 0 and name in table.stdout and "sha256" in table.stdout

    refused = runner.invoke(main, ["rules", "remove", name, "--version", "1"], input="n\n")
    assert refused.exit_code == 1  # click's Abort
    assert rulesets.get_rule_set(database, name, 1).version == 1
    removed = runner.invoke(main, ["rules", "remove", name, "--version", "1"], input="y\n")
    assert removed.exit_code == 0, removed.stderr
    assert f"removed version 1 of rule set {name!r}" in removed.stdout
    gone = runner.invoke(main, ["rules", "remove", name, "--yes"])
    assert gone.exit_code == 0 and "removed 1 version of" in gone.stdout

    unknown = runner.invoke(main, ["rules", "show", name])
    assert unknown.exit_code == 1 and "no rule set named" in unknown.stderr
    unknown_version = runner.invoke(main, ["rules", "remove", name, "--version", "9", "--yes"])
    assert unknown_version.exit_code == 1 and "no rule set named" in unknown_version.stderr


def test_cli_refuses_a_bad_file_and_a_bad_name_storing_nothing(database: Database, tmp_path: Path) -> None:
    name = unique_name("cli-bad")
    path = tmp_path / "team.toml"
    path.write_text(BAD)
    runner = CliRunner()
    bad = runner.invoke(main, ["rules", "add", str(path), "--name", name])
    assert bad.exit_code == 1
    assert f"heapdb: error: {path}:5: owns: weight must be an integer from 1 to 127" in bad.stderr
    path.write_bytes(b"version = 1\n# \xff\n")
    not_utf8 = runner.invoke(main, ["rules", "add", str(path), "--name", name])
    assert not_utf8.exit_code == 1 and "not UTF-8 text" in not_utf8.stderr
    missing = runner.invoke(main, ["rules", "add", str(tmp_path / "nope.toml"), "--name", name])
    assert missing.exit_code == 1 and "cannot read the rule file" in missing.stderr
    bad_name = runner.invoke(main, ["rules", "add", str(path), "--name", "no spaces"])
    assert bad_name.exit_code == 1 and "bad rule set name 'no spaces'" in bad_name.stderr
    assert names(rulesets.list_rule_sets(database, all_versions=True), name) == []
    for command in ("add", "list", "show", "remove"):
        helped = runner.invoke(main, ["rules", command, "--help"])
        assert helped.exit_code == 0 and "Usage: " in helped.stdout


def test_rest_answers_equal_the_cli(database: Database) -> None:
    name = unique_name("rest")
    rulesets.add_rule_set(database, name, FIRST, author="dave")
    rulesets.add_rule_set(database, name, SECOND, author="dave")
    client = TestClient(create_app(token=""))
    runner = CliRunner()
    try:
        for query, argv in (("", []), ("?all_versions=true", ["--all-versions"])):
            response = client.get("/api/rules" + query)
            assert response.status_code == 200, response.text
            cli = json.loads(runner.invoke(main, ["rules", "list", "--json", *argv]).stdout)
            assert names_in(response.json(), name) == names_in(cli, name) != []
        for query, argv in (("", []), ("?version=1", ["--version", "1"])):
            response = client.get(f"/api/rules/{name}{query}")
            assert response.status_code == 200, response.text
            assert response.json() == json.loads(runner.invoke(main, ["rules", "show", name, "--json", *argv]).stdout)
        assert client.get(f"/api/rules/{name}?version=1").json()["text"] == FIRST
        # The example query of docs/data-model.md, as written there.
        doc = (Path(__file__).resolve().parents[1] / "docs" / "data-model.md").read_text(encoding="utf-8")
        cypher = doc.split("## `:RuleSet`")[1].split("```cypher")[1].split("```")[0]
        assert [r["r.version"] for r in database.read(cypher) if r["r.name"] == name] == [2]

        missing = client.get("/api/rules/no-such-rules-" + name)
        assert missing.status_code == 404 and "no rule set named" in missing.json()["error"]
        no_version = client.get(f"/api/rules/{name}?version=7")
        assert no_version.status_code == 404 and "its versions: 1, 2" in no_version.json()["error"]
        for bad in (f"/api/rules/{name}?version=0", f"/api/rules/{name}?version=x", "/api/rules/" + "x" * 101):
            assert client.get(bad).status_code == 422, bad
        assert client.get("/api/rules/a%20b").status_code == 422
        spec = client.get("/openapi.json").json()["paths"]
        assert spec["/api/rules"]["get"]["summary"] and spec["/api/rules/{name}"]["get"]["summary"]
        # The pages: every version listed under its name; one version's file, shown as it is stored.
        listing = client.get(rule_pages.RULES).text
        assert f'href="{rule_pages.rule_page(name)}"' in listing
        assert all(f'href="{rule_pages.rule_page(name, v)}"' in listing for v in (1, 2))
        first = client.get(rule_pages.rule_page(name, 1))
        assert first.status_code == 200 and escape(FIRST) in first.text and "version 1 of 2" in first.text
        assert escape(SECOND) in client.get(rule_pages.rule_page(name)).text  # the latest
        twin = client.get(rule_pages.rule_page(name).replace(name, name + ".json") + "?version=1").json()
        assert twin["rule_set"] == client.get(f"/api/rules/{name}?version=1").json()
        assert client.get(rule_pages.rule_page(name, 7)).status_code == 404
        assert client.get(rule_pages.rule_page(name) + "?version=0").status_code == 422
    finally:
        rulesets.remove_rule_set(database, name)


def names_in(rows: list[dict[str, object]], name: str) -> list[dict[str, object]]:
    return [r for r in rows if r["name"] == name]


READ, WRITE = "rules-read-token", "rules-write-token"


def token(value: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"} if value else {}


def writer(monkeypatch: pytest.MonkeyPatch) -> TestClient:
    """A client of an app that takes writes, sending the write token (which reads too)."""
    monkeypatch.setenv("HEAPDB_API_WRITE_TOKEN", WRITE)
    return TestClient(create_app(token=READ), headers=token(WRITE))


def forget(database: Database, name: str) -> None:
    with contextlib.suppress(NotFound):
        rulesets.remove_rule_set(database, name)


def test_rest_adds_shows_and_removes_versions(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEAPDB_AUTHOR", "the-service-user")  # not who sent the file: not recorded
    name = unique_name("rest-add")
    client = writer(monkeypatch)
    try:
        first = client.post(f"/api/rules/{name}", content=FIRST.encode(), headers={"Content-Type": "text/plain"})
        assert first.status_code == 201, first.text
        record = first.json()
        assert (record["name"], record["version"], record["text"]) == (name, 1, FIRST)
        assert record["digest"] == hashlib.sha256(FIRST.encode()).hexdigest() and "author" not in record
        assert first.headers["location"] == f"/api/rules/{name}?version=1"

        second = client.post(
            f"/api/rules/{name}",
            params={"author": "erin"},
            content=SECOND.encode(),
            headers={"Content-Type": "application/toml; charset=utf-8"},
        )
        assert second.status_code == 201, second.text
        assert (second.json()["version"], second.json()["author"]) == (2, "erin")
        assert second.headers["location"] == f"/api/rules/{name}?version=2"
        third = client.post(
            f"/api/rules/{name}", content=FIRST.encode(), headers={"Content-Type": "application/octet-stream"}
        )
        assert third.status_code == 201 and third.json()["version"] == 3

        shown = client.get(second.headers["location"], headers=token(READ))  # the read token reads what was added
        assert shown.status_code == 200, shown.text
        assert shown.json()["text"].encode() == SECOND.encode()  # CRLF, no final newline: byte for byte
        assert rulesets.get_rule_set(database, name, 1).text == FIRST

        removed = client.delete(f"/api/rules/{name}", params={"version": 1})
        assert removed.status_code == 200, removed.text
        assert removed.json() == {"name": name, "version": 1, "removed": 1}
        gone = client.get(f"/api/rules/{name}", params={"version": 1})
        assert gone.status_code == 404 and "its versions: 2, 3" in gone.json()["error"]
        assert client.delete(f"/api/rules/{name}", params={"version": 1}).status_code == 404

        every = client.delete(f"/api/rules/{name}")
        assert every.status_code == 200 and every.json() == {"name": name, "removed": 2}
        listed = client.get("/api/rules", params={"all_versions": "true"})
        assert listed.status_code == 200 and names_in(listed.json(), name) == []
        unknown = client.delete(f"/api/rules/{name}")
        assert unknown.status_code == 404 and "no rule set named" in unknown.json()["error"]
        assert client.delete(f"/api/rules/{name}", params={"version": 0}).status_code == 422
    finally:
        forget(database, name)


def test_rest_refuses_bad_rule_files_storing_nothing(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    name = unique_name("rest-bad")
    client = writer(monkeypatch)
    plain = {"Content-Type": "text/plain"}
    try:
        bad = client.post(f"/api/rules/{name}", content=BAD.encode(), headers=plain)
        assert bad.status_code == 422, bad.text
        # The parser's message: the file (the rule set's name), the line and what was expected there.
        assert bad.json()["error"].startswith(f"<rule set {name}>:5: owns: weight must be an integer from 1 to 127")
        not_utf8 = client.post(f"/api/rules/{name}", content=b"version = 1\n# \xff\n", headers=plain)
        assert not_utf8.status_code == 422 and "not UTF-8 text (byte 14)" in not_utf8.json()["error"]
        empty = client.post(f"/api/rules/{name}", content=b"", headers=plain)
        assert empty.status_code == 422 and "expected `version = 1`" in empty.json()["error"]

        over = FIRST.encode() + b"#" * rulesets.MAX_TEXT_BYTES
        declared = client.post(f"/api/rules/{name}", content=over, headers=plain)  # refused on Content-Length
        assert declared.status_code == 413 and "larger than 1,048,576 bytes" in declared.json()["error"]
        chunks = (over[i : i + 65536] for i in range(0, len(over), 65536))
        streamed = client.post(f"/api/rules/{name}", content=chunks, headers=plain)  # chunked: counted as read
        assert streamed.status_code == 413, streamed.text

        for content_type in ("application/json", "application/x-www-form-urlencoded", "text/plain; charset=latin-1"):
            wrong = client.post(f"/api/rules/{name}", content=FIRST.encode(), headers={"Content-Type": content_type})
            assert wrong.status_code == 415, content_type
        gzipped = client.post(
            f"/api/rules/{name}", content=FIRST.encode(), headers={**plain, "Content-Encoding": "gzip"}
        )
        assert gzipped.status_code == 415
        for bad_name in ("a%20b", "-x", "x" * 101):
            assert client.post(f"/api/rules/{bad_name}", content=FIRST.encode(), headers=plain).status_code == 422
        assert (
            client.post(f"/api/rules/{name}", params={"author": "x" * 201}, content=FIRST.encode()).status_code == 422
        )
        assert names(rulesets.list_rule_sets(database, all_versions=True), name) == []
    finally:
        forget(database, name)


def test_rest_rule_writes_need_the_write_token(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    name = unique_name("rest-token")
    rulesets.add_rule_set(database, name, FIRST, author="frank")
    try:
        monkeypatch.delenv("HEAPDB_API_WRITE_TOKEN", raising=False)
        closed = TestClient(create_app(token=READ))
        for given in (None, READ, WRITE):
            for method in ("POST", "DELETE"):
                response = closed.request(method, f"/api/rules/{name}", content=FIRST.encode(), headers=token(given))
                assert response.status_code == 403, (method, given)
                assert "HEAPDB_API_WRITE_TOKEN" in response.json()["error"]

        monkeypatch.setenv("HEAPDB_API_WRITE_TOKEN", WRITE)
        client = TestClient(create_app(token=READ))
        for given, status in ((None, 401), ("wrong", 401), (READ, 403)):
            for method in ("POST", "DELETE"):
                response = client.request(method, f"/api/rules/{name}", content=FIRST.encode(), headers=token(given))
                assert response.status_code == status, (method, given, response.text)
        assert rulesets.get_rule_set(database, name).versions == 1  # nothing added, nothing removed
        for given in (READ, WRITE):  # reads stay as they were: either token
            assert client.get(f"/api/rules/{name}", headers=token(given)).status_code == 200
        assert client.get(f"/api/rules/{name}").status_code == 401

        spec = client.get("/openapi.json", headers=token(READ)).json()["paths"]["/api/rules/{name}"]
        assert spec["post"]["summary"] and spec["delete"]["summary"]
        assert {"201", "401", "403", "413", "415", "422"} <= set(spec["post"]["responses"])
        assert "text/plain" in spec["post"]["requestBody"]["content"]
        assert {"200", "404"} <= set(spec["delete"]["responses"])
    finally:
        forget(database, name)
