"""Fixtures for the whole suite, and the test tiers. Each group lives in tests/support/ and is pulled in here."""

from collections.abc import Iterator

import pytest

from tests.support import schedule, tiers
from tests.support.browser_fixtures import dom_page_loaded, dom_page_snapshot, react_loaded, react_snapshots  # noqa: F401
from tests.support.neo4j_fixtures import (  # noqa: F401
    ask,
    client,
    database,
    isolated_heapdb_home,
    leak_loaded,
    leak_series_loaded,
    neo4j_server_settings,
)
from tests.support.v8_fixtures import leak_snapshot, leak_snapshots, memlab_oracle, node_tools  # noqa: F401


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test neo4j / node / chromium from the fixtures and helpers it uses (tests/support/tiers.py),
    and start the longest test files first (tests/support/schedule.py)."""
    tiers.mark(items)
    schedule.longest_first(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Let the helpers declared with `tiers.needs` see which test calls them, to fail unmarked ones."""
    tiers.running = item
    try:
        return (yield)
    finally:
        tiers.running = None
