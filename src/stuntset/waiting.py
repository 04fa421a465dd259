"""Waiting for conditions instead of sleeping.

``collect_events`` reads an event stream until a condition (by default: the terminal event);
``wait_for`` / ``wait_for_async`` poll a condition. All of them take a real-time ``timeout``
as a guard against hangs, and on timeout fail with ``WaitTimeout`` showing what they saw.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import TypeVar

import anyio

from stuntset.errors import WaitTimeout
from stuntset.events import Event, encode, is_terminal

__all__ = ["collect_events", "wait_for", "wait_for_async"]

T = TypeVar("T")

#: Polling starts this fast and backs off to ``_MAX_POLL``: responsive, never busy-spinning.
_MIN_POLL = 0.0005
_MAX_POLL = 0.02


def _shown(events: list[Event], limit: int = 20) -> str:
    if not events:
        return "  (no events)"
    lines = [
        f"  #{i} {encode(e).decode()}"
        for i, e in enumerate(events[-limit:], start=max(0, len(events) - limit))
    ]
    skipped = f"  ... {len(events) - limit} earlier events\n" if len(events) > limit else ""
    return skipped + "\n".join(lines)


async def collect_events(
    stream: AsyncIterable[Event],
    *,
    until: Callable[[Event], bool] = is_terminal,
    timeout: float = 5.0,
    on_event: Callable[[Event], Awaitable[None] | None] | None = None,
) -> list[Event]:
    """Read ``stream`` up to and including the first event for which ``until(event)`` holds.

    ``on_event`` is called with each event as it arrives (answer approvals there). Fails with
    ``WaitTimeout`` listing the events seen if ``timeout`` seconds of real time pass, or if
    the stream ends before ``until`` held.
    """
    __tracebackhide__ = True
    seen: list[Event] = []
    iterator = aiter(stream)
    with anyio.move_on_after(timeout) as scope:
        while True:
            try:
                event = await anext(iterator)
            except StopAsyncIteration:
                break
            seen.append(event)
            if on_event is not None:
                result = on_event(event)
                if result is not None:
                    await result
            if until(event):
                return seen
    if scope.cancelled_caught:
        raise WaitTimeout(
            f"collect_events: the condition did not hold within {timeout} s; "
            f"saw {len(seen)} events:\n{_shown(seen)}\n"
            f"Is the run waiting for an answer (respond()) or stuck (interrupt())?"
        )
    raise WaitTimeout(
        f"collect_events: the stream ended before the condition held; "
        f"saw {len(seen)} events:\n{_shown(seen)}"
    )


def wait_for(
    condition: Callable[[], T],
    *,
    timeout: float = 5.0,
    message: str | Callable[[], str] = "",
) -> T:
    """Poll ``condition()`` until it returns a truthy value, and return that value.

    Fails with ``WaitTimeout`` after ``timeout`` seconds of real time, showing the last value
    and ``message`` (a string, or a function called at failure time to describe the state).
    """
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    poll = _MIN_POLL
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(_timeout_message(condition, timeout, value, message))
        time.sleep(poll)
        poll = min(poll * 2, _MAX_POLL)


async def wait_for_async(
    condition: Callable[[], T],
    *,
    timeout: float = 5.0,
    message: str | Callable[[], str] = "",
) -> T:
    """``wait_for`` for async code: polls without blocking the event loop."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    poll = _MIN_POLL
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(_timeout_message(condition, timeout, value, message))
        await anyio.sleep(poll)
        poll = min(poll * 2, _MAX_POLL)


def _timeout_message(
    condition: Callable[[], object], timeout: float, value: object, message: str | Callable[[], str]
) -> str:
    name = getattr(condition, "__qualname__", repr(condition))
    extra = message() if callable(message) else message
    return f"wait_for: {name} was still {value!r} after {timeout} s" + (
        f"\n{extra}" if extra else ""
    )
