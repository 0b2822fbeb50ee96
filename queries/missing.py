"""Why a snapshot has no answer of an inspection, and what to do: one declaration per inspection.

A stored snapshot lacks an inspection for one of two reasons: its format does not show what the
inspection needs (a Luau dump has no DOM), or its load did not compute it (stored by an older
heapdb, reanalysed from the store, redacted). Each :class:`Missing` says both in the words of its
inspection and names the fix: ``heapdb reanalyze TAG`` where the store keeps what the inspection
reads, else loading the file again. The questions raise what it returns
(:meth:`heapdb.queries.base.Asking.stored`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from heapdb.errors import NotComputed
from heapdb.loader import formats
from heapdb.loader.inspections.dom import shows_dom
from heapdb.loader.inspections.fill import shows_fill
from heapdb.loader.inspections.held import shows_held
from heapdb.loader.inspections.lifecycles import shows_lifecycles
from heapdb.loader.inspections.objects import shows_objects
from heapdb.loader.store import Snapshot


@dataclass(frozen=True)
class Missing:
    """One inspection's reasons for being absent; call it with the snapshot for the error to raise."""

    subject: str  # what is missing, with its verb: "duplicate strings were"
    shows: Callable[[str | None], bool]  # whether the format shows what the inspection needs
    lacks: str  # what a format that does not lacks, "{format}" for its name
    causes: str  # how a snapshot of a format that does came to be stored without it
    reanalyze: str | None = None  # None: only a new load computes it; else when reanalysing does ("": always)

    def __call__(self, snapshot: Snapshot) -> NotComputed:
        tag = snapshot.tag
        if not self.shows(snapshot.format):
            return NotComputed(f"{self.lacks.format(format=snapshot.format)} (snapshot {tag!r})")
        load = f"load its file again with `heapdb load FILE --tag {tag} --replace`"
        fix = load if self.reanalyze is None else f"run `heapdb reanalyze {tag}`{self.reanalyze}, or {load}"
        return NotComputed(f"{self.subject} not computed for snapshot {tag!r}: {self.causes}; {fix}")


def _declares(trait: str) -> Callable[[str | None], bool]:
    """Whether a format (by name) declares the trait ``trait`` (a field of its Format, not None)."""

    def declares(format_name: str | None) -> bool:
        declared = formats.named(format_name)
        return declared is not None and getattr(declared, trait) is not None

    return declares


OWNERS = Missing(
    "owners were",
    _declares("ownership"),
    "{format} snapshots name no owners",
    "it was stored by an older heapdb",
    reanalyze="",
)
STRINGS = Missing(
    "duplicate strings were",
    _declares("strings"),
    "heapdb does not read the strings of {format} snapshots",
    "it was stored by an older heapdb or reanalysed from the store, whose names are cut to 200 characters",
)
OBJECTS = Missing(
    "duplicate objects were",
    shows_objects,
    "heapdb does not compare the objects of {format} snapshots",
    "it was stored by an older heapdb or reanalysed from the store, which keeps neither whole strings nor whole arrays",
)
FILL = Missing(
    "collections by fill were",
    shows_fill,
    "{format} snapshots show no collection capacities",
    "it was stored by an older heapdb, reanalysed from the store (which keeps no Java field values) or loaded with "
    "its values redacted",
    reanalyze=" (V8)",
)
HELD = Missing(
    "what listeners, the console and closures hold was",
    shows_held,
    "{format} snapshots hold no JavaScript listeners or closures",
    "it was stored by an older heapdb",
    reanalyze="",
)
LIFECYCLES = Missing(
    "objects past their lifecycle were",
    shows_lifecycles,
    "{format} snapshots show no Java classes and field values",
    "it was stored by an older heapdb, reanalysed from the store (which keeps no instance's class layout in memory) "
    "or loaded with its values redacted",
)
SHAPES = Missing(
    "the unbound-shape inspection was",
    shows_dom,  # V8's: the format whose objects have shapes
    "{format} snapshots have no V8 shapes",
    "it was stored by an older heapdb",
    reanalyze="",
)


def of_dom(inspection: str) -> Missing:
    """The reasons an inspection of a snapshot's DOM (``detached-DOM``, ``unmounted-components``...) is absent."""
    return Missing(
        f"the {inspection} inspection was",
        shows_dom,
        "{format} snapshots hold no DOM",
        "it was stored by an older heapdb",
        reanalyze="",
    )


DOM = of_dom("detached-DOM")
REACT = of_dom("unmounted-components")
REACT_HOOKS = of_dom("react-hooks")
STALE = of_dom("collections-with-stale")
