"""The wires the model double speaks, as ``Wire`` declarations: what each can render.

A script is checked against them when a double is made (``ScriptError`` at load time for a
step no model wire can render). Approval and input requests happen on the client's side of a
model API, so these wires skip them; a tool result marks where one model response ends and the
next request (the one carrying the result) begins.
"""

from __future__ import annotations

from typing import Final

from stuntset.script import Script, Wire

__all__ = [
    "ANTHROPIC_MESSAGES",
    "AZURE_OPENAI_CHAT",
    "AZURE_OPENAI_RESPONSES",
    "BEDROCK_CONVERSE",
    "BEDROCK_INVOKE",
    "GEMINI",
    "MODEL_WIRES",
    "OLLAMA",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "VERTEX_ANTHROPIC",
    "VERTEX_GEMINI",
    "check_script",
]

_RENDERS: Final = frozenset(
    {
        "text",
        "reasoning",
        "tool_call",
        "tool_result",
        "usage",
        "delay",
        "http_error",
        "auth_expired",
        "rate_limit",
        "overloaded",
        "stream_cut",
        "malformed_json",
        "garbage",
        "out_of_order",
        "stall",
        "exit",
    }
)
_IGNORES: Final = frozenset({"approval_request", "input_request"})
_REASONS: Final = {
    "spawn_failure": (
        "a model API is an HTTP server that is already running, so there is nothing to spawn; "
        "to test an unreachable server point the client at a closed port, or use Exit as the "
        "turn's first step for a connection dropped before any response"
    ),
}


def _wire(name: str) -> Wire:
    return Wire(name=name, renders=_RENDERS, ignores=_IGNORES, reasons=dict(_REASONS))


#: ``POST /v1/chat/completions`` (reasoning is sent as ``reasoning_content`` deltas, as
#: OpenAI-compatible servers do; the official SDK keeps it as an extra field).
OPENAI_CHAT: Final = _wire("openai-chat")
#: ``POST /v1/responses``.
OPENAI_RESPONSES: Final = _wire("openai-responses")
#: ``POST /v1/messages``.
ANTHROPIC_MESSAGES: Final = _wire("anthropic-messages")
#: ``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent``.
GEMINI: Final = _wire("gemini")
#: ``POST /model/{modelId}/converse`` and ``/converse-stream`` (AWS Bedrock).
BEDROCK_CONVERSE: Final = _wire("bedrock-converse")
#: ``POST /model/{modelId}/invoke`` and ``/invoke-with-response-stream`` (AWS Bedrock, the
#: Anthropic Messages body: ``AnthropicBedrock``).
BEDROCK_INVOKE: Final = _wire("bedrock-invoke")

#: Azure OpenAI's ``POST /openai/deployments/{deployment}/chat/completions`` (and v1).
AZURE_OPENAI_CHAT: Final = _wire("azure-openai-chat")
#: Azure OpenAI's ``POST /openai/responses`` (and ``/openai/v1/responses``).
AZURE_OPENAI_RESPONSES: Final = _wire("azure-openai-responses")
#: Ollama's ``POST /api/chat`` and ``POST /api/generate`` (NDJSON streams).
OLLAMA: Final = _wire("ollama-api")
#: Vertex AI's ``…/publishers/anthropic/models/{model}:rawPredict`` / ``:streamRawPredict``.
VERTEX_ANTHROPIC: Final = _wire("vertex-anthropic")
#: Vertex AI's ``…/publishers/google/models/{model}:generateContent`` / ``:streamGenerateContent``.
VERTEX_GEMINI: Final = _wire("vertex-gemini")

MODEL_WIRES: Final = (
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    ANTHROPIC_MESSAGES,
    GEMINI,
    BEDROCK_CONVERSE,
    BEDROCK_INVOKE,
    AZURE_OPENAI_CHAT,
    AZURE_OPENAI_RESPONSES,
    OLLAMA,
    VERTEX_ANTHROPIC,
    VERTEX_GEMINI,
)


def check_script(script: Script) -> Script:
    """``script`` if every model wire can render it, else ``ScriptError`` naming the step."""
    for wire in MODEL_WIRES:
        wire.check(script)
    return script
