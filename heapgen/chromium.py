"""Heap snapshots of real web pages from a headless Chromium, over the DevTools protocol.

:func:`capture_heap_snapshot` starts Chromium with a fresh profile, opens a page (a local HTML file
or any URL), waits for it to load (and, optionally, for a JavaScript expression to be true), forces
a garbage collection and streams ``HeapProfiler.takeHeapSnapshot``'s chunks into a file::

    from heapgen.chromium import capture_heap_snapshot, find_chromium

    path = capture_heap_snapshot(Path("page.html"), tmp_path / "page.heapsnapshot")

:class:`ChromiumPage` keeps one page open for several snapshots of the same renderer process, so
V8's object ids stay stable across them (what three-snapshot leak detection needs)::

    with ChromiumPage(Path("page.html")) as page:
        page.heap_snapshot(tmp_path / "baseline.heapsnapshot")
        page.evaluate("openAndClosePanels(3)")
        page.heap_snapshot(tmp_path / "target.heapsnapshot")

:func:`capture_heap_snapshots` does that for a list of ``(label, action)`` steps.

Chromium comes from the system (Debian: ``apt-get install chromium``); :func:`find_chromium`
returns ``None`` when there is none. The WebSocket client is the ``websocket-client`` package.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import websocket

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",  # Chromium picks a free port and writes it to DevToolsActivePort
    "--remote-allow-origins=*",
)


class ChromiumError(RuntimeError):
    """Chromium could not be started, did not answer, or reported a protocol error."""


def find_chromium() -> str | None:
    """The path of a Chromium/Chrome binary on PATH (or ``$CHROMIUM``), or ``None``."""
    configured = os.environ.get("CHROMIUM")
    if configured:
        return configured
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_version(binary: str | None = None) -> str:
    """``chromium --version``'s answer, e.g. ``Chromium 156.0.8078.79 ...``."""
    binary = binary or find_chromium()
    if binary is None:
        raise ChromiumError("no Chromium found on PATH (install the 'chromium' package)")
    return subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout.strip()


# Where a person clicks an element: a point of it that no other element covers. Its centre first;
# when something else is drawn there (a treemap's rectangle holds its children's rectangles, which
# may cover its centre and leave only its title strip its own), points nearer its top-left corner.
_VISIBLE_POINT = """selector => {
  const e = document.querySelector(selector);
  e.scrollIntoView({block: 'center'});
  const r = e.getBoundingClientRect();
  const points = [[r.left + r.width / 2, r.top + r.height / 2], [r.left + r.width / 2, r.top + 4],
                  [r.left + 4, r.top + r.height / 2], [r.left + 4, r.top + 4]];
  const own = points.find(([x, y]) => { const hit = document.elementFromPoint(x, y); return hit && e.contains(hit); });
  return own || points[0];
}"""


