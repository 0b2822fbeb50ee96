"""What a snapshot format is to heapdb: one frozen :class:`Format` declaring its name, how its
content is recognised, the module that reads it, and the traits the later stages ask it about.

A format's traits are declared here, with the format, and nowhere else: whether its object ids
are addresses (comparisons by id then warn), which retention rules its analysis follows
(:class:`Semantics`), and which of heapdb's default rule sets its snapshots get. Later stages look a
format up by the name a graph or a stored snapshot carries (:func:`heapdb.loader.formats.named`)
and read the trait, never compare format names themselves.

The reader is named as a module, imported on first use: the V8 and hprof readers pull in numba (a
quarter of a second and 60 MiB), which a question about a stored snapshot must not pay to learn
whether its ids are addresses.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, cast

from heapdb.loader.graph import HeapGraph

if TYPE_CHECKING:
    from heapdb.progress import ByteProgress


class Semantics(StrEnum):
    """Which rules decide what retains what (:func:`heapdb.loader.analysis.analyze`)."""

    GENERIC = "generic"  # weak/shortcut/self-edge rules only; unreachable objects stay detached
    V8 = "v8"  # memlab's rules, number for number (page ownership, orphans hung under the root)


class Collections(StrEnum):
    """How a format's collections show their size and capacity, for the fill inspection
    (:mod:`heapdb.loader.inspections.fill`)."""

    JAVA = "java"  # instance fields: a size field (an int) and a backing array of known length
    V8 = "v8"  # Map and Set hash tables and Array element stores, sized by their bytes


class Ownership(StrEnum):
    """Where a format's objects say which part of the program they belong to, for owners
    (:mod:`heapdb.loader.owners`): the program structure each object is attributed from."""

    V8 = "v8"  # closures' and constructors' script locations: the file, and its npm package
    JAVA = "java"  # each instance's class: its package, and the class loader that loaded it
    LUAU = "luau"  # each object's memory category, and each function's script
    DOTNET = "dotnet"  # class names with their namespaces (Mono's module and heapshots)
    PYTHON = "python"  # module objects, and the modules classes are defined in
    RUNTIME = "runtime"  # a snap.bin file's writer says: its ``runtime`` picks one of the above


class Duplicates(StrEnum):
    """Which objects' contents a format shows, for the duplicate-objects inspection
    (:mod:`heapdb.loader.inspections.objects`)."""

    SHALLOW = "shallow"  # memlab's object-shallow: an object's class and its properties' shallow values
    ARRAYS = "arrays"  # primitive arrays' elements, which the reader keeps (heapdb.loader.values)


class Reader(Protocol):
    """The module (or package) that reads a format."""

    def sniff(self, head: bytes) -> bool:
        """Whether the first bytes of a file are this format."""
        ...

    def read_graph(self, path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
        """The whole snapshot as arrays. ``on_bytes`` is called with the number of bytes consumed
        since its last call, for progress bars. Errors in the file are a ``FormatError`` with the
        offset."""
        ...


@dataclass(frozen=True)
class StringKinds:
    """Which of a format's objects are strings, by node kind, for the duplicate-strings inspection
    (:mod:`heapdb.loader.inspections.strings`).

    A string's content is its name, except for a concatenation (V8's cons string), whose content is
    its ``first`` reference's content followed by its ``second``'s. Sliced strings are not counted
    (they share their parent's characters); inside a concatenation, one stands for its ``parent``'s
    content, as memlab reads it. Strings that an object of a ``code`` kind dominates (a script's
    source, its compiled constants) are left out: no program change frees them.

    Java strings are none of these: they are instances of an ``instances`` type, whose content is
    the elements of their ``value`` array (:mod:`heapdb.loader.inspections.java_strings`).
    """

    plain: frozenset[str] = frozenset()
    concatenated: frozenset[str] = frozenset()
    sliced: frozenset[str] = frozenset()
    code: frozenset[str] = frozenset()
    instances: frozenset[str] = frozenset()  # types (class names) whose content is their value array


@dataclass(frozen=True)
class Format:
    """One snapshot format heapdb reads."""

    name: str  # what the reader writes in ``graph.meta["format"]`` and a load stores as the snapshot's format
    reader: str  # the module implementing :class:`Reader`, imported on first use
    described: str  # how the error for an unknown file names what it expected: "a V8 .heapsnapshot"
    ids_are_addresses: bool  # a later object may get a freed object's id: matching by id is a guess
    semantics: Semantics  # the retention rules its analysis follows by default
    # The default rule set (heapdb.loader.rules.defaults) its snapshots get; None: the one the
    # snapshot's ``runtime`` names, if any (a snap.bin file says which runtime wrote it).
    default_rules: str | None
    # Its strings, for the duplicate-strings inspection; None where its objects' names do not hold
    # their contents.
    strings: StringKinds | None = None
    # Whether its snapshots can hold a browser's DOM, for the detached-DOM inspection: each native
    # object's detachedness (or, in files without that field, a "Detached " name).
    dom: bool = False
    # How its collections show size and capacity, for the fill inspection; None: they do not.
    collections: Collections | None = None
    # Which objects' contents it shows, for the duplicate-objects inspection; None: none.
    duplicates: Duplicates | None = None
    # Whether its objects name their classes (and super classes) and keep their fields' values, so
    # that lifecycle rules can say which are past their life (the leak status inspection).
    lifecycles: bool = False
    # Where its objects' owners come from (package, file, category...); None: it does not say.
    ownership: Ownership | None = None

    def module(self) -> Reader:
        """The reader, imported now if it was not yet."""
        return cast(Reader, importlib.import_module(self.reader))

    def sniff(self, head: bytes) -> bool:
        """Whether ``head``, a file's first bytes, is this format."""
        return self.module().sniff(head)

    def read_graph(self, path: str | os.PathLike[str], on_bytes: ByteProgress | None = None) -> HeapGraph:
        """Read ``path``, a file of this format, into a :class:`HeapGraph`."""
        return self.module().read_graph(path, on_bytes=on_bytes)
