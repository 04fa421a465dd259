"""``stuntset drift --live``: the same scenario prompts sent to the real provider and to the
model double, and the SHAPE of the two streams compared — event kinds and their order,
content-block (tool-call) framing, the usage fields — never the text.

claude (and claude-session) → the Anthropic Messages API (``ANTHROPIC_API_KEY``; base URL
``ANTHROPIC_BASE_URL``, default ``https://api.anthropic.com``); codex (and codex-exec) → the
OpenAI Responses API (``OPENAI_API_KEY``; ``OPENAI_BASE_URL``, default
``https://api.openai.com/v1``): the variables the official SDKs read, with their meaning (the
Anthropic one without ``/v1``, the OpenAI one with it). Pointing them at a server on loopback
(a cassette replayed, a second double) is how it is tested offline.

Played: the catalog's feature scenarios whose first turn the model itself could say (text
and tool calls, no faults); a scripted tool call is asked for with ``tool_choice`` naming the
tool, so the live model frames one too. Scenarios that make the same request (the prompt, no
tools) share one live answer: each distinct request goes to the provider once.

A shape is an event's name, the type of the block, item or delta it carries, and the usage
fields it reports: the token counts (numbers). Not compared: ``ping`` keep-alives, repeats of
one shape (a run of deltas counts once), the usage breakdowns and labels a provider adds by
model and account (``cache_creation``, ``server_tool_use``, ``*_details``, ``service_tier``),
and reasoning items (a reasoning model such as ``gpt-5`` adds one of its own accord; the
played scenarios script none).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from stuntset import scenarios as catalog
from stuntset.errors import UsageError
from stuntset.script import Delay, Script, Text, ToolCall, ToolResult
from stuntset.script import Usage as UsageStep

from .runners import COLUMNS, PROMPT

__all__ = ["LIVE", "LiveCell", "live_drift", "shape", "stream_shape"]

#: CLI → (key variable, base URL variable, default base URL, wire).
LIVE: dict[str, tuple[str, str, str, str]] = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com", "anthropic"),
    "codex": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1", "openai"),
}
_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}


@dataclass
class LiveCell:
    scenario: str
    cli: str
    status: str  # "same", "differs", "error"
    difference: str = ""

    @property
    def label(self) -> str:
        return self.status if self.status == "same" else f"{self.status.upper()} {self.difference}"


def live_scenarios(names: Iterable[str] | None = None) -> list[str]:
    """The scenarios a live model can be asked to play (see the module docs)."""
    chosen = list(names) if names is not None else catalog.names()
    return [name for name in chosen if _playable(catalog.build(name))]


def _playable(script: Script) -> bool:
    if not script.turns or script.function is not None:
        return False
    steps = script.turns[0].steps
    return bool(steps) and all(
        isinstance(s, (Text, ToolCall, ToolResult, UsageStep, Delay)) for s in steps
    )


def _tools(script: Script) -> list[str]:
    return list(dict.fromkeys(s.name for s in script.turns[0].steps if isinstance(s, ToolCall)))


def request_body(wire: str, script: Script) -> dict[str, Any]:
    """The streaming request a scenario's prompt becomes on ``wire``."""
    tools = _tools(script)
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    if wire == "anthropic":
        body: dict[str, Any] = {
            "model": _MODELS[wire],
            "max_tokens": 256,
            "stream": True,
            "messages": [{"role": "user", "content": PROMPT}],
        }
        if tools:
            body["tools"] = [{"name": t, "description": t, "input_schema": schema} for t in tools]
            body["tool_choice"] = {"type": "tool", "name": tools[0]}
        return body
    body = {"model": _MODELS[wire], "stream": True, "input": PROMPT}
    if tools:
        body["tools"] = [
            {"type": "function", "name": t, "description": t, "parameters": schema} for t in tools
        ]
        body["tool_choice"] = {"type": "function", "name": tools[0]}
    return body


