"""The in-process transport: httpx2 and httpx, sync and async (asyncio and trio), really
streaming; faults surface as each library's own transport errors; framing stress."""

from __future__ import annotations

import time
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from stuntset._resources import STREAMS
from stuntset.clock import SystemClock
from stuntset.doubles.model import Framing, ModelDouble, transport
from stuntset.errors import UnusedTurns
from stuntset.script import Delay, Exit, Script, Stall, StreamCut, Text, ToolCall, Usage

CHAT = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def sse_data(body: str) -> list[str]:
    return [line[6:] for line in body.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize("library", [httpx2, httpx], ids=["httpx2", "httpx"])
def test_sync_clients_of_both_libraries(library: object) -> None:
    lib: object = library
    client = lib.Client(transport=transport(Script.of([Text("hello big world", interval=0.5)])))  # type: ignore[attr-defined]
    with client.stream("POST", "http://x/v1/chat/completions", json=CHAT) as response:
        assert isinstance(response, lib.Response)  # type: ignore[attr-defined]
        assert response.headers["content-type"].startswith("text/event-stream")
        pieces = list(response.iter_bytes())
    assert len(pieces) == 3  # it streams: each pause between deltas splits the body
    assert sse_data(b"".join(pieces).decode())[-1] == "[DONE]"


@pytest.mark.parametrize("library", [httpx2, httpx], ids=["httpx2", "httpx"])
@pytest.mark.anyio
async def test_async_clients_of_both_libraries(library: object) -> None:
    lib: object = library
    client = lib.AsyncClient(transport=transport(Script.of([Text("hello"), Stall()])))  # type: ignore[attr-defined]
    seen: list[str] = []

    async def read() -> None:
        async with client.stream("POST", "http://x/v1/chat/completions", json=CHAT) as response:
            seen.extend([line async for line in response.aiter_lines()])

    with pytest.raises(lib.ReadTimeout):  # type: ignore[attr-defined]
        await read()
    assert seen == []  # the timeout fired while the lines were being read


@pytest.mark.parametrize(
    ("fault", "error", "message"),
    [
        (Exit(), "RemoteProtocolError", "incomplete chunked read"),
        (StreamCut(), "RemoteProtocolError", "incomplete chunked read"),
        (Stall(), "ReadTimeout", "timed out"),
    ],
)
def test_stream_faults_are_the_librarys_errors(fault: object, error: str, message: str) -> None:
    client = httpx.Client(transport=transport(Script.of([Text("a b"), fault])))  # type: ignore[list-item]
    stream = client.stream("POST", "http://x/v1/messages", json={**CHAT, "max_tokens": 5})
    with pytest.raises(getattr(httpx, error), match=message), stream as response:
        response.read()


def test_whole_response_faults() -> None:
    double = ModelDouble(Script.of([Text("x"), StreamCut()], [Exit()], [Delay(2.0), Text("late")]))
    client = httpx2.Client(transport=transport(double=double), timeout=httpx2.Timeout(5, read=1))
    body = {**CHAT, "stream": False}
    with pytest.raises(httpx2.RemoteProtocolError, match=r"received \d+ bytes, expected \d+"):
        client.post("http://x/v1/chat/completions", json=body)
    with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
        client.post("http://x/v1/chat/completions", json=body)
    with pytest.raises(httpx2.ReadTimeout):
        client.post("http://x/v1/chat/completions", json=body)


@pytest.mark.parametrize(
    "framing",
    [
        Framing(line_ending="\r\n"),
        Framing(line_ending="\r"),
        Framing(write_size=1),
        Framing(keepalive=True, write_size=7, line_ending="\r\n"),
        Framing(multiline_data=True),
        Framing(multiline_data=True, line_ending="\r", write_size=3),
    ],
    ids=[
        "crlf",
        "cr",
        "one-byte-writes",
        "keepalive-crlf-7-bytes",
        "multiline",
        "multiline-cr-3-bytes",
    ],
)
def test_framing_stress_leaves_the_sdk_unmoved(framing: Framing) -> None:
    turn = [Text("split me finely", chunks=5), ToolCall("f", {"k": "v"}), Usage(4, 3)]
    double = ModelDouble(Script.of(turn, turn), framing=framing)
    client = openai.OpenAI(
        http_client=httpx2.Client(transport=transport(double=double)), api_key="k"
    )
    with client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "x"}]
    ) as s:
        message = s.get_final_completion().choices[0].message
    assert message.content == "split me finely"
    assert message.tool_calls is not None
    assert message.tool_calls[0].function.arguments == '{"k":"v"}'
    with client.responses.stream(model="m", input="x") as events:
        assert events.get_final_response().output_text == "split me finely"


