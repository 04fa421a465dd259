"""The normalized provider interface: one shape over every agent runtime.

A provider starts runs; a run is an async iterable of normalized events (``stuntset.events``)
that the caller can steer while it streams: ``respond()`` to approval and input requests,
``interrupt()`` to end it (as ``run.killed``). ``session_id`` is the resume handle: a new
provider (or ``start(resume=...)``) continues that session.

Each provider declares its ``Capabilities``; a request it cannot honour is refused with a
``CapabilityError`` before anything starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol, TypeAlias, runtime_checkable

import msgspec

from stuntset.errors import CapabilityError
from stuntset.events import Event

__all__ = [
    "AgentProvider",
    "AgentRun",
    "Call",
    "Capabilities",
    "Interrupted",
    "Responded",
    "Started",
    "event_watcher",
    "told",
    "watch_events",
]


class Capabilities(msgspec.Struct, frozen=True, kw_only=True):
    """What a provider can do. A ``False`` capability is refused up front, never faked."""

    approvals: bool = False
    input_requests: bool = False
    interrupt: bool = False
    resume: bool = False
    reasoning: bool = False
    usage: bool = False

    def require(self, capability: str, *, provider: str) -> None:
        """``CapabilityError`` naming the capability if this provider lacks it."""
        if capability not in self.__struct_fields__:
            raise CapabilityError(
                f"unknown capability {capability!r}; known: {', '.join(self.__struct_fields__)}"
            )
        if not getattr(self, capability):
            have = [name for name in self.__struct_fields__ if getattr(self, name)]
            raise CapabilityError(
                f"provider {provider!r} cannot do {capability!r} "
                f"(it declares: {', '.join(have) or 'nothing'}); "
                f"use a provider that declares it, or do not ask for it"
            )


@runtime_checkable
class AgentRun(Protocol):
    """One run (one agent turn) as it streams."""

    @property
    def run_id(self) -> str: ...

    @property
    def session_id(self) -> str:
        """The resume handle of the session this run belongs to."""
        ...

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def interrupt(self, reason: str = "interrupted") -> None:
        """End the run; it finishes with ``run.killed``."""
        ...

    async def respond(self, request_id: str, decision: str) -> None:
        """Answer an open request: ``"allow"``/``"deny"`` for an approval, text for input."""
        ...


@runtime_checkable
class AgentProvider(Protocol):
    """Starts runs on one agent runtime and turns its wire into normalized events."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def session_id(self) -> str:
        """The resume handle of the current session."""
        ...

    def start(self, prompt: str, *, resume: str | None = None) -> AgentRun:
        """Start a run from ``prompt`` (continuing session ``resume`` if given)."""
        ...

    async def aclose(self) -> None:
        """Stop every run still going (they end with ``run.killed``) and release resources."""
        ...


# --- who is told of the events of the runs driven (the failure timeline) --------------------

#: Told of each event of a run as it reaches whoever iterates the run (``drive``, ``play``,
#: ``async for``): each run tells it (``told``) as it hands an event over (the claude, codex,
#: scripted and pydantic-ai runs).
EventWatcher: TypeAlias = Callable[[Event], None]

_watcher: EventWatcher | None = None


def watch_events(watcher: EventWatcher | None) -> EventWatcher | None:
    """Tell ``watcher`` of every event of every run iterated from now on, in this process
    (``None``: tell no one); returns the watcher it replaces, to put back. The pytest plugin
    sets its test's timeline here for the test's call and puts the previous one back after
    it; with no watcher set, a run pays one ``None`` check per event."""
    global _watcher
    previous, _watcher = _watcher, watcher
    return previous


def event_watcher() -> EventWatcher | None:
    """The watcher ``watch_events`` set, if any."""
    return _watcher


def told(event: Event) -> Event:
    """``event``, after telling the watcher of it (if one is set): what a run calls on each
    event it hands to its consumer."""
    if _watcher is not None:
        _watcher(event)
    return event


# --- what a fake provider records of its callers ---------------------------------------------


class Started(msgspec.Struct, frozen=True, kw_only=True, tag="started"):
    run_id: str
    prompt: str
    resume: str | None = None


class Interrupted(msgspec.Struct, frozen=True, kw_only=True, tag="interrupted"):
    run_id: str
    reason: str


class Responded(msgspec.Struct, frozen=True, kw_only=True, tag="responded"):
    run_id: str
    request_id: str
    decision: str


#: A call made to a fake provider, as recorded in ``provider.calls``.
Call: TypeAlias = Started | Interrupted | Responded
