"""``heapdb open FILE|TAG``: the shortest way from a snapshot to its page.

A file is loaded first (under ``--tag``, else its name), unless that tag already holds a load of the
same file; a tag must be loaded. The page is served by the heapdb service at ``--server`` (or
``HEAPDB_SERVER``), else by one on this machine's ``--port``, which is started in the background
when none answers there and keeps running after this command (its pid and log are printed). Then
the browser opens the snapshot's page; where none can be opened (no display, no ``BROWSER``), the
URL is printed for the person to open, as it always is on standard output.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

import click
import httpx

from heapdb import config, db, settings
from heapdb.cli import main
from heapdb.cli.serve_cmd import DEFAULT_PORT
from heapdb.errors import ConfigError, NotFound, ParameterError

if TYPE_CHECKING:
    from heapdb.loader.store import Snapshot

START_SECONDS = 120.0  # how long a service started here may take to answer (it waits for Neo4j too)
PROBE_SECONDS = 2.0  # how long one look at whether a service answers may take


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


def default_tag(file: Path) -> str:
    """A file's name without its snapshot extensions, as a tag: ``final.heapsnapshot`` is ``final``."""
    name = file.name
    for suffix in (".gz", ".heapsnapshot", ".hprof", ".snapbin", ".bin", ".json"):
        name = name.removesuffix(suffix)
    return re.sub(r"\s+", "-", name.strip()) or "snapshot"


def _headers() -> dict[str, str]:
    token = settings.API_TOKEN.get()
    return {"Authorization": f"Bearer {token}"} if token else {}


def _answers(base: str) -> bool:
    try:
        return httpx.get(base + "/api/health", timeout=PROBE_SECONDS, headers=_headers()).status_code == 200
    except httpx.HTTPError:
        return False


def _start_service(port: int) -> str:
    """``heapdb serve`` on 127.0.0.1:``port`` in the background, answering: its base URL."""
    base = f"http://127.0.0.1:{port}"
    log_path = config.data_dir() / "serve.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "heapdb", "serve", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # it outlives this command, and a Ctrl-C here does not stop it
            # One person's browser waits for the port: no start-up warm-up, unless asked for.
            env={settings.WARM_UP.name: "0", **os.environ},
        )
    deadline = time.monotonic() + START_SECONDS
    while not _answers(base):
        if process.poll() is not None:
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
            raise ConfigError(
                f"`heapdb serve --port {port}` stopped at its start (exit status {process.returncode}); "
                f"the end of {log_path}:\n" + "\n".join(tail)
            )
        if time.monotonic() > deadline:
            process.terminate()
            raise ConfigError(
                f"`heapdb serve --port {port}` did not answer within {START_SECONDS:.0f} s; see {log_path}"
            )
        time.sleep(0.25)
    _say(f"started `heapdb serve` on {base} (pid {process.pid}, log {log_path}); stop it with `kill {process.pid}`")
    return base


def _loaded(database: db.Database, tag: str) -> Snapshot | None:
    from heapdb.loader.store import get_snapshot

    try:
        return get_snapshot(database, tag)
    except NotFound:
        return None


def _can_open_a_browser() -> bool:
    """Whether a browser can be shown: one named by BROWSER, a display, or a desktop system. On a
    headless Linux, Python's webbrowser would otherwise run a text browser inside this terminal."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


@main.command("open")
@click.argument("target", metavar="FILE|TAG")
@click.option("--tag", help="The tag to load FILE as (default: its name without extensions, e.g. `final`).")
@click.option(
    "--server",
    envvar=settings.SERVER.name,
    metavar="URL",
    help="A running heapdb service to show the page (default: HEAPDB_SERVER, else the one on --port).",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Where on 127.0.0.1 to find the service, or to start one when none answers.",
)
@click.option("--no-browser", is_flag=True, help="Print the page's URL without opening a browser.")
def open_(target: str, tag: str | None, server: str | None, port: int, no_browser: bool) -> None:
    """Open a snapshot's page in the browser: load FILE if needed, start the service if none runs.

    FILE is loaded under --tag (default: its name) unless that tag holds a load of the same file
    already; a TAG must be loaded. A service started here keeps running after the command (its pid
    and log are printed). Where no browser can be opened (no display, no BROWSER) the page's URL is
    printed for you to open; it is always printed on standard output.
    """
    from heapdb.loader.store.lifecycle import check_tag
    from heapdb.service import links

    path = Path(target)
    with db.connect() as database:
        if path.is_file():
            tag = tag or default_tag(path)
            check_tag(tag)
            loaded = _loaded(database, tag)
            source = os.path.abspath(path)
            if loaded is None:
                from heapdb.cli.load_cmd import load

                _say(f"loading {target} as {tag!r}")
                with contextlib.redirect_stdout(sys.stderr):  # standard output is the URL's alone
                    click.get_current_context().invoke(load, file=str(path), tag=tag)
            elif loaded.source != source:
                raise ParameterError(
                    f"tag {tag!r} already holds another snapshot (from {loaded.source}): "
                    f"pass --tag NAME to load {target} under another name, or `heapdb open {tag}` to see that one"
                )
            else:
                _say(f"{target} is loaded already, as {tag!r}")
        else:
            if tag is not None:
                raise ParameterError(f"--tag names the tag to load a file as, but {target!r} is no file")
            tag = target
            if _loaded(database, tag) is None:
                raise NotFound(f"{target!r} is neither a file nor a loaded snapshot's tag (see `heapdb snapshots`)")
    if server:
        base = server.rstrip("/")
        if not _answers(base):
            raise ConfigError(f"no heapdb service answers at {base} (--server / HEAPDB_SERVER)")
    else:
        base = f"http://127.0.0.1:{port}"
        if not _answers(base):
            base = _start_service(port)
    seen = httpx.get(base + links.path(links.SNAPSHOT, tag=tag), timeout=30, headers=_headers())
    if seen.status_code != 200:
        raise ConfigError(
            f"the service at {base} does not show snapshot {tag!r} (HTTP {seen.status_code}): "
            "is it connected to another Neo4j? (--server, NEO4J_URI)"
        )
    url = base + links.page_path(links.SNAPSHOT_PAGE, tag=tag)
    if not no_browser:
        if _can_open_a_browser() and webbrowser.open(url):
            _say(f"opened {url}")
        else:
            _say(f"no browser can be opened here: open {url}")
    click.echo(url)
