"""Server time of every web page type, warm, and the browser's time to first render the treemap.

Self-contained, from the repository root: on a managed Neo4j of its own (a temporary home, as
``benchmarks/ingest.py`` does) it loads three V8 snapshots of ``tests/js/leak.js`` (or ``--files``,
oldest first), starts ``heapdb serve`` on it, and measures::

    .venv/bin/python -m benchmarks.pages                          # leak.js, final snapshot ~210 MB
    .venv/bin/python -m benchmarks.pages --files a.heapsnapshot b.heapsnapshot c.heapsnapshot
    .venv/bin/python -m benchmarks.pages --url http://127.0.0.1:8765 --tag a --tag b --tag c  # a running service

The last snapshot is the one the one-snapshot pages show (the largest, for leak.js); the compare
pages compare the first two, leaks and growth take all three. Each page is asked once cold (the
service's answer cache and Neo4j's page cache as they are), then ``--requests`` times warm, one
request at a time on loopback: the client's wall time per request, which is the server's time plus
a fraction of a millisecond of HTTP. Object pages are asked for the ``--objects`` largest retainers
in turn (each its own page). Then headless Chromium opens the treemap page and reports its
navigation timings and first contentful paint. Prints a Markdown table with the load average
before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx

from benchmarks.ingest import private_neo4j
from heapdb import settings
from heapdb.neo4j_server import free_port
from heapdb.service import browse_pages, compare_pages, links, pages, query_pages, trees
from heapgen.node import ensure_node_tools, write_leak_snapshots

GOAL_MS = 300  # every page's server time, warm (p95)
LEVEL_GOAL_MS = 100  # one level of a retainers or containment tree (a fragment)
SEARCH_GOAL_MS = 500  # a search
BROWSE_TYPES = 3  # type pages: the snapshot's largest types by count
DEEP = 3  # levels of the retainers tree opened on the object page


def page_urls(client: httpx.Client, tags: list[str], objects: int) -> list[tuple[str, list[str]]]:
    """Each page type with the URLs asked for it (paths and query strings on the service)."""
    tag = tags[-1]
    snapshot = pages.page_path(pages.SNAPSHOT, tag=tag)
    top = client.get(snapshot + pages.JSON_SUFFIX).raise_for_status().json()["top"]
    ids = [o["id"] for o in top[:objects]]
    found: list[tuple[str, list[str]]] = [
        ("snapshots", [pages.SNAPSHOTS]),
        ("snapshot", [snapshot]),
        ("snapshot, types by retained size", [snapshot + "?" + urlencode({"sort": "retained_size"})]),
        ("object", [pages.object_page(tag, i) for i in ids]),
        ("treemap", [pages.treemap_page(tag)]),
    ]
    found += browsing_pages(client, tags, ids)
    found += extra_pages(tags)
    return found


def _first_holder(client: httpx.Client, tag: str, subject: int, path: tuple[int, ...], direction: str) -> int | None:
    level = client.get(browse_pages.tree_page(tag, subject, direction, path).replace("/tree?", "/tree.json?"))
    rows = level.raise_for_status().json()["level"]["references"]
    return int(rows[0]["object"]["id"]) if rows else None


def browsing_pages(client: httpx.Client, tags: list[str], ids: list[int]) -> list[tuple[str, list[str]]]:
    """A type's objects, tree levels, the object page with a tree open, the search."""
    tag = tags[-1]
    types = client.get(pages.page_path(pages.SNAPSHOT, tag=tag) + pages.JSON_SUFFIX + "?sort=count").json()["types"]
    names = [t["type"] for t in types[:BROWSE_TYPES]]
    found: list[tuple[str, list[str]]] = [
        ("type, by retained size", [browse_pages.type_page(tag, n) for n in names]),
        (
            "type, by distance, a page far in",
            [browse_pages.type_page(tag, n, sort="distance", offset=5000) for n in names],
        ),
        ("type, name contains", [browse_pages.type_page(tag, n, name_contains="e") for n in names]),
    ]
    if len(tags) >= 2:
        found.append(
            ("type, new since the first snapshot", [browse_pages.type_page(tag, n, since=tags[0]) for n in names])
        )
    opened = []
    for i in ids:
        path: tuple[int, ...] = ()
        while len(path) < DEEP and (holder := _first_holder(client, tag, i, path, "in")) is not None:
            path = (*path, holder)
        opened.append(pages.object_page(tag, i) + "?" + urlencode({"open": trees.open_value("in", path)}))
    found += [
        (f"object, retainers open {DEEP} levels", opened),
        ("tree level: retainers", [browse_pages.tree_page(tag, i, "in", fragment=True) for i in ids]),
        ("tree level: containment", [browse_pages.tree_page(tag, i, "out", fragment=True) for i in ids]),
        (
            "tree level: containment, a page 10,000 in",
            [browse_pages.tree_page(tag, i, "out", offset=10_000, fragment=True) for i in ids],
        ),
        ("search: contains", [browse_pages.search_page(tag, text) for text in ("item-1", "Leak", "e")]),
        ("search: prefix", [browse_pages.search_page(tag, text, "prefix") for text in ("item-1", "Leak", "e")]),
        ("search: exact, an id", [browse_pages.search_page(tag, f"@{i}", "exact") for i in ids]),
    ]
    return found


