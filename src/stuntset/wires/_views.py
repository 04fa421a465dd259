"""What the request views of several wires share: the OpenAI-style ``messages`` / ``input``
prefix, and tool calls found in a ``messages`` history (Chat's ``tool_calls``, Anthropic's
``tool_use`` blocks)."""

from __future__ import annotations

from typing import Any

from ._spec import DeclaredTool, HistoryCall, PrefixView

__all__ = [
    "cache_of",
    "declared_tools",
    "messages_history_calls",
    "openai_prefix_view",
    "strip_cache_control",
]

_SYSTEM_ROLES = ("system", "developer")


def strip_cache_control(value: Any) -> Any:
    """``value`` without its ``cache_control`` markers (they say where to cache, not what)."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def _leading_system(items: list[Any]) -> int:
    count = 0
    for item in items:
        if not (isinstance(item, dict) and item.get("role") in _SYSTEM_ROLES):
            break
        count += 1
    return count


def cache_of(body: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """The fields of ``body`` among ``fields`` (those that change what the cache can reuse)."""
    return {name: body[name] for name in fields if name in body}


def openai_prefix_view(
    body: dict[str, Any], key: str, cache_fields: tuple[str, ...], *, chained: bool
) -> PrefixView:
    """The view of a request whose conversation is the list ``body[key]`` (a string there
    is one user message), leading system / developer items being its system prompt."""
    raw = body.get(key) or []
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw)
    offset = _leading_system(items)
    system = {f"{key}[{i}]": items[i] for i in range(offset)}
    if "instructions" in body:
        system = {"instructions": body["instructions"], **system}
    tools = body.get("tools") or []
    cache = cache_of(body, cache_fields)
    return PrefixView(system, items[offset:], key, offset, tools, cache, chained)


def messages_history_calls(body: dict[str, Any]) -> list[HistoryCall]:
    """The tool calls of the assistant messages of ``body["messages"]``."""
    calls: list[HistoryCall] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            calls.append((str(call.get("id")), function.get("name"), function.get("arguments")))
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.append(
                    (str(block.get("id")), block.get("name"), dict(block.get("input") or {}))
                )
    return calls


#: Where a function tool's JSON schema is (google-genai sends ``parameters_json_schema`` as it
#: is spelled; the API takes both spellings).
_SCHEMA_KEYS = ("parameters", "parametersJsonSchema", "parameters_json_schema")


def _declared(tool: Any) -> DeclaredTool | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    if isinstance(function, dict):  # Chat Completions
        return (str(function.get("name")), function.get("description"), function.get("parameters"))
    if "input_schema" in tool:  # Anthropic Messages
        return (str(tool.get("name")), tool.get("description"), tool["input_schema"])
    if "name" in tool:  # Responses function tools, Gemini function declarations
        schema = next(
            (tool[k] for k in _SCHEMA_KEYS if tool.get(k) is not None), tool.get("parameters")
        )
        return (str(tool["name"]), tool.get("description"), schema)
    return None


def _function_declarations(tool: Any) -> list[Any]:
    """A Gemini tool's ``functionDeclarations`` (several functions in one tool); any other
    tool as it is."""
    declared = tool.get("functionDeclarations") if isinstance(tool, dict) else None
    return declared if isinstance(declared, list) else [tool]


def declared_tools(body: dict[str, Any]) -> list[DeclaredTool] | None:
    """The function tools a request declares, as ``(name, description, JSON schema)``, one
    per function; None when it sends no tool list. Read by shape, so every wire's tools
    (Chat's ``function``, Anthropic's ``input_schema``, Responses' and Gemini's ``name``)
    read the same wherever they are sent."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return None
    spread = [d for t in tools for d in _function_declarations(t)]
    return [d for d in map(_declared, spread) if d is not None]
