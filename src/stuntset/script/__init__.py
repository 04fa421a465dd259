"""Scripts: what a double does, wire-neutral, as data.

A ``Script`` is a list of ``Turn``s; a turn is a list of steps and an optional ``match``.
Build one in Python::

    from stuntset.script import Script, Text, ToolCall, ToolResult, Usage

    script = Script.of(
        [Text("Let me look."), ToolCall("read_file", {"path": "a.txt"}), ToolResult("hello"),
         Text("It says hello."), Usage(input_tokens=20, output_tokens=8)],
    )

or load one from a TOML/JSON file with ``load_script``. A double declares its ``Wire``;
``wire.check(script)`` rejects steps it cannot render, at load time.
"""

from stuntset.script._load import dumps_script, load_script, loads_script
from stuntset.script._model import Match, Script, Turn, TurnFunction, TurnRequest, turn
from stuntset.script._player import PlayedTurn, ScriptPlayer
from stuntset.script._steps import (
    FAULT_KINDS,
    STEP_KINDS,
    ApprovalRequest,
    AuthExpired,
    Delay,
    Exit,
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

__all__ = [
    "AGENT_WIRE",
    "FAULT_KINDS",
    "STEP_KINDS",
    "ApprovalRequest",
    "AuthExpired",
    "Delay",
    "Exit",
    "Garbage",
    "HttpError",
    "InputRequest",
    "MalformedJson",
    "Match",
    "OutOfOrder",
    "Overloaded",
    "PlayedTurn",
    "RateLimit",
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
