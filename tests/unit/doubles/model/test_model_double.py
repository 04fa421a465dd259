"""The model double's routing, bad-input handling, journal, turn selection and verification,
seen through plain HTTP (httpx2 over the in-process transport)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from stuntset import scenarios
from stuntset.doubles.model import ModelDouble, transport
from stuntset.doubles.model.double import route
from stuntset.errors import ScriptError, ScriptExhausted, UnusedTurns
from stuntset.script import (
    ApprovalRequest,
    Match,
    Script,
    SpawnFailure,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    TurnRequest,
)

CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC = {
    "model": "claude-test",
    "max_tokens": 10,
    "messages": [{"role": "user", "content": "hi"}],
}


def client(double: ModelDouble) -> httpx2.Client:
    return httpx2.Client(transport=transport(double=double), base_url="http://stand-in")


def chat_text(response: httpx2.Response) -> str:
    content = response.json()["choices"][0]["message"]["content"]
    assert isinstance(content, str)
    return content


def test_route_splits_scenario_provider_and_path() -> None:
    assert route("/scenarios/rate_limited/openai/v1/chat/completions").scenario == "rate_limited"
    assert route("/anthropic/v1/messages").provider == "anthropic"
    assert route("/anthropic/v1/messages").path == "/v1/messages"
    assert route("/v1/responses/").path == "/v1/responses"


def test_a_step_no_model_wire_can_render_fails_at_load() -> None:
    with pytest.raises(ScriptError, match=r"turn 0, step 0, wire 'openai-chat'.*spawn_failure"):
        ModelDouble(Script.of([SpawnFailure()]))


def test_client_side_steps_are_skipped() -> None:
    double = ModelDouble(Script.of([Text("run it"), ToolCall("bash", {}), ApprovalRequest()]))
    body = client(double).post("/v1/chat/completions", json=CHAT).json()
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "bash"


@pytest.mark.parametrize(
    ("path", "payload", "shape"),
    [
        ("/v1/chat/completions", b"{not json", "openai"),
        ("/v1/chat/completions", b'{"messages": []}', "openai"),
        ("/v1/responses", b'{"input": "hi"}', "openai"),
        ("/v1/messages", b'{"model": "c", "messages": []}', "anthropic"),
        ("/anthropic/v1/messages", b"[1, 2]", "anthropic"),
        ("/v1/chat/completions", b'{"messages": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", "openai"),
        ("/v1/messages", b'{"max_tokens": ' + b"9" * 5_000 + b"}", "anthropic"),
        ("/v1/responses", b'{"input": "hi", "seed": 99999999999999999999999}', "openai"),
    ],
    ids=[
        "not-json",
        "no-model",
        "no-model-responses",
        "empty",
        "array",
        "deep",
        "huge-int",
        "bigint",
    ],
)
def test_bad_requests_get_the_providers_own_400(path: str, payload: bytes, shape: str) -> None:
    double = ModelDouble(scenarios.build("happy_path"))
    response = client(double).post(path, content=payload)
    assert response.status_code == 400
    body = response.json()
    if shape == "openai":
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"]
    else:
        assert body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error"
    assert double.player.unused()  # a refused request consumes no turn
    assert double.requests[0].status == 400


def test_unknown_routes_are_404_in_provider_shape() -> None:
    double = ModelDouble()
    response = client(double).post("/v1/embeddings", json={})
    assert response.status_code == 404
    assert "no route for POST /v1/embeddings" in response.json()["error"]["message"]
    anthropic_404 = client(double).get("/anthropic/v1/complete")
    assert anthropic_404.json()["type"] == "error"


def test_models_are_listed_in_each_providers_shape() -> None:
    double = ModelDouble(Script.of(Turn(steps=(Text("x"),), match=Match(model="gpt-5"))))
    listing = client(double).get("/v1/models").json()
    assert listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == ["gpt-5"]
    anthropic = client(double).get("/anthropic/v1/models").json()
    assert anthropic["has_more"] is False
    double.play(Script())


def test_journal_records_every_request_with_secrets_redacted() -> None:
    double = ModelDouble(Script.of([Text("one")], [Text("two")]))
    http = client(double)
    http.post("/v1/chat/completions", json=CHAT, headers={"authorization": "Bearer sk-secret"})
    http.post("/anthropic/v1/messages", json=ANTHROPIC, headers={"x-api-key": "sk-ant-secret"})
    first, second = double.requests
    assert first.headers["authorization"] == "Bearer <redacted>"
    assert second.headers["x-api-key"] == "<redacted>"
    assert "sk-" not in repr(double.requests)
    assert first.json == CHAT
    assert (first.wire, first.turn, first.status) == ("openai-chat", 0, 200)
    assert (second.wire, second.path, second.index) == ("anthropic-messages", "/v1/messages", 1)


def test_match_selects_turns_by_request_content() -> None:
    script = Script.of(
        Turn(steps=(Text("about tools"),), match=Match(tool_result=True)),
        Turn(steps=(Text("for the big model"),), match=Match(model="gpt-big")),
        Turn(steps=(Text("weather"),), match=Match(contains="weather")),
        Turn(
            steps=(Text("pirate"),),
            predicate=lambda r: "pirate" in str(r.body.get("messages", [{}])[0].get("content")),
        ),
    )
    double = ModelDouble(script)
    http = client(double)

    def ask(**changes: Any) -> str:
        return chat_text(http.post("/v1/chat/completions", json={**CHAT, **changes}))

    assert (
        ask(
            messages=[
                {"role": "system", "content": "talk like a pirate"},
                {"role": "user", "content": "hi"},
            ]
        )
        == "pirate"
    )
    assert ask(messages=[{"role": "user", "content": "what is the weather"}]) == "weather"
    assert ask(model="gpt-big") == "for the big model"
    tool_round = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    assert ask(messages=tool_round) == "about tools"
    double.verify()


def test_a_tool_round_trip_is_two_responses_of_one_turn() -> None:
    double = ModelDouble(scenarios.build("tool_use"))
    http = client(double)
    first = http.post("/v1/chat/completions", json=CHAT).json()
    call = first["choices"][0]["message"]["tool_calls"][0]
    assert first["choices"][0]["finish_reason"] == "tool_calls"
    with pytest.raises(UnusedTurns, match="did not send the tool result back"):
        double.verify()
    messages = [
        *CHAT["messages"],
        first["choices"][0]["message"],
        {"role": "tool", "tool_call_id": call["id"], "content": "x"},
    ]
    second = http.post("/v1/chat/completions", json={**CHAT, "messages": messages})
    assert chat_text(second) == "The file says: hello from a.txt"
    assert [r.turn for r in double.requests] == [0, 0]
    double.verify()


def test_an_unanswerable_request_is_a_500_the_sdk_does_not_retry_and_fails_verify() -> None:
    double = ModelDouble(Script.of([Text("only one")]))
    http = client(double)
    http.post("/v1/chat/completions", json=CHAT)
    response = http.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 500
    assert response.headers["x-should-retry"] == "false"
    with pytest.raises(
        ScriptExhausted, match=r"no turn for request #2 \(input 'hi', model 'gpt-test'"
    ):
        double.verify()


def test_unused_turns_fail_verify_unless_allowed_by_name() -> None:
    script = Script.of(Turn(steps=(Text("a"),)), Turn(steps=(Text("b"),), name="spare"))
    double = ModelDouble(script)
    client(double).post("/v1/chat/completions", json=CHAT)
    with pytest.raises(UnusedTurns, match=r"(?s)turn 1: 'spare' \[text\].*allow_unused_turns"):
        double.verify()
    double.verify(allow_unused_turns=["spare"])
    double.verify(allow_unused_turns=True)


def test_scenario_routes_play_each_scenario_on_its_own_over_and_over() -> None:
    double = ModelDouble(Script())
    http = client(double)
    for _ in range(2):
        limited = http.post("/scenarios/rate_limited/openai/v1/chat/completions", json=CHAT)
        assert limited.status_code == 429
        assert limited.headers["retry-after-ms"] == "1"
        assert (
            http.post("/scenarios/rate_limited/openai/v1/chat/completions", json=CHAT).status_code
            == 200
        )
    unknown = http.post("/scenarios/nope/openai/v1/chat/completions", json=CHAT)
    assert unknown.status_code == 404
    assert "no scenario named 'nope'" in unknown.json()["error"]["message"]
    double.verify()


def test_the_function_flavour_answers_from_the_request() -> None:
    def echo(request: TurnRequest) -> list[Text]:
        return [Text(f"you said {request.input_text!r} to {request.model} on {request.wire}")]

    double = ModelDouble(Script.from_function(echo))
    http = client(double)
    assert (
        chat_text(http.post("/v1/chat/completions", json=CHAT))
        == "you said 'hi' to gpt-test on openai-chat"
    )
    message = http.post("/v1/messages", json=ANTHROPIC).json()
    assert message["content"][0]["text"] == "you said 'hi' to claude-test on anthropic-messages"


def test_ids_and_timestamps_come_from_the_seams(stuntset_clock: Any) -> None:
    double = ModelDouble(Script.of([Text("a"), ToolCall("f"), ToolResult("r"), Text("b")]))
    body = client(double).post("/v1/chat/completions", json=CHAT).json()
    assert body["id"] == "chatcmpl-1"
    assert body["created"] == int(stuntset_clock.now())
    assert body["choices"][0]["message"]["tool_calls"][0]["id"] == "call-1"
    double.verify(allow_unused_turns=True)


def test_a_cycled_script_answers_an_unmatched_request_with_the_explained_500() -> None:
    script = Script.of(Turn(steps=(Text("weather"),), match=Match(contains="weather")))
    double = ModelDouble(script, cycle=True)
    http = client(double)
    assert chat_text(http.post("/v1/chat/completions", json=weather())) == "weather"
    assert chat_text(http.post("/v1/chat/completions", json=weather())) == "weather"  # cycled
    response = http.post("/v1/chat/completions", json=CHAT)  # no turn matches, even anew
    assert response.status_code == 500
    assert response.headers["x-should-retry"] == "false"
    assert "no remaining turn matches it" in response.json()["error"]["message"]
    with pytest.raises(ScriptExhausted, match="1 request"):
        double.verify()


def weather() -> dict[str, Any]:
    return {**CHAT, "messages": [{"role": "user", "content": "weather?"}]}


def test_the_journal_path_is_the_api_path_whatever_the_prefix() -> None:
    double = ModelDouble(Script.of(Turn(steps=(Text("x"),), times=4)))
    http = client(double)
    http.post("/v1/chat/completions", json=CHAT)
    http.post("/openai/v1/chat/completions", json=CHAT)
    http.post("/anthropic/v1/messages", json=ANTHROPIC)
    http.post("/scenarios/happy_path/openai/v1/chat/completions", json=CHAT)
    paths = [(r.path, r.scenario) for r in double.requests]
    assert paths == [
        ("/v1/chat/completions", None),
        ("/v1/chat/completions", None),
        ("/v1/messages", None),
        ("/v1/chat/completions", "happy_path"),
    ]


def test_a_turn_used_fewer_times_than_scripted_is_reported_as_partly_used() -> None:
    double = ModelDouble(Script.of(Turn(steps=(Text("x"),), times=2, name="twice")))
    client(double).post("/v1/chat/completions", json=CHAT)
    with pytest.raises(UnusedTurns) as raised:
        double.verify()
    message = str(raised.value)
    assert "turn 0: 'twice' [text] partly used: 1 of 2 time(s)" in message
    assert "never requested (or not as often as scripted)" in message


def test_keep_bounds_the_journal_the_played_turns_and_the_unanswered() -> None:
    double = ModelDouble(Script.of([Text("only")]), keep=3)
    http = client(double)
    for _ in range(10):
        http.post("/v1/chat/completions", json=CHAT)
    assert [r.index for r in double.requests] == [7, 8, 9]
    assert double.journal.count == 10
    assert len(double.player.played) == 1
    assert len(double.unanswered) == 3
    with pytest.raises(ScriptExhausted, match=r"(?s)^9 request\(s\).*and 6 earlier ones"):
        double.verify()
    scenario = ModelDouble(Script(), keep=2)
    for _ in range(5):
        client(scenario).post("/scenarios/happy_path/openai/v1/chat/completions", json=CHAT)
    assert len(scenario._scenario("happy_path").player.played) <= 2


def test_a_double_for_a_test_keeps_every_request() -> None:
    double = ModelDouble(Script.of(Turn(steps=(Text("x"),), times=50)))
    for _ in range(50):
        client(double).post("/v1/chat/completions", json=CHAT)
    assert len(double.requests) == len(double.player.played) == 50
    with pytest.raises(Exception, match="keep must be 0 or more"):
        ModelDouble(keep=-1)
