"""Property: whatever script the provider plays, its stream keeps the event contract, the
message text equals its deltas, and every scripted tool call is answered."""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from stuntset import events as ev
from stuntset.contract import check_events
from stuntset.driver import drive
from stuntset.providers import ScriptedProvider
from stuntset.script import (
    ApprovalRequest,
    Delay,
    Exit,
    HttpError,
    InputRequest,
    MalformedJson,
    RateLimit,
    Reasoning,
    Script,
    Step,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from stuntset.seams import deterministic

texts = st.text(min_size=0, max_size=30)
content: st.SearchStrategy[list[Step]] = st.one_of(
    st.builds(lambda t, c: [Text(t, chunks=c)], texts, st.none() | st.integers(1, 5)),
    st.builds(lambda t: [Reasoning(t)], texts),
    st.builds(lambda n: [Usage(n, n)], st.integers(0, 100)),
    st.builds(lambda s: [Delay(s)], st.floats(0, 10)),
    st.builds(lambda p: [InputRequest(p)], texts),
    st.builds(
        lambda name, ask, out: [
            ToolCall(name, {"q": out}),
            *([ApprovalRequest()] if ask else []),
            ToolResult(out),
        ],
        st.sampled_from(["ls", "read", "bash"]),
        st.booleans(),
        texts,
    ),
)
faults = st.sampled_from([HttpError(500), RateLimit(), StreamCut(), MalformedJson(), Exit(3)])


@st.composite
def turns(draw: st.DrawFn) -> list[Step]:
    steps = [step for chunk in draw(st.lists(content, max_size=8)) for step in chunk]
    if draw(st.booleans()):
        steps.append(draw(faults))
    return steps


@settings(max_examples=60, deadline=None)
@given(steps=turns(), decision=st.sampled_from(["allow", "deny"]))
def test_any_script_renders_a_contract_valid_stream(steps: list[Step], decision: str) -> None:
    async def play() -> list[ev.Event]:
        return await drive(
            ScriptedProvider(Script.of(steps)).start("go"), approve=decision, answer="ok"
        )

    with deterministic():
        events = anyio.run(play)
    check_events(events)
    for item in {e.item_id for e in events if isinstance(e, ev.MessageCompleted)}:
        deltas = "".join(
            e.text for e in events if isinstance(e, ev.MessageDelta) and e.item_id == item
        )
        completed = next(
            e for e in events if isinstance(e, ev.MessageCompleted) and e.item_id == item
        )
        assert deltas == completed.text
    if isinstance(events[-1], ev.RunCompleted):
        started = {e.tool_call_id for e in events if isinstance(e, ev.ToolStarted)}
        answered = {e.tool_call_id for e in events if isinstance(e, ev.ToolCompleted)}
        assert started == answered
