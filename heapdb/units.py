"""Numbers for people: sizes in human units."""

from __future__ import annotations


def human_bytes(n: int | float) -> str:
    """``1536`` → ``"1.5 KiB"``; bytes as they are below 1 KiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


# V8 string objects carry their whole contents as their name; nobody wants megabytes in a table.
NAME_LIMIT = 200


def shorten(text: str, limit: int = NAME_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
