"""The model doubles' section of ``stuntset demo``: every applicable catalog scenario played
on each wire through the in-process transport, by a minimal bundled client (``httpx2`` or
``httpx`` only, no SDK), showing what that client saw.

The client does what an SDK does, minimally: streams, parses SSE, retries 408/409/429/5xx
twice (honouring ``x-should-retry``), sends tool results back, and reports a dropped
connection, a read timeout, a bad frame or an in-band error as what it is.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from stuntset import scenarios
from stuntset._demo_rows import DemoRow
from stuntset.errors import HarnessFailure
from stuntset.seams import deterministic

from .double import ModelDouble
from .transport import ModelTransport

__all__ = ["model_rows"]

_WIRES = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
    "gemini": "/v1beta/models/demo:streamGenerateContent?alt=sse",
}
_SKIP = {"spawn_missing"}  # nothing to spawn on an HTTP wire


def _http() -> ModuleType | None:
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


@dataclass
class _Seen:
    """What the client saw for one model response."""

    status: int = 0
    events: int = 0
    text: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)
    terminal: bool = False
    problem: str = ""
    started: int = 0

    def summary(self) -> str:
        if self.problem:
            return self.problem
        if self.status != 200:
            return f"HTTP {self.status}"
        parts = [f"{len(self.text)} chars"] + [f"call {name}" for name, _ in self.calls]
        return ", ".join(parts) + ("" if self.terminal else ", no terminal event")


def _request_body(wire: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    if wire == "openai-chat":
        return {
            "model": "demo",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": history,
        }
    if wire == "openai-responses":
        return {"model": "demo", "stream": True, "input": history}
    if wire == "gemini":  # the model and the stream are in the path
        return {"contents": history}
    return {"model": "demo", "max_tokens": 1024, "stream": True, "messages": history}


def _read_stream(wire: str, response: Any, seen: _Seen) -> None:
    event = ""
    for line in response.iter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
            continue
        if not line.startswith("data:"):
            if line and not line.startswith(":"):
                seen.problem = f"garbage on the wire ({line[:20]!r}…)"
            continue
        data = line[5:].strip()
        seen.events += 1
        if data == "[DONE]":
            seen.terminal = True
            continue
        try:
            payload = json.loads(data)
        except ValueError:
            seen.problem = "a frame that is not JSON"
            return
        _apply(wire, event, payload, seen)
        if seen.problem:
            return


def _apply(wire: str, event: str, payload: dict[str, Any], seen: _Seen) -> None:
    kind = payload.get("type", "")
    if wire == "openai-chat":
        if "error" in payload:
            seen.problem = f"in-band error: {payload['error'].get('message')}"
        for choice in payload.get("choices", []):
            delta = choice.get("delta", {})
            seen.text += delta.get("content") or ""
            for call in delta.get("tool_calls", []):
                if "id" in call:
                    seen.calls.append((call["function"]["name"], call["id"]))
                elif not seen.calls:
                    seen.problem = "out of order: arguments for a tool call never started"
    elif wire == "gemini":
        _apply_gemini(payload, seen)
    elif wire == "openai-responses":
        if kind == "response.output_item.added":
            seen.started += 1
        elif kind == "response.output_text.delta" and not seen.started:
            seen.problem = "out of order: text for an output item never added"
        elif kind == "response.output_text.delta":
            seen.text += payload["delta"]
        elif kind == "response.output_item.done" and payload["item"]["type"] == "function_call":
            seen.calls.append((payload["item"]["name"], payload["item"]["call_id"]))
        elif kind == "response.completed":
            seen.terminal = True
        elif kind == "response.failed":
            seen.problem = f"response.failed: {payload['response']['error']['message']}"
        if kind != "response.created" and seen.events == 1:
            seen.problem = f"out of order: {kind} before response.created"
    else:
        if event == "error":
            seen.problem = f"in-band error: {payload['error']['type']}"
        elif kind == "content_block_start":
            seen.started += 1
        if kind == "content_block_delta" and payload["index"] >= seen.started:
            seen.problem = "out of order: content for a block never started"
        elif kind == "content_block_delta" and payload["delta"]["type"] == "text_delta":
            seen.text += payload["delta"]["text"]
        if kind == "content_block_start" and payload["content_block"]["type"] == "tool_use":
            block = payload["content_block"]
            seen.calls.append((block["name"], block["id"]))
        elif kind == "message_stop":
            seen.terminal = True


def _apply_gemini(payload: dict[str, Any], seen: _Seen) -> None:
    if "error" in payload:
        seen.problem = f"in-band error: {payload['error'].get('status')}"
        return
    for candidate in payload.get("candidates") or []:
        parts = (candidate.get("content") or {}).get("parts") or []
        if seen.terminal and any(part.get("text") for part in parts):
            seen.problem = "out of order: content after the finishing chunk"
            return
        for part in parts:
            if "functionCall" in part:
                seen.calls.append((part["functionCall"]["name"], part["functionCall"]["name"]))
            elif not part.get("thought"):
                seen.text += part.get("text") or ""
        seen.terminal = seen.terminal or bool(candidate.get("finishReason"))


def _one_response(
    http: ModuleType, client: Any, wire: str, history: list[dict[str, Any]]
) -> tuple[list[str], _Seen]:
    attempts: list[str] = []
    for attempt in range(3):
        seen = _Seen()
        headers = {"x-stainless-retry-count": str(attempt), "anthropic-version": "2023-06-01"}
        try:
            with client.stream(
                "POST", _WIRES[wire], json=_request_body(wire, history), headers=headers
            ) as response:
                seen.status = response.status_code
                if response.status_code == 200:
                    _read_stream(wire, response, seen)
                else:
                    response.read()
                    retry = response.headers.get("x-should-retry")
                    retryable = (
                        response.status_code in (408, 409, 429) or response.status_code >= 500
                    )
                    if retry != "false" and (retry == "true" or retryable) and attempt < 2:
                        attempts.append(f"HTTP {response.status_code}")
                        continue
        except http.TimeoutException:
            seen.problem = "read timeout"
        except http.TransportError as error:
            seen.problem = f"connection dropped ({type(error).__name__})"
        except UnicodeDecodeError:
            seen.problem = "invalid UTF-8"
        attempts.append(seen.summary())
        return attempts, seen
    raise AssertionError("unreachable")


def _conversation(http: ModuleType, client: Any, wire: str, prompt: str) -> tuple[list[str], int]:
    history: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": prompt}]}
        if wire == "gemini"
        else {"role": "user", "content": prompt}
    ]
    outcomes: list[str] = []
    events = 0
    for _ in range(5):
        attempts, seen = _one_response(http, client, wire, history)
        outcomes += attempts
        events += seen.events
        if not seen.calls or seen.problem or seen.status != 200:
            break
        history += _tool_round(wire, seen)
    return outcomes, events


def _tool_round(wire: str, seen: _Seen) -> list[dict[str, Any]]:
    if wire == "openai-chat":
        calls = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for name, cid in seen.calls
        ]
        return [{"role": "assistant", "content": seen.text or None, "tool_calls": calls}] + [
            {"role": "tool", "tool_call_id": cid, "content": "ok"} for _, cid in seen.calls
        ]
    if wire == "gemini":
        calls = [{"functionCall": {"name": name, "args": {}}} for name, _ in seen.calls]
        answers = [
            {"functionResponse": {"name": name, "response": {"output": "ok"}}}
            for name, _ in seen.calls
        ]
        return [{"role": "model", "parts": calls}, {"role": "user", "parts": answers}]
    if wire == "openai-responses":
        return [
            item
            for name, cid in seen.calls
            for item in (
                {"type": "function_call", "call_id": cid, "name": name, "arguments": "{}"},
                {"type": "function_call_output", "call_id": cid, "output": "ok"},
            )
        ]
    uses = [{"type": "tool_use", "id": cid, "name": name, "input": {}} for name, cid in seen.calls]
    results = [
        {"type": "tool_result", "tool_use_id": cid, "content": "ok"} for _, cid in seen.calls
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def _play(http: ModuleType, entry: scenarios.Scenario, wire: str) -> DemoRow:
    double = ModelDouble(entry.build())
    layer = f"model ({wire})"
    client = http.Client(
        transport=ModelTransport(double),
        base_url="http://stand-in",
        timeout=http.Timeout(5.0, read=1.0),
    )
    outcomes: list[str] = []
    events = 0
    try:
        with client:
            for turn in range(len(double.script.turns) + 3):
                if not double.unused():
                    break
                seen, count = _conversation(http, client, wire, f"demo prompt {turn + 1}")
                outcomes += seen
                events += count
        double.verify()
    except HarnessFailure as failure:
        return DemoRow(layer, entry.name, len(double.requests), events, "", False, str(failure))
    finally:
        double.close()
    return DemoRow(layer, entry.name, len(double.requests), events, " → ".join(outcomes), True)


def model_rows() -> list[DemoRow]:
    """The catalog through the in-process model doubles, on each wire."""
    http = _http()
    if http is None:
        return [DemoRow("model", "-", 0, 0, "skipped: needs httpx2 or httpx", True)]
    rows: list[DemoRow] = []
    with deterministic():
        for wire in _WIRES:
            for entry in scenarios.all():
                if entry.name not in _SKIP:
                    rows.append(_play(http, entry, wire))
    return rows