def test_framing_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="line_ending"):
        Framing(line_ending="\n\n")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="write_size"):
        Framing(write_size=0)


def test_a_closed_double_ends_a_stall_without_a_timeout() -> None:
    double = ModelDouble(Script.of([Stall()]))
    double.close()
    client = httpx2.Client(transport=transport(double=double), timeout=None)
    with pytest.raises(httpx2.RemoteProtocolError):
        client.post("http://x/v1/chat/completions", json=CHAT)


def test_unknown_events_reach_raw_iterators_and_the_helpers_skip_them() -> None:
    turn = [Text("hello there"), ToolCall("f", {"a": 1})]
    double = ModelDouble(Script.of(*[turn] * 6), framing=Framing(unknown_events=True))
    http = httpx2.Client(transport=transport(double=double))
    chat = openai.OpenAI(http_client=http, api_key="k")
    claude = anthropic.Anthropic(http_client=http, api_key="k")
    messages: Any = [{"role": "user", "content": "x"}]
    raw_chat = [
        c.object for c in chat.chat.completions.create(model="m", messages=messages, stream=True)
    ]
    assert raw_chat[1] == "stuntset.unknown"
    with chat.chat.completions.stream(model="m", messages=messages) as events:
        assert events.get_final_completion().choices[0].message.content == "hello there"
    raw_responses = [e.type for e in chat.responses.create(model="m", input="x", stream=True)]
    assert raw_responses[1] == "response.stuntset_unknown"
    with chat.responses.stream(model="m", input="x") as response_events:
        assert response_events.get_final_response().output_text == "hello there"
    raw_messages = [
        e.type
        for e in claude.messages.create(model="m", max_tokens=5, messages=messages, stream=True)
    ]
    assert raw_messages[1] == "stuntset_unknown"
    with claude.messages.stream(model="m", max_tokens=5, messages=messages) as message_events:
        assert [b.type for b in message_events.get_final_message().content] == ["text", "tool_use"]


# --- real time, a closed double, what the transport object exposes -----------------------------


def test_under_the_real_clock_a_closed_double_cuts_a_pause_short() -> None:
    double = ModelDouble(Script.of([Text("a"), Delay(30.0), Text("b")]), clock=SystemClock())
    double.close()  # the pause would take 30 s of real time: the closed double ends it at once
    client = httpx2.Client(transport=transport(double=double))
    with (
        pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"),
        client.stream("POST", "http://x/v1/chat/completions", json=CHAT) as response,
    ):
        response.read()


@pytest.mark.anyio
async def test_under_the_real_clock_an_async_read_of_a_closed_double_ends_at_once() -> None:
    double = ModelDouble(Script.of([Text("a"), Delay(30.0), Text("b")]), clock=SystemClock())
    double.close()
    client = httpx2.AsyncClient(transport=transport(double=double))
    with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
        async with client.stream("POST", "http://x/v1/chat/completions", json=CHAT) as response:
            await response.aread()


@pytest.mark.anyio
async def test_under_the_real_clock_pauses_take_real_time_and_the_read_timeout_cuts_one() -> None:
    # tests real time: two 0.03 s pauses, then a 30 s pause the client's 0.05 s read timeout cuts
    script = Script.of([Text("one two three", interval=0.03), Delay(30.0), Text("late")])
    double = ModelDouble(script, clock=SystemClock())
    client = httpx2.AsyncClient(
        transport=transport(double=double), timeout=httpx2.Timeout(5, read=0.05)
    )
    pieces: list[bytes] = []

    async def read() -> None:
        async with client.stream("POST", "http://x/v1/chat/completions", json=CHAT) as response:
            async for piece in response.aiter_bytes():
                pieces.append(piece)

    started = time.monotonic()
    with pytest.raises(httpx2.ReadTimeout):
        await read()
    assert time.monotonic() - started >= 0.11  # 0.03 + 0.03 + the 0.05 s timeout
    assert b"three" in b"".join(pieces)
    assert b"late" not in b"".join(pieces)


