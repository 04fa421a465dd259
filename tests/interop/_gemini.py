"""Drive the real, unmodified ``google-genai`` SDK through a conversation with the model
double: send, answer the function calls the model asked for, send the results back."""

from __future__ import annotations

import json
from typing import Any, Literal

import httpx
from google import genai
from google.genai import types

from _tls import shared_tls
from stuntset.doubles.model import StandIn

from ._clients import Answer

Mode = Literal["in-process", "loopback"]
MODEL = "gemini-2.5-flash"

#: Clients made for the current test (closed by the autouse fixture of conftest.py).
OPEN: list[genai.Client] = []


def no_wait_retries(attempts: int) -> types.HttpRetryOptions:
    """The SDK's retry policy with its waits at zero (tenacity sleeps in real time)."""
    return types.HttpRetryOptions(attempts=attempts, initial_delay=0, max_delay=0, jitter=0)


def tls_args() -> dict[str, Any]:
    """``HttpOptions`` fields that hand ``shared_tls()`` (tests/_tls.py) to each of the SDK's
    clients (``verify`` for httpx, ``ssl`` for aiohttp; each client drops the other's key): a
    ``genai.Client`` otherwise builds three TLS contexts."""
    context = shared_tls()
    return {
        "client_args": {"verify": context},
        "async_client_args": {"verify": context, "ssl": context},
    }


def gemini_client(
    stand_in: StandIn,
    mode: Mode,
    *,
    timeout_ms: int = 5000,
    retry: types.HttpRetryOptions | None = None,
) -> genai.Client:
    """A ``genai.Client`` on the Gemini Developer API wire, pointed at ``stand_in``: over
    loopback through ``base_url``, in process through an ``httpx`` client on its transport."""
    if mode == "loopback":
        options = types.HttpOptions(
            base_url=stand_in.url("gemini"), timeout=timeout_ms, retry_options=retry, **tls_args()
        )
    else:
        options = types.HttpOptions(
            base_url="http://stuntset.invalid/",
            timeout=timeout_ms,
            retry_options=retry,
            httpx_client=httpx.Client(transport=stand_in.transport()),
            httpx_async_client=httpx.AsyncClient(transport=stand_in.transport()),
            **tls_args(),
        )
    client = genai.Client(api_key="AIza-test-key", http_options=options)
    OPEN.append(client)
    return client


def close_gemini_clients() -> None:
    while OPEN:
        OPEN.pop().close()


def answer_of(
    parts: list[types.Part], usage: types.GenerateContentResponseUsageMetadata | None
) -> Answer:
    text = "".join(p.text for p in parts if p.text and not p.thought)
    calls = [
        (p.function_call.name or "", dict(p.function_call.args or {}))
        for p in parts
        if p.function_call
    ]
    return Answer(
        text,
        calls,
        (usage.prompt_token_count or 0) if usage else 0,
        (usage.candidates_token_count or 0) if usage else 0,
    )


def ask(
    client: genai.Client, contents: list[types.Content], stream: bool
) -> tuple[Answer, list[types.Part]]:
    """One model response: the answer and the parts to put back in the history."""
    if not stream:
        response = client.models.generate_content(model=MODEL, contents=contents)  # type: ignore[arg-type]
        candidate = response.candidates[0] if response.candidates else None
        parts = list(candidate.content.parts or []) if candidate and candidate.content else []
        return answer_of(parts, response.usage_metadata), parts
    parts = []
    usage = None
    for chunk in client.models.generate_content_stream(model=MODEL, contents=contents):  # type: ignore[arg-type]
        for candidate in chunk.candidates or []:
            if candidate.content:
                parts.extend(p for p in candidate.content.parts or [] if p.text or p.function_call)
        usage = chunk.usage_metadata or usage
    return answer_of(parts, usage), parts


def converse(
    stand_in: StandIn, *, stream: bool, mode: Mode = "in-process", **options: Any
) -> list[Answer]:
    """Play a whole conversation (function-call rounds and follow-up prompts) until the script
    is used up; the SDK's exception propagates as raised."""
    client = gemini_client(stand_in, mode, **options)
    contents = [types.Content(role="user", parts=[types.Part(text="Hello there")])]
    answers: list[Answer] = []
    try:
        for _ in range(8):
            if not stand_in.double.unused():
                break
            answer, parts = ask(client, contents, stream)
            answers.append(answer)
            contents.append(types.Content(role="model", parts=parts or [types.Part(text="-")]))
            if answer.calls:
                responses = [
                    types.Part.from_function_response(name=name, response={"output": "ok"})
                    for name, _ in answer.calls
                ]
                contents.append(types.Content(role="user", parts=responses))
            else:
                contents.append(types.Content(role="user", parts=[types.Part(text="And then?")]))
    finally:
        close_gemini_clients()
    return answers


#: ``streamGenerateContent`` without ``?alt=sse``: the JSON-array form of the stream.
ARRAY_PATH = f"models/{MODEL}:streamGenerateContent"
PROMPT: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}


def read_array(client: genai.Client) -> list[types.GenerateContentResponse]:
    """The JSON-array stream read whole through the SDK's own HTTP stack (``request``, the
    call every method of it makes) and turned into the SDK's own response type, as
    ``generate_content`` turns one response. The SDK's stream reader only reads SSE: it
    raises on the array (``stream_array``)."""
    from google.genai.models import _GenerateContentResponse_from_mldev

    return [
        types.GenerateContentResponse._from_response(
            response=_GenerateContentResponse_from_mldev(e), kwargs={}
        )
        for e in array_elements(client)
    ]


def array_elements(client: genai.Client) -> list[Any]:
    """The JSON-array stream's elements, the body read whole by the SDK's ``request``."""
    response = client._api_client.request("post", ARRAY_PATH, PROMPT)
    elements = json.loads(response.body or "null")
    assert isinstance(elements, list), response.body
    return elements


def stream_array(client: genai.Client) -> list[str]:
    """The JSON-array stream through the SDK's stream reader (``request_streamed``): the
    bodies of the segments it yields (it raises first, on a real array)."""
    return [r.body or "" for r in client._api_client.request_streamed("post", ARRAY_PATH, PROMPT)]
