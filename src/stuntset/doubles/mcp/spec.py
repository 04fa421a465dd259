"""What an MCP server double serves, as data: its tools, resources and prompts (the catalog a
client lists) and the script that answers its tool calls.

Nothing here imports the ``mcp`` SDK: a spec is built, checked and written without the extra.

A turn of the script answers one ``tools/call``. Its first ``ToolCall`` step names the tool it
answers (a turn without one answers any tool); ``Match`` data sees the call's arguments as
JSON text (``contains``) and the tool name as ``model``. The turn plays until its
``ToolResult`` (the result, ``is_error`` for an error result) or a fault; ``Text`` steps
before it are the result's text when there is no ``ToolResult``; ``Delay`` steps (and
``Text`` intervals) make a slow tool. Steps after the ``ToolResult`` belong to the model's
side of the conversation and are skipped, so a catalog scenario plays unchanged.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from stuntset.errors import ScriptError
from stuntset.script import STEP_KINDS, Script, ToolCall, Turn, TurnRequest, Wire, loads_script

__all__ = [
    "MCP_WIRE",
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

#: What an MCP server double renders. Approvals, input requests and model usage happen on the
#: other side of the agent; a spawn failure is a command that does not exist.
MCP_WIRE = Wire(
    name="mcp",
    renders=frozenset(STEP_KINDS)
    - {"approval_request", "input_request", "spawn_failure", "usage", "reasoning"},
    ignores=frozenset({"usage", "reasoning"}),
    reasons={
        "approval_request": "approvals are the agent host's business, not the tool server's",
        "input_request": "an MCP tool double does not ask the user (script it on the agent)",
        "spawn_failure": (
            "a server that cannot start is a command that does not exist: point the client "
            "at a missing binary instead"
        ),
    },
)


class McpTool(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A tool the server lists. Tools named by the script's ``ToolCall`` steps are listed even
    when not declared (with an open input schema)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object"})
    title: str | None = None


class McpResource(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A text resource: ``resources/list`` lists it, ``resources/read`` returns ``text``."""

    uri: str
    name: str
    text: str = ""
    mime_type: str = "text/plain"
    description: str | None = None


