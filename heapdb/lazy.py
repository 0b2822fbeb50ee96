"""Package attributes imported on first use (PEP 562), for packages whose heavy half only some
commands need.

The analysis kernels import numba, a quarter of a second and 60 MiB before any work: a question
that only reads the database should not pay it because a package it touches re-exports a loader
function. A package lists those names with the module that defines them and sets
``__getattr__ = lazy_attributes(__name__, {...})``; it imports them again under ``TYPE_CHECKING``,
so that type checkers still see every name.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps an attribute to the submodule that
    defines it, as ``"module"`` or ``"module:attribute"`` when the names differ. Each value is
    imported once, then kept in the package like an eager import's."""

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
