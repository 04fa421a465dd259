"""The MCP server itself: the official SDK's low-level ``Server``, its handlers serving a
spec's catalog and the planned tool results. The one module of the double that imports
``mcp`` (lazily, through ``require_mcp``)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

import anyio

from stuntset.errors import MissingExtra

from ._plan import INVALID_PARAMS, META_KEY, Dispatcher

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["build_server", "require_mcp"]

#: The MCP spec's code for a resource that does not exist.
RESOURCE_NOT_FOUND = -32002


def require_mcp() -> ModuleType:
    """The ``mcp`` SDK, or ``MissingExtra`` saying how to install it."""
    try:
        return importlib.import_module("mcp.server.lowlevel")
    except ImportError as error:
        raise MissingExtra(
            f"the MCP double needs the official MCP SDK, which is not installed ({error}): "
            f"install the extra, pip install 'stuntset[mcp]'"
        ) from None


class _Placeholders(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def build_server(dispatcher: Dispatcher) -> Server[Any]:
    """A low-level SDK server for ``dispatcher.spec``; tool calls answer their plans."""
    lowlevel = require_mcp()
    import mcp.types as types
    from mcp.shared.exceptions import MCPError

    spec = dispatcher.spec
    tools = [
        types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description or None,
            input_schema=tool.input_schema,
        )
        for tool in spec.listed_tools()
    ]
    resources = {resource.uri: resource for resource in spec.resources}
    prompts = {prompt.name: prompt for prompt in spec.prompts}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        token = (params.meta or {}).get(META_KEY)
        plan = dispatcher.take(token) if isinstance(token, str) else None
        if plan is None:
            raise MCPError(INVALID_PARAMS, "stuntset: this tool call was not planned")
        if plan.delay:
            await anyio.sleep(plan.delay)
        if plan.error is not None:
            raise MCPError(*plan.error)
        return types.CallToolResult.model_validate(plan.result)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type
                )
                for r in spec.resources
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        resource = resources.get(str(params.uri))
        if resource is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {params.uri}")
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=resource.uri, mime_type=resource.mime_type, text=resource.text
                )
            ]
        )

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    description=p.description,
                    arguments=[
                        types.PromptArgument(
                            name=a.name, description=a.description, required=a.required
                        )
                        for a in p.arguments
                    ],
                )
                for p in spec.prompts
            ]
        )

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        prompt = prompts.get(params.name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        values = _Placeholders(params.arguments or {})
        return types.GetPromptResult(
            description=prompt.description,
            messages=[
                types.PromptMessage(
                    role=m.role, content=types.TextContent(text=m.text.format_map(values))
                )
                for m in prompt.messages
            ],
        )

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}
    if spec.resources:
        handlers.update(on_list_resources=list_resources, on_read_resource=read_resource)
    if spec.prompts:
        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    server: Server[Any] = lowlevel.Server(
        spec.name, version=spec.version, instructions=spec.instructions, **handlers
    )
    return server
