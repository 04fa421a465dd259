"""A recording turned into an editable script: each recorded model response becomes a turn of
text, reasoning, tool calls and usage (an error response becomes its ``HttpError``), so a real
session can become a scenario — edit it (insert a fault at turn 3) and replay it on any double.
A recorded ``claude`` / ``codex`` run gives a turn per agent turn (``cli_script``).

The number of streamed deltas is kept (``chunks``); exact chunk boundaries and timing are not
(replay the cassette itself for those).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from stuntset.cassettes.cli_script import cli_turns
from stuntset.cassettes.format import Cassette, Frame, Interaction, reading
from stuntset.errors import ScriptError
from stuntset.script import (
    AuthExpired,
    HttpError,
    Overloaded,
    Reasoning,
    Script,
    Step,
    StreamCut,
    Text,
    ToolCall,
    Turn,
    Usage,
)
from stuntset.script._load import dumps_script

__all__ = ["dumps_script_toml", "script_from_cassette", "steps_of"]


class _Turn:
    """Collects one response's items in the order they first appear."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        #: (key, field) → the deltas not yet joined into ``items`` (joined once, in
        #: ``steps``: ``+=`` on a dict's string copied the whole text per delta, quadratic)
        self._parts: dict[tuple[str, str], list[str]] = {}
        self.usage: list[int] = [0, 0]
        self.has_usage = False
        self.tail: list[Step] = []

    def item(self, key: str, kind: str, **fields: Any) -> dict[str, Any]:
        if key not in self.items:
            self.items[key] = {"kind": kind, "text": "", "deltas": 0, "args": "", **fields}
        return self.items[key]

    def add(self, key: str, kind: str, delta: str, field: str = "text") -> None:
        item = self.item(key, kind)
        self.extend(key, field, delta)
        item["deltas"] += 1

    def extend(self, key: str, field: str, delta: str) -> None:
        """Append ``delta`` to an existing item's ``field`` (linear: joined in ``steps``)."""
        self._parts.setdefault((key, field), []).append(delta)

    def _join(self) -> None:
        for (key, field), parts in self._parts.items():
            item = self.items[key]
            item[field] = item[field] + "".join(parts)
        self._parts.clear()

    def count(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        self.has_usage = True
        if input_tokens:
            self.usage[0] = input_tokens
        if output_tokens:
            self.usage[1] = output_tokens

    def steps(self) -> list[Step]:
        self._join()
        steps: list[Step] = []
        for item in self.items.values():
            chunks = item["deltas"] or None
            if item["kind"] == "text" and item["text"]:
                steps.append(Text(item["text"], chunks=chunks))
            elif item["kind"] == "reasoning" and item["text"]:
                steps.append(
                    Reasoning(item["text"], signature=item.get("signature"), chunks=chunks)
                )
            elif item["kind"] == "tool":
                raw = item.get("input")
                if raw is None:
                    try:
                        raw = json.loads(item["args"] or "{}")
                    except json.JSONDecodeError:
                        raw = {"_unparsed_arguments": item["args"]}
                steps.append(
                    ToolCall(
                        item["name"],
                        raw if isinstance(raw, dict) else {"value": raw},
                        id=item.get("id"),
                    )
                )
        if self.has_usage:
            steps.append(Usage(input_tokens=self.usage[0], output_tokens=self.usage[1]))
        return steps + self.tail


def _json(frame: Frame) -> Any:
    try:
        return json.loads(frame.data)
    except json.JSONDecodeError:
        return None


def _chat_frames(frames: Iterable[Frame], turn: _Turn) -> bool:
    done = False
    for frame in frames:
        if frame.data.strip() == "[DONE]":
            done = True
            continue
        chunk = _json(frame)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("usage"):
            turn.count(chunk["usage"].get("prompt_tokens"), chunk["usage"].get("completion_tokens"))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("reasoning_content"):
                turn.add("reasoning", "reasoning", delta["reasoning_content"])
            if delta.get("content"):
                turn.add("text", "text", delta["content"])
            for call in delta.get("tool_calls") or []:
                item_key = f"tool-{call.get('index', 0)}"
                item = turn.item(item_key, "tool", name="", id=None)
                function = call.get("function") or {}
                item["id"] = call.get("id") or item["id"]
                item["name"] = function.get("name") or item["name"]
                turn.extend(item_key, "args", function.get("arguments") or "")
    return done


def _anthropic_frames(frames: Iterable[Frame], turn: _Turn) -> bool:
    done = False
    for frame in frames:
        event = _json(frame)
        if not isinstance(event, dict):
            continue
        kind = event.get("type", frame.event)
        if kind == "message_start":
            turn.count((event.get("message") or {}).get("usage", {}).get("input_tokens"))
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            key = f"block-{event.get('index')}"
            if block.get("type") == "tool_use":
                turn.item(key, "tool", name=block.get("name", ""), id=block.get("id"))
            elif block.get("type") == "thinking":
                turn.item(key, "reasoning", signature=None)
            else:
                turn.item(key, "text")
        elif kind == "content_block_delta":
            key = f"block-{event.get('index')}"
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                turn.add(key, "text", delta.get("text", ""))
            elif delta.get("type") == "thinking_delta":
                turn.add(key, "reasoning", delta.get("thinking", ""))
            elif delta.get("type") == "signature_delta":
                turn.item(key, "reasoning")["signature"] = delta.get("signature")
            elif delta.get("type") == "input_json_delta":
                turn.add(key, "tool", delta.get("partial_json", ""), field="args")
        elif kind == "message_delta":
            turn.count(output_tokens=(event.get("usage") or {}).get("output_tokens"))
        elif kind == "message_stop":
            done = True
        elif kind == "error":
            error = event.get("error") or {}
            message = error.get("message")
            if error.get("type") == "overloaded_error":
                turn.tail.append(Overloaded(message=message or "Overloaded"))
            else:
                turn.tail.append(HttpError(500, message=message, error_type=error.get("type")))
            done = True
    return done


def _responses_frames(frames: Iterable[Frame], turn: _Turn) -> bool:
    done = False
    for frame in frames:
        event = _json(frame)
        if not isinstance(event, dict):
            continue
        kind = event.get("type", frame.event)
        key = f"item-{event.get('output_index')}"
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                turn.item(key, "tool", name=item.get("name", ""), id=item.get("call_id"))
            elif item.get("type") == "reasoning":
                turn.item(key, "reasoning")
            else:
                turn.item(key, "text")
        elif kind == "response.output_text.delta":
            turn.add(key, "text", event.get("delta", ""))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            turn.add(key, "reasoning", event.get("delta", ""))
        elif kind == "response.function_call_arguments.delta":
            turn.add(key, "tool", event.get("delta", ""), field="args")
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            usage = (event.get("response") or {}).get("usage") or {}
            if usage:
                turn.count(usage.get("input_tokens"), usage.get("output_tokens"))
            if kind == "response.failed":
                error = (event.get("response") or {}).get("error") or {}
                turn.tail.append(HttpError(500, message=error.get("message")))
            done = True
    return done


def _gemini_response(response: Any, turn: _Turn) -> bool:
    """One ``GenerateContentResponse`` (a stream chunk or a whole body) into ``turn``; whether
    it ended the response (a finish reason, or an in-band error)."""
    if not isinstance(response, dict):
        return False
    error = response.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        turn.tail.append(
            _gemini_error(error, code if isinstance(code, int) and code >= 400 else 500)
        )
        return True
    usage = response.get("usageMetadata") or {}
    if usage:
        turn.count(usage.get("promptTokenCount"), usage.get("candidatesTokenCount"))
    candidate = (response.get("candidates") or [{}])[0]
    for part in (candidate.get("content") or {}).get("parts") or []:
        call = part.get("functionCall")
        if isinstance(call, dict):
            key = f"tool-{sum(k.startswith('tool-') for k in turn.items)}"
            name = call.get("name", "")
            turn.item(key, "tool", name=name, id=call.get("id"), input=call.get("args") or {})
        elif part.get("text"):
            kind = "reasoning" if part.get("thought") else "text"
            turn.add(kind, kind, part["text"])
            if part.get("thoughtSignature"):
                turn.items[kind]["signature"] = _signature(part["thoughtSignature"])
    return bool(candidate.get("finishReason"))


def _gemini_error(error: dict[str, Any], status: int) -> Step:
    """A Google error object as the step that renders it (``_key_invalid``, or an
    ``HttpError`` with Google's ``status`` as its type)."""
    message = error.get("message")
    if _key_invalid(error):
        return AuthExpired(message=message) if isinstance(message, str) else AuthExpired()
    return HttpError(status, message=message, error_type=error.get("status"))


def _key_invalid(error: dict[str, Any]) -> bool:
    """Whether a Google error object is an expired or invalid API key: a 400 whose
    ``google.rpc.ErrorInfo`` reason is ``API_KEY_INVALID``, which ``AuthExpired`` renders on
    the Gemini wire (docs/protocol-gemini.md#errors)."""
    details = error.get("details")
    return any(
        isinstance(d, dict) and d.get("reason") == "API_KEY_INVALID"
        for d in (details if isinstance(details, list) else [])
    )


def _signature(encoded: str) -> str:
    """A thought signature as a script holds it: the text it encodes, if it is text."""
    try:
        return base64.b64decode(encoded, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return encoded


def _gemini_frames(frames: Iterable[Frame], turn: _Turn) -> bool:
    done = False
    for frame in frames:
        done = _gemini_response(_json(frame), turn) or done
    return done


def _whole_body(wire: str, body: Any, turn: _Turn) -> None:
    if not isinstance(body, dict):
        return
    usage = body.get("usage") or {}
    if wire == "gemini":
        _gemini_response(body, turn)
    elif wire.startswith("anthropic"):
        for index, block in enumerate(body.get("content") or []):
            key = f"block-{index}"
            if block.get("type") == "text":
                turn.add(key, "text", block.get("text", ""))
            elif block.get("type") == "thinking":
                turn.add(key, "reasoning", block.get("thinking", ""))
                turn.items[key]["signature"] = block.get("signature")
            elif block.get("type") == "tool_use":
                turn.item(
                    key,
                    "tool",
                    name=block.get("name", ""),
                    id=block.get("id"),
                    input=block.get("input"),
                )
        if usage:
            turn.count(usage.get("input_tokens"), usage.get("output_tokens"))
    elif wire.endswith("responses"):
        for index, item in enumerate(body.get("output") or []):
            key = f"item-{index}"
            if item.get("type") == "message":
                for part in item.get("content") or []:
                    turn.add(key, "text", part.get("text", ""))
            elif item.get("type") == "reasoning":
                for part in item.get("summary") or []:
                    turn.add(key, "reasoning", part.get("text", ""))
            elif item.get("type") == "function_call":
                turn.item(key, "tool", name=item.get("name", ""), id=item.get("call_id"))
                turn.items[key]["args"] = item.get("arguments", "")
        if usage:
            turn.count(usage.get("input_tokens"), usage.get("output_tokens"))
    else:
        message = ((body.get("choices") or [{}])[0]).get("message") or {}
        if message.get("reasoning_content"):
            turn.add("reasoning", "reasoning", message["reasoning_content"])
        if message.get("content"):
            turn.add("text", "text", message["content"])
        for index, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            turn.item(f"tool-{index}", "tool", name=function.get("name", ""), id=call.get("id"))
            turn.items[f"tool-{index}"]["args"] = function.get("arguments", "")
        if usage:
            turn.count(usage.get("prompt_tokens"), usage.get("completion_tokens"))
    for item in turn.items.values():
        item["deltas"] = 0  # a whole body was not streamed: let the double choose the chunking


def _error_turn(interaction: Interaction) -> Step:
    body = interaction.response.body
    if isinstance(body, list) and len(body) == 1:  # Gemini's error before an array stream
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if interaction.wire == "gemini" and isinstance(error, dict) and _key_invalid(error):
        return _gemini_error(error, interaction.response.status)
    message = error.get("message") if isinstance(error, dict) else None
    # Anthropic and OpenAI say ``type``, Gemini ``status`` (RESOURCE_EXHAUSTED…)
    kind = (error.get("type") or error.get("status")) if isinstance(error, dict) else None
    retry_ms = interaction.response.headers.get("retry-after-ms")
    return HttpError(
        interaction.response.status,
        message=message,
        error_type=kind,
        retry_after_ms=int(float(retry_ms)) if retry_ms else None,
    )


_FRAME_READERS = {
    "gemini": _gemini_frames,
    "anthropic": _anthropic_frames,
    "responses": _responses_frames,
}


def steps_of(interaction: Interaction) -> list[Step]:
    """What a recorded response said, as script steps (a CLI run: all its turns' steps)."""
    if interaction.wire.endswith("-cli"):
        return [step for turn in cli_turns(interaction) for step in turn.steps]
    response = interaction.response
    if response.status >= 400:
        return [_error_turn(interaction)]
    turn = _Turn()
    wire = interaction.wire
    if wire == "gemini" and response.frames is None and isinstance(response.body, list):
        # a stream asked for without alt=sse: the JSON array of responses, recorded whole
        done = False
        for element in response.body:
            done = _gemini_response(element, turn) or done
    elif response.frames is None:
        _whole_body(wire, response.body, turn)
        return turn.steps()
    else:
        reader = next((r for key, r in _FRAME_READERS.items() if key in wire), _chat_frames)
        done = reader(response.frames, turn)
    steps = turn.steps()
    if not done and not turn.tail:
        steps.append(StreamCut(clean=True))
    return steps


def script_from_cassette(cassette: Cassette) -> Script:
    """One turn per recorded model response (per agent turn of a recorded CLI run), in
    recorded order."""
    turns = []
    for interaction in cassette.interactions:
        with reading(cassette, interaction):
            if interaction.wire.endswith("-cli"):
                runs = cli_turns(interaction)
                turns += [
                    msgspec.structs.replace(turn, name=f"{interaction.id}.{n + 1}")
                    for n, turn in enumerate(runs)
                ]
                continue
            steps = steps_of(interaction)
            turns.append(Turn(steps=tuple(steps), name=interaction.id))
    return Script(turns=tuple(turns), name=f"from {cassette.source}", source=cassette.source)


# --- TOML --------------------------------------------------------------------------------------

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v, where) for v in value) + "]"
    if isinstance(value, dict):
        pairs = []
        for key, item in value.items():
            if item is None:
                raise ScriptError(
                    f"{where}: {key!r} is null, which TOML cannot hold; write JSON instead"
                )
            name = key if _BARE.match(key) else json.dumps(key)
            pairs.append(f"{name} = {_toml(item, where)}")
        return "{ " + ", ".join(pairs) + " }" if pairs else "{}"
    raise ScriptError(f"{where}: cannot write {type(value).__name__} to TOML")


def dumps_script_toml(script: Script) -> str:
    """The script as a TOML file that ``load_script`` reads back."""
    data = json.loads(dumps_script(script))
    out = [f"# {script.name or 'script'}: edit freely, then `stuntset script check` it", ""]
    if data.get("name"):
        out.append(f"name = {_toml(data['name'], 'name')}")
    if data.get("seed"):
        out.append(f"seed = {data['seed']}")
    for index, turn in enumerate(data["turns"]):
        out += ["", "[[turns]]"]
        for key in ("name", "times", "match"):
            if key in turn:
                out.append(f"{key} = {_toml(turn[key], f'turn {index}')}")
        out.append("steps = [")
        for position, step in enumerate(turn["steps"]):
            out.append(f"  {_toml(step, f'turn {index}, step {position}')},")
        out.append("]")
    return "\n".join(out) + "\n"
