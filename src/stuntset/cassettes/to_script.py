"""A recording turned into an editable script: each recorded model response becomes a turn of
text, reasoning, tool calls and usage (an error response becomes its ``HttpError``), so a real
session can become a scenario — edit it (insert a fault at turn 3) and replay it on any double.
A recorded ``claude`` / ``codex`` run gives a turn per agent turn (``cli_script``).

The number of streamed deltas is kept (``chunks``); exact chunk boundaries and timing are not
(replay the cassette itself for those).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from stuntset.cassettes.cli_script import cli_turns
from stuntset.cassettes.format import Cassette, Interaction, reading
from stuntset.errors import ScriptError
from stuntset.script import Script, Step, StreamCut, Turn
from stuntset.script._load import dumps_script
from stuntset.wires import ResponseReader, recorded_wire

__all__ = ["dumps_script_toml", "script_from_cassette", "steps_of"]


def steps_of(interaction: Interaction) -> list[Step]:
    """What a recorded response said, as script steps (a CLI run: all its turns' steps). The
    wire that names the interaction reads it (``stuntset.wires.recorded_wire``)."""
    if interaction.wire.endswith("-cli"):
        return [step for turn in cli_turns(interaction) for step in turn.steps]
    response = interaction.response
    wire = recorded_wire(interaction.wire)
    if response.status >= 400:
        return [wire.read_error(response.status, response.body, response.headers)]
    reader = ResponseReader()
    if response.frames is None:
        done = wire.read_body(response.body, reader)
    else:
        done = wire.read_frames(response.frames, reader)
    steps = reader.steps()
    if not done and not reader.tail:
        steps.append(StreamCut(clean=True))
    return steps


def script_from_cassette(cassette: Cassette) -> Script:
    """One turn per recorded model response (per agent turn of a recorded CLI run), in
    recorded order."""
    turns = []
    for interaction in cassette.interactions:
        with reading(cassette, interaction):
            if interaction.wire.endswith("-cli"):
                runs = cli_turns(interaction)
                turns += [
                    msgspec.structs.replace(turn, name=f"{interaction.id}.{n + 1}")
                    for n, turn in enumerate(runs)
                ]
                continue
            steps = steps_of(interaction)
            turns.append(Turn(steps=tuple(steps), name=interaction.id))
    return Script(turns=tuple(turns), name=f"from {cassette.source}", source=cassette.source)


# --- TOML --------------------------------------------------------------------------------------

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v, where) for v in value) + "]"
    if isinstance(value, dict):
        pairs = []
        for key, item in value.items():
            if item is None:
                raise ScriptError(
                    f"{where}: {key!r} is null, which TOML cannot hold; write JSON instead"
                )
            name = key if _BARE.match(key) else json.dumps(key)
            pairs.append(f"{name} = {_toml(item, where)}")
        return "{ " + ", ".join(pairs) + " }" if pairs else "{}"
    raise ScriptError(f"{where}: cannot write {type(value).__name__} to TOML")


def dumps_script_toml(script: Script) -> str:
    """The script as a TOML file that ``load_script`` reads back."""
    data = json.loads(dumps_script(script))
    out = [f"# {script.name or 'script'}: edit freely, then `stuntset script check` it", ""]
    if data.get("name"):
        out.append(f"name = {_toml(data['name'], 'name')}")
    if data.get("seed"):
        out.append(f"seed = {data['seed']}")
    for index, turn in enumerate(data["turns"]):
        out += ["", "[[turns]]"]
        for key in ("name", "times", "match"):
            if key in turn:
                out.append(f"{key} = {_toml(turn[key], f'turn {index}')}")
        out.append("steps = [")
        for position, step in enumerate(turn["steps"]):
            out.append(f"  {_toml(step, f'turn {index}, step {position}')},")
        out.append("]")
    return "\n".join(out) + "\n"
