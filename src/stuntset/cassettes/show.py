"""A cassette as a readable transcript (``stuntset cassettes show``): per interaction what was
asked and what came back — read as script steps (text, tool calls, usage) with the timing of
the stream — and, for a recorded CLI run, both directions line by line with their offsets.
``frames=True`` adds the raw frames of HTTP responses."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from stuntset.cassettes.format import Cassette, Interaction, reading
from stuntset.cassettes.to_script import steps_of
from stuntset.script import kind_of

__all__ = ["describe_line", "transcript"]


def _clip(text: str, width: int = 80) -> str:
    text = text.replace("\n", "⏎")
    return text if len(text) <= width else text[: width - 1] + "…"


def _quoted(text: Any) -> str:
    return json.dumps(_clip(str(text)), ensure_ascii=False)


def _blocks(content: Any) -> str:
    """Claude message content, briefly."""
    if isinstance(content, str):
        return _quoted(content)
    parts = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(_quoted(block.get("text", "")))
        elif kind == "thinking":
            parts.append(f"thinking {_quoted(block.get('thinking', ''))}")
        elif kind == "tool_use":
            parts.append(
                f"tool_use {block.get('name')} {_clip(json.dumps(block.get('input')), 60)}"
            )
        elif kind == "tool_result":
            error = " (error)" if block.get("is_error") else ""
            parts.append(f"tool_result{error} {_quoted(block.get('content', ''))}")
    return ", ".join(parts)


def _item(item: dict[str, Any]) -> str:
    """A Codex item, briefly."""
    for key in ("text", "command", "tool", "query", "message"):
        if item.get(key):
            return f"{item.get('type')} {_quoted(item[key])}"
    return str(item.get("type", ""))


def describe_line(text: str) -> str:
    """One stream-json / JSONL / JSON-RPC line, briefly (``user "read a.txt"``)."""
    try:
        message = json.loads(text)
    except ValueError:
        return f"(not JSON) {_quoted(text)}"
    if not isinstance(message, dict):
        return _clip(text)
    if "method" in message:  # JSON-RPC request or notification
        params = message.get("params") or {}
        head = f"{message['method']}" + (f" #{message['id']}" if "id" in message else "")
        if isinstance(params.get("item"), dict):
            return f"{head} {_item(params['item'])}"
        if "delta" in params:
            return f"{head} {_quoted(params['delta'])}"
        if isinstance(params.get("turn"), dict) and params["turn"].get("status"):
            return f"{head} {params['turn']['status']}"
        return head
    if "id" in message and ("result" in message or "error" in message):
        error = message.get("error")
        tail = f" error {_quoted(error.get('message', ''))}" if isinstance(error, dict) else ""
        return f"response #{message['id']}{tail}"
    kind = str(message.get("type", "?"))
    request: dict[str, Any] = message["request"] if isinstance(message.get("request"), dict) else {}
    subtype = message.get("subtype") or request.get("subtype")
    head = f"{kind} {subtype}" if subtype else kind
    if kind in ("user", "assistant") and isinstance(message.get("message"), dict):
        return f"{head} {_blocks(message['message'].get('content'))}".rstrip()
    if kind == "result":
        usage = message.get("usage") or {}
        tokens = f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out"
        return f"{head} {_quoted(message.get('result', ''))} ({tokens})"
    if isinstance(message.get("item"), dict):
        return f"{head} {_item(message['item'])}"
    if request.get("tool_name"):
        return f"{head} {request['tool_name']}"
    return head


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def _cli_lines(interaction: Interaction, source: str) -> list[str]:
    from stuntset.cassettes.cli_replay import timeline

    body = interaction.request.body if isinstance(interaction.request.body, dict) else {}
    program = interaction.wire.removesuffix("-cli")
    status = interaction.response.status
    ended = f"killed by signal {-status}" if status < 0 else f"exit {status}"
    lines = [f"{interaction.id} {interaction.wire}: {program} {' '.join(body.get('argv', []))}"]
    lines.append(f"  in {body.get('cwd') or '?'}; {ended}")
    arrows = {"in": "→", "out": "←", "err": "!", "eof": "→"}
    for step in timeline(interaction, source=source):
        kind, t = step[0], step[1]
        if kind == "eof":
            text = "(stdin closed)"
        elif kind == "err":
            text = f"stderr {_quoted(step[2])}"
        else:
            text = describe_line(step[2]) + (" (cut)" if kind == "out" and step[3] else "")
        lines.append(f"  +{_ms(t)} {arrows[kind]} {text}")
    return lines


def _asked(body: dict[str, Any]) -> str | None:
    """The last user input of a model request, briefly."""
    messages = body.get("messages") or body.get("input")
    if isinstance(messages, str):
        return _quoted(messages)
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _blocks(message.get("content"))
    return None


def _http_lines(interaction: Interaction, frames: bool) -> list[str]:
    request, response = interaction.request, interaction.response
    session = f" session {interaction.session}" if interaction.session else ""
    lines = [
        f"{interaction.id} {interaction.wire}{session}: "
        f"{request.method} {request.path} → {response.status}"
    ]
    body = request.body if isinstance(request.body, dict) else {}
    if "model" in body:
        lines.append(f"  model {body['model']}")
    asked = _asked(body)
    if asked:
        lines.append(f"  asked {asked}")
    if response.frames is not None:
        first = response.frames[0].t if response.frames else 0.0
        last = response.frames[-1].t if response.frames else 0.0
        lines.append(
            f"  {len(response.frames)} frame(s), first after {first * 1000:.0f} ms, "
            f"last after {last * 1000:.0f} ms"
        )
    for step in steps_of(interaction):
        builtins: dict[str, Any] = msgspec.to_builtins(step)
        fields = {k: v for k, v in builtins.items() if k != "kind" and v not in (None, False)}
        lines.append(f"  {kind_of(step)} {_clip(json.dumps(fields, ensure_ascii=False), 100)}")
    if frames and response.frames is not None:
        for frame in response.frames:
            label = f"{frame.event}: " if frame.event else ""
            lines.append(f"    +{frame.t * 1000:7.1f} ms  {label}{_clip(frame.data, 100)}")
    return lines


def transcript(cassette: Cassette, *, frames: bool = False) -> list[str]:
    """The lines ``stuntset cassettes show`` prints."""
    lines = [
        f"{cassette.source}: {len(cassette.interactions)} interaction(s), wires "
        f"{', '.join(cassette.wires) or '-'}, recorded by {cassette.recorded_by}"
    ]
    for interaction in cassette.interactions:
        lines.append("")
        with reading(cassette, interaction):
            if interaction.wire.endswith("-cli"):
                lines += _cli_lines(interaction, cassette.where(interaction))
            else:
                lines += _http_lines(interaction, frames)
    return lines
