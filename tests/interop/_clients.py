"""Drive the real, unmodified SDKs through a conversation with the model double: what an
application does (send, run the tools the model asked for, send the results back), written
once per wire so every test plays the same conversation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic
import httpx2
import openai

from _tls import shared_tls
from stuntset.doubles.model import StandIn

Wire = Literal["chat", "responses", "anthropic"]
WIRES: tuple[Wire, ...] = ("chat", "responses", "anthropic")
Mode = Literal["in-process", "loopback"]


@dataclass
class Answer:
    """One model response as the SDK gave it."""

    text: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


#: Over loopback this is real time: every read of a passing response must come within it, even
#: on a loaded machine. A test whose call must time out sets its own (the in-process transport
#: under the fake clock fires it at once; over loopback it takes real time).
DEFAULT_TIMEOUT = httpx2.Timeout(5.0, read=5.0)

#: Clients made for the current test; ``close_clients()`` (an autouse fixture) closes them, so
#: no socket is left to the garbage collector and a later test's warnings.
OPEN: list[openai.OpenAI | anthropic.Anthropic] = []


def close_clients() -> None:
    while OPEN:
        OPEN.pop().close()


def openai_client(stand_in: StandIn, mode: Mode, **options: Any) -> openai.OpenAI:
    options.setdefault("timeout", DEFAULT_TIMEOUT)
    if mode == "loopback":
        http = openai.DefaultHttpxClient(verify=shared_tls())  # the SDK's defaults, one TLS
        client = openai.OpenAI(
            base_url=stand_in.url("openai"), api_key="sk-test", http_client=http, **options
        )
    else:
        http = httpx2.Client(transport=stand_in.transport())
        client = openai.OpenAI(http_client=http, api_key="sk-test", **options)
    OPEN.append(client)
    return client


def anthropic_client(stand_in: StandIn, mode: Mode, **options: Any) -> anthropic.Anthropic:
    options.setdefault("timeout", DEFAULT_TIMEOUT)
    if mode == "loopback":
        http = anthropic.DefaultHttpxClient(verify=shared_tls())
        client = anthropic.Anthropic(
            base_url=stand_in.url("anthropic"), api_key="sk-test", http_client=http, **options
        )
    else:
        http = httpx2.Client(transport=stand_in.transport())
        client = anthropic.Anthropic(http_client=http, api_key="sk-test", **options)
    OPEN.append(client)
    return client


def _json(text: str) -> dict[str, Any]:
    import json

    value = json.loads(text)
    assert isinstance(value, dict)
    return value


def converse(
    stand_in: StandIn, wire: Wire, *, stream: bool, mode: Mode = "in-process", **options: Any
) -> list[Answer]:
    """Play a whole conversation (tool rounds and follow-up prompts) until the script is
    used up; the SDK's exception propagates as raised."""
    answers: list[Answer] = []
    history: list[dict[str, Any]] = [{"role": "user", "content": "Hello there"}]
    oc = openai_client(stand_in, mode, **options) if wire != "anthropic" else None
    ac = anthropic_client(stand_in, mode, **options) if wire == "anthropic" else None
    try:
        for _ in range(8):
            if not stand_in.double.unused():
                break
            if wire == "chat":
                assert oc is not None
                answer, history = _chat(oc, history, stream)
            elif wire == "responses":
                assert oc is not None
                answer, history = _responses(oc, history, stream)
            else:
                assert ac is not None
                answer, history = _anthropic(ac, history, stream)
            answers.append(answer)
    finally:
        close_clients()
    return answers


def _chat(
    client: openai.OpenAI, history: list[dict[str, Any]], stream: bool
) -> tuple[Answer, list[dict[str, Any]]]:
    if stream:
        with client.chat.completions.stream(
            model="gpt-test",
            messages=history,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        ) as events:
            for _ in events:
                pass
            completion: Any = events.get_final_completion()
    else:
        completion = client.chat.completions.create(model="gpt-test", messages=history)  # type: ignore[arg-type]
    message = completion.choices[0].message
    calls = [(c.function.name, _json(c.function.arguments)) for c in message.tool_calls or []]
    usage = completion.usage
    answer = Answer(
        message.content or "",
        calls,
        usage.prompt_tokens if usage else 0,
        usage.completion_tokens if usage else 0,
    )
    if message.tool_calls:
        history = [
            *history,
            message.model_dump(exclude_none=True, exclude={"parsed"}),
            *({"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in message.tool_calls),
        ]
    else:
        history = [
            *history,
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": "And then?"},
        ]
    return answer, history


def _responses(
    client: openai.OpenAI, history: list[dict[str, Any]], stream: bool
) -> tuple[Answer, list[dict[str, Any]]]:
    if stream:
        with client.responses.stream(model="gpt-test", input=history) as events:  # type: ignore[arg-type]
            for _ in events:
                pass
            response: Any = events.get_final_response()
    else:
        response = client.responses.create(model="gpt-test", input=history)  # type: ignore[arg-type]
    calls = [o for o in response.output if o.type == "function_call"]
    usage = response.usage
    answer = Answer(
        response.output_text,
        [(c.name, _json(c.arguments)) for c in calls],
        usage.input_tokens if usage else 0,
        usage.output_tokens if usage else 0,
    )
    if calls:
        history = [
            *history,
            *(
                {
                    "type": "function_call",
                    "call_id": c.call_id,
                    "name": c.name,
                    "arguments": c.arguments,
                }
                for c in calls
            ),
            *(
                {"type": "function_call_output", "call_id": c.call_id, "output": "ok"}
                for c in calls
            ),
        ]
    else:
        history = [
            *history,
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": "And then?"},
        ]
    return answer, history


def _anthropic(
    client: anthropic.Anthropic, history: list[dict[str, Any]], stream: bool
) -> tuple[Answer, list[dict[str, Any]]]:
    if stream:
        with client.messages.stream(
            model="claude-test", max_tokens=1024, messages=history
        ) as events:  # type: ignore[arg-type]
            for _ in events:
                pass
            message: Any = events.get_final_message()
    else:
        message = client.messages.create(model="claude-test", max_tokens=1024, messages=history)  # type: ignore[arg-type]
    uses = [b for b in message.content if b.type == "tool_use"]
    text = "".join(b.text for b in message.content if b.type == "text")
    answer = Answer(
        text,
        [(u.name, dict(u.input)) for u in uses],
        message.usage.input_tokens,
        message.usage.output_tokens,
    )
    if uses:
        history = [
            *history,
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in message.content],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": "ok"} for u in uses
                ],
            },
        ]
    else:
        history = [
            *history,
            {"role": "assistant", "content": text or "-"},
            {"role": "user", "content": "And then?"},
        ]
    return answer, history
