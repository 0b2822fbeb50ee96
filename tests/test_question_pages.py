"""Every question as a page (``/ask/NAME``), on the real Neo4j with the leak program's real V8
snapshots: its form is its declaration's, its answer is the text the CLI prints (objects linked),
its JSON twin is the REST route's answer; a missing subject shows the form, a bad value a 422 page."""

from __future__ import annotations

import dataclasses
import json
import re
from html import unescape
from typing import Any

from click.testing import CliRunner
from fastapi.testclient import TestClient

from heapdb.cli import main
from heapdb.queries import results
from heapdb.registry import BY_NAME
from heapdb.service import pages, question_pages
from tests.support.snapshots import Loaded

ANSWER = re.compile(r'<pre class="answer"[^>]*>(.*?)</pre>', re.S)


def subjects(series: dict[str, Loaded], item: int) -> dict[str, dict[str, Any]]:
    """Questions with no page of their own, and a subject and parameters to ask each with."""
    baseline, target, final = (series[k].tag for k in ("baseline", "target", "final"))
    return {
        "lifelines": {"tag": final, "type": "LeakedItem"},
        "heapdomstats": {"tag": final},
        "suspects": {"tag": final},
        "strings": {"tag": final, "limit": "3"},
        "dup-objects": {"tag": final, "limit": "3"},
        "dom": {"tag": final},
        "fill": {"tag": final, "limit": "3"},
        "references": {"tag": final, "object_id": str(item), "direction": "out"},
        "why": {"tag": final, "object_id": str(item), "k": "2"},
        "growth": {"tag": [baseline, target, final]},
        "gate": {"baseline": baseline, "candidate": final},
    }


def cli_args(name: str, values: dict[str, Any]) -> list[str]:
    question = BY_NAME[name]
    parts = {p.rest_name for p in question.subject.parts}
    if name == "gate":  # its builds are options, and the page never records: nor does this
        return ["gate", "--baseline", values["baseline"], "--candidate", values["candidate"], "--no-record"]
    args = [name]
    for part in question.subject.parts:
        value = values[part.rest_name]
        args += value if isinstance(value, list) else [value]
    for key, value in values.items():
        if key not in parts:
            args += [f"--{key.replace('_', '-')}", value]
    return args


def test_each_question_page_answers_as_the_cli_and_the_api(
    client: TestClient, leak_series_loaded: dict[str, Loaded]
) -> None:
    final = leak_series_loaded["final"].tag
    item = client.get(f"/api/snapshots/{final}/find", params={"type": "LeakedItem", "limit": 1}).json()[0]["id"]
    for name, values in subjects(leak_series_loaded, item).items():
        url = question_pages.ask_page(name, **values)
        page = client.get(url)
        assert page.status_code == 200, (name, page.text[-500:])
        shown = ANSWER.search(page.text)
        assert shown is not None, name
        cli = CliRunner().invoke(main, cli_args(name, values))
        assert cli.exit_code in (0, 1), cli.stderr  # the gate exits 1 when it fails the candidate
        # The CLI's text, line for line, its @ids linked to their objects' pages where one snapshot is asked.
        text = re.sub(r"<[^>]+>", "", shown.group(1))
        assert unescape(text).strip() == cli.stdout.strip(), name
        if BY_NAME[name].subject.kind in ("snapshot", "object") and re.search(r"@\d", cli.stdout):
            linked = re.findall(r'<a href="([^"]+)">@(-?\d+)</a>', shown.group(1))
            assert linked and all(unescape(h) == pages.object_page(final, int(i)) for h, i in linked), name
        # Its form has a field for each part of the subject and each parameter.
        question = BY_NAME[name]
        names = {p.rest_name for p in question.subject.parts} | set(question.model.model_fields)
        assert {n for n in re.findall(r' name="([a-z_]+)"', page.text) if n not in ("tag", "text")} >= names - {"tag"}
        # The twin is what the API answers.
        base, _, query = url.partition("?")
        twin = client.get(f"{base}.json?{query}")
        assert twin.status_code == 200
        cli_json = CliRunner().invoke(main, [*cli_args(name, values), "--format", "json"])
        assert json.loads(cli_json.stdout) == twin.json(), name


def test_a_question_page_without_its_subject_is_a_form_and_a_bad_value_a_422(client: TestClient) -> None:
    empty = client.get(question_pages.ask_page("lifelines"))
    assert empty.status_code == 200 and "Fill in tag" in empty.text and 'name="type"' in empty.text
    assert client.get(question_pages.ask_page("nope")).status_code == 404
    bad = client.get(question_pages.ask_page("why", tag="x", object_id="twelve"))
    assert bad.status_code == 422 and "object_id" in bad.text
    assert client.get(question_pages.ask_page("why") + ".json").status_code == 422


def test_a_signatures_history_is_drawn_build_by_build() -> None:
    observations = [
        results.SignatureObservation(build=f"b{i}", tag=None, retained_size=size, objects=1, present=True)
        for i, size in enumerate((1000, 5000, 12000))
    ]
    history = results.SignatureHistory(
        signature=1,
        path="a → b",
        hops=["a", "b"],
        type="b",
        status="recurring",
        first_seen="b0",
        last_seen="b2",
        grew=["b1", "b2"],
        known_leak=None,
        observations=observations,
    )
    chart = question_pages._history_chart(history)
    assert chart is not None and "<svg" in chart and all(f"b{i}" in chart for i in range(3))
    assert question_pages._history_chart(dataclasses.replace(history, observations=observations[:1])) is None