class McpPromptArgument(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    name: str
    description: str | None = None
    required: bool = False


class McpPromptMessage(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """One message of a prompt; ``{argument}`` placeholders are filled from the request."""

    text: str
    role: Literal["user", "assistant"] = "user"


class McpPrompt(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    name: str
    description: str | None = None
    arguments: tuple[McpPromptArgument, ...] = ()
    messages: tuple[McpPromptMessage, ...] = ()


class _SpecFile(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    name: str = "stuntset"
    version: str = "0.1.0"
    instructions: str | None = None
    auth_token: str | None = None
    tools: list[McpTool] = msgspec.field(default_factory=list)
    resources: list[McpResource] = msgspec.field(default_factory=list)
    prompts: list[McpPrompt] = msgspec.field(default_factory=list)


_SERVER_FIELDS = frozenset(_SpecFile.__struct_fields__)
msgspec.convert({}, _SpecFile)  # resolve annotations now (see script._load)


def _tool_of(turn: Turn) -> str | None:
    return next((step.name for step in turn.steps if isinstance(step, ToolCall)), None)


def _for_tool(turn: Turn) -> Turn:
    """The turn, accepting only calls of the tool its first ``ToolCall`` names."""
    name = _tool_of(turn)
    if name is None:
        return turn
    user = turn.predicate

    def accepts(request: TurnRequest) -> bool:
        return request.model == name and (user is None or bool(user(request)))

    return msgspec.structs.replace(turn, predicate=accepts)


class McpServerSpec(msgspec.Struct, frozen=True, kw_only=True):
    """An MCP server double: the catalog it lists and the script that answers tool calls.

    ``auth_token``: over HTTP every request must carry ``Authorization: Bearer <token>``, or
    gets 401 with a ``WWW-Authenticate`` challenge.
    """

    script: Script = msgspec.field(default_factory=Script)
    tools: tuple[McpTool, ...] = ()
    resources: tuple[McpResource, ...] = ()
    prompts: tuple[McpPrompt, ...] = ()
    name: str = "stuntset"
    version: str = "0.1.0"
    instructions: str | None = None
    auth_token: str | None = None

    def __post_init__(self) -> None:
        MCP_WIRE.check(self.script)
        for kind, items, key in (
            ("tool", self.tools, "name"),
            ("resource", self.resources, "uri"),
            ("prompt", self.prompts, "name"),
        ):
            seen: set[str] = set()
            for item in items:
                value = getattr(item, key)
                if value in seen:
                    raise ScriptError(
                        f"{kind} {value!r} is declared twice", source=self.script.source
                    )
                seen.add(value)

    def listed_tools(self) -> list[McpTool]:
        """The declared tools, then those only the script names, in script order."""
        tools = list(self.tools)
        known = {tool.name for tool in tools}
        for turn in self.script.turns:
            name = _tool_of(turn)
            if name is not None and name not in known:
                known.add(name)
                tools.append(McpTool(name=name))
        return tools

    def call_script(self) -> Script:
        """The script with each turn bound to the tool its ``ToolCall`` names."""
        return msgspec.structs.replace(
            self.script, turns=tuple(_for_tool(t) for t in self.script.turns)
        )


def loads_spec(
    text: str | bytes, *, format: Literal["toml", "json"] = "toml", source: str = "<string>"
) -> McpServerSpec:
    """An MCP server spec from TOML or JSON: the server's fields (``name``, ``tools``,
    ``resources``, ``prompts``, ``auth_token``…) beside a script's ``turns`` and ``seed``."""
    raw = text.decode() if isinstance(text, bytes) else text
    try:
        data = tomllib.loads(raw) if format == "toml" else json.loads(raw)
    except tomllib.TOMLDecodeError as error:
        raise ScriptError(f"not valid TOML: {error}", source=source) from None
    except (json.JSONDecodeError, RecursionError, ValueError) as error:
        raise ScriptError(f"not a usable JSON spec: {error}", source=source) from None
    if not isinstance(data, dict):
        raise ScriptError(
            f"an MCP spec is a table (tools, resources, prompts, turns), got {type(data).__name__}",
            source=source,
        )
    server = {key: value for key, value in data.items() if key in _SERVER_FIELDS}
    rest = {key: value for key, value in data.items() if key not in _SERVER_FIELDS}
    rest.setdefault("turns", [])
    try:
        fields = msgspec.convert(server, _SpecFile)
    except msgspec.ValidationError as error:
        message = str(error).replace("`$.", "`")
        raise ScriptError(message, source=source) from None
    script = loads_script(json.dumps(rest), format="json", source=source, wire=MCP_WIRE)
    return McpServerSpec(
        script=script,
        tools=tuple(fields.tools),
        resources=tuple(fields.resources),
        prompts=tuple(fields.prompts),
        name=fields.name,
        version=fields.version,
        instructions=fields.instructions,
        auth_token=fields.auth_token,
    )


def load_spec(path: str | Path) -> McpServerSpec:
    """Load a ``.toml`` or ``.json`` MCP server spec."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ScriptError(
            f"unknown spec format {suffix or '(no suffix)'!r}: use a .toml or .json file",
            source=str(file),
        )
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptError("no such file", source=str(file)) from None
    except (UnicodeDecodeError, IsADirectoryError) as error:
        raise ScriptError(f"cannot read it: {error}", source=str(file)) from None
    return loads_spec(text, format="toml" if suffix == ".toml" else "json", source=str(file))


def dumps_spec(spec: McpServerSpec) -> str:
    """The spec as JSON that ``loads_spec(..., format="json")`` reads back (a script with
    Python callables cannot be written: ``ScriptError``)."""
    from stuntset.script import dumps_script

    data: dict[str, Any] = msgspec.to_builtins(
        _SpecFile(
            name=spec.name,
            version=spec.version,
            instructions=spec.instructions,
            auth_token=spec.auth_token,
            tools=list(spec.tools),
            resources=list(spec.resources),
            prompts=list(spec.prompts),
        )
    )
    data.update(json.loads(dumps_script(spec.script)))
    return json.dumps(data)


def spec_of(
    script: Script | Sequence[Any] | None = None,
    *,
    tools: Sequence[McpTool | str] = (),
    resources: Sequence[McpResource] = (),
    prompts: Sequence[McpPrompt] = (),
    **server: Any,
) -> McpServerSpec:
    """Build a spec: a tool may be given by name alone."""
    if script is None:
        script = Script()
    elif not isinstance(script, Script):
        script = Script.of(*script)
    return McpServerSpec(
        script=script,
        tools=tuple(McpTool(name=t) if isinstance(t, str) else t for t in tools),
        resources=tuple(resources),
        prompts=tuple(prompts),
        **server,
    )
