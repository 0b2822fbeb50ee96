"""``heapdb mcp``: the questions as MCP tools, asked with the official SDK's own client.

The server runs as a client would run it (``python -m heapdb mcp``, over stdio and over streamable
HTTP) against the session's Neo4j, with three snapshots of ``tests/js/leak.js`` loaded; the answers
are compared with what :class:`~heapdb.queries.questions.Questions` says in process. The paging of
long answers is also checked on its own, without a database.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from heapdb.cli import main
from heapdb.db import Database
from heapdb.errors import NotFound, ParameterError
from heapdb.neo4j_server import free_port
from heapdb.queries import catalog, params, results
from heapdb.queries.questions import Questions
from heapdb.service import links
from heapdb.service.answer_pages import MAX_ANSWER_CHARS, MAX_PAGE_ITEMS, Pages
from heapdb.service.mcp import compact, text_answer
from tests.support.snapshots import Loaded

REPO = Path(__file__).resolve().parent.parent

TOOLS = {
    "snapshots",
    "leaks",
    "why",
    "dominators",
    "retains",
    "top",
    "types",
    "find",
    "instances",
    "references",
    "search",
    "object",
    "diff",
    "growth",
    "type-history",
    "unbound",
    "suspects",
    "lifelines",
    "heapdomstats",
    "strings",
    "dup-objects",
    "dom",
    "react",
    "react-hooks",
    "stale",
    "held",
    "fill",
    "owners",
    "lifecycles",
    "gate",
    "signatures",
    "signature",
    "gate-runs",
    "gate-run",
    "queries",
    "query",
    "page",
}

# What tests/js/leak.js leaks into: a why path of a leaked object passes through one of these.
LEAK_HOLDERS = ("LeakyCache", "heapdbLeakRegistry", "EventEmitter", "_events")

Session = Callable[[ClientSession], Awaitable[None]]


def server_environment() -> dict[str, str]:
    """What the server process needs to find the session's Neo4j: the SDK passes on only a few
    variables of its own (PATH, HOME...), so heapdb's settings go explicitly."""
    names = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE")
    return {name: os.environ[name] for name in names if name in os.environ}


def over_stdio(session: Session) -> None:
    """Run ``session`` against ``python -m heapdb mcp`` started by the SDK's stdio client."""
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "heapdb", "mcp"], env=server_environment(), cwd=str(REPO)
    )

    async def run() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await session(client)

    anyio.run(run)