class ChromiumPage:
    """A headless Chromium (fresh profile) with one page loaded, kept open until :meth:`close`.

    Every snapshot taken through it comes from the same renderer process, so an object keeps its V8
    id from one snapshot to the next. ``timeout`` bounds each operation (start-up and page load,
    each evaluation or wait, each snapshot), not the page's whole life.
    """

    def __init__(self, page: str | os.PathLike[str], *, timeout: float = 120, binary: str | None = None) -> None:
        binary = binary or find_chromium()
        if binary is None:
            raise ChromiumError("no Chromium found on PATH (install the 'chromium' package)")
        url = str(page)
        if "://" not in url:
            url = Path(page).resolve().as_uri()
        self.timeout = timeout
        self._home = tempfile.TemporaryDirectory(prefix="heapdb-chromium-", ignore_cleanup_errors=True)
        profile = Path(self._home.name) / "profile"
        # stderr goes to a file, not a pipe: a long-lived browser would block on a full pipe nobody reads.
        self._log = open(Path(self._home.name) / "stderr.log", "wb")  # noqa: SIM115 (closed by close())
        self._process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,  # its own process group: close() ends its helper processes too
        )
        self._session: _Session | None = None
        try:
            deadline = time.monotonic() + timeout
            port = _devtools_port(profile, self._process, Path(self._log.name), deadline)
            self._session = _Session(_page_websocket(port, deadline), deadline)
            self._session.call("Page.enable")
            self._session.call("Runtime.enable")
            self._session.call("Log.enable")
            self._session.call("Page.navigate", {"url": url})
            self._session.wait_for("document.readyState === 'complete'")
            # Enabled once for the page's life: the profiler's id map is what keeps ids stable.
            self._session.call("HeapProfiler.enable")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _live(self) -> _Session:
        if self._session is None:
            raise ChromiumError("the page is closed")
        self._session.deadline = time.monotonic() + self.timeout
        return self._session

    def evaluate(self, expression: str) -> Any:
        """Evaluate a JavaScript expression in the page and return its value (JSON-serializable)."""
        return self._live().evaluate(expression)

    def wait_for(self, expression: str) -> None:
        """Poll a JavaScript expression until it is true."""
        self._live().wait_for(expression)

    def goto(self, url: str) -> None:
        """Load ``url`` in the page and wait until it has loaded."""
        session = self._live()
        session.call("Page.navigate", {"url": url})
        session.wait_for(f"location.href === {json.dumps(url)} && document.readyState === 'complete'")

    def follow(self, selector: str) -> str:
        """Click the first element matching ``selector`` (a link) with the mouse, as a person would,
        wait for the page it leads to, and return that page's URL."""
        session = self._live()
        before = session.evaluate("location.href")
        self.click(selector)
        session.wait_for(f"location.href !== {json.dumps(before)} && document.readyState === 'complete'")
        return str(session.evaluate("location.href"))

    def evaluate_async(self, expression: str) -> Any:
        """Evaluate a JavaScript expression that yields a promise; return what it resolves to."""
        session = self._live()
        result = session.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression[:200]!r} threw: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    # Keys as the DevTools protocol names them (what Puppeteer sends for them).
    KEYS = {
        "Tab": {"key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9},
        "Enter": {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"},
        "Escape": {"key": "Escape", "code": "Escape", "windowsVirtualKeyCode": 27},
        "ArrowDown": {"key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 40},
        "ArrowUp": {"key": "ArrowUp", "code": "ArrowUp", "windowsVirtualKeyCode": 38},
        "ArrowRight": {"key": "ArrowRight", "code": "ArrowRight", "windowsVirtualKeyCode": 39},
        "ArrowLeft": {"key": "ArrowLeft", "code": "ArrowLeft", "windowsVirtualKeyCode": 37},
        "/": {"key": "/", "code": "Slash", "windowsVirtualKeyCode": 191, "text": "/"},
    }

    def type_text(self, text: str) -> None:
        """Type ``text`` into the focused field, as a keyboard's input would arrive."""
        self._live().call("Input.insertText", {"text": text})

    def click(self, selector: str) -> None:
        """Click the first element matching ``selector`` with the mouse, staying on the page (a
        control the page's script answers, not a link to another page)."""
        session = self._live()
        x, y = session.evaluate(f"({_VISIBLE_POINT})({json.dumps(selector)})")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            session.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def press(self, key: str, *, shift: bool = False) -> None:
        """Press and release a key (one of :attr:`KEYS`) as a person would, with Shift if asked."""
        session = self._live()
        event = dict(self.KEYS[key], modifiers=8 if shift else 0)
        session.call("Input.dispatchKeyEvent", {"type": "keyDown" if "text" in event else "rawKeyDown", **event})
        session.call("Input.dispatchKeyEvent", {"type": "keyUp", **{k: v for k, v in event.items() if k != "text"}})

    def accessibility_violations(self, axe_script: str | os.PathLike[str], impacts: Sequence[str]) -> list[str]:
        """Run axe-core (its ``axe.min.js``) on the page; the violations of the given impacts, one
        line each: rule, impact, help and the first offending elements."""
        session = self._live()
        if not session.evaluate("typeof window.axe === 'object'"):
            session.call("Runtime.evaluate", {"expression": Path(axe_script).read_text(encoding="utf-8")})
        found = self.evaluate_async(
            "axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v => ({"
            "id: v.id, impact: v.impact, help: v.help,"
            " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary)})))"
        )
        return [
            f"{v['id']} ({v['impact']}): {v['help']} at {'; '.join(v['nodes'])}"
            for v in found
            if v["impact"] in impacts
        ]

    def screenshot(
        self, out: str | os.PathLike[str], width: int = 1280, height: int = 900, *, full_page: bool = True
    ) -> Path:
        """The page as a PNG, ``width`` pixels wide: all of it, or the first ``height`` pixels."""
        session = self._live()
        session.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        shot = session.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full_page})
        out_path = Path(out)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_bytes(base64.b64decode(shot["data"]))
        return out_path

    @property
    def problems(self) -> list[str]:
        """What the page reported as errors so far: console errors, exceptions, failed loads."""
        return list(self._live().problems)

    def heap_snapshot(self, out: str | os.PathLike[str]) -> Path:
        """Force a garbage collection and write the page's heap snapshot to ``out``."""
        session = self._live()
        session.call("HeapProfiler.collectGarbage")
        out_path = Path(out)
        session.take_heap_snapshot(out_path)
        return out_path

    def close(self) -> None:
        """Close the connection, stop Chromium and remove its profile (safe to call twice)."""
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        # Helper processes (GPU, network, crash handler) can outlive the browser for a moment and
        # still write into the profile: end the whole group before removing it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._log.close()
        for _ in range(20):
            try:
                shutil.rmtree(self._home.name)
                break
            except FileNotFoundError:
                break
            except OSError:  # a file appeared while the tree was removed: once more
                time.sleep(0.1)
        self._home.cleanup()


def capture_heap_snapshot(
    page: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    ready_expression: str | None = None,
    timeout: float = 120,
    binary: str | None = None,
) -> Path:
    """Load ``page`` (an HTML file path or a URL) in headless Chromium and write its heap snapshot to ``out``.

    ``ready_expression``, if given, is polled until it evaluates to true before the snapshot is
    taken (e.g. ``"window.leakReady === true"``).
    """
    with ChromiumPage(page, timeout=timeout, binary=binary) as browser:
        if ready_expression:
            browser.wait_for(ready_expression)
        return browser.heap_snapshot(out)


def capture_heap_snapshots(
    page: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    steps: Sequence[tuple[str, str | None]],
    *,
    timeout: float = 120,
    binary: str | None = None,
) -> dict[str, Path]:
    """Snapshots of one page after each step, from one renderer process (V8 ids stable across them).

    ``steps`` are ``(label, action)``: the JavaScript ``action`` (or nothing, for ``None``) is
    evaluated, then ``out_dir/<label>.heapsnapshot`` is written. Returns the paths by label.
    """
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    with ChromiumPage(page, timeout=timeout, binary=binary) as browser:
        for label, action in steps:
            if action:
                browser.evaluate(action)
            paths[label] = browser.heap_snapshot(directory / f"{label}.heapsnapshot")
    return paths


def _devtools_port(profile: Path, process: subprocess.Popen, log: Path, deadline: float) -> int:
    """Wait for Chromium to write the port it listens on into the profile directory."""
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = log.read_text(errors="replace")
            raise ChromiumError(f"Chromium exited with {process.returncode} before listening:\n{stderr[-3000:]}")
        if marker.exists():
            first_line = marker.read_text().splitlines()[:1]
            if first_line and first_line[0].isdigit():
                return int(first_line[0])
        time.sleep(0.1)
    raise ChromiumError("Chromium did not open its DevTools port in time")


def _page_websocket(port: int, deadline: float) -> str:
    """The WebSocket URL of the first page target."""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as answer:
                targets = json.load(answer)
        except OSError:
            time.sleep(0.1)
            continue
        for target in targets:
            if target.get("type") == "page" and target.get("webSocketDebuggerUrl"):
                return target["webSocketDebuggerUrl"]
        time.sleep(0.1)
    raise ChromiumError(f"no page target on DevTools port {port}")


class _Session:
    """A minimal DevTools protocol client: numbered calls, events handled while waiting."""

    def __init__(self, ws_url: str, deadline: float) -> None:
        self.deadline = deadline
        self.ws = websocket.create_connection(
            ws_url, timeout=max(1.0, deadline - time.monotonic()), suppress_origin=True
        )
        self.next_id = 0
        self.chunk_sink: Any = None
        self.problems: list[str] = []  # console errors, uncaught exceptions, failed loads (Log.enable)

    def close(self) -> None:
        self.ws.close()

    def _send(self, method: str, params: dict[str, Any] | None) -> int:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params or {}}))
        return self.next_id

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a command and return its result, handling events that arrive in between."""
        call_id = self._send(method, params)
        while True:
            if time.monotonic() > self.deadline:
                raise ChromiumError(f"timed out waiting for {method}")
            message = json.loads(self.ws.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise ChromiumError(f"{method} failed: {message['error']}")
                return message.get("result", {})
            event, params = message.get("method"), message.get("params", {})
            if event == "HeapProfiler.addHeapSnapshotChunk" and self.chunk_sink is not None:
                self.chunk_sink.write(params["chunk"])
            elif event == "Runtime.exceptionThrown":
                self.problems.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif event == "Runtime.consoleAPICalled" and params.get("type") == "error":
                self.problems.append(f"console.error: {[a.get('value') for a in params.get('args', [])]}")
            elif event == "Log.entryAdded" and params["entry"].get("level") == "error":
                entry = params["entry"]
                self.problems.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression!r} threw: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str) -> None:
        while not self.evaluate(expression):
            if time.monotonic() > self.deadline:
                raise ChromiumError(f"timed out waiting for {expression!r}")
            time.sleep(0.05)

    def take_heap_snapshot(self, out: Path) -> None:
        """Stream the snapshot's chunks into ``out`` (written beside it, renamed when complete)."""
        partial = out.with_name(out.name + ".partial")
        with open(partial, "w", encoding="utf-8") as sink:
            self.chunk_sink = sink
            try:
                self.call("HeapProfiler.takeHeapSnapshot", {"reportProgress": False, "captureNumericValue": False})
            finally:
                self.chunk_sink = None
        os.replace(partial, out)


