"""The JSON of each answer as a pydantic model, derived from the question's result type, so that
OpenAPI documents what every route answers and not only what it takes.

The service sends :func:`heapdb.service.links.to_json` of a result: every field of the frozen
dataclass under its own name, and each :class:`~heapdb.queries.results.ObjectRef` as the object's
why-alive permalink, a string. The models say exactly that: a dataclass becomes a model of the same
fields, an ``ObjectRef`` a string path, tuples lists. They document; the routes still send the JSON
they built, so the bodies are what they were before there were models.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, create_model

from heapdb.queries.results import ObjectRef

Link = Annotated[
    str,
    Field(
        description="An object, as its why-alive permalink: /api/snapshots/{tag}/objects/{object_id}/why",
        examples=["/api/snapshots/build123/objects/4711/why"],
    ),
]

_models: dict[type, type[BaseModel]] = {}
_building: set[type] = set()  # dataclasses whose model is being made: a field naming one is a tree


class ErrorBody(BaseModel):
    """What every error answers."""

    error: str


def json_type(annotation: Any) -> Any:
    """The type of ``annotation``'s JSON, as the service sends it."""
    if annotation is ObjectRef:
        return Link
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return _model(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return json_type(args[0])
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):  # a pair, a triple
        return tuple[tuple(json_type(a) for a in args)]  # type: ignore[misc]
    if origin in (list, tuple):
        return list[json_type(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[args[0], json_type(args[1])]  # type: ignore[misc,valid-type]
    if origin in (Union, types.UnionType):
        return Union[tuple(json_type(a) for a in args)]  # noqa: UP007 - built from a tuple of types at run time
    if origin is Literal or origin is None:
        return annotation
    raise TypeError(f"no JSON type for {annotation!r}")


def _model(cls: type) -> Any:
    """A dataclass's JSON: every field, always present (the service sends defaults too)."""
    if cls in _building:  # a tree (a lifeline's steps): the model refers to itself by name
        return typing.ForwardRef(cls.__name__)
    if cls not in _models:
        _building.add(cls)
        try:
            hints = typing.get_type_hints(cls)
            fields: dict[str, Any] = {f.name: (json_type(hints[f.name]), ...) for f in dataclasses.fields(cls)}
        finally:
            _building.discard(cls)
        model = create_model(cls.__name__, __doc__=cls.__doc__, __module__=__name__, **fields)
        model.model_rebuild(_types_namespace={cls.__name__: model})
        _models[cls] = model
    return _models[cls]