class HttpServer:
    """``python -m heapdb mcp --transport http`` on a free loopback port, for the ``with`` block."""

    def __init__(self, token: str | None = None) -> None:
        self.port = free_port()
        self.token = token
        self.url = f"http://127.0.0.1:{self.port}{links.MCP}"

    def __enter__(self) -> HttpServer:
        env = {**os.environ, **({"HEAPDB_API_TOKEN": self.token} if self.token else {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "heapdb", "mcp", "--transport", "http", "--port", str(self.port)],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.process.communicate()[1]
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                assert time.monotonic() < deadline, "heapdb mcp --transport http did not start listening"
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.communicate(timeout=30)

    def session(self, session: Session) -> None:
        async def run() -> None:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                streamable_http_client(self.url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                await session(client)

        anyio.run(run)


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


async def call(client: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's answer, checked to be a success within the declared bounds."""
    result = await client.call_tool(tool, arguments)
    answer = text(result)
    assert not result.is_error, answer
    assert len(answer) <= MAX_ANSWER_CHARS
    data: dict[str, Any] = json.loads(answer)
    assert data["page"]["items"][1] - data["page"]["items"][0] <= MAX_PAGE_ITEMS
    return data


async def whole(client: ClientSession, tool: str, lists: tuple[str, ...], **arguments: Any) -> list[dict[str, Any]]:
    """Every page of an answer, through the `page` tool."""
    pages = [await call(client, tool, **arguments)]
    while pages[-1]["page"]["next"]:
        pages.append(await call(client, "page", handle=pages[-1]["page"]["handle"], cursor=pages[-1]["page"]["next"]))
    assert [p["page"]["items"][0] for p in pages[1:]] == [p["page"]["items"][1] for p in pages[:-1]]
    return pages


def joined(pages: list[dict[str, Any]], key: str) -> list[Any]:
    return [item for page in pages for item in page[key]]


def as_agent_sees(answer: Any, detail: str = "compact") -> Any:
    """A result as the tools send it: objects pointed at as the `why` tool's arguments; by default
    compact (no null fields, an object described once)."""
    data = json.loads(json.dumps(results.to_data(answer, lambda ref: {"tag": ref.tag, "object_id": ref.id})))
    return data if detail == "full" else compact(data)


@pytest.fixture(scope="module")
def loaded(leak_series_loaded: dict[str, Loaded]) -> dict[str, str]:
    """The three leak.js snapshots' tags (loaded without rules: leaks as memlab sees them)."""
    return {label: snapshot.tag for label, snapshot in leak_series_loaded.items()}


# --- over a real server ------------------------------------------------------------------------


def test_an_agent_finds_the_leak_from_scratch(database: Database, loaded: dict[str, str]) -> None:
    """snapshots -> leaks -> why on the largest cluster's sample: the path names the leaking structure."""
    found: dict[str, Any] = {}

    async def agent(client: ClientSession) -> None:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        assert all(t.description and len(t.description) > 60 for t in tools)
        # Every page: the session's Neo4j holds the other tests' snapshots too, listed before these.
        snapshots = joined(await whole(client, "snapshots", ("snapshots",)), "snapshots")
        ours = [s["tag"] for s in snapshots if s["tag"] in loaded.values()]
        assert ours == [loaded["baseline"], loaded["target"], loaded["final"]]  # oldest first
        baseline, target, final = ours
        leaks = await call(client, "leaks", baseline=baseline, target=target, final=final)
        assert leaks["clusters"], "leak.js leaks: there must be clusters"
        cluster = leaks["clusters"][0]
        assert cluster["why"] == {"tag": final, "object_id": cluster["sample_ids"][0]}
        found["leaks"] = leaks
        found["why"] = await call(client, "why", **cluster["why"])
        found["full"] = await call(client, "why", **cluster["why"], detail="full")
        as_text = await client.call_tool("why", {**cluster["why"], "detail": "text"})
        assert not as_text.is_error
        found["text"] = text(as_text)

    over_stdio(agent)
    leaks, why = found["leaks"], found["why"]
    expected = Questions(database).leaks(loaded["baseline"], loaded["target"], loaded["final"])
    assert leaks["clusters"] == as_agent_sees(expected.clusters)[: len(leaks["clusters"])]
    cluster = leaks["clusters"][0]
    path = why["paths"][0]
    full_path = found["full"]["paths"][0]
    assert full_path["objects"][-1]["id"] == cluster["sample_ids"][0]
    assert full_path["objects"][-1]["type"] == cluster["type"]
    described = " ".join(
        f"{o['type']} {o['name']} {r['name']}"
        for o, r in zip(full_path["objects"], [*full_path["references"], {"name": ""}])
    )
    assert any(holder in described for holder in LEAK_HOLDERS), described
    asked = Questions(database).why_alive(cluster["why"]["tag"], cluster["why"]["object_id"])
    assert why == {**as_agent_sees(asked), "page": why["page"]}
    assert found["full"] == {**as_agent_sees(asked, "full"), "page": found["full"]["page"]}
    # Compact: the target, described once above the paths, ends each path as its id alone.
    assert why["target"]["type"] == cluster["type"] and path["objects"][-1] == {"id": cluster["sample_ids"][0]}
    # Text: what the command prints, a few times shorter than the compact JSON.
    printed = CliRunner().invoke(main, ["why", cluster["why"]["tag"], str(cluster["why"]["object_id"])])
    assert found["text"] == printed.stdout.rstrip("\n") and f"@{cluster['sample_ids'][0]}" in found["text"]
    assert len(found["text"]) * 2 < len(json.dumps(why))


def test_a_text_answer_too_long_is_cut_at_a_line_and_says_so() -> None:
    lines = [f"line {n} " + "x" * 30 for n in range(100)]
    whole = "\n".join(lines)
    assert text_answer(whole, len(whole)) == whole
    cut = text_answer(whole, 1000)
    assert len(cut) <= 1000 and 'ask with detail="compact"' in cut
    kept = cut.rsplit("\n", 1)[0]
    assert whole.startswith(kept + "\n") and kept.split("\n")[-1] in lines  # whole lines only


def test_long_answers_come_in_pages_that_join_to_the_whole(database: Database, loaded: dict[str, str]) -> None:
    final = loaded["final"]
    found: dict[str, Any] = {}

    async def agent(client: ClientSession) -> None:
        found["top"] = await whole(client, "top", ("objects",), tag=final, limit=params.MAX_LIMIT)
        found["types"] = await whole(client, "types", ("types",), tag=final, limit=params.MAX_GROUP_LIMIT)
        found["retains"] = await whole(
            client,
            "retains",
            ("objects",),
            tag=final,
            object_id=found["top"][0]["objects"][0]["id"],
            limit=params.MAX_LIMIT,
            depth=params.MAX_DEPTH,
        )

    over_stdio(agent)
    questions = Questions(database)
    top = found["top"]
    assert len(top) > 1 and top[0]["page"]["handle"] and top[0]["page"]["of"] == params.MAX_LIMIT
    assert joined(top, "objects") == as_agent_sees(questions.top(final, params.Top(limit=params.MAX_LIMIT)))
    types = found["types"]
    expected_types = as_agent_sees(questions.types(final, params.Types(limit=params.MAX_GROUP_LIMIT)))
    assert joined(types, "types") == expected_types  # in one page or more, the same rows
    assert (types[0]["page"]["handle"] is None) == (len(types) == 1)
    # The subtree's objects each carry their dominator, so every page reads on its own.
    retains = questions.retains(
        final, top[0]["objects"][0]["id"], params.Retains(limit=params.MAX_LIMIT, depth=params.MAX_DEPTH)
    )
    listed = joined(found["retains"], "objects")
    assert [o["id"] for o in listed] == [o.id for o in retains.objects]
    assert {(o["dominator"], o["id"]) for o in listed[1:]} == set(retains.edges) and "dominator" not in listed[0]


def test_errors_are_tool_errors_with_heapdbs_message(loaded: dict[str, str]) -> None:
    answers: dict[str, CallToolResult] = {}

    async def agent(client: ClientSession) -> None:
        answers["tag"] = await client.call_tool("top", {"tag": "no-such-tag-" + uuid.uuid4().hex})
        answers["object"] = await client.call_tool("why", {"tag": loaded["final"], "object_id": -5})
        answers["limit"] = await client.call_tool("top", {"tag": loaded["final"], "limit": params.MAX_LIMIT + 1})
        answers["handle"] = await client.call_tool("page", {"handle": "nope", "cursor": "nope"})
        answers["query"] = await client.call_tool("query", {"name": "no-such-query"})
        answers["parameter"] = await client.call_tool("query", {"name": "top", "parameters": {"tag": 5}})
        answers["signature"] = await client.call_tool("signature", {"signature": -7})
        answers["signatures"] = await client.call_tool("signatures", {"since": "no-such-build-" + uuid.uuid4().hex})
        answers["gate-run"] = await client.call_tool("gate-run", {"run_id": 2**62})
        answers["after"] = await client.call_tool("snapshots", {})  # the server is still there

    over_stdio(agent)
    assert "no snapshot tagged 'no-such-tag-" in text(answers["tag"])
    assert f"no object with id -5 in snapshot {loaded['final']!r}" in text(answers["object"])
    assert "limit" in text(answers["limit"]) and str(params.MAX_LIMIT) in text(answers["limit"])
    assert "no answer under handle 'nope'" in text(answers["handle"])
    assert "no stored query 'no-such-query'" in text(answers["query"])
    assert "parameter 'tag' must be" in text(answers["parameter"])
    assert "no leak signature -7 is remembered" in text(answers["signature"])
    assert "no recorded build or tag 'no-such-build-" in text(answers["signatures"])
    assert f"no gate run {2**62} is recorded" in text(answers["gate-run"])
    failed = ("tag", "object", "limit", "handle", "query", "parameter", "signature", "signatures", "gate-run")
    assert all(answers[k].is_error for k in failed)
    assert not answers["after"].is_error


def test_stored_queries_over_http_behind_the_token(database: Database, loaded: dict[str, str]) -> None:
    token = uuid.uuid4().hex
    found: dict[str, Any] = {}

    async def agent(client: ClientSession) -> None:
        found["tools"] = {t.name for t in (await client.list_tools()).tools}
        found["queries"] = await whole(client, "queries", ("queries",))
        found["rows"] = await call(client, "query", name="top", parameters={"tag": loaded["final"], "limit": 5})
        found["resource"] = await client.read_resource("heapdb://snapshots")
        found["first page"] = await call(client, "snapshots")

    with HttpServer(token) as server:
        refused = httpx.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        server.session(agent)
    assert refused.status_code == 401
    assert found["tools"] == TOOLS
    assert [q["name"] for q in joined(found["queries"], "queries")] == list(catalog.catalog())
    rows = catalog.run(database, "top", {"tag": loaded["final"], "limit": 5})
    assert found["rows"]["rows"] == json.loads(json.dumps(rows)) and len(rows) == 5
    # The resource is the `snapshots` tool's first page (other tests' snapshots may fill it).
    listed = json.loads(found["resource"].contents[0].text)["snapshots"]
    assert listed and listed == found["first page"]["snapshots"]


# --- paging, without a server ------------------------------------------------------------------


def pages_of(pages: Pages, data: dict[str, Any], lists: tuple[str, ...]) -> list[dict[str, Any]]:
    out = [json.loads(pages.first(data, lists))]
    while out[-1]["page"]["next"]:
        out.append(json.loads(pages.page(out[-1]["page"]["handle"], out[-1]["page"]["next"])))
    return out


def test_pages_keep_the_bounds_and_join_to_the_answer() -> None:
    pages = Pages(max_chars=400, max_items=7)
    data = {"tag": "t", "rows": [{"id": i, "name": "x" * (i % 13)} for i in range(60)], "more": list(range(25))}
    got = pages_of(pages, data, ("rows", "more"))
    texts = [json.dumps(p, separators=(",", ":"), ensure_ascii=False) for p in got]
    assert all(len(t) <= 400 for t in texts) and len(got) > 60 * 20 // 400
    assert all(p["tag"] == "t" and p["page"]["items"][1] - p["page"]["items"][0] <= 7 for p in got)
    assert joined(got, "rows") == data["rows"] and joined(got, "more") == data["more"]
    assert got[-1]["page"]["next"] is None and got[-1]["page"]["handle"] == got[0]["page"]["handle"]
    small = json.loads(pages.first({"rows": [1, 2]}, ("rows",)))
    assert small["page"] == {"items": [0, 2], "of": 2, "handle": None, "next": None}


def test_an_item_too_big_for_any_page_is_noted_in_its_place() -> None:
    pages = Pages(max_chars=200)
    got = pages_of(pages, {"rows": ["a", "b" * 500, "c"]}, ("rows",))
    rows = joined(got, "rows")
    assert rows[0] == "a" and rows[2] == "c" and "over the answer bound of 200" in rows[1]["omitted"]


def test_handles_expire_and_are_bounded() -> None:
    now = [0.0]
    pages = Pages(max_chars=100, max_handles=2, seconds=60, clock=lambda: now[0])
    data = {"rows": list(range(100))}
    first = [json.loads(pages.first(data, ("rows",)))["page"] for _ in range(3)]
    with pytest.raises(NotFound, match="expired"):  # the oldest of three, over the bound of two
        pages.page(first[0]["handle"], first[0]["next"])
    assert json.loads(pages.page(first[2]["handle"], first[2]["next"]))["rows"][0] == first[2]["items"][1]
    now[0] = 61
    with pytest.raises(NotFound):
        pages.page(first[2]["handle"], first[2]["next"])
    fresh = json.loads(pages.first(data, ("rows",)))["page"]
    with pytest.raises(ParameterError, match="cursor"):
        pages.page(fresh["handle"], "not-a-cursor")


def test_lifelines_heapdomstats_and_the_gate_answer_as_the_python_api(
    database: Database, loaded: dict[str, str]
) -> None:
    baseline, final = loaded["baseline"], loaded["final"]
    found: dict[str, Any] = {}

    async def agent(client: ClientSession) -> None:
        found["lifelines"] = await whole(client, "lifelines", ("steps",), tag=final, type="LeakedItem")
        found["heapdomstats"] = await whole(client, "heapdomstats", ("rows",), tag=final)
        found["gate"] = await whole(
            client, "gate", ("findings", "known"), baseline=baseline, candidate=final, min_bytes=65536
        )
        found["dominator"] = await whole(client, "diff", ("changes",), before=baseline, after=final, by="dominator")
        # Drilled into the place the growth concentrates, by the key the answer gave.
        key = found["dominator"][0]["concentration"][-1]["key"]
        found["drilled"] = await whole(
            client, "diff", ("changes",), before=baseline, after=final, by="dominator", under=key
        )

    over_stdio(agent)
    questions = Questions(database)
    lifelines = questions.lifelines(final, params.Lifelines(type="LeakedItem"))
    assert lifelines.objects > 0  # leak.js leaks LeakedItem objects
    assert joined(found["lifelines"], "steps") == as_agent_sees(lifelines)["steps"]
    assert found["lifelines"][0]["objects"] == lifelines.objects
    stats = questions.heapdomstats(final, params.HeapDomStats())
    assert stats.rows and joined(found["heapdomstats"], "rows") == as_agent_sees(stats)["rows"]
    gate = questions.gate(baseline, final, params.Gate(min_bytes=65536))
    assert not gate.passed  # the final snapshot holds what leak.js leaked since the baseline
    answer = found["gate"][0]
    assert answer["passed"] is False and answer["min_bytes"] == 65536
    assert joined(found["gate"], "findings") == as_agent_sees(gate)["findings"]
    concentrates = found["dominator"][0]["concentration"][-1]
    for name, under in (("dominator", None), ("drilled", concentrates["key"])):
        grew = as_agent_sees(questions.diff(baseline, final, params.Diff(by="dominator", under=under)))
        assert joined(found[name], "changes") == grew["changes"]
        assert found[name][0]["concentration"] == grew["concentration"] and found[name][0]["under"] == grew["under"]
    assert found["drilled"][0]["under"]["hops"] == concentrates["hops"]


def test_a_compact_answer_describes_each_object_once_and_leaves_out_nulls() -> None:
    root = results.ObjectInfo(1, "(root)", "", "synthetic", 0, 100, 3, 0, True, root=True)
    holder = results.ObjectInfo(2, "Map", "cache", "object", 10, 90, 2, 1, True, location="a.js:1:1")
    target = results.ObjectInfo(3, "Item", "", "object", 80, 80, 1, 2, True)
    ref = results.Reference("property", "x")
    paths = [results.RetainerPath([root, holder, target], [ref, ref]), results.RetainerPath([root, target], [ref])]
    full = as_agent_sees(results.WhyAlive("t", target, paths), "full")
    data = compact(full)
    assert data["target"] == {key: value for key, value in full["target"].items() if value is not None}
    assert data["paths"][0]["objects"][0]["root"] is True  # the root's first mention: described
    assert data["paths"][0]["objects"][1]["location"] == "a.js:1:1" and "verdict" not in data["paths"][0]["objects"][1]
    assert data["paths"][0]["objects"][2] == {"id": 3}  # the target, described above
    assert data["paths"][1]["objects"] == [{"id": 1}, {"id": 3}]
    assert data["paths"][1]["references"] == full["paths"][1]["references"]
