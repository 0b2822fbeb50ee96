"""Each question's parameters are declared once (heapdb.queries.params): the CLI's options and the
REST service's query parameters are built from the declaration, and the stored queries' headers
declare the same defaults and bounds for the parameters a question passes on."""

from __future__ import annotations

import re
import typing
from typing import Any, Literal

import annotated_types
import click
import pytest
from click.testing import CliRunner

from heapdb.cli import main
from heapdb.errors import ParameterError
from heapdb.loader.graph import SYNTHETIC_KIND
from heapdb.queries import catalog, params
from heapdb.service.app import create_app

QUESTIONS = [
    cls
    for cls in vars(params).values()
    if isinstance(cls, type) and issubclass(cls, params.Params) and cls is not params.Params
]

# The CLI command and REST route of each question.
FRONT_ENDS = {
    params.ObjectDetails: ("object", "/api/snapshots/{tag}/objects/{object_id}"),
    params.Find: (None, "/api/snapshots/{tag}/find"),
    params.Why: ("why", "/api/snapshots/{tag}/objects/{object_id}/why"),
    params.Retains: ("retains", "/api/snapshots/{tag}/objects/{object_id}/retains"),
    params.Top: ("top", "/api/snapshots/{tag}/top"),
    params.Types: ("types", "/api/snapshots/{tag}/types"),
    params.Diff: ("diff", "/api/diff/{before}/{after}"),
    params.Leaks: ("leaks", "/api/leaks"),
    params.Growth: ("growth", "/api/growth"),
    params.Unbound: ("unbound", "/api/unbound"),
    params.Gate: ("gate", "/api/gate"),
    params.GateRuns: ("gate-runs", "/api/gate-runs"),
    params.TypeHistory: ("type-history", "/api/type-history"),
    params.History: ("history", "/api/signatures/{sig}"),
    params.Suspects: ("suspects", "/api/snapshots/{tag}/suspects"),
    params.Lifelines: ("lifelines", "/api/snapshots/{tag}/lifelines"),
    params.HeapDomStats: ("heapdomstats", "/api/snapshots/{tag}/heapdomstats"),
    params.Strings: ("strings", "/api/snapshots/{tag}/strings"),
    params.DupObjects: ("dup-objects", "/api/snapshots/{tag}/dup-objects"),
    params.Dom: ("dom", "/api/snapshots/{tag}/dom"),
    params.React: ("react", "/api/snapshots/{tag}/react"),
    params.ReactHooks: ("react-hooks", "/api/snapshots/{tag}/react-hooks"),
    params.Stale: ("stale", "/api/snapshots/{tag}/stale"),
    params.Held: ("held", "/api/snapshots/{tag}/held"),
    params.Fill: ("fill", "/api/snapshots/{tag}/fill"),
    params.Owners: ("owners", "/api/snapshots/{tag}/owners"),
    params.Lifecycles: ("lifecycles", "/api/snapshots/{tag}/lifecycles"),
    params.Instances: ("instances", "/api/snapshots/{tag}/instances"),
    params.References: ("references", "/api/snapshots/{tag}/objects/{object_id}/references"),
    params.Search: ("search", "/api/snapshots/{tag}/search"),
}

# Passed on under the same name but in another unit: the question's share is the query's percentage.
CONVERTED = {("suspects", "ratio")}


def bounds(info: Any) -> tuple[Any, Any]:
    low = high = None
    for rule in info.metadata:
        if isinstance(rule, (annotated_types.Ge, annotated_types.Gt)):
            low = getattr(rule, "ge", None) if isinstance(rule, annotated_types.Ge) else rule.gt
        elif isinstance(rule, annotated_types.Le):
            high = rule.le
    return low, high


def test_every_question_has_a_cli_command_and_a_rest_route() -> None:
    assert set(QUESTIONS) == set(FRONT_ENDS)


