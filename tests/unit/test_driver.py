from __future__ import annotations

import pytest

from stuntset import events as ev
from stuntset import scenarios
from stuntset.driver import drive
from stuntset.errors import ContractViolation
from stuntset.providers import ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_drive_answers_with_functions() -> None:
    seen: list[str] = []

    def decide(request: ev.ApprovalRequested) -> str:
        seen.append(request.tool)
        return "deny"

    events = await drive(
        ScriptedProvider(scenarios.build("needs_approval")).start("x"), approve=decide
    )
    assert seen == ["bash"]
    assert any(isinstance(e, ev.ApprovalResolved) and e.decision == "deny" for e in events)
    events = await drive(
        ScriptedProvider(scenarios.build("input_request")).start("x"),
        answer=lambda r: r.prompt.upper(),
    )
    assert any(
        isinstance(e, ev.InputResolved) and e.text == "WHICH BRANCH SHOULD I DEPLOY?"
        for e in events
    )


class _Broken:
    """A run that breaks the contract: a tool completes that never started."""

    run_id = "run-x"
    session_id = "s"

    def __init__(self, check_events: list[ev.Event]) -> None:
        self._events = iter(check_events)

    def __aiter__(self) -> _Broken:
        return self

    async def __anext__(self) -> ev.Event:
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None

    async def interrupt(self, reason: str = "interrupted") -> None:
        raise NotImplementedError

    async def respond(self, request_id: str, decision: str) -> None:
        raise NotImplementedError


BAD = [
    ev.RunStarted(run_id="run-x", ts=0, session_id="s", provider="p"),
    ev.ToolCompleted(run_id="run-x", ts=0, tool_call_id="t"),
    ev.RunCompleted(run_id="run-x", ts=0),
]


async def test_drive_checks_the_contract_as_events_arrive() -> None:
    with pytest.raises(ContractViolation, match="tool-answers-start"):
        await drive(_Broken(BAD))
    assert len(await drive(_Broken(BAD), check=False)) == 3
