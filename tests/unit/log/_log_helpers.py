"""Event builders for the session-log tests."""

from __future__ import annotations

from collections.abc import Callable

from stuntset.events import Event, MessageCompleted, MessageDelta, RunCompleted, RunStarted
from stuntset.log import EventLog

#: A factory of fresh, empty logs.
MakeLog = Callable[[], EventLog]


def deltas(
    count: int, *, run_id: str = "run-1", item_id: str = "msg-1", tag: str = ""
) -> list[Event]:
    """``count`` message deltas whose texts are ``f"{tag}{i}"``."""
    return [
        MessageDelta(run_id=run_id, ts=1.0, item_id=item_id, text=f"{tag}{i} ")
        for i in range(count)
    ]


def a_turn(
    *, run_id: str = "run-1", session_id: str = "session-1", text: str = "hi"
) -> list[Event]:
    """A small complete run: started, two deltas, completed message, completed run."""
    return [
        RunStarted(run_id=run_id, ts=1.0, session_id=session_id, provider="scripted"),
        MessageDelta(run_id=run_id, ts=1.0, item_id="msg-1", text=text[:1]),
        MessageDelta(run_id=run_id, ts=1.0, item_id="msg-1", text=text[1:]),
        MessageCompleted(run_id=run_id, ts=1.0, item_id="msg-1", text=text),
        RunCompleted(run_id=run_id, ts=1.0),
    ]


def texts(events: list[Event]) -> list[str]:
    """The ``text`` of each event (``""`` for events without one)."""
    return [str(getattr(event, "text", "")) for event in events]


def seqs(events: list[Event]) -> list[int | None]:
    return [event.seq for event in events]
