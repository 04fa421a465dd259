"""Cases 1–4: the model doubles through the official SDKs, against their anchors."""

from __future__ import annotations

import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from bench.runner import Case, Result, Variant, ratio_line
from stuntset.script import Script, Text, Turn, Usage

#: A 20-delta answer, as the budgets in DESIGN.md are stated for.
TEXT = "".join(f"w{i} " for i in range(20)).rstrip()
MESSAGES = [{"role": "user", "content": "hi"}]


def _script() -> Script:
    return Script.of(Turn(steps=(Text(TEXT, chunks=20), Usage(10, 20)), times=10**9), name="bench")


def _within(limit: float, subject: str, floor: str, *, faster_than: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        ratios = ratio_line(results, subject)
        ok = ratios[floor] <= limit and all(ratios[a] < 1 for a in faster_than if a in ratios)
        return ok, f"{ratios[floor]:.2f}× {floor}"

    return verdict


def _canned_chat_body() -> bytes:
    """The exact bytes the double streams for the bench turn (so every anchor serves the same)."""
    import httpx2

    import stuntset

    with httpx2.Client(transport=stuntset.transport(_script()), base_url="http://stand-in") as http:
        response = http.post(
            "/v1/chat/completions",
            json={"model": "gpt-bench", "messages": MESSAGES, "stream": True},
        )
        return response.content


def _canned_anthropic_body() -> bytes:
    import httpx2

    import stuntset

    with httpx2.Client(transport=stuntset.transport(_script()), base_url="http://stand-in") as http:
        response = http.post(
            "/v1/messages",
            json={"model": "claude-bench", "max_tokens": 100, "messages": MESSAGES, "stream": True},
            headers={"anthropic-version": "2023-06-01"},
        )
        return response.content


def _subject_and_floor(sdk: Any, base_url: str, body: bytes) -> tuple[Any, Any]:
    """The same SDK client twice: over the stuntset transport, and over a bare
    ``httpx2.MockTransport`` returning ``body`` (the floor)."""
    import httpx2

    import stuntset

    sse = {"content-type": "text/event-stream"}
    subject = sdk(
        api_key="test",
        base_url=base_url,
        http_client=httpx2.Client(transport=stuntset.transport(_script())),
    )
    mock = httpx2.MockTransport(lambda request: httpx2.Response(200, content=body, headers=sse))
    floor = sdk(api_key="test", base_url=base_url, http_client=httpx2.Client(transport=mock))
    return subject, floor


def _consume_chat(client: Any) -> None:
    stream = client.chat.completions.create(model="gpt-bench", messages=MESSAGES, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == TEXT, text


def openai_inprocess() -> Case:
    import httpx
    import openai
    import respx
    import vcr

    body = _canned_chat_body()
    sse = {"content-type": "text/event-stream"}
    subject, floor = _subject_and_floor(openai.OpenAI, "http://stand-in/v1", body)
    router = respx.mock(base_url="http://stand-in/v1", assert_all_called=False)
    router.post("/chat/completions").respond(200, content=body, headers=sse)
    respx_client = openai.OpenAI(
        api_key="test", base_url="http://stand-in/v1", http_client=httpx.Client()
    )

    cassette_dir = Path(tempfile.mkdtemp(prefix="stuntset-bench-"))
    vcr_client = openai.OpenAI(
        api_key="test", base_url="http://127.0.0.1:1/v1", http_client=httpx.Client()
    )
    recorder = vcr.VCR(cassette_library_dir=str(cassette_dir), record_mode="once")
    _record_cassette(recorder, body, vcr_client)
    replayer = vcr.VCR(cassette_library_dir=str(cassette_dir), record_mode="none")
    replaying: list[Any] = []

    def start_replay() -> None:
        replaying.append(replayer.use_cassette("chat.yaml", allow_playback_repeats=True))
        replaying[-1].__enter__()

    def stop_replay() -> None:
        replaying.pop().__exit__(None, None, None)

    return Case(
        name="openai_inprocess",
        title="openai SDK, streamed 20-chunk chat turn, in-process",
        variants=[
            Variant("stuntset transport", lambda: _consume_chat(subject)),
            Variant("MockTransport floor", lambda: _consume_chat(floor)),
            Variant(
                "respx",
                lambda: _consume_chat(respx_client),
                setup=router.start,
                teardown=router.stop,
            ),
            Variant(
                "vcrpy replay",
                lambda: _consume_chat(vcr_client),
                setup=start_replay,
                teardown=stop_replay,
            ),
        ],
        budget="≤ 1.10× floor; faster than respx and vcrpy",
        verdict=_within(
            1.10, "stuntset transport", "MockTransport floor", faster_than=("respx", "vcrpy replay")
        ),
    )


def _record_cassette(recorder: Any, body: bytes, client: Any) -> None:
    """Record the canned stream once from a throw-away loopback server."""
    server, url = _canned_server(body, "/v1/chat/completions")
    try:
        client.base_url = url + "/v1"
        with recorder.use_cassette("chat.yaml"):
            _consume_chat(client)
    finally:
        server.should_exit = True


def _canned_server(body: bytes, path: str) -> tuple[Any, str]:
    """A minimal uvicorn (httptools) + raw ASGI app streaming a canned body, on a thread."""
    import uvicorn

    chunks = [part + b"\n\n" for part in body.split(b"\n\n") if part]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http="httptools", log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.005)
    host, port = sock.getsockname()
    return server, f"http://{host}:{port}"


def openai_loopback() -> Case:
    import openai

    import stuntset

    body = _canned_chat_body()
    stand_in = stuntset.serve(_script())
    served = stand_in.__enter__()
    anchor, anchor_url = _canned_server(body, "/v1/chat/completions")
    subject = openai.OpenAI(api_key="test", base_url=served.url("openai"))
    floor = openai.OpenAI(api_key="test", base_url=anchor_url + "/v1")

    def stop() -> None:
        anchor.should_exit = True
        stand_in.__exit__(None, None, None)

    return Case(
        name="openai_loopback",
        title="openai SDK, streamed 20-chunk chat turn, over loopback (servers on a thread)",
        variants=[
            Variant("stuntset serve", lambda: _consume_chat(subject)),
            Variant("uvicorn+raw ASGI canned", lambda: _consume_chat(floor)),
        ],
        close=stop,
        budget="≤ 1.05× minimal uvicorn + raw ASGI",
        verdict=_within(1.05, "stuntset serve", "uvicorn+raw ASGI canned"),
        notes=[
            "both servers run on a thread of the bench process, so both share the GIL with the client"
        ],
    )


def _anthropic_clients() -> tuple[Any, Any]:
    import anthropic

    return _subject_and_floor(anthropic.Anthropic, "http://stand-in", _canned_anthropic_body())


def anthropic_create() -> Case:
    subject, floor = _anthropic_clients()

    def create(client: Any) -> None:
        stream = client.messages.create(
            model="claude-bench", max_tokens=100, messages=MESSAGES, stream=True
        )
        text = "".join(
            getattr(e.delta, "text", "") for e in stream if e.type == "content_block_delta"
        )
        assert text == TEXT, text

    return Case(
        name="anthropic_create",
        title="anthropic SDK, messages.create(stream=True), 20-chunk turn, in-process",
        variants=[
            Variant("stuntset transport", lambda: create(subject)),
            Variant("MockTransport floor", lambda: create(floor)),
        ],
        budget="≤ 1.10× its MockTransport floor",
        verdict=_within(1.10, "stuntset transport", "MockTransport floor"),
    )


def anthropic_stream() -> Case:
    subject, floor = _anthropic_clients()

    def helper(client: Any) -> None:
        with client.messages.stream(
            model="claude-bench", max_tokens=100, messages=MESSAGES
        ) as stream:
            message = stream.get_final_message()
        assert message.content[0].text == TEXT

    return Case(
        name="anthropic_stream",
        title="anthropic SDK, messages.stream() + get_final_message(), 20-chunk turn, in-process",
        variants=[
            Variant("stuntset transport", lambda: helper(subject)),
            Variant("MockTransport floor", lambda: helper(floor)),
        ],
        budget="≤ 1.10× its MockTransport floor",
        verdict=_within(1.10, "stuntset transport", "MockTransport floor"),
    )


def pydantic_ai_agent() -> Case:
    import httpx2
    import openai
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    import stuntset

    client = openai.AsyncOpenAI(
        api_key="test",
        base_url="http://stand-in/v1",
        http_client=httpx2.AsyncClient(transport=stuntset.transport(_script())),
    )
    double_agent = Agent(
        OpenAIChatModel("gpt-bench", provider=OpenAIProvider(openai_client=client))
    )

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(TEXT)])

    function_agent = Agent(FunctionModel(answer))

    def run(agent: Any) -> None:
        result = agent.run_sync("hi")
        assert result.output == TEXT, result.output

    return Case(
        name="pydantic_ai",
        title="pydantic-ai Agent.run_sync, one text turn",
        variants=[
            Variant("stuntset double (HTTP path)", lambda: run(double_agent)),
            Variant("FunctionModel", lambda: run(function_agent)),
        ],
        budget="reported (the double crosses the whole HTTP path)",
        calls_per_round=10,
    )
