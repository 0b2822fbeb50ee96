"""The questions heapdb answers, one typed method each, shared by the CLI and the REST service.

Each method takes its snapshots (records or tags), the subject's ids, and the question's
parameters (:mod:`heapdb.queries.params`); it runs stored queries (:mod:`heapdb.queries.catalog`)
and returns frozen results (:mod:`heapdb.queries.results`). Callers only parse input and render
output. An unknown tag or object raises :class:`~heapdb.errors.NotFound`; a bad parameter
:class:`~heapdb.errors.ParameterError`.
"""

from __future__ import annotations

from heapdb.queries.compare import CompareQuestions
from heapdb.queries.single import SnapshotQuestions
from heapdb.queries.suspects import SuspectQuestions


class Questions(SnapshotQuestions, CompareQuestions, SuspectQuestions):
    """Every question, bound to one database, a per-query timeout and optionally a cache:
    ``Questions(database).why_alive("build123", 4711)``."""
