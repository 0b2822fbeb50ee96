"""``heapdb open``, as a person runs it: a file is loaded and its page opened in the browser by a
service the command starts; the same file again is not loaded twice; a tag opens as it is; what is
neither a file nor a tag, or a tag that holds another file, is a clear error. The browser is a
script named by BROWSER (as Python's webbrowser and most desktop tools honour it) that notes the URL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from heapdb.db import Database
from heapdb.loader.store import get_snapshot
from heapdb.neo4j_server import free_port


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "heapdb", "open", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_open_loads_a_file_starts_the_service_and_opens_the_page(
    database: Database, leak_snapshot: Path, tmp_path: Path
) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": f"{browser} %s"}
    env.pop("HEAPDB_SERVER", None)
    port = free_port()
    tag = f"test-open-{uuid.uuid4().hex[:8]}"
    copy = tmp_path / f"{tag}.heapsnapshot"
    copy.write_bytes(leak_snapshot.read_bytes())
    started = None
    try:
        first = run([str(copy), "--port", str(port)], env)
        assert first.returncode == 0, first.stderr
        url = f"http://127.0.0.1:{port}/snapshots/{tag}"
        assert first.stdout == url + "\n"  # standard output is the URL alone, load report aside
        assert f"loading {copy} as {tag!r}" in first.stderr
        pid = re.search(r"started `heapdb serve` on \S+ \(pid (\d+)", first.stderr)
        assert pid is not None, first.stderr
        started = int(pid.group(1))
        assert opened.read_text().split() == [url]
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and f"<h1>{tag}</h1>" in page.text
        assert get_snapshot(database, tag).source == str(copy)
        # Again: loaded already, the running service answers; a tag opens the same page.
        again = run([str(copy), "--port", str(port), "--no-browser"], env)
        assert again.returncode == 0 and again.stdout == url + "\n", again.stderr
        assert "is loaded already" in again.stderr and "started" not in again.stderr
        by_tag = run([tag, "--port", str(port)], env)
        assert by_tag.returncode == 0 and by_tag.stdout == url + "\n", by_tag.stderr
        assert opened.read_text().split() == [url, url]
        # Errors: neither a file nor a tag; a tag that holds another file; no service at --server.
        for args, message in (
            (["no-such-thing-" + tag], "is neither a file nor a loaded snapshot's tag"),
            ([str(leak_snapshot), "--tag", tag], f"tag {tag!r} already holds another snapshot"),
            ([tag, "--server", f"http://127.0.0.1:{free_port()}"], "no heapdb service answers"),
        ):
            refused = run([*args, "--port", str(port)], env)
            assert refused.returncode == 1 and message in refused.stderr and "Traceback" not in refused.stderr
        # Without a display or BROWSER, the URL is printed for the person to open.
        headless = {k: v for k, v in env.items() if k not in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY")}
        printed = run([tag, "--port", str(port)], headless)
        assert printed.returncode == 0 and printed.stdout == url + "\n"
        assert f"no browser can be opened here: open {url}" in printed.stderr
    finally:
        if started is not None:
            os.kill(started, signal.SIGTERM)
