"""The V8 reader's header check: the ``snapshot`` section (``meta`` and the declared counts), validated
before any array is read, so the kernels can trust field positions, type lists and counts.
"""

from __future__ import annotations

import os
from typing import Any

from heapdb.errors import FormatError
from heapdb.loader.formats.text import safe_strings

REQUIRED_NODE_FIELDS = ("type", "name", "id", "self_size", "edge_count")
REQUIRED_EDGE_FIELDS = ("type", "name_or_index", "to_node")


def parse_header(path: str | os.PathLike[str], header: Any, offset: int, file_size: int) -> dict[str, Any]:
    """Validate the ``snapshot`` section (at byte ``offset``) and work out field positions; sizes are
    checked against the file's size. Every problem is a :class:`FormatError`."""
    try:
        meta = header["meta"]
        node_fields = meta["node_fields"]
        node_types = meta["node_types"][0]
        edge_fields = meta["edge_fields"]
        edge_types = meta["edge_types"][0]
        node_count = header["node_count"]
        edge_count = header["edge_count"]
    except (KeyError, IndexError, TypeError) as e:
        raise FormatError(
            path,
            f"'snapshot' lacks meta.node_fields/node_types/edge_fields/edge_types or node_count/edge_count ({e!r})",
            offset=offset,
        ) from None
    if not isinstance(header, dict) or not isinstance(meta, dict):
        raise FormatError(path, "'snapshot' and its 'meta' must be JSON objects", offset=offset)
    for label, names in (
        ("node_fields", node_fields),
        ("node_types[0]", node_types),
        ("edge_fields", edge_fields),
        ("edge_types[0]", edge_types),
    ):
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise FormatError(path, f"meta.{label} must be a list of names", offset=offset)
    for label, names in (("node_fields", node_fields), ("edge_fields", edge_fields)):
        if len(set(names)) != len(names):
            raise FormatError(path, f"meta.{label} names a field twice", offset=offset)
    node_types, edge_types = safe_strings(node_types), safe_strings(edge_types)
    for label, fields, required in (
        ("node_fields", node_fields, REQUIRED_NODE_FIELDS),
        ("edge_fields", edge_fields, REQUIRED_EDGE_FIELDS),
    ):
        missing = [f for f in required if f not in fields]
        if missing:
            raise FormatError(path, f"meta.{label} lacks {missing}", offset=offset)
    if not all(isinstance(t, str) for t in node_types + edge_types) or not 0 < len(node_types) <= 256:
        raise FormatError(path, "meta.node_types[0] / edge_types[0] must be lists of names", offset=offset)
    for label, count in (("node_count", node_count), ("edge_count", edge_count)):
        if type(count) is not int or count < 0:
            raise FormatError(path, f"snapshot.{label} must be a non-negative integer", offset=offset)
    # Each value takes at least two bytes ("0,"), so the declared counts cannot exceed this.
    if node_count * len(node_fields) * 2 > file_size or edge_count * len(edge_fields) * 2 > file_size:
        raise FormatError(
            path,
            f"declared node_count {node_count} / edge_count {edge_count} cannot fit in a {file_size}-byte file",
            offset=offset,
        )
    if node_count == 0:
        raise FormatError(path, "snapshot.node_count is 0 (a snapshot has at least its root)", offset=offset)
    root_index = header.get("root_index", 0)
    if (
        type(root_index) is not int
        or root_index % len(node_fields)
        or not 0 <= root_index < node_count * len(node_fields)
    ):
        raise FormatError(path, f"snapshot.root_index {root_index!r} is not a node position", offset=offset)
    return {
        "node_fields": node_fields,
        "node_types": node_types,
        "edge_fields": edge_fields,
        "edge_types": edge_types,
        "node_count": node_count,
        "edge_count": edge_count,
        "root": root_index // len(node_fields),
        "header": header,
    }
