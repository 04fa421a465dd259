"""``ModelDouble.lane`` (the server's fast lane) against ``ModelDouble.handle``: two doubles
with the same script and seams, one asked through each, must answer every request with the
same bytes and end with the same journal, played turns, unused turns and unanswered
requests — over the catalog and scripts with tool round trips, matches, a function, every
wire, streamed and not, bad bodies, scenario routes and a script that runs out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from stuntset import scenarios
from stuntset.clock import FakeClock
from stuntset.doubles.model._lane import written_stream
from stuntset.doubles.model.double import ModelDouble
from stuntset.ids import RandomIds, SequentialIds
from stuntset.script import (
    Delay,
    HttpError,
    Match,
    RateLimitCredits,
    RateLimits,
    RateLimitWindow,
    Reasoning,
    Script,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    TurnRequest,
    Usage,
)
from stuntset.wires._reply import Framing, Reply

RICH = Script.of(
    [
        Reasoning("think"),
        Text("Let me look."),
        ToolCall("read_file", {"path": "a.txt"}),
        ToolResult("hello"),
        Text('It says "hello" ✓.'),
        Usage(10, 5),
    ],
    [Text("second")],
)
MATCHED = Script.of(
    Turn(steps=(Text("for gpt-b"),), match=Match(model="gpt-b")),
    Turn(steps=(Text("any"),), times=3),
)


LIMITED = Script(
    turns=(
        Turn(steps=(Text("script's limits"),)),
        Turn(
            steps=(Text("look"), ToolCall("grep", {"q": "x"}), ToolResult("ok"), Text("found")),
            rate_limits=RateLimits(primary=RateLimitWindow(used_percent=99, window_minutes=300)),
        ),
        Turn(steps=(HttpError(status=500),)),
        Turn(steps=(Delay(0.25), Text("late"))),  # its status line waits: no lane template
    ),
    rate_limits=RateLimits(
        primary=RateLimitWindow(used_percent=42.5, window_minutes=300, resets_at=1767240000),
        credits=RateLimitCredits(has_credits=True, balance="12.50"),
    ),
)


def _echo(request: TurnRequest) -> list[Text]:
    return [Text(f"you said {request.input_text}")]


FUNCTION = Script(function=_echo)

HEADERS = [
    (b"host", b"stand-in"),
    (b"content-type", b"application/json"),
    (b"authorization", b"Bearer sk-secret"),
    (b"x-stainless-retry-count", b"1"),
]

#: (path, first request, a request carrying a tool result) per wire
WIRES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "chat": (
        "/openai/v1/chat/completions",
        {"model": "gpt-a", "messages": [{"role": "user", "content": "hi"}]},
        {
            "model": "gpt-a",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": []},
                {"role": "tool", "tool_call_id": "call-1", "content": "hello"},
            ],
        },
    ),
    "responses": (
        "/openai/v1/responses",
        {"model": "gpt-a", "input": "hi"},
        {
            "model": "gpt-a",
            "input": [
                {"role": "user", "content": "hi"},
                {"type": "function_call_output", "call_id": "call-1", "output": "hello"},
            ],
        },
    ),
    "anthropic": (
        "/anthropic/v1/messages",
        {"model": "c", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]},
        {
            "model": "c",
            "max_tokens": 9,
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu-1", "content": "y"}],
                },
            ],
        },
    ),
    "gemini": (
        "/gemini/v1beta/models/g:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        {
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "read_file"}}]},
            ]
        },
    ),
}


def pair(
    script: Script, *, cycle: bool = True, namespace: str = "", **options: Any
) -> tuple[ModelDouble, ModelDouble]:
    def make() -> ModelDouble:
        return ModelDouble(
            script,
            clock=FakeClock(1_800_000_000),
            ids=SequentialIds(namespace),
            cycle=cycle,
            **options,
        )

    return make(), make()


def written(reply: Reply) -> tuple[bytes, bytes] | tuple[bytes, list[bytes]] | None:
    """What the lane would return for ``reply``: its head lines and body, if it is a whole
    reply with its head encoded; its head lines and events if it is a fault-free stream."""
    if reply.encoded is None or reply.status != 200:
        return None
    if reply.streaming:
        stream = written_stream(reply)
        return None if stream is None else stream[1:]
    head = b"".join(b"%s: %s\r\n" % pair for pair in reply.encoded) + b"\r\n"
    assert len(reply.actions) == 1
    body = reply.actions[0]
    assert isinstance(body, bytes)
    return head, body


def ask(lane: ModelDouble, handle: ModelDouble, path: str, body: bytes) -> bool:
    """One request to each; asserts the same answer; True if the lane wrote it itself."""
    raw_path, _, query = path.encode().partition(b"?")
    got = lane.lane(raw_path, query, HEADERS, body)
    expected = handle.handle(
        "POST",
        path.partition("?")[0],
        query.decode(),
        {k.decode(): v.decode() for k, v in HEADERS},
        body,
    )
    if isinstance(got, tuple):
        assert got == written(expected)
        return True
    assert (got.status, got.headers, got.actions, got.streaming, got.wait) == (
        expected.status,
        expected.headers,
        expected.actions,
        expected.streaming,
        expected.wait,
    )
    return False


def same_state(lane: ModelDouble, handle: ModelDouble) -> None:
    assert lane.requests == handle.requests
    assert list(lane.player.played) == list(handle.player.played)
    assert lane.unused() == handle.unused()
    assert lane.unanswered == handle.unanswered
    for (entry, got), (other, expected) in zip(
        lane.journal.exchanges(), handle.journal.exchanges(), strict=True
    ):
        assert entry == other
        assert (got.status, got.actions) == (expected.status, expected.actions)
        assert [h for h in got.headers if h[0] != "content-length"] == expected.headers


def bodies(wire: str) -> list[bytes]:
    _, first, with_result = WIRES[wire]
    streamed = {**first, "stream": True}
    return [
        json.dumps(first).encode(),
        json.dumps(with_result).encode(),
        json.dumps({**first, "model": "gpt-b"} if "model" in first else first).encode(),
        json.dumps(streamed).encode(),
        b"{not json",
        b"[]",
        json.dumps(first).encode() + b" ",
    ]


SCRIPTS: dict[str, Callable[[], Script]] = {
    "rich": lambda: RICH,
    "matched": lambda: MATCHED,
    "function": lambda: FUNCTION,
    "rate-limits": lambda: LIMITED,
    # every catalog scenario a model wire renders (``spawn_missing`` is refused when the
    # double is made: no model wire renders a spawn failure)
    **{
        entry.name: (lambda name=entry.name: scenarios.build(name))
        for entry in scenarios.all()
        if entry.name != "spawn_missing"
    },
}


@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_the_lane_answers_as_handle_does(name: str, wire: str) -> None:
    script = SCRIPTS[name]()
    lane, handle = pair(script)
    path = WIRES[wire][0]
    for _ in range(3):
        for body in bodies(wire):
            ask(lane, handle, path, body)
    same_state(lane, handle)


@pytest.mark.parametrize("wire", list(WIRES))
def test_scenario_routes_and_a_script_that_runs_out_answer_as_handle_does(wire: str) -> None:
    lane, handle = pair(Script.of([Text("once")]), cycle=False)
    path = WIRES[wire][0]
    body = bodies(wire)[0]
    assert ask(lane, handle, path, body)  # the script's one turn, on the lane
    assert not ask(lane, handle, path, body)  # none left: the 500 ``handle`` gives
    for scenario in ("happy_path", "tool_use", "rate_limited", "no_such_scenario"):
        for _ in range(3):
            ask(lane, handle, f"/scenarios/{scenario}{path}?x=1", body)
    same_state(lane, handle)


@pytest.mark.parametrize("wire", list(WIRES))
def test_the_common_request_is_answered_on_the_lane(wire: str) -> None:
    lane, handle = pair(scenarios.build("happy_path"))
    path, first, _ = WIRES[wire]
    for _ in range(3):
        assert ask(lane, handle, path, json.dumps(first).encode())
    same_state(lane, handle)
    assert lane.requests[0].headers["authorization"] == "Bearer <redacted>"
    assert lane.player.played[0].request.headers["x-stainless-retry-count"] == "1"


def test_rate_limits_reach_the_lanes_replies_as_handles() -> None:
    lane, handle = pair(LIMITED)
    path, first, _ = WIRES["responses"]
    assert ask(lane, handle, path, json.dumps(first).encode())
    written = lane.lane(path.encode(), b"", HEADERS, json.dumps(first).encode())
    handle.handle(
        "POST", path, "", {k.decode(): v.decode() for k, v in HEADERS}, json.dumps(first).encode()
    )
    assert isinstance(written, tuple)
    assert b"\r\nx-codex-primary-used-percent: 99" in written[0]
    assert written[0].index(b"content-length") < written[0].index(b"x-codex-primary")
    same_state(lane, handle)


@pytest.mark.parametrize(
    ("namespace", "options"),
    [
        ("bad\x01", {}),  # ids uvicorn would refuse in a header: ``handle``'s reply
        ("", {"framing": Framing(write_size=7)}),  # framing stress: no templates
        ("", {"scenario_routes": False}),
    ],
    ids=["unprintable-ids", "framing", "no-scenario-routes"],
)
def test_doubles_the_lane_cannot_serve_answer_as_handle_does(
    namespace: str, options: dict[str, Any]
) -> None:
    lane, handle = pair(LIMITED, namespace=namespace, **options)
    for wire in ("chat", "responses"):
        path, first, _ = WIRES[wire]
        for prefix in ("", "/scenarios/happy_path"):
            for _ in range(4):
                laned = ask(lane, handle, prefix + path, json.dumps(first).encode())
                if prefix or "scenario_routes" not in options:  # (its own route: the lane's)
                    assert not laned
    same_state(lane, handle)


def test_paths_models_and_odd_bytes_answer_as_handle_does() -> None:
    lane, handle = pair(scenarios.build("happy_path"))
    path, first, _ = WIRES["chat"]
    for n in range(300):  # more paths and models than the lane remembers
        ask(lane, handle, f"/scenarios/nope{n}{path}", json.dumps(first).encode())
        ask(lane, handle, path, json.dumps({**first, "model": f"m{n}"}).encode())
    got = lane.lane(b"/openai/v1/chat/\xff", b"", HEADERS, json.dumps(first).encode())
    expected = handle.handle("POST", "/openai/v1/chat/\xff", "", {}, json.dumps(first).encode())
    assert isinstance(got, Reply)
    assert (
        (got.status, got.actions)
        == (expected.status, expected.actions)
        == (got.status, got.actions)
    )
    assert got.status == 404
    assert len(lane._lanes) <= 256
    assert len(lane._lane_turns) <= 256


def test_random_ids_fill_the_quick_template() -> None:
    double = ModelDouble(scenarios.build("happy_path"), cycle=True, ids=RandomIds())
    path, first, _ = WIRES["chat"]
    answers = [
        double.lane(path.encode(), b"", HEADERS, json.dumps(first).encode()) for _ in range(2)
    ]
    heads = [a[0] for a in answers if isinstance(a, tuple)]
    assert len(heads) == 2
    bodies_ = [json.loads(a[1]) for a in answers if isinstance(a, tuple)]
    assert bodies_[0]["id"] != bodies_[1]["id"]
    assert all(b["id"].startswith("chatcmpl-") and len(b["id"]) == 21 for b in bodies_)
    for head, answer in zip(heads, answers, strict=True):
        assert isinstance(answer, tuple)
        assert head.endswith(b"content-length: %d\r\n\r\n" % len(answer[1]))
        assert head.startswith(b"content-type: application/json\r\nx-request-id: req-")
    assert [e.body for e in double.requests] == [first, first]
