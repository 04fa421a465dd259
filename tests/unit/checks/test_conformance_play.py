"""Playing a run for the conformance check: a run whose script stalls is interrupted as soon
as everything the script emits before the stall has arrived (no quiet window on the real
clock); the quiet window stays as the fallback for runs whose events cannot be predicted."""

from __future__ import annotations

import anyio
import pytest

from stuntset.checks._conformance_play import Played, Stalled, play, stall_expectation
from stuntset.events import (
    ApprovalRequested,
    Event,
    InputRequested,
    MessageCompleted,
    MessageDelta,
    ReasoningDelta,
    RunKilled,
    RunStarted,
    ToolCompleted,
    ToolStarted,
)
from stuntset.providers import AgentProvider, ScriptedProvider, StuckProvider
from stuntset.providers.base import Capabilities
from stuntset.script import (
    ApprovalRequest,
    Delay,
    InputRequest,
    Match,
    Reasoning,
    Script,
    Stall,
    Step,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    TurnRequest,
    Usage,
)

ALL = Capabilities(approvals=True, input_requests=True, reasoning=True, usage=True)
NONE = Capabilities()


def stalling(*steps: Step, **turn: object) -> Script:
    return Script(turns=(Turn(steps=(*steps, Stall()), **turn),))  # type: ignore[arg-type]


def events(*made: Event) -> list[Event]:
    return list(made)


def started() -> RunStarted:
    return RunStarted(run_id="r", ts=0.0, session_id="s", provider="p")


def delta(text: str) -> MessageDelta:
    return MessageDelta(run_id="r", ts=0.0, item_id="m", text=text)


def expecting(script: Script, caps: Capabilities = NONE) -> Stalled:
    found = stall_expectation(script, caps)
    assert found is not None
    return found


async def played(provider: AgentProvider, script: Script, stall_after: float) -> Played:
    run = provider.start("hi")
    try:
        return await play(
            run,
            timeout=5.0,
            stall_after=stall_after,
            stalled=stall_expectation(script, provider.capabilities),
        )
    finally:
        await provider.aclose()


def test_a_stalled_run_is_interrupted_once_its_last_word_arrived_not_after_a_quiet_wait() -> None:
    script = stalling(Text("one two three"))
    # a 60 s window would outlast the 5 s timeout: only the events can have ended this run
    result = anyio.run(played, ScriptedProvider(script), script, 60.0)
    assert not result.timed_out
    assert result.stalled_by == "events"
    words = [e.text for e in result.events if isinstance(e, MessageDelta)]
    assert "".join(words).split() == ["one", "two", "three"]
    assert result.interrupted_after == 1 + len(words)  # run.started and every delta, no sooner
    assert isinstance(result.terminal, RunKilled)


def test_a_run_that_falls_short_of_its_script_is_still_interrupted_once_quiet() -> None:
    script = stalling(Text("words that never come"))
    result = anyio.run(played, StuckProvider(preamble="Thinking"), script, 0.05)
    assert result.stalled_by == "quiet"
    assert isinstance(result.terminal, RunKilled)


def test_text_counts_once_its_words_arrived_however_chunked_or_completed() -> None:
    stalled = expecting(stalling(Text("Thinking it over")))
    assert not stalled(events(started(), delta("Think")))
    assert not stalled(events(delta("Thinking it over")))  # no run.started yet
    assert stalled(events(started(), delta("Think"), delta("ing it"), delta(" over")))
    whole = MessageCompleted(run_id="r", ts=0.0, item_id="m", text=" Thinking it over\n")
    assert stalled(events(started(), whole))


def test_tool_calls_results_and_requests_count_by_kind() -> None:
    script = stalling(
        ToolCall("bash", {"command": "make"}),
        ToolResult("ok"),
        ApprovalRequest(tool="bash"),
        InputRequest("which?"),
        Usage(input_tokens=1, output_tokens=1),
        Delay(seconds=0.0),
    )
    tool = ToolStarted(run_id="r", ts=0.0, tool_call_id="t", name="bash")
    done = ToolCompleted(run_id="r", ts=0.0, tool_call_id="t")
    asked = ApprovalRequested(run_id="r", ts=0.0, request_id="q", tool="bash")
    wants = InputRequested(run_id="r", ts=0.0, request_id="i", prompt="which?")
    with_requests = expecting(script, ALL)
    assert not with_requests(events(started(), tool, done, asked))
    assert not with_requests(events(started(), tool, asked, wants))
    assert with_requests(events(started(), tool, done, asked, wants))
    # a provider that declares no requests never asks: none is expected of it
    assert expecting(script, NONE)(events(started(), tool, done))


def test_reasoning_is_expected_only_of_a_provider_that_declares_it() -> None:
    script = stalling(Reasoning("hmm"), Text("ok"))
    thought = ReasoningDelta(run_id="r", ts=0.0, item_id="x", text="hmm")
    assert not expecting(script, ALL)(events(started(), delta("ok")))
    assert expecting(script, ALL)(events(started(), thought, delta("ok")))
    assert expecting(script, NONE)(events(started(), delta("ok")))


def by_function(request: TurnRequest) -> list[Step]:
    return [Stall()]


@pytest.mark.parametrize(
    "script",
    [
        Script(function=by_function),
        Script(),
        Script(turns=(Turn(steps=(Text("done"),)),)),
        stalling(Text("x"), match=Match(contains="x")),
        stalling(Text("x"), predicate=lambda request: True),
        stalling(Text("x"), times=2),
        Script(turns=(Turn(steps=(Text("first"),)), Turn(steps=(Stall(),)))),
    ],
    ids=[
        "function",
        "no-turns",
        "no-stall",
        "matched",
        "predicate",
        "repeated",
        "later-turn",
    ],
)
def test_what_cannot_be_predicted_is_left_to_the_quiet_window(script: Script) -> None:
    assert stall_expectation(script, ALL) is None
