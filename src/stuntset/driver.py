"""Drive a run to its end the way a scripted user would: answer every approval and input
request, optionally interrupt, and check the stream against the event contract as it goes."""

from __future__ import annotations

from collections.abc import Callable

from stuntset.contract import ContractChecker
from stuntset.events import ApprovalRequested, Event, InputRequested
from stuntset.providers.base import AgentRun
from stuntset.waiting import collect_events

__all__ = ["drive"]


async def drive(
    run: AgentRun,
    *,
    approve: str | Callable[[ApprovalRequested], str] = "allow",
    answer: str | Callable[[InputRequested], str] = "yes",
    interrupt_when: Callable[[Event], bool] | None = None,
    check: bool = True,
    timeout: float = 5.0,
) -> list[Event]:
    """Play ``run`` to its terminal event and return its events.

    Approvals get ``approve`` (a decision, or a function of the request), input requests get
    ``answer``; ``interrupt_when(event)`` interrupts the run after that event. With ``check``
    every event is fed to a ``ContractChecker`` as it arrives.
    """
    __tracebackhide__ = True
    checker = ContractChecker() if check else None
    interrupted = False

    async def on_event(event: Event) -> None:
        nonlocal interrupted
        if checker is not None:
            checker.feed(event)
        if isinstance(event, ApprovalRequested):
            decision = approve(event) if callable(approve) else approve
            await run.respond(event.request_id, decision)
        elif isinstance(event, InputRequested):
            text = answer(event) if callable(answer) else answer
            await run.respond(event.request_id, text)
        if (
            interrupt_when is not None
            and not interrupted
            and not event.terminal
            and interrupt_when(event)
        ):
            interrupted = True
            await run.interrupt("interrupted by drive()")

    events = await collect_events(run, timeout=timeout, on_event=on_event)
    if checker is not None:
        checker.finish()
    return events
