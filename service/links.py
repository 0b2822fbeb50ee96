"""The service's permalinks, built from ids in one place.

Answers name objects by :class:`~heapdb.queries.results.ObjectRef`; JSON answers, from the service
and from the CLI's ``--format json`` alike, carry them as paths of the service's why-alive route,
so a link pasted from either works against ``heapdb serve``. The route is declared with the same
template (:data:`WHY`), so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from heapdb.queries.results import ObjectRef, to_data

SNAPSHOT = "/api/snapshots/{tag}"
OBJECT = SNAPSHOT + "/objects/{object_id}"
WHY = OBJECT + "/why"


def why_path(ref: ObjectRef) -> str:
    """The why-alive permalink of an object (add ``?format=dot`` or ``svg`` for a drawing)."""
    return WHY.format(tag=quote(ref.tag, safe=""), object_id=ref.id)


def to_json(answer: Any) -> Any:
    """An answer as JSON-ready data, its object references as why-alive permalinks."""
    return to_data(answer, why_path)
