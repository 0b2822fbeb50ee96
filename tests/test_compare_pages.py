"""The compare pages, on the real Neo4j with the three snapshots of ``tests/js/leak.js``: their JSON
twins against the Python API's answers, the diff table's sorting, the flame graph the CLI draws, the
leak examples' links, the error pages for missing and unknown tags, and a real headless Chromium in
which a person picks snapshots on the snapshots page, compares them, and follows a leak example to
its object (with axe-core run on every compare page and screenshots of each).

Screenshots go to ``$HEAPDB_SCREENSHOTS`` (default ``test-artifacts/screenshots`` in the checkout).
"""

from __future__ import annotations

import json
import re
from html import escape, unescape
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from heapdb.db import Database
from heapdb.queries import params
from heapdb.queries.questions import Questions
from heapdb.queries.results import Diff, ObjectDiff
from heapdb.renderers import charts, text
from heapdb.service import browse_pages, compare_pages, links, pages
from heapdb.service.app import create_app
from heapdb.units import human_bytes
from tests.support.chromium import ChromiumPage
from tests.support.pages import AXE, IMPACTS, SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded

LABELS = ("baseline", "target", "final")


@pytest.fixture(scope="module")
def tags(leak_series_loaded: dict[str, Loaded]) -> list[str]:
    """The three leak.js snapshots' tags, oldest first (so the snapshots page lists them in that order)."""
    return [leak_series_loaded[label].tag for label in LABELS]


def as_json(answer: Any) -> Any:
    """An answer as the service sends it: converted by links.to_json, then through JSON and back."""
    return json.loads(json.dumps(links.to_json(answer)))


def twin(url: str) -> str:
    """A page URL's JSON twin: ``.json`` on the path, the same query."""
    path, _, query = url.partition("?")
    return f"{path}{pages.JSON_SUFFIX}?{query}"


def body_rows(html: str, table_class: str) -> list[str]:
    table = html[html.index(f'<table class="{table_class}"') :]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    return re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)


def diff_of(ask: Questions, before: str, after: str, by: str) -> Diff:
    answer = ask.diff(before, after, params.Diff(by=by))
    assert isinstance(answer, Diff)
    return answer


@pytest.mark.parametrize("by", ["type", "path"])
def test_the_compare_twin_answers_the_diff_and_sorts_it_by_the_column_asked(
    client: TestClient, ask: Questions, tags: list[str], by: str
) -> None:
    before, _, after = tags
    expected = as_json(diff_of(ask, before, after, by))
    assert expected["changes"], "leak.js grows from baseline to final: the diff cannot be empty"
    answer = client.get(twin(compare_pages.compare_page(before, after, by)))
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert answer.json()["diff"] == expected and answer.json()["sort"] == compare_pages.DEFAULT_SORT
    # Sorted by the label: A to Z; by a figure: largest first; the same rows either way.
    by_label = client.get(twin(compare_pages.compare_page(before, after, by, "label"))).json()["diff"]["changes"]
    assert by_label == sorted(expected["changes"], key=lambda c: c["label"])
    by_count = client.get(twin(compare_pages.compare_page(before, after, by, "count_after"))).json()["diff"]["changes"]
    assert [c["count_after"] for c in by_count] == sorted((c["count_after"] for c in by_count), reverse=True)
    assert sorted(by_count, key=lambda c: c["label"]) == by_label


def test_the_compare_page_shows_each_row_the_cli_flame_graph_and_sort_links(
    client: TestClient, ask: Questions, tags: list[str]
) -> None:
    before, _, after = tags
    by_path = diff_of(ask, before, after, "path")
    drawing = text.growth_flamegraph(by_path)
    assert drawing is not None
    for by in ("type", "path"):
        page = client.get(compare_pages.compare_page(before, after, by))
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        html = page.text
        # The very drawing `heapdb diff --by path --format svg` makes, inline, whichever grouping.
        assert drawing[drawing.index("<svg") :] in html
        changes = diff_of(ask, before, after, by).changes
        rows = body_rows(html, "compare")
        assert len(rows) == len(changes)
        for row, change in zip(rows, changes, strict=True):
            assert change.label in unescape(row)
            assert human_bytes(change.size_after) in row
        # Every column but the one sorted by is a link that sorts by it; the sorted one says so.
        for column in compare_pages.SORT_KEYS:
            link = compare_pages.compare_page(before, after, by, column)
            if column == compare_pages.DEFAULT_SORT:
                assert 'aria-sort="descending"' in html
            else:
                assert f'href="{link.replace("&", "&amp;")}"' in html
    # A type row leads to that type's objects in the later snapshot new since the earlier one.
    type_page = client.get(compare_pages.compare_page(before, after, "type")).text
    first = unescape(re.findall(r'<th scope="row"><a href="([^"]+)"', type_page)[0])
    assert client.get(first).status_code == 200
    base, _, query = first.partition("?")
    twin = client.get(f"{base}.json?{query}").json()
    type_name = twin["instances"]["type"]
    assert first == browse_pages.type_page(after, type_name, since=before)
    expected = ask.instances(after, params.Instances(type=type_name, since=before))
    assert twin["instances"]["total"] == expected.total


