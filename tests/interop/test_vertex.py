"""Vertex AI through the real, unmodified clients, offline: ``anthropic.AnthropicVertex`` (an
``access_token``, so no Google credentials are looked up) at ``:rawPredict`` /
``:streamRawPredict``, and ``google-genai`` with ``vertexai=True`` (OAuth credentials holding a
token, so nothing is refreshed) at ``…/publishers/google/models/{model}:generateContent``; the
Google front end's errors, and every catalog scenario as each client sees it
(stuntset.wires.vertex)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from google import genai
from google.genai import errors, types
from google.oauth2.credentials import Credentials

from stuntset import scenarios
from stuntset.doubles.model import StandIn
from stuntset.script import AuthExpired, RateLimit, Script, Text, ToolCall, ToolResult

from . import _clients
from ._catalog_content import CONTENT, USAGE
from ._gemini import ask, tls_args
from .test_catalog import MODEL_SCENARIOS, NO_RETRY, expected_error
from .test_gemini import expected_error as gemini_expected_error

CLAUDE = "claude-sonnet-4@20250514"
GEMINI = "gemini-2.5-flash"
OPEN: list[Any] = []

# google-genai leaves a stream open when it raises mid-stream (see test_gemini.py)
pytestmark = pytest.mark.stuntset_leaks(ignore=["streams"])


@pytest.fixture(autouse=True)
def _close_first(stand_in: StandIn) -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def claude(stand_in: StandIn, mode: str = "loopback", **options: Any) -> anthropic.AnthropicVertex:
    options.setdefault("timeout", _clients.DEFAULT_TIMEOUT)
    where: dict[str, Any] = {"region": "us-east5", "project_id": "my-project"}
    if mode == "loopback":
        made = anthropic.AnthropicVertex(
            **where, access_token="ya29.test", base_url=stand_in.url("vertex") + "/v1", **options
        )
    else:
        made = anthropic.AnthropicVertex(
            **where,
            access_token="ya29.test",
            base_url="http://stand-in/vertex/v1",
            http_client=httpx2.Client(transport=stand_in.transport()),
            **options,
        )
    OPEN.append(made)
    return made


def gemini(stand_in: StandIn, mode: str = "loopback", *, timeout_ms: int = 5000) -> genai.Client:
    if mode == "loopback":
        options = types.HttpOptions(
            base_url=stand_in.url("vertex"), timeout=timeout_ms, **tls_args()
        )
    else:
        options = types.HttpOptions(
            base_url="http://stuntset.invalid/vertex/",
            timeout=timeout_ms,
            httpx_client=httpx.Client(transport=stand_in.transport()),
            **tls_args(),
        )
    made = genai.Client(
        vertexai=True,
        project="my-project",
        location="us-central1",
        credentials=Credentials(token="ya29.test"),  # type: ignore[no-untyped-call]
        http_options=options,
    )
    OPEN.append(made)
    return made


ASK: Any = [{"role": "user", "content": "hi"}]


# --- Anthropic on Vertex -------------------------------------------------------------------------


def test_claude_at_raw_predict_and_stream_raw_predict(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("Whole.")], [Text("Streamed.")]))
    client = claude(stand_in)
    whole = client.messages.create(model=CLAUDE, max_tokens=64, messages=ASK)
    with client.messages.stream(model=CLAUDE, max_tokens=64, messages=ASK) as events:
        streamed = events.get_final_text()
    assert (whole.content[0].text, whole.model, streamed) == ("Whole.", CLAUDE, "Streamed.")  # type: ignore[union-attr]
    where = "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models"
    assert [e.path for e in stand_in.requests] == [
        f"{where}/{CLAUDE}:rawPredict",
        f"{where}/{CLAUDE}:streamRawPredict",
    ]
    first = stand_in.requests[0]
    assert first.wire == "vertex-anthropic"
    assert first.body["anthropic_version"]  # the SDK's, in place of the model
    assert "model" not in first.body
    assert first.headers["authorization"].startswith("Bearer ")


def test_claude_tool_round_in_process(stand_in: StandIn) -> None:
    stand_in.play(Script.of([ToolCall("search", {"q": "x"}), ToolResult("ok"), Text("Found.")]))
    client = claude(stand_in, "in-process")
    answer, history = _clients._anthropic(client, list(ASK), stream=True)  # type: ignore[arg-type]
    assert answer.calls == [("search", {"q": "x"})]
    answer, _ = _clients._anthropic(client, history, stream=False)  # type: ignore[arg-type]
    assert answer.text == "Found."


@pytest.mark.stand_in(allow_unused_turns=True)
def test_the_google_front_ends_errors_on_claude(stand_in: StandIn) -> None:
    client = claude(stand_in, max_retries=0)
    stand_in.play(Script.of([AuthExpired()]))
    with pytest.raises(anthropic.AuthenticationError) as denied:
        client.messages.create(model=CLAUDE, max_tokens=64, messages=ASK)
    assert denied.value.body == {
        "error": {
            "code": 401,
            "message": denied.value.body["error"]["message"],  # type: ignore[index]
            "status": "UNAUTHENTICATED",
        }
    }
    assert "invalid authentication credentials" in denied.value.message
    stand_in.play(Script.of([RateLimit()]))
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model=CLAUDE, max_tokens=64, messages=ASK)
    assert limited.value.body["error"]["status"] == "RESOURCE_EXHAUSTED"  # type: ignore[index]
    assert f"base model: {CLAUDE}" in limited.value.message


def test_the_async_claude_client(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("async")]))

    async def main() -> str:
        async with (
            anthropic.AsyncAnthropicVertex(
                region="us-east5",
                project_id="p",
                access_token="ya29.test",
                base_url=stand_in.url("vertex") + "/v1",
            ) as client,
            client.messages.stream(model=CLAUDE, max_tokens=9, messages=ASK) as events,
        ):
            return await events.get_final_text()

    assert asyncio.run(main()) == "async"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_through_anthropic_vertex(stand_in: StandIn, name: str, stream: bool) -> None:
    """Every scenario as through ``Anthropic``: the SDK's retries and exceptions are the same
    (its 401 and 429 bodies are Google's)."""
    stand_in.play(scenarios.build(name))
    options: dict[str, Any] = {"max_retries": 0} if name in NO_RETRY else {}
    if name == "stuck":
        options["timeout"] = httpx2.Timeout(5.0, read=0.2)
    client = claude(stand_in, "in-process", **options)

    def converse() -> list[_clients.Answer]:
        history: list[dict[str, Any]] = [{"role": "user", "content": "Hello there"}]
        answers = []
        for _ in range(8):
            if not stand_in.double.unused():
                break
            answer, history = _clients._anthropic(client, history, stream)  # type: ignore[arg-type]
            answers.append(answer)
        return answers

    if name in CONTENT:
        answers = converse()
        assert [(a.text, a.calls) for a in answers] == CONTENT[name]
        if name in USAGE:
            assert (answers[-1].input_tokens, answers[-1].output_tokens) == USAGE[name]
        return
    with pytest.raises(expected_error(name, "anthropic", stream)):
        converse()


# --- Gemini on Vertex ----------------------------------------------------------------------------


def test_gemini_on_vertex_streamed_and_not(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("Whole.")], [Text("Streamed.")]))
    client = gemini(stand_in)
    whole = client.models.generate_content(model=GEMINI, contents="hi")
    streamed = "".join(
        c.text or "" for c in client.models.generate_content_stream(model=GEMINI, contents="hi")
    )
    assert (whole.text, streamed) == ("Whole.", "Streamed.")
    where = "/v1beta1/projects/my-project/locations/us-central1/publishers/google/models"
    assert [(e.path, e.query, e.wire) for e in stand_in.requests] == [
        (f"{where}/{GEMINI}:generateContent", "", "vertex-gemini"),
        (f"{where}/{GEMINI}:streamGenerateContent", "alt=sse", "vertex-gemini"),
    ]
    assert stand_in.requests[0].headers["authorization"].startswith("Bearer ")