# A page that leaves DOM trees detached in three ways (tests/test_inspections_dom.py and
# tests/test_dom_stored.py check heapdb's detached-DOM inspection on it).
DOM_PANELS, DOM_PANEL_ITEMS, DOM_DIALOG_ITEMS, DOM_SHOWN_ITEMS = 3, 20, 10, 5
DETACHED_DOM_PAGE = f"""<!doctype html>
<html><body><h1>detached DOM</h1>
<script>
function tree(label, items) {{
  const root = document.createElement('div');
  root.id = label;
  for (let i = 0; i < items; i++) {{
    const item = document.createElement('span');
    item.textContent = label + '-' + i;
    root.appendChild(item);
  }}
  return root;
}}
// Closed panels kept for "undo": one array holds every detached panel.
window.closedPanels = [];
for (let p = 0; p < {DOM_PANELS}; p++) {{
  const panel = tree('panel' + p, {DOM_PANEL_ITEMS});
  document.body.appendChild(panel);
  panel.remove();
  window.closedPanels.push(panel);
}}
// A removed dialog that a listener on an attached button still closes over.
const dialog = tree('dialog', {DOM_DIALOG_ITEMS});
document.body.appendChild(dialog);
dialog.remove();
const button = document.createElement('button');
button.textContent = 'open';
document.body.appendChild(button);
button.addEventListener('click', () => dialog.id);
// A row cached before it was ever attached.
window.rowCache = new Map();
window.rowCache.set('row', document.createElement('li'));
// What the page shows: attached, never counted.
document.body.appendChild(tree('shown', {DOM_SHOWN_ITEMS}));
window.ready = true;
</script></body></html>
"""
# Each way the page holds detached trees, by the name on the holding path, and how many trees.
DETACHED_DOM_HOLDERS = {"closedPanels": DOM_PANELS, "dialog": 1, "rowCache": 1}


