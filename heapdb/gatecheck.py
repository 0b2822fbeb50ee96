"""What can fail the CI gate: one list, read by the gate's parameters (``heapdb gate --fail-on``) and by
rule files' ``[gate]`` tables (``fail_on``). Kept apart so that neither pulls in the other's imports."""

from __future__ import annotations

from typing import Literal, get_args

# The paths' checks, then the inspections' (heapdb.queries.gate_inspections).
GateCheck = Literal[
    "new-leaks",
    "growth",
    "suspects",
    "duplicate-strings",
    "detached-dom",
    "unmounted-components",
    "duplicate-objects",
    "collection-fill",
    "lifecycle-leaks",
    "held",
    "global-variables",
    "react-hooks",
    "owners",
]
GATE_CHECKS: tuple[str, ...] = get_args(GateCheck)
