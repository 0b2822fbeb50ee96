"""The test tiers: a test that needs Neo4j, Node or Chromium carries the marker that keeps it out of the fast tier."""

from __future__ import annotations

import pytest

from tests.support import tiers

# The fixtures that start each tool, by the marker their tests must carry.
TOOL_FIXTURES = {
    "neo4j": {"database", "neo4j_server_settings"},
    "node": {"node_tools", "leak_snapshots", "leak_snapshot", "memlab_oracle"},
}


def test_tests_using_a_tool_fixture_carry_its_marker(request: pytest.FixtureRequest) -> None:
    # The session's items are the selected ones: under the fast tier's -m, none may use these fixtures.
    unmarked = [
        f"{item.nodeid} uses {sorted(fixtures & set(getattr(item, 'fixturenames', ())))} but is not marked {tier}"
        for item in request.session.items
        for tier, fixtures in TOOL_FIXTURES.items()
        if fixtures & set(getattr(item, "fixturenames", ())) and item.get_closest_marker(tier) is None
    ]
    assert not unmarked, "\n".join(unmarked)


@pytest.fixture
@tiers.needs("neo4j")
def pretend_database() -> str:
    return "no database: only the declaration matters here"


@pytest.fixture
def through_another_fixture(pretend_database: str) -> str:
    return pretend_database


def test_needs_on_a_fixture_marks_its_tests(request: pytest.FixtureRequest, through_another_fixture: str) -> None:
    # Runs in the neo4j tier only, which is the point: the marker came from two fixtures away.
    assert request.node.get_closest_marker("neo4j") is not None


def test_an_unmarked_test_calling_a_tool_helper_fails_saying_which_marker() -> None:
    @tiers.needs("node")
    def starts_node() -> str:
        return "ran"

    with pytest.raises(pytest.fail.Exception, match=r"needs node, but is not marked so"):
        starts_node()


def test_a_marked_test_may_call_it(request: pytest.FixtureRequest) -> None:
    # Marked only now, after selection, so that this test stays in the fast tier.
    request.node.add_marker("chromium")

    @tiers.needs("chromium")
    def starts_chromium() -> str:
        return "ran"

    assert starts_chromium() == "ran"


def test_unknown_tiers_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown tiers"):
        tiers.needs("java")
