"""The CI gate's runs remembered: one ``:GateRun`` node per recorded gate, what it decided and why.

``heapdb gate --record`` (the default) writes, beside the builds and leak signatures
(:mod:`.signatures`), the run itself (:func:`record_run`): its number (``id``: 1, 2, 3... in the order
recorded, :mod:`.numbering`), when (``recorded_at``, ISO 8601 UTC), the two snapshots' tags, the
verdict (``passed``), how many findings failed it (``failing``) and the whole report as JSON text
(``report``), so that a run can be shown later as it was decided, thresholds and their origin
included, whatever has happened to its snapshots or its rules since.

The report's JSON is made by the questions' layer (:meth:`heapdb.queries.gate.GateQuestions.record_gate`);
this module only stores it. Runs are read back by the stored queries ``gate-runs`` and ``gate-run``.
The data model is in ``docs/data-model.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from heapdb.db import Database
from heapdb.loader.store.numbering import create_numbered
from heapdb.loader.store.schema import GATE_RUN_KEY


@dataclass(frozen=True)
class RecordedRun:
    """A gate run as just stored: its number and when."""

    id: int
    recorded_at: str


def record_run(
    database: Database, *, baseline: str, candidate: str, passed: bool, failing: int, report: str
) -> RecordedRun:
    """Store one gate run under the next number; ``report`` is the report's JSON text."""
    database.write(GATE_RUN_KEY)  # the constraint on the number (a database older than gate runs lacks it)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    properties = {
        "recorded_at": now,
        "baseline": baseline,
        "candidate": candidate,
        "passed": passed,
        "failing": failing,
        "report": report,
    }
    return RecordedRun(create_numbered(database, "GateRun", "id", properties)["id"], now)
