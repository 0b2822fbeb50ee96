"""The CI gate's recorded runs: what each run decided and why, read back.

``heapdb gate --record`` stores each run (:mod:`heapdb.loader.store.gate_runs`, through
:meth:`heapdb.queries.gate.GateQuestions.record_gate`); :meth:`GateRunQuestions.gate_runs` lists them
newest first (stored query ``gate-runs``) and :meth:`GateRunQuestions.gate_run` answers one run's
report as it was decided (stored query ``gate-run``), whatever has become of its snapshots since.
"""

from __future__ import annotations

import json

from heapdb.errors import NotFound
from heapdb.queries import params
from heapdb.queries.base import Asking
from heapdb.queries.results import GateRun, GateRunRow, GateRuns, from_data


class GateRunQuestions(Asking):
    def gate_runs(self, p: params.GateRuns = params.GateRuns()) -> GateRuns:
        """A page of the recorded gate runs, newest first; with ``p.candidate``, those of that candidate."""
        row = self._run("gate-runs", candidate=p.candidate, offset=p.offset, limit=p.limit)[0]
        return GateRuns(total=row["total"], offset=p.offset, runs=[GateRunRow(**r) for r in row["runs"]])

    def gate_run(self, run_id: int) -> GateRun:
        """One recorded gate run: its report as stored, with its number and when it was recorded."""
        found = self._run("gate-run", id=run_id)
        if not found:
            raise NotFound(f"no gate run {run_id} is recorded (`heapdb gate-runs` lists them)")
        run = found[0]["run"]
        return from_data(GateRun, {**json.loads(run["report"]), "id": run["id"], "recorded_at": run["recorded_at"]})
