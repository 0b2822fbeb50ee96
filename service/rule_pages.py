"""The rule sets as pages: ``/rules`` lists every stored version by name, ``/rules/{name}`` shows one
version's rule file (the latest, or ``?version=N``) with links to the others. The data is
:mod:`heapdb.loader.store.rulesets`', as for ``heapdb rules`` and ``/api/rules``; each page has its
JSON twin. Rule sets are added and removed with the CLI or the API's write token, never from a page.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from typing import Any

from fastapi import FastAPI, Request, Response
from pydantic import Field

from heapdb.db import Database
from heapdb.queries import params
from heapdb.service import links
from heapdb.service.pages import add_page, query_values, respond, templates

RULES = links.RULES_PAGE
RULE = links.RULE_PAGE


def rule_page(name: str, version: int | None = None) -> str:
    base = links.page_path(RULE, name=name)
    return f"{base}?version={version}" if version is not None else base


templates.globals.update(rules_page=RULES, rule_page=rule_page)


class RuleView(params.Params):
    version: int | None = Field(None, ge=1, description="This version (default: the latest).")


def add_rule_pages(app: FastAPI, database: Callable[[], Database]) -> None:
    """The rule sets' pages on ``app``, twins first (not in the OpenAPI description)."""
    from heapdb.loader.store import rulesets

    def every(request: Request, twin: bool) -> Response:
        found = rulesets.list_rule_sets(database(), all_versions=True)
        names = [
            {"name": name, "versions": [r.as_dict() for r in group]}
            for name, group in groupby(found, key=lambda r: r.name)
        ]
        return respond(request, "rules.html", {"rule_sets": names}, twin)

    def one(request: Request, name: str, twin: bool) -> Response:
        view = RuleView(**query_values(request, RuleView))
        chosen = rulesets.get_rule_set(database(), name, view.version)
        versions = [r for r in rulesets.list_rule_sets(database(), all_versions=True) if r.name == name]
        data: dict[str, Any] = {"rule_set": chosen.as_dict(), "versions": [r.as_dict() for r in versions]}
        return respond(request, "rule.html", data, twin)

    add_page(app, RULES, every)
    add_page(app, RULE, one)