@pytest.mark.parametrize("model", QUESTIONS, ids=lambda m: m.__name__)
def test_stored_query_headers_agree_with_the_declaration(model: type[params.Params]) -> None:
    compared = 0
    for name in model.stored:
        query = catalog.get(name)
        declared = {p.name: p for p in query.parameters}
        for field, info in model.model_fields.items():
            if field not in declared or (name, field) in CONVERTED:
                continue
            stored = declared[field]
            compared += 1
            if stored.required or info.is_required():
                assert stored.required == info.is_required(), (name, field)
            else:
                assert stored.default == info.get_default(), (name, field)
            if stored.minimum is not None or stored.maximum is not None:
                assert (stored.minimum, stored.maximum) == bounds(info), (name, field)
            if stored.choices:
                assert typing.get_origin(info.annotation) is Literal
                assert set(stored.choices) == set(typing.get_args(info.annotation)), (name, field)
    assert compared or not model.stored, f"{model.__name__} names stored queries but shares no parameter with them"


@pytest.mark.parametrize("model", [m for m, (command, _) in FRONT_ENDS.items() if command], ids=lambda m: m.__name__)
def test_cli_options_come_from_the_declaration(model: type[params.Params]) -> None:
    name = FRONT_ENDS[model][0]
    assert name is not None, "parametrized over the models that have a command"
    command = main.commands[name]
    options = {p.name: p for p in command.params if isinstance(p, click.Option)}
    for field, info in model.model_fields.items():
        option = options[field]
        assert option.opts == ["--" + field.replace("_", "-")]
        if info.is_required():
            assert option.required, field
        elif not option.multiple:
            assert option.default == info.get_default(), field
        low, high = bounds(info)
        if low is not None or high is not None:
            assert (option.type.min, option.type.max) == (low, high), field  # type: ignore[attr-defined]
        if typing.get_origin(info.annotation) is Literal:
            assert list(option.type.choices) == list(typing.get_args(info.annotation)), field  # type: ignore[attr-defined]


@pytest.mark.parametrize("model", list(FRONT_ENDS), ids=lambda m: m.__name__)
def test_rest_parameters_come_from_the_declaration(model: type[params.Params]) -> None:
    spec = create_app(connect=lambda: None).openapi()  # type: ignore[arg-type,return-value]
    route = spec["paths"][FRONT_ENDS[model][1]]["get"]
    parameters = {p["name"]: p for p in route["parameters"]}
    for field, info in model.model_fields.items():
        schema = parameters[field]["schema"]
        if not info.is_required():
            default = info.get_default()
            assert schema.get("default") == (list(default) if isinstance(default, tuple) else default), field
        low, high = bounds(info)
        if low is not None:
            assert low in (schema.get("minimum"), schema.get("exclusiveMinimum")), field
        if high is not None:
            assert schema.get("maximum") == high, field


def test_a_bad_value_is_a_parameter_error_wherever_it_is_built() -> None:
    with pytest.raises(ParameterError, match="limit"):
        params.Top(limit=0)
    with pytest.raises(ParameterError, match="by"):
        params.Diff(by="colour")
    with pytest.raises(ParameterError, match="share"):
        params.Suspects(share=1.5)
    assert params.Why(ignore_id=[3, 4]).ignore_id == (3, 4)


def test_cli_refuses_out_of_range_values_before_connecting() -> None:
    result = CliRunner().invoke(main, ["top", "some-tag", "--limit", "0"])
    assert result.exit_code == 2 and "--limit" in result.output
    result = CliRunner().invoke(main, ["why", "some-tag", "1", "--k", "11"])
    assert result.exit_code == 2 and "--k" in result.output


def test_stored_queries_spell_synthetic_roots_as_the_readers_do() -> None:
    """The .cypher files leave out the synthetic root-kind nodes by their kind, a literal in Cypher
    (the files must paste into the Browser as they are); it must be the readers' constant."""
    literals = {m for q in catalog.catalog().values() for m in re.findall(r"\.kind\s*(?:<>|=)\s*'([^']*)'", q.cypher)}
    assert literals == {SYNTHETIC_KIND}


def test_leaks_by_path_asks_for_no_more_samples_than_a_path_group_names() -> None:
    from heapdb.loader.store.summaries import PATH_SAMPLES

    assert catalog.get("leaks-paths").parameter("samples").maximum == PATH_SAMPLES