@pytest.mark.stand_in(allow_unused_turns=True)
def test_an_expired_token_is_vertexs_401(stand_in: StandIn) -> None:
    stand_in.play(Script.of([AuthExpired()]))
    with pytest.raises(errors.ClientError) as denied:
        gemini(stand_in).models.generate_content(model=GEMINI, contents="hi")
    assert (denied.value.code, denied.value.status) == (401, "UNAUTHENTICATED")


#: Status faults: google-genai does not retry by default.
GEMINI_ERRORS: dict[str, tuple[type[errors.APIError], int, str]] = {
    "auth_expired_mid_run": (errors.ClientError, 401, "UNAUTHENTICATED"),
    "rate_limited": (errors.ClientError, 429, "RESOURCE_EXHAUSTED"),
    "overloaded": (errors.ServerError, 503, "UNAVAILABLE"),
}


# google-genai's Vertex client measured 0.5-1.7 s a scenario here (each test makes one;
# the Developer API's client is fast): kept out of the fast tier until it is made cheap
@pytest.mark.slow
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_through_genai_on_vertex(stand_in: StandIn, name: str, stream: bool) -> None:
    stand_in.play(scenarios.build(name))
    client = gemini(stand_in, "in-process", timeout_ms=300 if name == "stuck" else 5000)

    def converse() -> list[_clients.Answer]:
        contents = [types.Content(role="user", parts=[types.Part(text="Hello there")])]
        answers = []
        for _ in range(8):
            if not stand_in.double.unused():
                break
            answer, parts = ask(client, contents, stream)
            answers.append(answer)
            contents.append(types.Content(role="model", parts=parts or [types.Part(text="-")]))
            replies = [
                types.Part.from_function_response(name=called, response={"output": "ok"})
                for called, _ in answer.calls
            ] or [types.Part(text="And then?")]
            contents.append(types.Content(role="user", parts=replies))
        return answers

    if name in GEMINI_ERRORS:
        kind, code, status = GEMINI_ERRORS[name]
        with pytest.raises(kind) as raised:
            converse()
        assert (raised.value.code, raised.value.status) == (code, status)
        stand_in.play(Script())  # a retry would find the recovery turns
        return
    if name in CONTENT:
        answers = converse()
        assert [(a.text, a.calls) for a in answers] == CONTENT[name]
        if name in USAGE:
            assert (answers[-1].input_tokens, answers[-1].output_tokens) == USAGE[name]
        return
    if name == "out_of_order":
        assert [a.text for a in converse()] == (["out of order"] if stream else [""])
        return
    with pytest.raises(gemini_expected_error(name, stream)):
        converse()
