"""The per-query sections of ``docs/queries.md``, generated from the catalog.

``python -m heapdb.queries.docs docs/queries.md`` rewrites the part of the file between the two
marker comments; a test checks that the file is up to date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from heapdb import docblock
from heapdb.queries.catalog import Parameter, StoredQuery, catalog

BEGIN = "<!-- BEGIN generated from queries/*.cypher by `python -m heapdb.queries.docs docs/queries.md` -->"
END = "<!-- END generated -->"

# Example values for the Browser's :param lines, by parameter name.
EXAMPLES = {"tag": "build123", "id": 12345, "ids": [12345], "type": "LeakedItem", "name_contains": ""}


def _browser_value(p: Parameter) -> str:
    value = EXAMPLES.get(p.name, p.default if not p.required else None)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return json.dumps(value)


def section(q: StoredQuery) -> str:
    """One query's section: what it answers, its parameters, and how to run it in the Browser."""
    lines = [f"### `{q.name}`", "", q.description, ""]
    if q.notes:
        lines += [q.notes, ""]
    if q.needs == "references":
        lines += [
            "It follows references, so it is refused while a load is still writing them (`needs: references`).",
            "",
        ]
    elif q.needs == "objects":
        lines += [
            "It reads all of the snapshot's objects, so it is refused while a load is still writing them "
            "(`needs: objects`).",
            "",
        ]
    if q.parameters:
        lines += ["| parameter | type | default | meaning |", "|---|---|---|---|"]
        for p in q.parameters:
            default = "required" if p.required else f"`{json.dumps(p.default)}`"
            kind = p.describe_type().replace("|", "\\|")  # a pipe would end the table cell
            lines.append(f"| `{p.name}` | `{kind}` | {default} | {p.description} |")
        lines.append("")
    cli = " ".join(f"-p {p.name}={_browser_value(p).strip(chr(39))}" for p in q.parameters if p.required)
    lines += [f"Command line: `heapdb query {q.name}{' ' + cli if cli else ''}`. In the Neo4j Browser:", "", "```"]
    lines += [f":param {p.name} => {_browser_value(p)}" for p in q.parameters]
    lines += ["```", "", "then paste (the file `queries/" + q.filename + "`):", "", "```cypher", q.cypher, "```", ""]
    return "\n".join(lines)


def render() -> str:
    """The generated block, markers included."""
    return "\n".join([BEGIN, "", *(section(q) for q in catalog().values()), END])


def update(path: str | Path) -> bool:
    """Rewrite the generated block of ``path``; return whether anything changed."""
    return docblock.update(path, BEGIN, END, render())


if __name__ == "__main__":
    changed = update(sys.argv[1])
    print(f"{sys.argv[1]}: {'updated' if changed else 'already up to date'}")
