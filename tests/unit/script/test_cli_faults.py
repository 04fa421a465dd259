"""``cli=True`` on a stream fault: the CLI process itself breaks its own stdout. Only the
agent doubles render it; a model double refuses it when the script is loaded."""

from __future__ import annotations

import pytest

from stuntset.doubles.cli.claude import CLAUDE_WIRE
from stuntset.doubles.cli.codex import CODEX_WIRE
from stuntset.doubles.model import ModelDouble
from stuntset.errors import ScriptError
from stuntset.script import (
    AGENT_WIRE,
    Exit,
    Garbage,
    MalformedJson,
    OutOfOrder,
    Script,
    Step,
    StreamCut,
    Text,
    Wire,
    loads_script,
)
from stuntset.wires import WIRES

FAULTS = [StreamCut, MalformedJson, Garbage, OutOfOrder, Exit]
MODEL_WIRES = [wire.declared for wire in WIRES]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("wire", MODEL_WIRES, ids=lambda w: w.name)
def test_a_model_wire_refuses_the_cli_breaking(wire: Wire, fault: type[Step]) -> None:
    script = Script.of([Text("partial"), fault(cli=True)])  # type: ignore[call-arg]
    with pytest.raises(
        ScriptError, match="with cli=True is the CLI process itself breaking"
    ) as caught:
        wire.check(script)
    assert "step 1" in str(caught.value)
    assert wire.name in str(caught.value)
    wire.check(Script.of([Text("partial"), fault()]))  # the model stream's own: fine


def test_the_model_double_refuses_it_at_load() -> None:
    with pytest.raises(ScriptError, match="cli=True"):
        ModelDouble(Script.of([Text("partial"), MalformedJson(cli=True)]))


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("wire", [CLAUDE_WIRE, CODEX_WIRE, AGENT_WIRE], ids=lambda w: w.name)
def test_the_agent_wires_render_it(wire: Wire, fault: type[Step]) -> None:
    wire.check(Script.of([Text("partial"), fault(cli=True)]))  # type: ignore[call-arg]


def test_cli_loads_from_a_script_file() -> None:
    script = loads_script('[[turns]]\nsteps = [{kind = "stream_cut", cli = true}]\n')
    (step,) = script.turns[0].steps
    assert isinstance(step, StreamCut)
    assert step.cli is True
