"""Four tiny tool-using agent loops, one per model wire, on the real SDKs: the "user's own
app" that the checks in stuntset.checks are applied to.

Each sends a system prompt, a user prompt and two tools, runs the tool calls the model makes
with ``run_tool``, sends the results back and returns the final text. ``tamper(n, kwargs)``
may change the keyword arguments of the n-th request before it goes out: how a test plants
the bug a check must catch (a timestamp in the system prompt, a shuffled tool list).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import httpx2
import openai

from _tls import shared_tls
from stuntset.doubles.model import StandIn

Tamper = Callable[[int, dict[str, Any]], dict[str, Any]]
RunTool = Callable[[str, dict[str, Any]], str]

SYSTEM = "You are a terse weather agent. Answer in one sentence."
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
    {
        "name": "get_time",
        "description": "Local time in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
]


def _same(n: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    return kwargs


def _answer(name: str, args: dict[str, Any]) -> str:
    return f"{name} says: sunny in {args.get('city', '?')}"


def openai_client(stand_in: StandIn) -> openai.OpenAI:
    http = httpx2.Client(transport=stand_in.transport())
    return openai.OpenAI(api_key="test", base_url="http://stand-in/v1", http_client=http)


def anthropic_client(stand_in: StandIn) -> anthropic.Anthropic:
    http = httpx2.Client(transport=stand_in.transport())
    return anthropic.Anthropic(api_key="test", base_url="http://stand-in", http_client=http)


def chat_agent(
    stand_in: StandIn, prompt: str, *, tamper: Tamper = _same, run_tool: RunTool = _answer
) -> str:
    client = openai_client(stand_in)
    tools = [{"type": "function", "function": tool} for tool in TOOLS]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    for n in range(8):
        kwargs = tamper(n, {"model": "gpt-test", "messages": list(messages), "tools": tools})
        reply = client.chat.completions.create(**kwargs).choices[0].message
        calls = reply.tool_calls or []
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ]
        messages.append(assistant)
        if not calls:
            return reply.content or ""
        for c in calls:
            output = run_tool(c.function.name, json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": output})
    raise AssertionError("the chat agent did not finish in 8 requests")


def responses_agent(
    stand_in: StandIn,
    prompt: str,
    *,
    tamper: Tamper = _same,
    run_tool: RunTool = _answer,
    chained: bool = False,
) -> str:
    client = openai_client(stand_in)
    tools = [{"type": "function", **tool} for tool in TOOLS]
    items: list[Any] = [{"role": "user", "content": prompt}]
    previous: str | None = None
    for n in range(8):
        kwargs: dict[str, Any] = {
            "model": "gpt-test",
            "instructions": SYSTEM,
            "input": list(items),
            "tools": tools,
        }
        if previous is not None:
            kwargs["previous_response_id"] = previous
        response = client.responses.create(**tamper(n, kwargs))
        calls = [item for item in response.output if item.type == "function_call"]
        if chained:
            items, previous = [], response.id
        else:
            items.extend(item.model_dump(exclude_none=True) for item in response.output)
        if not calls:
            return response.output_text
        for c in calls:
            output = run_tool(c.name, json.loads(c.arguments))
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": output})
    raise AssertionError("the responses agent did not finish in 8 requests")


def anthropic_agent(
    stand_in: StandIn, prompt: str, *, tamper: Tamper = _same, run_tool: RunTool = _answer
) -> str:
    client = anthropic_client(stand_in)
    tools = [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in TOOLS
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for n in range(8):
        kwargs = {
            "model": "claude-test",
            "max_tokens": 256,
            "system": SYSTEM,
            "messages": list(messages),
            "tools": tools,
        }
        reply = client.messages.create(**tamper(n, kwargs))
        content: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for block in reply.content:
            if block.type == "text":
                content.append({"type": "text", "text": block.text})
            elif block.type == "tool_use":
                content.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
                output = run_tool(block.name, dict(block.input))
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "assistant", "content": content})
        if not results:
            return "".join(b["text"] for b in content if b["type"] == "text")
        messages.append({"role": "user", "content": results})
    raise AssertionError("the anthropic agent did not finish in 8 requests")


def gemini_agent(
    stand_in: StandIn, prompt: str, *, tamper: Tamper = _same, run_tool: RunTool = _answer
) -> str:
    """google-genai: one ``Tool`` per function (so a tamper can reorder them), the system
    prompt as ``system_instruction``, function responses sent back by name."""
    from google import genai
    from google.genai import types

    http = httpx.Client(transport=stand_in.transport())
    context = shared_tls()  # genai builds three TLS contexts otherwise (tests/_tls.py)
    options = types.HttpOptions(
        base_url="http://stand-in/",
        httpx_client=http,
        client_args={"verify": context},
        async_client_args={"verify": context, "ssl": context},
    )
    client = genai.Client(api_key="test", http_options=options)
    tools = [
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name=t["name"],
                    description=t["description"],
                    parameters_json_schema=t["parameters"],
                )
            ]
        )
        for t in TOOLS
    ]
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=prompt)])]
    for n in range(8):
        kwargs = tamper(n, {"model": "gemini-test", "contents": list(contents), "tools": tools})
        config = types.GenerateContentConfig(
            system_instruction=SYSTEM,
            tools=kwargs.pop("tools"),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        reply = client.models.generate_content(config=config, **kwargs)
        parts = reply.candidates[0].content.parts or []  # type: ignore[index,union-attr]
        contents.append(types.Content(role="model", parts=parts))
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            return reply.text or ""
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(
                        name=c.name or "",
                        response={"output": run_tool(c.name or "", dict(c.args or {}))},
                    )
                    for c in calls
                ],
            )
        )
    raise AssertionError("the gemini agent did not finish in 8 requests")


AGENTS: dict[str, Callable[..., str]] = {
    "openai-chat": chat_agent,
    "openai-responses": responses_agent,
    "anthropic-messages": anthropic_agent,
    "gemini": gemini_agent,
}
