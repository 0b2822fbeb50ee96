"""Sizes as people write them in a CI file: ``10MB``, ``512KiB``, ``1048576``, or ``5%``.

Decimal units (kB, MB, GB: powers of 1000) and binary ones (KiB, MiB, GiB: powers of 1024), any case;
a bare number is bytes. A percentage is left for the caller to apply to what it is a share of.
"""

from __future__ import annotations

import re

from heapdb.errors import ParameterError

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
}
_THRESHOLD = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>%|[a-z]*)\s*$", re.IGNORECASE)


def parse_threshold(text: str) -> tuple[float, bool]:
    """``"10MB"`` → ``(10_000_000, False)``, ``"512KiB"`` → ``(524_288, False)``, ``"5%"`` →
    ``(5.0, True)``: an amount of bytes, or a percentage. A :class:`ParameterError` otherwise."""
    found = _THRESHOLD.match(str(text))
    unit = found["unit"].lower() if found else ""
    if not found or (unit != "%" and unit not in _UNITS):
        raise ParameterError(
            f"max_growth: {text!r} is not a size (e.g. 2MB, 512KiB, 1048576) or a percentage (e.g. 5%)"
        )
    number = float(found["number"])
    if unit == "%":
        return number, True
    return number * _UNITS[unit], False
