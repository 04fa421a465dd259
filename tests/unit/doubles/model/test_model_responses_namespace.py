"""A tool call of a namespace tool on the Responses wire (how Codex lists an MCP server's
tools): ``ToolCall("<namespace>/<tool>")`` is a ``function_call`` with its ``namespace``."""

from __future__ import annotations

import httpx2
import openai

from stuntset.doubles.model import ModelDouble, transport
from stuntset.script import Script, ToolCall


def test_a_namespaced_call_names_its_namespace_and_a_plain_one_does_not() -> None:
    double = ModelDouble(
        Script.of([ToolCall("mcp__files/read_file", {"path": "a"}), ToolCall("plain", {})])
    )
    client = openai.OpenAI(
        http_client=httpx2.Client(transport=transport(double=double)), api_key="k"
    )
    response = client.responses.create(model="m", input="read a")
    namespaced, plain = (item.model_dump() for item in response.output)
    assert (namespaced["name"], namespaced["namespace"]) == ("read_file", "mcp__files")
    assert namespaced["arguments"] == '{"path":"a"}'
    assert plain["name"] == "plain"
    assert plain.get("namespace") is None
    client.close()
