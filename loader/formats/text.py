"""Names as data: the text every reader hands on is safe downstream, and derived texts are bounded.

A runtime can put any string in a snapshot: NUL and control characters, megabyte-long strings, and
lone UTF-16 surrogates (a V8 string cut in the middle of a pair, ``\\udcff`` escapes in JSON, or a
snap.bin string decoded with ``surrogatepass``). Everything heapdb stores or prints is UTF-8, which
cannot hold a lone surrogate, so the readers replace each one *once*, where they produce the string
table, with the six characters of its escape (``\\udcff``, a backslash, ``u`` and four lowercase hex
digits): :func:`safe_strings`. Nothing after the readers (the store, the renderers, the CLI) ever sees
an unencodable string. NUL, control characters and long strings are kept as they are: they are valid
text, stored in full; whoever shows them escapes and cuts them (:func:`heapdb.units.shorten`).

Texts made *from* names (retainer paths, labels in dot and SVG) are cut to
:data:`heapdb.units.NAME_LIMIT` characters per label and :data:`MAX_PATH_CHARS` per path, an ellipsis marking each cut; the full value stays
where it is stored (the object's name and type in the graph and in Neo4j).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_PATH_CHARS = 4096  # one whole path text ("(GC roots) / cache → Map / ...")

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by its ``\\uXXXX`` escape (other text unchanged)."""
    return _SURROGATE.sub(_escape, text)


def safe_strings(strings: Iterable[str]) -> list[str]:
    """A reader's string table made encodable: :func:`safe_text` on each string that needs it.

    Cheap on the common path: the strings are encoded to UTF-8 a batch at a time (a join and an
    encode, in C), and only a batch that fails is gone through string by string, the regular
    expression only on the strings that fail.
    """
    out = list(strings)
    for lo in range(0, len(out), _BATCH):
        try:
            "".join(out[lo : lo + _BATCH]).encode("utf-8")
        except UnicodeEncodeError:
            for i in range(lo, min(lo + _BATCH, len(out))):
                try:
                    out[i].encode("utf-8")
                except UnicodeEncodeError:
                    out[i] = safe_text(out[i])
    return out


# What a redacted string's content becomes (heapdb.loader.redaction): its length in characters and
# a keyed hash of it, so that equal contents stay equal. Declared here, beside the other rules about
# names, because the readers' consumers parse it (a file redacted before it was read).
_REDACTED = re.compile(r"\[redacted ([0-9]+) chars ([0-9a-f]{16})\]")


def redacted_text(length: int, digest: str) -> str:
    return f"[redacted {length} chars {digest}]"


def redacted_parts(text: str) -> tuple[int, str] | None:
    """A redacted content's (length, hash); None for any other text."""
    found = _REDACTED.fullmatch(text)
    return None if found is None else (int(found[1]), found[2])


# Strings encoded at once by safe_strings: small enough that the joined batch costs no memory to
# speak of, large enough that the per-batch overhead vanishes.
_BATCH = 4096