def _events(lines: Iterable[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Server-sent events as (event name, JSON data); the name falls back to the data's
    ``type``."""
    name = ""
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            raw = line[5:].strip()
            if raw == "[DONE]":
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                yield "(not JSON)", {}
                continue
            yield name or str(data.get("type", "?")), data if isinstance(data, dict) else {}
            name = ""


def shape(name: str, data: dict[str, Any]) -> str | None:
    """One event's shape: its kind, the kind of block (item) it frames or delta it carries,
    and the token counts it reports; ``None`` for what is not compared (see the module
    docs)."""
    if name == "ping" or name.startswith("response.reasoning"):
        return None
    parts = [name]
    for key in ("content_block", "delta", "item"):
        inner = data.get(key)
        if isinstance(inner, dict) and "type" in inner:
            if key == "item" and inner["type"] == "reasoning":
                return None
            parts.append(f"{key}={inner['type']}")
    for holder in (data, data.get("message"), data.get("response")):
        usage = holder.get("usage") if isinstance(holder, dict) else None
        if isinstance(usage, dict):
            counts = (k for k, v in usage.items() if isinstance(v, int | float))
            parts.append("usage=" + ",".join(sorted(counts)))
    return " ".join(parts)


def stream_shape(lines: Iterable[str]) -> list[str]:
    """A stream's shapes, repeats of one shape (a run of text deltas) counted once."""
    shapes: list[str] = []
    for name, data in _events(lines):
        found = shape(name, data)
        if found is not None and (not shapes or shapes[-1] != found):
            shapes.append(found)
    return shapes


def programs(clis: Iterable[str]) -> list[str]:
    """The CLIs (``claude``, ``codex``) of drift's columns, each once: what ``--live`` asks
    (the ``gemini`` column has no live comparison: it is left out)."""
    return list(dict.fromkeys(COLUMNS[cli] for cli in clis if COLUMNS[cli] in LIVE))


def _post(url: str, key: str, wire: str, body: dict[str, Any]) -> list[str]:
    import httpx2

    if wire == "anthropic":
        target = url.rstrip("/") + "/v1/messages"
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    else:
        target = url.rstrip("/") + "/responses"
        headers = {"authorization": f"Bearer {key}"}
    with (
        httpx2.Client(timeout=60.0) as client,
        client.stream("POST", target, json=body, headers=headers) as response,
    ):
        if response.status_code != 200:
            response.read()
            raise RuntimeError(f"{target} answered {response.status_code}")
        return list(response.iter_lines())


def _first_difference(live: list[str], double: list[str]) -> str:
    for index in range(max(len(live), len(double))):
        theirs = live[index] if index < len(live) else "(nothing)"
        ours = double[index] if index < len(double) else "(nothing)"
        if theirs != ours:
            return f"event {index}: live {theirs}; double {ours}"
    return ""


def keys_for(clis: Iterable[str]) -> dict[str, str]:
    """CLI → its provider key, from the environment (columns count by their CLI);
    ``UsageError`` when none is set."""
    chosen = list(clis)
    clis = programs(chosen)
    if not clis:
        raise UsageError(
            f"--live compares the claude and codex columns' providers, not {', '.join(chosen)} "
            f"(nothing was sent)"
        )
    found = {cli: os.environ.get(LIVE[cli][0], "") for cli in clis}
    found = {cli: key for cli, key in found.items() if key}
    if not found:
        wanted = " or ".join(LIVE[cli][0] for cli in clis)
        raise UsageError(f"--live needs a provider key: set {wanted} (nothing was sent)")
    return found


def live_drift(clis: Iterable[str], names: Iterable[str] | None = None) -> list[LiveCell]:
    """For each CLI with a key (columns count by their CLI) and each live-playable scenario:
    the live stream's shape against the double's."""
    from stuntset.doubles.model.serve import serve

    keys = keys_for(clis)
    cells: list[LiveCell] = []
    asked: dict[str, list[str]] = {}  # request → the live shape: each request is sent once
    for name in live_scenarios(names):
        script = catalog.build(name)
        for cli, key in keys.items():
            _, variable, default, wire = LIVE[cli]
            body = request_body(wire, script)
            request = json.dumps([wire, body], sort_keys=True)
            try:
                if request not in asked:
                    url = os.environ.get(variable) or default
                    asked[request] = stream_shape(_post(url, key, wire, body))
                live = asked[request]
                with serve(script) as stand_in:
                    url = stand_in.url("anthropic" if wire == "anthropic" else "openai")
                    double = stream_shape(_post(url, "sk-double", wire, body))
            except Exception as error:  # one line in the table: the network, a refusal
                cells.append(LiveCell(name, cli, "error", f"{type(error).__name__}: {error}"))
                continue
            difference = _first_difference(live, double)
            cells.append(LiveCell(name, cli, "differs" if difference else "same", difference))
    return cells