def goal(name: str) -> int:
    """The warm p95 a page type must stay under."""
    if name.startswith("tree level"):
        return LEVEL_GOAL_MS
    return SEARCH_GOAL_MS if name.startswith("search") else GOAL_MS


def extra_pages(tags: list[str]) -> list[tuple[str, list[str]]]:
    """The comparison pages (given two or three snapshots) and the stored queries' pages."""
    found: list[tuple[str, list[str]]] = []
    if len(tags) >= 2:
        found += [
            ("compare by type", [compare_pages.compare_page(tags[0], tags[1], by="type")]),
            ("compare by path", [compare_pages.compare_page(tags[0], tags[1], by="path")]),
        ]
    if len(tags) >= compare_pages.LEAK_TAGS:
        found += [
            ("leaks by id (memlab's rule)", [compare_pages.leaks_page(tags[: compare_pages.LEAK_TAGS], by="id")]),
            ("leaks by path", [compare_pages.leaks_page(tags[: compare_pages.LEAK_TAGS], by="path")]),
            ("growth by type", [compare_pages.growth_page(tags, by="type")]),
        ]
    found += [
        ("stored queries", [query_pages.QUERIES]),
        ("stored query, run (types)", [query_pages.query_page("types") + "?" + urlencode({"tag": tags[-1]})]),
    ]
    return found


class PageFailed(Exception):
    """A page answered an error: reported in its row, the other pages still measured."""


def timed(client: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url, headers={"Accept": "text/html"})
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise PageFailed(f"HTTP {response.status_code} after {elapsed:.1f} s")
    return elapsed * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(client: httpx.Client, urls: list[str], requests: int) -> dict[str, float]:
    cold = [timed(client, url) for url in urls]
    warm = [timed(client, url) for _ in range(requests) for url in urls]
    return {
        "cold": statistics.median(cold),
        "p50": percentile(warm, 0.5),
        "p95": percentile(warm, 0.95),
        "max": max(warm),
    }


def treemap_in_chromium(base: str, tag: str) -> dict[str, float]:
    """Navigation timings (ms from the start of the navigation) of the treemap page in Chromium."""
    from heapgen.chromium import ChromiumPage

    with ChromiumPage("about:blank", timeout=120) as browser:
        browser.goto(base + pages.treemap_page(tag))
        # The paint entry is recorded a little after the load event: look again for up to 2 s.
        for _ in range(20):
            if browser.evaluate("performance.getEntriesByName('first-contentful-paint').length > 0"):
                break
            time.sleep(0.1)
        timing = browser.evaluate(
            "(() => { const n = performance.getEntriesByType('navigation')[0];"
            " const p = performance.getEntriesByName('first-contentful-paint')[0];"
            " return {response: n.responseEnd, dom: n.domContentLoadedEventEnd, load: n.loadEventEnd,"
            " paint: p ? p.startTime : null}; })()"
        )
    return {k: float(v) for k, v in timing.items() if v is not None}


