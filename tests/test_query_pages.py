"""The stored queries' pages, on the real Neo4j with a real V8 snapshot: the catalog and its JSON
twin against the catalog, a query's rows against the REST route's for the same parameters, bad
parameters as 4xx pages that keep the form, the Neo4j Browser link, and a person in a real headless
Chromium who picks a query, fills in its form and reads the result (with screenshots and axe).

Screenshots go to ``$HEAPDB_SCREENSHOTS`` (default ``test-artifacts/screenshots`` in the checkout).
"""

from __future__ import annotations

import json
import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from heapdb import config
from heapdb.db import Database
from heapdb.queries import catalog
from heapdb.service import pages, query_pages
from heapdb.service.app import create_app
from heapdb.units import human_bytes
from tests.support.chromium import ChromiumPage
from tests.support.pages import AXE, IMPACTS, SCREENSHOTS
from tests.support.serving import served
from tests.support.snapshots import Loaded


@pytest.fixture(scope="module")
def loaded(leak_loaded: Loaded) -> Loaded:
    return leak_loaded


def test_the_catalog_page_lists_every_stored_query_and_links_each(client: TestClient) -> None:
    twin = client.get(query_pages.QUERIES + pages.JSON_SUFFIX)
    assert twin.status_code == 200
    assert twin.json()["queries"] == [q.as_dict() for q in catalog.catalog().values()]
    page = client.get(query_pages.QUERIES)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    links = re.findall(r'<th scope="row"><a href="([^"]+)">', page.text)
    assert links == [query_pages.query_page(name) for name in catalog.catalog()]
    assert 'href="/queries.json"' in page.text  # its twin, linked from the page
    # Every page's navigation leads here.
    assert f'<a href="{query_pages.QUERIES}">Queries</a>' in client.get("/").text


def test_a_query_page_answers_the_rest_routes_rows(client: TestClient, loaded: Loaded) -> None:
    for name, given in (("types", {"tag": loaded.tag, "limit": "7"}), ("top", {"tag": loaded.tag, "limit": "5"})):
        api = client.get(f"/api/queries/{name}", params=given)
        assert api.status_code == 200, api.text
        twin = client.get(query_pages.query_page(name) + pages.JSON_SUFFIX, params=given)
        assert twin.status_code == 200, twin.text
        answer = twin.json()
        assert answer["rows"] == api.json()["rows"] and len(answer["rows"]) == int(given["limit"])
        assert answer["truncated"] is False and answer["row_count"] == len(answer["rows"])
        stored = catalog.get(name)
        assert answer["query"]["cypher"] == stored.cypher
        assert answer["query"]["parameters"] == [p.as_dict() for p in stored.parameters]
    # Before the form is sent: the query, no rows.
    unsent = client.get(query_pages.query_page("types") + pages.JSON_SUFFIX).json()
    assert unsent["rows"] is None and unsent["query"]["name"] == "types"


