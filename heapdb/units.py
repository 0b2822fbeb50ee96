"""Numbers and names for people: sizes in human units, names cut and escaped for one line."""

from __future__ import annotations


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
