"""A provider that breaks, for the session-service tests (the scripted provider never raises)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec

from stuntset.events import Event
from stuntset.providers import ScriptedProvider
from stuntset.providers.scripted import ScriptedRun


class ProviderBroke(RuntimeError):
    pass


class BreakingRun:
    """A scripted run that raises ``ProviderBroke`` after ``after`` events."""

    def __init__(self, run: ScriptedRun, after: int) -> None:
        self._run = run
        self._after = after

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def session_id(self) -> str:
        return self._run.session_id

    async def __aiter__(self) -> AsyncIterator[Event]:
        count = 0
        async for event in self._run:
            if count == self._after:
                raise ProviderBroke("the connection to the agent dropped")
            count += 1
            yield event

    async def interrupt(self, reason: str = "interrupted") -> None:
        await self._run.interrupt(reason)

    async def respond(self, request_id: str, decision: str) -> None:
        await self._run.respond(request_id, decision)


class BreakingProvider(ScriptedProvider):
    """A ``ScriptedProvider`` whose next run raises after ``break_after`` events (once)."""

    def __init__(self, *args: Any, break_after: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.break_after = break_after

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        run = super().start(prompt, resume=resume)
        if self.break_after is None:
            return run
        after, self.break_after = self.break_after, None
        return BreakingRun(run, after)


class CorruptingRun(BreakingRun):
    """A scripted run whose event number ``after`` comes out with ``ts`` as a string (a buggy
    adapter that forgot to parse a timestamp)."""

    async def __aiter__(self) -> AsyncIterator[Event]:
        count = 0
        async for event in self._run:
            if count == self._after:
                event = msgspec.structs.replace(event, ts="2026-01-01T00:00:00Z")
            count += 1
            yield event


class CorruptingProvider(ScriptedProvider):
    """A ``ScriptedProvider`` whose next run emits one bad event after ``corrupt_after``."""

    def __init__(self, *args: Any, corrupt_after: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.corrupt_after = corrupt_after

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        run = super().start(prompt, resume=resume)
        if self.corrupt_after is None:
            return run
        after, self.corrupt_after = self.corrupt_after, None
        return CorruptingRun(run, after)