def test_the_result_table_shows_the_rows_readably(client: TestClient, loaded: Loaded) -> None:
    url = query_pages.query_page("types")
    page = client.get(url, params={"tag": loaded.tag, "limit": "3", "sort": "count"})
    assert page.status_code == 200
    rows = client.get(url + pages.JSON_SUFFIX, params={"tag": loaded.tag, "limit": "3", "sort": "count"}).json()["rows"]
    table = page.text[page.text.index('<table class="result">') : page.text.index("</table>")]
    assert re.findall(r'<th scope="col"[^>]*>([^<]+)</th>', table) == list(rows[0])
    bodies = re.findall(r"<tr>(.*?)</tr>", table[table.index("<tbody>") :], re.S)
    assert len(bodies) == 3
    first = [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", bodies[0])]
    assert first[0] == rows[0]["type"]
    assert first[1] == f"{rows[0]['count']:,}"
    assert first[2] == human_bytes(rows[0]["self_size"])
    # The form shows what was sent; the sort's select has it chosen.
    assert 'name="tag" type="text" value="' + loaded.tag + '"' in page.text
    assert "<option selected>count</option>" in page.text


def test_cells_link_tags_and_only_ids_of_the_asked_snapshot() -> None:
    tag = query_pages.cell("tag", "build/7", None)
    assert tag.href == pages.page_path(pages.SNAPSHOT, tag="build/7") and tag.text == "build/7"
    assert query_pages.cell("id", 42, "t").href == pages.object_page("t", 42)
    assert query_pages.cell("id", 42, None).href is None  # no tag parameter: whose object?
    assert query_pages.cell("parent_id", 42, "t").href is None
    assert query_pages.cell("name", "t", "t").href is None
    size = query_pages.cell("retained_size", 2048, None)
    assert size.text == human_bytes(2048) and size.title == "2,048 bytes" and size.numeric
    assert query_pages.cell("count", 1234567, None).text == "1,234,567"
    assert query_pages.cell("sid", 1234567, None).text == "1234567"
    assert query_pages.cell("object", {"id": 1, "name": None}, "t").text == '{"id": 1}'
    long = query_pages.cell("ids", list(range(100_000)), None).text
    assert len(long) <= query_pages.CELL_CHARS


def test_bad_parameters_answer_a_4xx_page_that_keeps_the_form(client: TestClient, loaded: Loaded) -> None:
    url = query_pages.query_page("top")
    not_int = client.get(url, params={"tag": loaded.tag, "limit": "lots"})
    assert not_int.status_code == 422 and not_int.headers["content-type"].startswith("text/html")
    assert "parameter &#39;limit&#39; must be an integer" in not_int.text
    assert '<form class="query"' in not_int.text and 'name="limit" type="text" value="lots"' in not_int.text
    out_of_range = client.get(url, params={"tag": loaded.tag, "limit": "0"})
    assert out_of_range.status_code == 422 and "between 1 and 1000" in out_of_range.text
    missing = client.get(url, params={"limit": "5"})
    assert missing.status_code == 422 and "needs parameter &#39;tag&#39;" in missing.text
    assert '<form class="query"' in missing.text
    unknown_parameter = client.get(url, params={"tag": loaded.tag, "colour": "red"})
    assert unknown_parameter.status_code == 422 and "no parameter &#39;colour&#39;" in unknown_parameter.text
    # The twin answers JSON, as the API does.
    twin = client.get(url + pages.JSON_SUFFIX, params={"tag": loaded.tag, "limit": "lots"})
    assert twin.status_code == 422 and "must be an integer" in twin.json()["error"]
    # An unknown query: the 404 page, and the twin's JSON 404.
    nowhere = client.get(query_pages.query_page("no-such-query"))
    assert nowhere.status_code == 404 and nowhere.headers["content-type"].startswith("text/html")
    assert "no stored query" in nowhere.text
    assert client.get(query_pages.query_page("no-such-query") + pages.JSON_SUFFIX).status_code == 404


def test_the_neo4j_browser_link_carries_the_query_and_its_parameters(client: TestClient, loaded: Loaded) -> None:
    page = client.get(query_pages.query_page("top"), params={"tag": loaded.tag, "limit": "5"})
    href = unescape(re.search(r'<a href="([^"]+)"[^>]*>Open in Neo4j Browser</a>', page.text)[1])  # type: ignore[index]
    port = config.managed_settings().http_port  # the session's Neo4j, on a free port
    assert href.startswith(f"http://127.0.0.1:{port}/browser/?cmd=edit&arg=")
    query = parse_qs(urlsplit(href).query)
    assert query["cmd"] == ["edit"]
    text = query["arg"][0]
    assert text.endswith(catalog.get("top").cypher)
    assert f':param tag => "{loaded.tag}";' in text.splitlines()
    assert ":param limit => 5;" in text.splitlines() and ":param type => null;" in text.splitlines()
    twin = client.get(query_pages.query_page("top") + pages.JSON_SUFFIX, params={"tag": loaded.tag, "limit": "5"})
    assert twin.json()["neo4j_browser"] == href


def test_a_person_picks_a_query_fills_its_form_and_reads_the_result(database: Database, loaded: Loaded) -> None:
    assert AXE.is_file(), f"{AXE} is missing: run scripts/bootstrap.sh (npm ci in tests/js)"
    with served(create_app(token="")) as port, ChromiumPage("about:blank", timeout=90) as browser:
        base = f"http://127.0.0.1:{port}"
        browser.goto(base + "/")
        assert browser.follow(f'nav a[href="{query_pages.QUERIES}"]') == base + query_pages.QUERIES
        assert browser.evaluate("document.querySelectorAll('table.queries tbody tr').length") == len(catalog.catalog())
        browser.screenshot(SCREENSHOTS / "queries.png")
        catalog_violations = browser.accessibility_violations(AXE, IMPACTS)
        types_page = query_pages.query_page("types")
        assert browser.follow(f'table.queries a[href="{types_page}"]') == base + types_page
        assert browser.evaluate("document.querySelector('table.result') === null")
        # The tag field filled in; the other fields left at their defaults.
        browser.evaluate(f"document.querySelector('#param-tag').value = {json.dumps(loaded.tag)}")
        assert browser.evaluate("document.querySelector('#param-tag').value") == loaded.tag
        result_url = browser.follow("form.query button[type=submit]")
        sent = parse_qs(urlsplit(result_url).query)
        assert sent["tag"] == [loaded.tag] and sent["limit"] == ["50"] and sent["sort"] == ["self_size"]
        rows = browser.evaluate("document.querySelectorAll('table.result tbody tr').length")
        assert rows > 0
        first_type = browser.evaluate("document.querySelector('table.result tbody td').textContent")
        api = catalog.run(database, "types", {"tag": loaded.tag})
        assert rows == len(api) and first_type == api[0]["type"]
        assert browser.evaluate("document.querySelector('#param-tag').value") == loaded.tag  # the form kept it
        browser.screenshot(SCREENSHOTS / "query.png")
        query_violations = browser.accessibility_violations(AXE, IMPACTS)
        assert browser.problems == [], browser.problems
    assert catalog_violations == [] and query_violations == [], catalog_violations + query_violations
