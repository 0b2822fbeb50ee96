"""The order the test files start in under pytest-xdist: the longest first.

``scripts/test.sh`` hands whole files to its workers one at a time as each worker frees up, in
collection order (``--no-loadscope-reorder``: xdist would otherwise start the files with the most
tests first, which left the few long tests of a rebuild or a Neo4j restart to the end, run by one
worker alone for minutes while the other sat idle). Starting the longest files first lets the short
ones fill in behind them, so the workers finish together.

The list is what a run measured, longest first (``pytest --durations``); a file missing from it
keeps its place after them, so a stale list costs minutes, never a test.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

LONGEST = (
    "tests/test_load.py",
    "tests/test_rebuild.py",
    "tests/test_neo4j_managed.py",
    "tests/test_queries.py",
    "tests/test_leaks_rules.py",
    "tests/test_prune.py",
    "tests/test_intake.py",
    "tests/test_gate.py",
    "tests/test_build_history.py",
    "tests/test_load_rules.py",
    "tests/test_buckets.py",
    "tests/test_reanalyze.py",
    "tests/test_react_stored.py",
    "tests/test_transient_rules.py",
    "tests/test_compare.py",
    "tests/test_leaks_chromium.py",
    "tests/test_gate_inspections.py",
    "tests/test_path_verdicts.py",
    "tests/test_strings_stored.py",
    "tests/test_objects_stored.py",
    "tests/test_inspections_objects.py",
    "tests/test_dom_stored.py",
    "tests/test_owners_store.py",
    "tests/test_inspections_lifecycles.py",
    "tests/test_inspections_java_strings.py",
    "tests/fuzz/test_readers.py",
    "tests/test_lifecycle.py",
)


def longest_first(items: list[pytest.Item], longest: Sequence[str] = LONGEST) -> None:
    """Reorder ``items`` in place: the files of ``longest`` first, in its order; the others after,
    as collected. A file's own tests keep their order (the sort is stable)."""
    rank = {path: i for i, path in enumerate(longest)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
