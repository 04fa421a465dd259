"""Scripted rate limits on the Responses wire: the ``x-codex-*`` headers Codex reads its
account's limits from, on every reply of the turn (streamed or not, both responses of a tool
round trip, an error status), in-process and over loopback; other wires send none."""

from __future__ import annotations

import httpx2

import stuntset
from stuntset.doubles.model import ModelDouble, transport
from stuntset.script import (
    RateLimit,
    RateLimitCredits,
    RateLimits,
    RateLimitWindow,
    Script,
    Text,
    ToolCall,
    ToolResult,
    Turn,
)

RESPONSES = {"model": "gpt-5", "input": "hi"}
LIMITS = RateLimits(
    primary=RateLimitWindow(used_percent=42.5, window_minutes=300, resets_at=1767240000),
    secondary=RateLimitWindow(used_percent=7),
    credits=RateLimitCredits(has_credits=True, balance="12.50"),
)
HEADERS = [
    ("x-codex-primary-used-percent", "42.5"),
    ("x-codex-primary-window-minutes", "300"),
    ("x-codex-primary-reset-at", "1767240000"),
    ("x-codex-secondary-used-percent", "7"),
    ("x-codex-credits-has-credits", "true"),
    ("x-codex-credits-unlimited", "false"),
    ("x-codex-credits-balance", "12.50"),
]


def codex_headers(response: httpx2.Response) -> list[tuple[str, str]]:
    return [(k, v) for k, v in response.headers.items() if k.startswith("x-codex-")]


def client(double: ModelDouble) -> httpx2.Client:
    return httpx2.Client(transport=transport(double=double), base_url="http://stand-in")


def test_every_reply_of_a_script_with_rate_limits_carries_the_codex_headers() -> None:
    double = ModelDouble(
        Script.of([Text("one")], [Text("two")], [Text("three")], rate_limits=LIMITS)
    )
    with client(double) as http:
        replies = [
            http.post("/v1/responses", json=RESPONSES),
            http.post("/v1/responses", json={**RESPONSES, "stream": True}),
            http.post("/v1/responses", json=RESPONSES),  # the same reply again: no pile-up
        ]
    assert [codex_headers(r) for r in replies] == [HEADERS] * 3
    assert replies[1].text.count("event: response.completed") == 1


def test_a_turns_own_rate_limits_win_and_a_turn_without_any_sends_none() -> None:
    own = RateLimits(primary=RateLimitWindow(used_percent=99))
    script = Script.of(Turn(steps=(Text("a"),), rate_limits=own), [Text("b")])
    with client(ModelDouble(script)) as http:
        replies = [http.post("/v1/responses", json=RESPONSES) for _ in range(2)]
    assert [codex_headers(r) for r in replies] == [[("x-codex-primary-used-percent", "99")], []]


def test_both_responses_of_a_tool_round_trip_and_an_error_status_carry_them() -> None:
    script = Script.of(
        [ToolCall("bash", {"command": "ls"}, id="call-1"), ToolResult("a.txt"), Text("done")],
        [RateLimit()],
        rate_limits=LIMITS,
    )
    back = [
        {"role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "call-1", "output": "a.txt"},
    ]
    with client(ModelDouble(script)) as http:
        call = http.post("/v1/responses", json=RESPONSES)
        answer = http.post("/v1/responses", json={"model": "gpt-5", "input": back})
        limited = http.post("/v1/responses", json=RESPONSES)
    assert answer.json()["output"][0]["content"][0]["text"] == "done"
    assert limited.status_code == 429
    assert [codex_headers(r) for r in (call, answer, limited)] == [HEADERS] * 3


def test_other_wires_send_no_codex_headers() -> None:
    chat = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    with client(ModelDouble(Script.of([Text("hi")], rate_limits=LIMITS))) as http:
        reply = http.post("/v1/chat/completions", json=chat)
    assert reply.status_code == 200
    assert codex_headers(reply) == []


def test_the_headers_reach_a_client_over_loopback() -> None:
    # the loopback server sends the head a template encoded once; the headers are added to it
    script = Script.of([Text("one")], [Text("two")], rate_limits=LIMITS)
    with stuntset.serve(script) as stand_in, httpx2.Client(base_url=stand_in.url("openai")) as http:
        streamed = http.post("/responses", json={**RESPONSES, "stream": True})
        whole = http.post("/responses", json=RESPONSES)
    assert codex_headers(streamed) == HEADERS
    assert codex_headers(whole) == HEADERS
    assert whole.json()["output"][0]["content"][0]["text"] == "two"
