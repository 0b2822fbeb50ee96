"""Write the global names each JavaScript runtime defines before a program runs
(``loader/inspections/globals.toml``), which the "held" inspection leaves out of the global
variables a program added.

Each list is what the runtime itself answers: every own property name along the global object's
prototype chain, in a fresh Node (``node --expose-gc``: the flag's ``gc`` counts as built in) and on
a blank page of headless Chromium, plus the names newer Node releases add (:data:`NEWER_NODE`), so
that a snapshot of a newer Node does not list them as the program's. Run it again when the runtimes
move on::

    .venv/bin/python -m heapgen.builtin_globals
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from heapgen.chromium import ChromiumPage, chromium_version

OUT = Path(__file__).resolve().parent.parent / "loader" / "inspections" / "globals.toml"
# Every own property name along the global object's prototype chain.
CHAIN = (
    "(() => { const s = new Set(); for (let o = globalThis; o; o = Object.getPrototypeOf(o)) "
    "for (const n of Object.getOwnPropertyNames(o)) s.add(n); return [...s].sort(); })()"
)
# Globals of Node 22 to 24 that Node 20 lacks (from their release notes), and V8's newer built-ins.
NEWER_NODE = (
    "AsyncDisposableStack",
    "CloseEvent",
    "DisposableStack",
    "EventSource",
    "Float16Array",
    "Iterator",
    "Navigator",
    "Storage",
    "SuppressedError",
    "URLPattern",
    "WebSocket",
    "localStorage",
    "navigator",
    "sessionStorage",
)


def node_globals() -> tuple[str, list[str]]:
    """The running Node's version and its global names."""
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    shown = subprocess.run(
        ["node", "--expose-gc", "-e", f"process.stdout.write(JSON.stringify({CHAIN}))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return version, sorted(set(json.loads(shown)) | set(NEWER_NODE))


def browser_globals() -> tuple[str, list[str]]:
    """The installed Chromium's version and a blank page's global names. The page is a file, as
    the tests' pages are: a secure context, which has more (``caches``, ``cookieStore``...) than
    ``about:blank``."""
    with tempfile.TemporaryDirectory() as directory:
        blank = Path(directory) / "blank.html"
        blank.write_text("<!doctype html><title>blank</title>")
        with ChromiumPage(blank) as page:
            names = page.evaluate(CHAIN)
    return chromium_version(), sorted(names)


def toml_list(names: list[str]) -> str:
    return "[\n" + "".join(f"  {json.dumps(n)},\n" for n in names) + "]"


def main() -> None:
    node_version, node = node_globals()
    browser_version, browser = browser_globals()
    OUT.write_text(
        '# The global names a JavaScript runtime defines before a program runs: the "held" inspection\n'
        '# leaves them out of the global variables a program added (docs/analysis.md, "Held by listeners,\n'
        '# the console and closures"). Written by `python -m heapgen.builtin_globals`; do not edit.\n\n'
        f"[node]\nsource = {json.dumps(f'node {node_version} --expose-gc, and newer releases')}\n"
        f"names = {toml_list(node)}\n\n"
        f"[browser]\nsource = {json.dumps(browser_version)}\nnames = {toml_list(browser)}\n"
    )
    print(f"{OUT}: {len(node)} Node names, {len(browser)} browser names", file=sys.stderr)


if __name__ == "__main__":
    main()
