"""Scripts: what a double does, wire-neutral, as data.

A ``Script`` is a list of ``Turn``s; a turn is a list of steps and an optional ``match``.
Build one in Python::

    from stuntset.script import Script, Text, ToolCall, ToolResult, Usage

    script = Script.of(
        [Text("Let me look."), ToolCall("read_file", {"path": "a.txt"}), ToolResult("hello"),
         Text("It says hello."), Usage(input_tokens=20, output_tokens=8)],
    )

or load one from a TOML/JSON file with ``load_script``. A double declares its ``Wire``;
``wire.check(script)`` rejects steps it cannot render, at load time. ``RateLimits`` (per
turn, or for the whole script) is what the API reports about the account's quota with each
response.
"""

from typing import TYPE_CHECKING

from stuntset.script._limits import RateLimitCredits, RateLimits, RateLimitWindow
from stuntset.script._model import Match, Script, Turn, TurnFunction, TurnRequest, turn
from stuntset.script._player import PlayedTurn, ScriptPlayer
from stuntset.script._steps import (
    FAULT_KINDS,
    STEP_KINDS,
    ApprovalRequest,
    AuthExpired,
    Delay,
    Exit,
    FaultStep,
    Garbage,
    HttpError,
    InputRequest,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Reasoning,
    SpawnFailure,
    Stall,
    Step,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    kind_of,
    split_text,
)
from stuntset.script._wire import AGENT_WIRE, Wire

if TYPE_CHECKING:
    from stuntset.script._load import dumps_script, load_script, loads_script


def __getattr__(name: str) -> object:
    # the file loader (tomllib, json, difflib) loads on first use: a double built from a
    # Python script never needs it
    if name in ("dumps_script", "load_script", "loads_script"):
        from stuntset.script import _load

        value = getattr(_load, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'stuntset.script' has no attribute {name!r}")


__all__ = [
    "AGENT_WIRE",
    "FAULT_KINDS",
    "STEP_KINDS",
    "ApprovalRequest",
    "AuthExpired",
    "Delay",
    "Exit",
    "FaultStep",
    "Garbage",
    "HttpError",
    "InputRequest",
    "MalformedJson",
    "Match",
    "OutOfOrder",
    "Overloaded",
    "PlayedTurn",
    "RateLimit",
    "RateLimitCredits",
    "RateLimitWindow",
    "RateLimits",
    "Reasoning",
    "Script",
    "ScriptPlayer",
    "SpawnFailure",
    "Stall",
    "Step",
    "StreamCut",
    "Text",
    "ToolCall",
    "ToolResult",
    "Turn",
    "TurnFunction",
    "TurnRequest",
    "Usage",
    "Wire",
    "dumps_script",
    "kind_of",
    "load_script",
    "loads_script",
    "split_text",
    "turn",
]
