"""``GET /stuntset/verdicts`` (``stuntset serve --verdicts``): its options from the query, its
errors naming the parameter, what it prints at exit, and the methods it answers."""

from __future__ import annotations

import json

import anyio
import pytest

from stuntset.checks._verdicts_app import (
    VERDICTS_PATH,
    verdicts_body,
    verdicts_lines,
    with_verdicts,
)
from stuntset.doubles.model import ModelDouble
from stuntset.script import HttpError, Script, Text

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


def double_with_a_retried_400() -> ModelDouble:
    double = ModelDouble(Script.of([HttpError(400)], [Text("ok")]))
    for _ in range(2):
        double.handle("POST", "/v1/chat/completions", "", {"host": "h"}, CHAT)
    return double


def test_every_option_is_read_from_the_query() -> None:
    double = double_with_a_retried_400()
    status, body = verdicts_body(
        double,
        "max_attempts=5&min_backoff=0.5&stall_bound=30&slack=0.1&outcome=&ignore=no_backoff",
    )
    assert status == 200
    assert json.loads(body)["requests"] == 2
    status, body = verdicts_body(double, "outcome=completed")
    assert status == 200
    assert "non_retryable_retried" in {v["rule"] for v in json.loads(body)["verdicts"]}
    _, body = verdicts_body(double, "ignore=non_retryable_retried")
    assert json.loads(body)["verdicts"] == []


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("max_attempts=many", "max_attempts='many' is not a number"),
        ("slack=x", "slack='x' is not a number"),
        ("colour=red", "unknown parameter 'colour'"),
        ("ignore=no_such_rule", "unknown rule(s) ['no_such_rule']"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(query: str, said: str) -> None:
    status, body = verdicts_body(ModelDouble(), query)
    assert status == 400
    assert said in json.loads(body)["error"]


def test_what_serve_prints_at_exit() -> None:
    assert verdicts_lines(ModelDouble()) == [
        "stuntset serve: resilience: no rule broken over 0 request(s)"
    ]
    lines = verdicts_lines(double_with_a_retried_400())
    assert lines[0].endswith("rule(s) broken:")
    assert any("non_retryable_retried" in line for line in lines[1:])


def test_the_route_answers_get_only_and_passes_everything_else_on() -> None:
    passed: list[str] = []

    async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        passed.append(scope["path"])

    wrapped = with_verdicts(app, ModelDouble())  # type: ignore[arg-type]
    sent: list[dict] = []  # type: ignore[type-arg]

    async def send(message: dict) -> None:  # type: ignore[type-arg]
        sent.append(message)

    async def main() -> None:
        http = {"type": "http", "path": VERDICTS_PATH, "method": "POST", "query_string": b""}
        await wrapped(http, None, send)
        await wrapped({"type": "http", "path": "/v1/models", "method": "GET"}, None, send)

    anyio.run(main)
    assert sent[0]["status"] == 405
    assert b"GET only" in sent[1]["body"]
    assert passed == ["/v1/models"]
