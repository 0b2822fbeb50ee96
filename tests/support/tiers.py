"""What a test needs beyond Python, declared once where the need arises, turned into pytest markers.

The tiers are the markers registered in pyproject.toml: ``neo4j``, ``node`` and ``chromium`` (and
``slow``, which is set by hand). A fixture or helper that starts one of those tools is decorated with
:func:`needs`; ``tests/conftest.py`` then marks every test that requests such a fixture (directly or
through other fixtures), or names such a helper in its body or in the body of one of its fixtures.
That is the fast tier's guarantee that ``-m "not neo4j and not node and not chromium"`` starts none
of them. A decorated helper reached some other way (through a module attribute, from another helper)
is still caught when it runs: it fails the unmarked test that called it, saying which marker is
missing, instead of letting it pass only on machines that have the tool.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pytest

# pytest itself is imported only where a test is running: the benchmarks import the helpers that
# use `needs` and run without pytest.

TIERS = ("neo4j", "node", "chromium")
FAST = " and ".join(f"not {tier}" for tier in (*TIERS, "slow"))

_ATTRIBUTE = "__heapdb_needs__"
# The test being run (set by tests/conftest.py around each test's setup, call and teardown).
running: pytest.Item | None = None

T = TypeVar("T", bound=Callable[..., Any])


def needs(*tiers: str) -> Callable[[T], T]:
    """Declare that a fixture, helper function or class starts the tools of ``tiers``.

    Put it under ``@pytest.fixture``. Generator functions (fixtures with teardown) are only labelled:
    wrapping them would hide that they are generators from pytest, and a fixture is found through
    the fixture closure anyway. Other functions, and classes' ``__init__``, also check at run time.
    """
    unknown = set(tiers) - set(TIERS)
    if unknown:
        raise ValueError(f"unknown tiers {sorted(unknown)}; pyproject.toml registers {TIERS}")

    def decorate(target: T) -> T:
        if isinstance(target, type):
            # Replacing a method on purpose: the check runs wherever the class is constructed.
            target.__init__ = _guarded(target.__init__, tiers, target.__qualname__)  # type: ignore[misc]
            labelled: Any = target
        elif inspect.isgeneratorfunction(target):
            labelled = target
        else:
            labelled = _guarded(target, tiers, target.__qualname__)
        setattr(labelled, _ATTRIBUTE, frozenset(tiers))
        return labelled

    return decorate


def _guarded(function: Callable[..., Any], tiers: tuple[str, ...], name: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        item = running
        if item is not None:
            import pytest

            missing = [tier for tier in tiers if item.get_closest_marker(tier) is None]
            if missing:
                pytest.fail(
                    f"{item.nodeid} runs {name}, which needs {', '.join(missing)}, but is not marked so: "
                    f"add `pytestmark = pytest.mark.{missing[0]}` to its module (see tests/support/tiers.py)",
                    pytrace=False,
                )
        return function(*args, **kwargs)

    return guarded


def declared(obj: object) -> frozenset[str]:
    """The tiers ``obj`` was declared with by :func:`needs` (none for anything else)."""
    value: object = getattr(obj, _ATTRIBUTE, frozenset())
    return value if isinstance(value, frozenset) else frozenset()


def needed_by(item: pytest.Item) -> set[str]:
    """The tiers a collected test needs, as far as its fixtures and the names in its code tell."""
    import pytest

    functions: list[Callable[..., Any]] = []
    if isinstance(item, pytest.Function):
        functions.append(item.function)
    # pytest has no public way from an item to its fixtures' functions; _fixtureinfo has been stable
    # since pytest 3 and holds every fixture of the closure (overridden definitions included).
    fixture_info = getattr(item, "_fixtureinfo", None)
    for definitions in getattr(fixture_info, "name2fixturedefs", {}).values():
        functions += [definition.func for definition in definitions]
    tiers: set[str] = set()
    for function in functions:
        tiers |= declared(function)
        scope = getattr(function, "__globals__", {})
        for name in _names(getattr(function, "__code__", None)):
            tiers |= declared(scope.get(name))
    return tiers


def _names(code: types.CodeType | None) -> Iterator[str]:
    """The global and attribute names used by ``code``, nested functions and comprehensions included."""
    if code is None:
        return
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names(constant)


def mark(items: Iterable[pytest.Item]) -> None:
    """Add the tier markers each item needs (called from pytest_collection_modifyitems)."""
    for item in items:
        for tier in sorted(needed_by(item)):
            if item.get_closest_marker(tier) is None:
                item.add_marker(tier)
