"""Heap snapshots of real web pages from a headless Chromium, over the DevTools protocol.

:func:`capture_heap_snapshot` starts Chromium with a fresh profile, opens a page (a local HTML file
or any URL), waits for it to load (and, optionally, for a JavaScript expression to be true), forces
a garbage collection and streams ``HeapProfiler.takeHeapSnapshot``'s chunks into a file::

    from tests.support.chromium import capture_heap_snapshot, find_chromium

    path = capture_heap_snapshot(Path("page.html"), tmp_path / "page.heapsnapshot")

Chromium comes from the system (Debian: ``apt-get install chromium``); :func:`find_chromium`
returns ``None`` when there is none. The WebSocket client is the ``websocket-client`` package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

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
    return subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()


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
    binary = binary or find_chromium()
    if binary is None:
        raise ChromiumError("no Chromium found on PATH (install the 'chromium' package)")
    url = str(page)
    if "://" not in url:
        url = Path(page).resolve().as_uri()
    out_path = Path(out)
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="heapdb-chromium-") as profile:
        process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            port = _devtools_port(Path(profile), process, deadline)
            session = _Session(_page_websocket(port, deadline), deadline)
            try:
                session.call("Page.enable")
                session.call("Runtime.enable")
                session.call("Page.navigate", {"url": url})
                session.wait_for("document.readyState === 'complete'")
                if ready_expression:
                    session.wait_for(ready_expression)
                session.call("HeapProfiler.enable")
                session.call("HeapProfiler.collectGarbage")
                session.take_heap_snapshot(out_path)
            finally:
                session.close()
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return out_path


def _devtools_port(profile: Path, process: subprocess.Popen, deadline: float) -> int:
    """Wait for Chromium to write the port it listens on into the profile directory."""
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
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
            if message.get("method") == "HeapProfiler.addHeapSnapshotChunk" and self.chunk_sink is not None:
                self.chunk_sink.write(message["params"]["chunk"])

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