@pytest.mark.parametrize("by", ["id", "path"])
def test_the_leaks_page_and_twin_list_each_cluster_with_linked_examples(
    client: TestClient, ask: Questions, tags: list[str], by: str
) -> None:
    baseline, target, final = tags
    answer = ask.leaks(baseline, target, final, params.Leaks(by=by))
    assert answer.clusters, "leak.js leaks: there must be candidates"
    url = compare_pages.leaks_page(tags, by)
    assert client.get(twin(url)).json() == {"leaks": as_json(answer)}
    html = client.get(url).text
    rows = body_rows(html, "leaks")
    assert len(rows) == len(answer.clusters)
    for row, cluster in zip(rows, answer.clusters, strict=True):
        assert cluster.path in unescape(row) and f"{cluster.objects:,}" in row
        assert human_bytes(cluster.retained_size) in row
        hrefs = re.findall(r'href="([^"]+)"', row)
        assert [h for h in hrefs if "/objects/" in h] == [pages.object_page(final, i) for i in cluster.sample_ids]
    # An example's link is a page that exists.
    example = pages.object_page(final, answer.clusters[0].sample_ids[0])
    assert client.get(example).status_code == 200


@pytest.mark.parametrize("by", ["type", "path"])
def test_the_growth_page_and_twin_show_every_snapshots_size(
    client: TestClient, ask: Questions, tags: list[str], by: str
) -> None:
    answer = ask.growth(tags, params.Growth(by=by))
    assert answer.rows, "leak.js grows at every step: there must be rows"
    url = compare_pages.growth_page(tags, by)
    assert client.get(twin(url)).json() == {"growth": as_json(answer)}
    rows = body_rows(client.get(url).text, "growth")
    assert len(rows) == len(answer.rows)
    for row, grown in zip(rows, answer.rows, strict=True):
        cells = re.findall(r'<td class="n[^"]*">(.*?)</td>', row, flags=re.S)
        assert len(cells) == len(tags) + 1  # one per snapshot, then the growth
        for cell, size, count in zip(cells, grown.sizes, grown.counts, strict=False):
            assert human_bytes(size) in cell and f"{count:,}" in cell
    # The trend chart: a line per row that grew most, a point per snapshot titled with its value.
    page = client.get(url).text
    chart = page[page.index('<svg class="trend"') : page.index("</svg>", page.index('<svg class="trend"'))]
    drawn = answer.rows[: charts.TREND_SERIES]
    assert chart.count("<polyline") == len(drawn) and chart.count("<circle") == len(drawn) * len(tags)
    for grown in drawn:
        for tag, size in zip(tags, grown.sizes, strict=True):
            assert f"{escape(grown.label)} in {escape(tag)}: {human_bytes(size)}" in chart


def test_missing_and_unknown_tags_are_error_pages_never_500(client: TestClient, tags: list[str]) -> None:
    baseline, target, final = tags
    cases = {
        compare_pages.COMPARE: 422,
        f"{compare_pages.COMPARE}?before={baseline}": 422,
        compare_pages.compare_page(baseline, "no-such-snapshot"): 404,
        compare_pages.compare_page(baseline, final, "type", "bogus"): 422,
        compare_pages.LEAKS: 422,
        compare_pages.leaks_page([baseline, final]): 422,
        compare_pages.leaks_page([baseline, target, "no-such-snapshot"]): 404,
        compare_pages.growth_page([baseline, final]): 422,
        compare_pages.growth_page([baseline, target, target]): 422,
        compare_pages.growth_page([baseline, target, "no-such-snapshot"]): 404,
    }
    for url, status in cases.items():
        page = client.get(url)
        assert page.status_code == status, (url, page.text[-500:])
        assert page.headers["content-type"].startswith("text/html"), url
        shown = re.search(r'<p class="error">(.*?)</p>', page.text, flags=re.S)
        assert shown is not None and shown[1].strip(), url
        message = unescape(shown[1])
        data = client.get(twin(url) if "?" in url else url + pages.JSON_SUFFIX)
        assert data.status_code == status and data.json()["error"] == message, url


def test_the_snapshots_page_offers_its_ready_snapshots_to_compare(client: TestClient, tags: list[str]) -> None:
    html = client.get("/").text
    ticks = re.findall(r'<input type="checkbox" name="tag" value="([^"]+)" form="compare-many"', html)
    assert [unescape(t) for t in ticks if unescape(t) in tags] == tags  # oldest first
    assert f'action="{compare_pages.COMPARE}"' in html and f'formaction="{compare_pages.GROWTH}"' in html
    for tag in tags:
        assert f"<option>{tag}</option>" in html or f"<option selected>{tag}</option>" in html


def tick(browser: ChromiumPage, tags: list[str]) -> None:
    """Tick exactly ``tags``' boxes on the snapshots page (other tests' snapshots may be listed too)."""
    browser.evaluate(
        f"(() => {{ const wanted = new Set({json.dumps(tags)});"
        " for (const box of document.querySelectorAll('input[name=tag]'))"
        " { if (box.checked !== wanted.has(box.value)) box.click(); } })()"
    )


