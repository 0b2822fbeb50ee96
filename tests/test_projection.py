"""The object projection (queries/projection.py): written once, generated into every stored query
that answers with objects, and complete against ``ObjectInfo``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from heapdb.queries import catalog, projection
from heapdb.queries.results import ObjectInfo


def test_the_projection_has_every_field_of_object_info() -> None:
    # A field added to ObjectInfo (or dropped from it) without the projection would come as None in
    # every answer; one in the projection but not in ObjectInfo would be read by no one.
    assert sorted(projection.FIELDS) == sorted(f.name for f in dataclasses.fields(ObjectInfo))
    assert len(set(projection.FIELDS)) == len(projection.FIELDS)
    # from_row reads each of them: a row carrying every field makes an ObjectInfo with all of them set.
    row = {name: f"value of {name}" for name in projection.FIELDS} | {"reachable": True, "root": True}
    made = ObjectInfo.from_row(row)
    assert {name: getattr(made, name) for name in projection.FIELDS} == row | {"detached": True}


def test_the_stored_queries_carry_the_current_projection() -> None:
    for query in catalog.catalog().values():
        assert projection.expand(query.text) == query.text, (
            f"queries/{query.filename} projects an object by hand: run `python -m heapdb.queries.projection`"
        )
    # Every query whose rows become ObjectInfo projects its objects this way (`o`, `holder`, `n`...).
    projecting = {name for name, query in catalog.catalog().items() if projection.projected(query.cypher)}
    assert {
        "dominated",
        "dominated-largest",
        "dominators",
        "find",
        "object",
        "object-brief",
        "objects-brief",
        "retainers",
        "suspects",
        "top",
        "why-alive",
        "why-alive-avoiding",
    } <= projecting
    assert projection.projected(catalog.get("object").cypher) == ["holder", "held", "o"]
    assert projection.projected(catalog.get("suspects").cypher) == ["o", "point"]


def test_the_projection_is_written_for_the_variable_it_projects() -> None:
    assert projection.projection("holder") == (
        "holder {.id, .type, .name, .kind, .self_size, .retained_size, .retained_count, .distance, .reachable, "
        ".detached, .verdict, .known_leak, .location, .allocated_at, .bucket, .owner, root: holder:Root}"
    )
    # A new query needs only the first key; other map projections (references) are left alone.
    text = "RETURN [n IN nodes(p) | n {.id}] AS objects, [r IN relationships(p) | r {.kind, .name}] AS references"
    assert projection.expand(text) == (
        f"RETURN [n IN nodes(p) | {projection.projection('n')}] AS objects, "
        "[r IN relationships(p) | r {.kind, .name}] AS references"
    )
    # A stale one (a field missing, another added by hand) is rewritten whole; `.identity` is no `.id`.
    assert projection.expand("o {.id, .type, .name}") == projection.projection("o")
    assert projection.expand("o {.identity}") == "o {.identity}"


def test_update_rewrites_only_stale_files(tmp_path: Path) -> None:
    current = f"// name: a\n// description: d\nRETURN {projection.projection('o')} AS object\n"
    (tmp_path / "current.cypher").write_text(current)
    (tmp_path / "stale.cypher").write_text("// name: b\n// description: d\nRETURN o {.id, .type} AS object\n")
    assert projection.update(tmp_path) == ["stale.cypher"]
    assert (tmp_path / "stale.cypher").read_text() == current.replace("name: a", "name: b")
    assert (tmp_path / "current.cypher").read_text() == current
    assert projection.update(tmp_path) == []