def table(rows: list[tuple[str, int, dict[str, float] | str]]) -> str:
    lines = [
        "| page | URLs | cold (median) ms | warm p50 ms | warm p95 ms | warm max ms | goal (p95) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, count, f in rows:
        if isinstance(f, str):
            lines.append(f"| {name} | {count} | {f} | | | | **no** |")
            continue
        ok = f"{goal(name)} ms: " + ("yes" if f["p95"] <= goal(name) else "**no**")
        lines.append(
            f"| {name} | {count} | {f['cold']:.0f} | {f['p50']:.0f} | {f['p95']:.0f} | {f['max']:.0f} | {ok} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running service to measure (with --tag); default: one of this run's own")
    parser.add_argument("--tag", action="append", default=[], help="with --url: a loaded snapshot's tag (repeat)")
    parser.add_argument("--files", nargs="*", type=Path, help="snapshots to load, oldest first (default: leak.js's)")
    parser.add_argument("--sizes", default="45000,45000,45000", help="leak.js's growth steps, in units")
    parser.add_argument("--heap", default="3g", help="the private Neo4j's heap")
    parser.add_argument("--pagecache", default="4g", help="the private Neo4j's page cache")
    parser.add_argument("--requests", type=int, default=20, help="warm requests per URL")
    parser.add_argument("--objects", type=int, default=5, help="object pages: the largest retainers")
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium timing")
    args = parser.parse_args()
    if args.url:
        print(measure_service(args.url, args.tag, args))
        return
    with tempfile.TemporaryDirectory(prefix="heapdb-bench-pages-") as tmp:
        work = Path(tmp)
        files = args.files
        if not files:
            ensure_node_tools()
            files = list(write_leak_snapshots(work / "snapshots", [int(s) for s in args.sizes.split(",")]).values())
        with private_neo4j(work / "home", args.heap, args.pagecache):
            tags = [f"pages-{i}" for i in range(len(files))]
            for file, tag in zip(files, tags):
                started = time.monotonic()
                subprocess.run([sys.executable, "-m", "heapdb", "load", str(file), "--tag", tag], check=True)
                print(
                    f"loaded {file} ({os.path.getsize(file) / 1e6:,.0f} MB) as {tag} in "
                    f"{time.monotonic() - started:.0f} s",
                    file=sys.stderr,
                )
            port = free_port()
            service = subprocess.Popen([sys.executable, "-m", "heapdb", "serve", "--port", str(port)])
            try:
                url = f"http://127.0.0.1:{port}"
                wait_for_service(url)
                print(measure_service(url, tags, args))
            finally:
                service.terminate()
                service.wait(60)


def wait_for_service(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + links.HEALTH, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the service at {url} did not answer within {timeout:.0f} s")


def measure_service(url: str, tags: list[str], args: argparse.Namespace) -> str:
    if not tags:
        raise SystemExit("give the loaded snapshots' tags with --tag (oldest first)")
    token = settings.API_TOKEN.get()
    cookies = {pages.TOKEN_COOKIE: token} if token else None
    load_before = os.getloadavg()
    rows: list[tuple[str, int, dict[str, float] | str]] = []
    with httpx.Client(base_url=url, timeout=300, cookies=cookies) as client:
        for name, urls in page_urls(client, tags, args.objects):
            try:
                rows.append((name, len(urls), measure(client, urls, args.requests)))
            except PageFailed as e:
                rows.append((name, len(urls), str(e)))
    browser = None if args.no_browser else treemap_in_chromium(url, tags[-1])
    load_after = os.getloadavg()
    lines = [
        f"load average {' '.join(f'{x:.2f}' for x in load_before)} before, "
        f"{' '.join(f'{x:.2f}' for x in load_after)} after; {args.requests} warm requests per URL",
        "",
        table(rows),
    ]
    if browser is not None:
        lines += [
            "",
            "Treemap in headless Chromium (ms from navigation start): "
            + ", ".join(f"{k} {v:.0f}" for k, v in browser.items()),
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