def test_a_person_picks_snapshots_compares_them_and_reaches_a_leaked_object(
    database: Database, tags: list[str]
) -> None:
    assert AXE.is_file(), f"{AXE} is missing: run scripts/bootstrap.sh (npm ci in tests/js)"
    baseline, target, final = tags
    violations: dict[str, list[str]] = {}
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=90) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + "/")
        violations["snapshots"] = browser.accessibility_violations(AXE, IMPACTS)
        # Two snapshots, by path: the selects of the compare form, then its button.
        browser.evaluate(
            f"(() => {{ const f = document.querySelector('form.compare-two');"
            f" f.before.value = {json.dumps(baseline)}; f.after.value = {json.dumps(final)}; f.by.value = 'path'; }})()"
        )
        compared = browser.follow("form.compare-two button")
        assert urlsplit(compared).path == compare_pages.COMPARE and "by=path" in compared
        assert browser.evaluate("document.querySelectorAll('table.compare tbody tr').length") >= 1
        assert browser.evaluate("document.querySelectorAll('figure.flamegraph svg rect').length") >= 2
        browser.screenshot(SCREENSHOTS / "compare.png")
        violations["compare"] = browser.accessibility_violations(AXE, IMPACTS)
        resorted = browser.follow('table.compare thead a[href*="sort=label"]')
        assert "sort=label" in resorted and browser.evaluate("!!document.querySelector('[aria-sort=ascending]')")
        # Three ticked boxes, then the leaks button: the candidates, an example, its object's page.
        browser.goto(base + "/")
        tick(browser, tags)
        browser.screenshot(SCREENSHOTS / "compare-pick.png")
        found = browser.follow(f'button[formaction="{compare_pages.LEAKS}"]')
        assert urlsplit(found).path == compare_pages.LEAKS
        assert browser.evaluate("document.querySelectorAll('table.leaks tbody tr').length") >= 1
        browser.screenshot(SCREENSHOTS / "compare-leaks.png")
        violations["leaks"] = browser.accessibility_violations(AXE, IMPACTS)
        example = browser.follow('table.leaks td.examples a[href*="/objects/"]')
        assert unquote(urlsplit(example).path).startswith(f"/snapshots/{final}/objects/")
        assert httpx.get(example).status_code == 200
        assert browser.evaluate("document.querySelector('h1') !== null")
        # The same three, growth.
        browser.goto(base + "/")
        tick(browser, tags)
        grown = browser.follow(f'button[formaction="{compare_pages.GROWTH}"]')
        assert urlsplit(grown).path == compare_pages.GROWTH
        assert browser.evaluate("document.querySelectorAll('table.growth tbody tr').length") >= 1
        assert browser.evaluate("document.querySelectorAll('table.growth thead th').length") == len(tags) + 2
        browser.screenshot(SCREENSHOTS / "compare-growth.png")
        violations["growth"] = browser.accessibility_violations(AXE, IMPACTS)
        # Too few ticked: the error page, accessible too.
        browser.goto(base + "/")
        tick(browser, [baseline, target])
        refused = browser.follow(f'button[formaction="{compare_pages.LEAKS}"]')
        assert "exactly 3 snapshots" in browser.evaluate("document.querySelector('.error').textContent"), refused
        violations["error"] = browser.accessibility_violations(AXE, IMPACTS)
        problems = [p for p in browser.problems if "422" not in p]  # the error page's own status
    found_violations = [f"{page}: {v}" for page, found in violations.items() for v in found]
    assert not found_violations, "\n".join(found_violations)
    assert problems == [], problems


def test_object_by_object_is_devtools_comparison_view_each_type_opening_its_new_objects(
    client: TestClient, ask: Questions, tags: list[str]
) -> None:
    before, after = tags[0], tags[2]
    answer = ask.diff(before, after, params.Diff(by="object"))
    assert isinstance(answer, ObjectDiff)
    url = compare_pages.compare_page(before, after, "object")
    html = client.get(url).text
    rows = re.findall(r"<tr>\s*<th scope=\"row\"><a href=\"([^\"]+)\">(.*?)</a></th>(.*?)</tr>", html, flags=re.S)
    assert [unescape(name) for _, name, _ in rows] == [t.type for t in answer.types]
    for (href, _, cells), t in zip(rows, answer.types, strict=True):
        figures = re.findall(r'<td class="n">([^<]*)</td>', cells)
        assert figures[:3] == [f"{t.new_count:,}", f"{t.freed_count:,}", f"{t.new_count - t.freed_count:+,}"]
        assert unescape(href) == browse_pages.type_page(after, t.type, since=before)
    # A type's row opens exactly its new objects: the type page counts as many.
    leaked = next(t for t in answer.types if t.type == "LeakedItem")
    opened = client.get(twin(browse_pages.type_page(after, "LeakedItem", since=before))).json()
    assert opened["instances"]["total"] == leaked.new_count
    assert client.get(twin(url)).json() == {"diff": as_json(answer)}
