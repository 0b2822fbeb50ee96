"""Who owns the memory on real Luau dumps (memory categories and scripts), against the dumps themselves.

The dumps (../shared/fixtures/luau, written by a Luau VM running leak.luau, which puts its cache in
memory category 1, "cache") are read again here as plain JSON: each object's ``cat`` and ``size``,
the names ``stats`` gives the categories, and each Lua function's proto's ``source``. A category
names every object's owner, so after attribution a category's objects and bytes are exactly the
dump's objects of that ``cat``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from heapdb.loader import analysis
from heapdb.loader.formats import luau
from heapdb.loader.owners.attribution import owner_totals, owners_of
from heapdb.loader.owners.sources import direct_owners
from tests.support.snapshots import LUAU_FIXTURES

pytestmark = pytest.mark.skipif(
    not LUAU_FIXTURES.is_dir(),
    reason=f"real Luau dumps not present at {LUAU_FIXTURES} (they are not part of the repository)",
)
DUMPS = ("luau-1-baseline.json", "luau-2-target.json", "luau-3-final.json")
SENTINEL = "0"  # the VM's last entry, written to avoid a trailing comma: not an object


def dump_objects(path: Path) -> tuple[dict[str, dict], dict[int, str]]:
    """The dump's objects by address (the sentinel left out) and its named categories."""
    dump = json.loads(path.read_text())
    objects = {address: obj for address, obj in dump["objects"].items() if address != SENTINEL}
    named = {int(k): v["name"] for k, v in dump["stats"]["categories"].items() if k.isdigit() and "name" in v}
    return objects, named


def script_of(source: str) -> str:
    """A chunk name as a script: ``@file`` and ``=name`` without their mark."""
    return source[1:] if source[:1] in ("@", "=") else source


@pytest.mark.parametrize("name", DUMPS)
def test_each_category_holds_the_dump_s_objects_of_that_category(name: str) -> None:
    path = LUAU_FIXTURES / name
    objects, named = dump_objects(path)
    count: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for obj in objects.values():
        category = named.get(obj["cat"], f"category {obj['cat']}")
        count[category] += 1
        size[category] += obj["size"]
    g = luau.read_graph(path)
    result = analysis.analyze(g)
    level = owners_of(g, result).level("category")
    assert level is not None
    rows = owner_totals(result, level)
    assert {row.name: row.objects for row in rows} == dict(count)
    assert {row.name: row.self_size for row in rows} == dict(size)
    # The categories are the ones the dump names, and only those that hold objects.
    assert set(count) <= set(named.values()) and "cache" in count
    # A category retains at least its own bytes: every object counted once, owned where it was made.
    assert all(row.retained_size >= row.self_size for row in rows)
    node = {int(x): i for i, x in enumerate(g.ids.tolist())}
    cache = level.names.index("cache")
    members = [node[int(address, 16)] for address, obj in objects.items() if named.get(obj["cat"]) == "cache"]
    assert (level.owner[members] == cache).all()


@pytest.mark.parametrize("name", DUMPS)
def test_a_function_s_script_is_its_proto_s_source_a_thread_s_its_own(name: str) -> None:
    path = LUAU_FIXTURES / name
    objects, _named = dump_objects(path)
    g = luau.read_graph(path)
    node = {int(x): i for i, x in enumerate(g.ids.tolist())}
    expected: dict[int, str] = {}
    c_functions = []
    for address, obj in objects.items():
        if obj["type"] == "function":
            proto = objects.get(obj.get("proto", ""))
            if proto is None:
                c_functions.append(node[int(address, 16)])
            else:
                expected[node[int(address, 16)]] = script_of(proto["source"])
        elif obj["type"] in ("proto", "thread"):  # a thread: the source it runs
            expected[node[int(address, 16)]] = script_of(obj["source"])
    assert c_functions and any(objects[a]["type"] == "function" and node[int(a, 16)] in expected for a in objects)
    (script,) = (d for d in direct_owners(g) if d.level == "script")
    said = {int(v): script.names[script.owner[v]] for v in np.flatnonzero(script.owner >= 0).tolist()}
    assert said == expected
    assert set(script.names) == set(expected.values())
    # After attribution a function is still its script's.
    result = analysis.analyze(g)
    level = owners_of(g, result).level("script")
    assert level is not None
    assert all(level.names[level.owner[v]] == s for v, s in expected.items() if result.reachable[v])
