"""What an agent reads per MCP answer: characters and estimated tokens of `why`, `top` and `leaks`,
in each of the tools' `detail` forms (docs/mcp.md's table).

Self-contained, from the repository root: on a managed Neo4j of its own (a temporary home, as
``benchmarks/ingest.py`` does) it loads the three snapshots of ``tests/js/leak.js`` the tests load
(100, 200 and 300 leak units, no rules), then asks the tools in process, as ``heapdb mcp`` would::

    .venv/bin/python -m benchmarks.mcp_answers

The `why` asked is the one an agent asks first: the largest leak cluster's sample. Tokens are
estimated as characters / 4. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from mcp.types import CallToolResult, TextContent

from benchmarks.ingest import private_neo4j
from heapdb import db
from heapdb.cli import main as cli
from heapdb.service.mcp import build_server
from heapgen.node import ensure_node_tools, write_leak_snapshots

DETAILS = ("full", "compact", "text")
LEAK_SIZES = (100, 200, 300)  # as tests/support/v8_fixtures.py makes them


def answers(tags: list[str]) -> dict[str, dict[str, str]]:
    """The first page of each tool's answer, by tool and detail, as the client receives it."""
    server = build_server(lambda: db.connect(start_managed=False))
    baseline, target, final = tags

    def ask(tool: str, detail: str, **arguments: object) -> str:
        result = asyncio.run(server.call_tool(tool, {**arguments, "detail": detail}))
        assert isinstance(result, CallToolResult) and not result.is_error, result
        return "".join(block.text for block in result.content if isinstance(block, TextContent))

    leaks = json.loads(ask("leaks", "full", baseline=baseline, target=target, final=final))
    sample = leaks["clusters"][0]["why"]
    found: dict[str, dict[str, str]] = {"why": {}, "top": {}, "leaks": {}}
    for detail in DETAILS:
        found["why"][detail] = ask("why", detail, **sample)
        found["top"][detail] = ask("top", detail, tag=final)
        found["leaks"][detail] = ask("leaks", detail, baseline=baseline, target=target, final=final)
    return found


def table(found: dict[str, dict[str, str]]) -> str:
    lines = ["| tool | " + " | ".join(f'`detail="{d}"`' for d in DETAILS) + " |", "|---" * (len(DETAILS) + 1) + "|"]
    for tool, by_detail in found.items():
        full = len(by_detail["full"])
        cells = []
        for detail in DETAILS:
            n = len(by_detail[detail])
            change = "" if detail == "full" else f" ({(n - full) / full:+.0%})"
            cells.append(f"{n:,} characters, ~{n // 4:,} tokens{change}")
        lines.append(f"| `{tool}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--pagecache", default="1g")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="heapdb-mcp-") as tmp:
        work = Path(tmp)
        ensure_node_tools()
        files = write_leak_snapshots(work / "snapshots", LEAK_SIZES)
        with private_neo4j(work / "home", args.heap, args.pagecache):
            tags = []
            for label, path in files.items():
                tags.append(f"mcp-{label}")
                cli(["load", str(path), "--tag", tags[-1], "--rules", "none"], standalone_mode=False)
            print(table(answers(tags)))


if __name__ == "__main__":
    main()
