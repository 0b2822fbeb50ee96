"""The object projection: how every stored query writes an object into its answer.

An object in an answer is a Cypher map projection with one key per field of
:class:`~heapdb.queries.results.ObjectInfo`::

    o {.id, .type, .name, ..., .bucket, root: o:Root}

Each ``.cypher`` file holds it written out in full, so the file stays what a person pastes into the
Neo4j Browser and what docs/queries.md shows. It is written here once and generated into the files:
``python -m heapdb.queries.projection`` rewrites every map projection that starts with ``.id``
(``o {.id}`` is enough in a new query) to the full one, whatever its variable.
tests/test_projection.py checks that the files are current and that the projection has every field
of ``ObjectInfo``, so a field added there reaches every answer, not only the queries someone
remembered (docs/decisions.md, "One object projection, generated into the stored queries").
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# The object's stored properties, in the order answers list them (docs/data-model.md says what
# each holds). A property a snapshot does not have (`bucket` without bucket rules, `location` where
# the format records none) comes as null.
PROPERTIES = (
    "id",
    "type",
    "name",
    "kind",
    "self_size",
    "retained_size",
    "retained_count",
    "distance",
    "reachable",
    "detached",
    "verdict",
    "known_leak",
    "location",
    "allocated_at",
    "bucket",
    "owner",
)

# Fields that are no property of the object: the Cypher that computes each, for the variable `{0}`.
COMPUTED = {"root": "{0}:Root"}
# The keys each object gets.
FIELDS = (*PROPERTIES, *COMPUTED)

# A map projection whose first key is `.id`: an object, whatever the variable is called.
_OBJECT_MAP = re.compile(r"\b(?P<variable>[A-Za-z_]\w*) \{\.id\b[^{}]*\}")

FOLDER = Path(__file__).resolve().parent


def projection(variable: str) -> str:
    """The object projection of the node bound to ``variable``."""
    keys = [f".{name}" for name in PROPERTIES] + [
        f"{key}: {cypher.format(variable)}" for key, cypher in COMPUTED.items()
    ]
    return f"{variable} {{{', '.join(keys)}}}"


def expand(text: str) -> str:
    """``text`` (a stored query) with each object's map projection written in full."""
    return _OBJECT_MAP.sub(lambda match: projection(match["variable"]), text)


def projected(text: str) -> list[str]:
    """The variables ``text`` projects as objects, in order."""
    return [match["variable"] for match in _OBJECT_MAP.finditer(text)]


def update(folder: Path = FOLDER) -> list[str]:
    """Rewrite the stored queries in ``folder`` whose projections are not current; return their names."""
    changed = []
    for path in sorted(folder.glob("*.cypher")):
        text = path.read_text(encoding="utf-8")
        new = expand(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path.name)
    return changed


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER
    rewritten = update(folder)
    print(f"{folder}: {'rewrote ' + ', '.join(rewritten) if rewritten else 'every object projection is current'}")