@pytest.mark.anyio
async def test_a_read_cancelled_mid_stall_ends_the_stream_for_the_leak_check() -> None:
    # A stall with no read timeout waits for the double to close, in real time whatever the
    # clock; the caller's own deadline (0.05 s of real time) cancels the read instead.
    import anyio

    double = ModelDouble(Script.of([Text("a"), Stall()]))
    client = httpx2.AsyncClient(transport=transport(double=double), timeout=None)
    mark = STREAMS.watch()
    try:
        async with client.stream("POST", "http://x/v1/chat/completions", json=CHAT) as response:
            assert STREAMS.since(mark) != []  # open while it is being read
            with anyio.move_on_after(0.05) as deadline:
                await response.aread()
        assert deadline.cancelled_caught
        assert STREAMS.since(mark) == []
    finally:
        STREAMS.unwatch(mark)
        double.close()


def test_headers_that_are_not_plain_ascii_or_are_repeated_reach_the_journal() -> None:
    double = ModelDouble(Script.of([Text("a")], [Text("b")]))
    client = httpx.Client(transport=transport(double=double))
    client.post(
        "http://x/v1/chat/completions",
        json={**CHAT, "stream": False},
        headers={"x-note": "café".encode()},
    )
    client.post(
        "http://x/v1/chat/completions",
        json={**CHAT, "stream": False},
        headers=[("x-tag", "one"), ("x-tag", "two")],
    )
    first, second = double.requests
    assert first.headers["x-note"] == "café"
    assert second.headers["x-tag"] == "one, two"


def test_the_transport_plays_requests_and_verifies_through_its_double() -> None:
    double = ModelDouble(Script.of([Text("unused")]))
    shared = transport(Script.of([Text("first")], [Text("second")]), double=double)
    assert shared.double is double  # the script given replaced the double's
    with httpx2.Client(transport=shared) as client:
        body = {**CHAT, "stream": False}
        reply = client.post("http://x/v1/chat/completions", json=body).json()
        assert reply["choices"][0]["message"]["content"] == "first"
        assert [entry.path for entry in shared.requests] == ["/v1/chat/completions"]
        with pytest.raises(UnusedTurns):
            shared.verify()
        shared.verify(allow_unused_turns=True)
        shared.play(Script.of([Text("replayed")]))
        reply = client.post("http://x/v1/chat/completions", json=body).json()
    assert reply["choices"][0]["message"]["content"] == "replayed"
    shared.verify()


def test_serve_and_transport_take_what_the_stand_in_marker_takes(tmp_path: Any) -> None:
    """A ``Script``, a scenario name (its parameters as keywords) or a script file path."""
    from stuntset import scenarios, serve
    from stuntset.errors import UsageError
    from stuntset.script import dumps_script

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "script.json"
    path.write_text(dumps_script(Script.of([Text("from a file")])))
    expected = {
        "happy_path": "Hello! How can I help you today?",
        str(path): "from a file",
    }
    for spec, text in expected.items():
        with httpx2.Client(transport=transport(spec)) as client:
            reply = client.post("http://x/v1/chat/completions", json=body).json()
        assert reply["choices"][0]["message"]["content"] == text
    with httpx2.Client(transport=transport(path)) as client:
        assert client.post("http://x/v1/chat/completions", json=body).status_code == 200
    with httpx2.Client(transport=transport("happy_path", text="tuned")) as client:
        reply = client.post("http://x/v1/chat/completions", json=body).json()
    assert reply["choices"][0]["message"]["content"] == "tuned"
    with serve("happy_path", text="served") as stand_in:
        served = httpx2.post(stand_in.url("openai") + "/chat/completions", json=body).json()
    assert served["choices"][0]["message"]["content"] == "served"
    with pytest.raises(UsageError, match=r"^transport\(\): scenario parameters \['text'\]"):
        transport(text="no scenario")
    with pytest.raises(UsageError, match=r"^serve\(\): scenario parameters \['x'\] given with"):
        serve(scenarios.build("happy_path"), x=1)
    with pytest.raises(UsageError, match=r"^transport\(\): expected a Script, a scenario name"):
        transport(42)  # type: ignore[arg-type]
