"""The CI gate's recorded runs: what each run decided and why, read back.

``heapdb gate --record`` stores each run (:mod:`heapdb.loader.store.gate_runs`, through
:meth:`heapdb.queries.gate.GateQuestions.record_gate`); :meth:`GateRunQuestions.gate_runs` lists them
newest first (stored query ``gate-runs``) and :meth:`GateRunQuestions.gate_run` answers one run's
report as it was decided (stored query ``gate-run``), whatever has become of its snapshots since.
A caller who may read only some tags (:mod:`heapdb.scopes`) sees the runs both of whose snapshots
it may read; another run is unknown to it.
"""

from __future__ import annotations

import json

from heapdb.errors import NotFound
from heapdb.queries import params
from heapdb.queries.base import Asking
from heapdb.queries.results import GateRun, GateRunRow, GateRuns, from_data

RUNS_READ = 1000  # runs read at a time while keeping those a scoped caller may see (the query's largest limit)


class GateRunQuestions(Asking):
    def gate_runs(self, p: params.GateRuns = params.GateRuns()) -> GateRuns:
        """A page of the recorded gate runs, newest first; with ``p.candidate``, those of that candidate."""
        if not self.scope.everything:
            mine = self._runs_in_scope(p.candidate)
            return GateRuns(total=len(mine), offset=p.offset, runs=mine[p.offset : p.offset + p.limit])
        row = self._run("gate-runs", candidate=p.candidate, offset=p.offset, limit=p.limit)[0]
        return GateRuns(total=row["total"], offset=p.offset, runs=[GateRunRow(**r) for r in row["runs"]])

    def _runs_in_scope(self, candidate: str | None) -> list[GateRunRow]:
        """Every run the caller may read, newest first: read in pages and kept by their tags."""
        kept: list[GateRunRow] = []
        offset = 0
        while True:
            row = self._run("gate-runs", candidate=candidate, offset=offset, limit=RUNS_READ)[0]
            kept += [GateRunRow(**r) for r in row["runs"] if self.scope.reads_all((r["baseline"], r["candidate"]))]
            offset += RUNS_READ
            if offset >= row["total"]:
                return kept

    def gate_run(self, run_id: int) -> GateRun:
        """One recorded gate run: its report as stored, with its number and when it was recorded."""
        found = self._run("gate-run", id=run_id)
        if not found or not self.scope.reads_all((found[0]["run"]["baseline"], found[0]["run"]["candidate"])):
            raise NotFound(f"no gate run {run_id} is recorded (`heapdb gate-runs` lists them)")
        run = found[0]["run"]
        return from_data(GateRun, {**json.loads(run["report"]), "id": run["id"], "recorded_at": run["recorded_at"]})
