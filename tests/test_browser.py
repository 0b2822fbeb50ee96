"""The Neo4j Browser, served by the managed instance, loads in a real headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from heapdb import config

pytestmark = pytest.mark.chromium  # runs the chromium binary itself (and needs Neo4j, from its fixture)

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def test_browser_app_loads(neo4j_server_settings: config.ManagedSettings, tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: run scripts/bootstrap.sh (Debian package `chromium`)")
    url = f"http://127.0.0.1:{neo4j_server_settings.http_port}/browser/"
    # --dump-dom prints the DOM after the page's scripts ran, so this sees the rendered React app,
    # not the static index.html.
    result = subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    dom = result.stdout
    assert result.returncode == 0, result.stderr[-2000:]
    # The app's connect form, rendered by its JavaScript: the Bolt address field and the Connect button.
    assert 'data-testid="boltaddress"' in dom
    assert 'data-testid="connect"' in dom
    assert "Neo4j Browser" in dom
