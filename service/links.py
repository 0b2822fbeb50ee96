"""The service's permalinks, built from ids in one place.

Answers name objects by :class:`~heapdb.queries.results.ObjectRef`; JSON answers, from the service
and from the CLI's ``--format json`` alike, carry them as paths of the service's why-alive route,
so a link pasted from either works against ``heapdb serve``. The route is declared with the same
template (:data:`WHY`), so the two cannot drift apart.

A tag may hold any character, ``/`` included (``release/1.2``): in a path it is one segment,
percent-encoded (:func:`path`), and the service matches routes on the path as sent, before
decoding, and decodes the tag afterwards (the ``segment`` converter in :mod:`heapdb.service.app`). So
``/api/snapshots/release%2F1.2/top`` is the snapshot ``release/1.2``, never a route below
``release``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from heapdb.queries.results import ObjectRef, to_data

SEGMENT_CONVERTER = "segment"  # the route converter of a percent-encoded segment (a tag)
SNAPSHOT = "/api/snapshots/{tag:segment}"
OBJECT = SNAPSHOT + "/objects/{object_id}"
WHY = OBJECT + "/why"
DIFF = "/api/diff/{before:segment}/{after:segment}"

_PLACEHOLDER = re.compile(r"\{(\w+)(?::\w+)?\}")


def encode_segment(value: object) -> str:
    """One path segment: every character but the unreserved ones percent-encoded (``/`` too)."""
    return quote(str(value), safe="")


def path(template: str, **values: object) -> str:
    """A route ``template`` (with or without converters) filled in, each value one encoded segment."""
    return _PLACEHOLDER.sub(lambda m: encode_segment(values[m.group(1)]), template)


def why_path(ref: ObjectRef) -> str:
    """The why-alive permalink of an object (add ``?format=dot`` or ``svg`` for a drawing)."""
    return path(WHY, tag=ref.tag, object_id=ref.id)


def to_json(answer: Any) -> Any:
    """An answer as JSON-ready data, its object references as why-alive permalinks."""
    return to_data(answer, why_path)
