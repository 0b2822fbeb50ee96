"""The Chromium helpers of :mod:`heapgen.chromium`, as tests use them: declared to need the
``chromium`` tier (tests/support/tiers.py), so a test naming one is marked and the fast tier never
starts a browser. The benchmarks use :mod:`heapgen.chromium` itself."""

from __future__ import annotations

from heapgen import chromium
from heapgen.chromium import find_chromium
from tests.support.tiers import needs

__all__ = ["ChromiumPage", "capture_heap_snapshot", "capture_heap_snapshots", "chromium_version", "find_chromium"]

chromium_version = needs("chromium")(chromium.chromium_version)
capture_heap_snapshot = needs("chromium")(chromium.capture_heap_snapshot)
capture_heap_snapshots = needs("chromium")(chromium.capture_heap_snapshots)


@needs("chromium")
class ChromiumPage(chromium.ChromiumPage):
    """:class:`heapgen.chromium.ChromiumPage`, checked against the running test's tier."""