def write_detached_dom_snapshot(directory: str | os.PathLike[str], *, binary: str | None = None) -> Path:
    """:data:`DETACHED_DOM_PAGE` and its heap snapshot, written into ``directory``; the snapshot's path."""
    directory = Path(directory)
    page = directory / "detached-dom.html"
    page.write_text(DETACHED_DOM_PAGE)
    return capture_heap_snapshot(
        page, directory / "detached-dom.heapsnapshot", ready_expression="window.ready === true", binary=binary
    )


# A React app with a component leak (tests/js/react_leak.jsx): REACT_PANELS LeakyPanel components
# subscribe to a store and never unsubscribe, a CleanPanel does; closing the panels unmounts them.
REACT_PANELS, REACT_ROWS = 3, 10
REACT_APP = "react_leak.jsx"
REACT_PAGE = """<!doctype html>
<html><head><title>react leak</title></head>
<body data-panels="{panels}" data-rows="{rows}"><div id="root"></div><script src="app.js"></script></body></html>
"""


def write_react_snapshots(directory: str | os.PathLike[str], *, binary: str | None = None) -> dict[str, Path]:
    """The React app bundled (esbuild, a development build, so React's names survive), opened in
    Chromium, and two snapshots of it written into ``directory``: ``mounted`` with its panels open,
    ``unmounted`` after they closed. Returns the paths by label."""
    from heapgen.node import JS_DIR, ensure_node_tools

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ensure_node_tools()
    bundled = subprocess.run(
        [
            str(JS_DIR / "node_modules" / ".bin" / "esbuild"),
            str(JS_DIR / REACT_APP),
            "--bundle",
            "--format=iife",
            "--jsx=automatic",
            '--define:process.env.NODE_ENV="development"',
            f"--outfile={directory / 'app.js'}",
            "--log-level=warning",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if bundled.returncode != 0:
        raise RuntimeError(f"esbuild could not bundle {REACT_APP}:\n{bundled.stderr[-4000:]}")
    page = directory / "react.html"
    page.write_text(REACT_PAGE.format(panels=REACT_PANELS, rows=REACT_ROWS))
    with ChromiumPage(page, binary=binary) as browser:
        browser.wait_for("window.mounted !== undefined && window.mounted()")
        mounted = browser.heap_snapshot(directory / "mounted.heapsnapshot")
        browser.evaluate("window.closePanels()")
        browser.wait_for("document.querySelectorAll('.panel').length === 0")
        unmounted = browser.heap_snapshot(directory / "unmounted.heapsnapshot")
    return {"mounted": mounted, "unmounted": unmounted}
