"""Numbers and names for people: sizes in human units and as people write them in a CI file or a
rule file (``10MB``, ``512KiB``, ``1048576``, ``5%``), names cut and escaped for one line."""

from __future__ import annotations

import re

from heapdb.errors import ParameterError


def human_bytes(n: int | float) -> str:
    """``1536`` → ``"1.5 KiB"``; bytes as they are below 1 KiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


# V8 string objects carry their whole contents as their name; nobody wants megabytes in a table, a
# path hop or a dot/SVG label. The full value stays where it is stored.
NAME_LIMIT = 200
ELLIPSIS = "…"  # marks where a text was cut


def shorten(text: str, limit: int = NAME_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def short_name(name: str, width: int = NAME_LIMIT) -> str:
    """A name on one line, cut to ``width`` characters; control characters shown as escapes."""
    return shorten("".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in name), width)


# Sizes as people write them: decimal units (kB, MB, GB: powers of 1000) and binary ones (KiB, MiB,
# GiB: powers of 1024), any case; a bare number is bytes. A percentage is left to the caller to apply.
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


def parse_threshold(text: str | int, what: str = "max_growth") -> tuple[float, bool]:
    """``"10MB"`` → ``(10_000_000, False)``, ``"512KiB"`` → ``(524_288, False)``, ``"5%"`` →
    ``(5.0, True)``: an amount of bytes, or a percentage. A :class:`ParameterError` naming ``what``
    otherwise."""
    found = _THRESHOLD.match(str(text))
    unit = found["unit"].lower() if found else ""
    if not found or (unit != "%" and unit not in _UNITS):
        raise ParameterError(f"{what}: {text!r} is not a size (e.g. 2MB, 512KiB, 1048576) or a percentage (e.g. 5%)")
    number = float(found["number"])
    if unit == "%":
        return number, True
    return number * _UNITS[unit], False
