"""The MCP server double: a scripted MCP server over stdio and Streamable HTTP, built on the
official ``mcp`` SDK (the ``mcp`` extra), with faults rendered below the SDK and a journal of
every call.

::

    from stuntset.doubles.mcp import McpDouble
    from stuntset.script import Script, ToolCall, ToolResult, Stall

    double = McpDouble(Script.of(
        [ToolCall("search"), ToolResult("3 hits")],
        [ToolCall("search"), Stall()],          # the second call never answers
    ))

Building a spec and reading a journal need no SDK; serving does (``MissingExtra`` otherwise).
"""

from stuntset.doubles.mcp.double import McpDouble
from stuntset.doubles.mcp.journal import McpCall
from stuntset.doubles.mcp.spec import (
    MCP_WIRE,
    McpPrompt,
    McpPromptArgument,
    McpPromptMessage,
    McpResource,
    McpServerSpec,
    McpTool,
    dumps_spec,
    load_spec,
    loads_spec,
    spec_of,
)

__all__ = [
    "MCP_WIRE",
    "McpCall",
    "McpDouble",
    "McpPrompt",
    "McpPromptArgument",
    "McpPromptMessage",
    "McpResource",
    "McpServerSpec",
    "McpTool",
    "dumps_spec",
    "load_spec",
    "loads_spec",
    "spec_of",
]
