"""The Chromium helpers of :mod:`heapgen.chromium`, as tests use them: declared to need the
``chromium`` tier (tests/support/tiers.py), so a test naming one is marked and the fast tier never
starts a browser. The benchmarks use :mod:`heapgen.chromium` itself."""

from __future__ import annotations

from heapgen import chromium
from heapgen.chromium import (
    DETACHED_DOM_HOLDERS,
    DOM_DIALOG_ITEMS,
    DOM_PANEL_ITEMS,
    DOM_PANELS,
    REACT_PANELS,
    REACT_ROWS,
    find_chromium,
)
from tests.support.tiers import needs

__all__ = [
    "DETACHED_DOM_HOLDERS",
    "DOM_DIALOG_ITEMS",
    "DOM_PANELS",
    "DOM_PANEL_ITEMS",
    "REACT_PANELS",
    "REACT_ROWS",
    "ChromiumPage",
    "capture_heap_snapshot",
    "capture_heap_snapshots",
    "chromium_version",
    "find_chromium",
    "write_detached_dom_snapshot",
    "write_react_snapshots",
]

chromium_version = needs("chromium")(chromium.chromium_version)
capture_heap_snapshot = needs("chromium")(chromium.capture_heap_snapshot)
capture_heap_snapshots = needs("chromium")(chromium.capture_heap_snapshots)
write_detached_dom_snapshot = needs("chromium")(chromium.write_detached_dom_snapshot)
write_react_snapshots = needs("chromium", "node")(chromium.write_react_snapshots)


@needs("chromium")
class ChromiumPage(chromium.ChromiumPage):
    """:class:`heapgen.chromium.ChromiumPage`, checked against the running test's tier."""
