"""A provider that breaks, for the session-service tests (the scripted provider never raises)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

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
