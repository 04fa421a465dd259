"""Deliberately broken providers: each breaks one conformance invariant.

Each is a ``ScriptedProvider`` with one realistic bug planted in its runs (``_Tampered``
wraps the correct ``ScriptedRun``). ``BROKEN`` maps the invariant each breaks to its class
and the scenario where the bug shows.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import msgspec

from stuntset.events import (
    Event,
    InputResolved,
    MessageDelta,
    ReasoningDelta,
    RunStarted,
    ToolCompleted,
    Usage,
)
from stuntset.providers import Capabilities, ScriptedProvider, ScriptedRun


class _Tampered:
    """A run that delegates to a correct ``ScriptedRun`` and lets a subclass bend it."""

    def __init__(self, inner: ScriptedRun, provider: BrokenProvider) -> None:
        self.inner = inner
        self.provider = provider
        self.queue: list[Event] = []

    @property
    def run_id(self) -> str:
        return self.inner.run_id

    @property
    def session_id(self) -> str:
        return self.inner.session_id

    def __aiter__(self) -> _Tampered:
        return self

    async def __anext__(self) -> Event:
        if self.queue:
            return self.queue.pop(0)
        return self.bend(await self.inner.__anext__())

    def bend(self, event: Event) -> Event:
        return event

    async def interrupt(self, reason: str = "interrupted") -> None:
        await self.inner.interrupt(reason)

    async def respond(self, request_id: str, decision: str) -> None:
        await self.inner.respond(request_id, decision)

    async def aclose(self) -> None:
        await self.inner.aclose()


class BrokenProvider(ScriptedProvider):
    run_class: type[_Tampered] = _Tampered

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        return self.run_class(super().start(prompt, resume=resume), self)


# --- one bug each ----------------------------------------------------------------------------


class _AfterTerminal(_Tampered):
    def bend(self, event: Event) -> Event:
        if event.terminal:
            self.queue.append(MessageDelta(run_id=self.run_id, ts=event.ts, item_id="x", text="!"))
        return event


class EmitsAfterTerminal(BrokenProvider):
    """Sends one more delta after the terminal event."""

    run_class = _AfterTerminal


class _MessageFirst(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, RunStarted):
            self.queue.append(event)
            return MessageDelta(run_id=self.run_id, ts=event.ts, item_id="early", text="hi")
        return event


class MessageBeforeStarted(BrokenProvider):
    """Streams a delta before ``run.started``."""

    run_class = _MessageFirst


class _DeafToInterrupt(_Tampered):
    async def interrupt(self, reason: str = "interrupted") -> None:
        return None


class IgnoresInterrupt(BrokenProvider):
    """``interrupt()`` does nothing: a stalled run stays stalled."""

    run_class = _DeafToInterrupt


class _TwoTerminals(_Tampered):
    def bend(self, event: Event) -> Event:
        if event.terminal:
            self.queue.append(event)
        return event


class TerminatesTwice(BrokenProvider):
    """Delivers its terminal event twice."""

    run_class = _TwoTerminals


class _NeverEnds(_Tampered):
    async def __anext__(self) -> Event:
        if self.inner.finished:
            await asyncio.Event().wait()  # the stream never ends after its terminal event
        return await super().__anext__()


class NeverEndsIteration(BrokenProvider):
    """After its terminal event the iterator blocks instead of ending."""

    run_class = _NeverEnds


class _AllowsEverything(_Tampered):
    async def respond(self, request_id: str, decision: str) -> None:
        await self.inner.respond(request_id, "allow")


class IgnoresDenial(BrokenProvider):
    """Treats every approval answer as "allow"."""

    run_class = _AllowsEverything


class _RunsDeniedTool(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, ToolCompleted) and event.is_error:
            return msgspec.structs.replace(event, is_error=False, output="ran anyway")
        return event


class RunsDeniedTool(BrokenProvider):
    """Reports the denial but runs the tool anyway."""

    run_class = _RunsDeniedTool


class _LosesAnswer(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, InputResolved):
            return msgspec.structs.replace(event, text="")
        return event


class LosesInputAnswer(BrokenProvider):
    """Resolves input requests with an empty text."""

    run_class = _LosesAnswer


class ForgetsSession(BrokenProvider):
    """``start(resume=...)`` quietly starts a new session."""

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        if resume is not None:
            self._session_id = self.ids.new("session")
        return super().start(prompt)


class _RunIdFromSession(_Tampered):
    @property
    def run_id(self) -> str:
        return f"run-of-{self.inner.session_id}"

    def bend(self, event: Event) -> Event:
        return msgspec.structs.replace(event, run_id=self.run_id)


class ReusesRunId(BrokenProvider):
    """Names each run after its session, so a resumed run gets the first run's id again."""

    run_class = _RunIdFromSession


class _LeaksTask(_Tampered):
    async def __anext__(self) -> Event:
        if self.provider.leaked is None:
            task = asyncio.get_running_loop().create_task(asyncio.sleep(3600), name="leaked")
            self.provider.leaked = task
        return await super().__anext__()


class LeaksTask(BrokenProvider):
    """Starts a background task per run and never cancels it (asyncio only)."""

    run_class = _LeaksTask

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.leaked: Any = None


class _LeaksProcess(_Tampered):
    async def __anext__(self) -> Event:
        if self.provider.process is None:
            self.provider.process = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(60)"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        return await super().__anext__()


class LeaksProcess(BrokenProvider):
    """Spawns a runtime process per run and never stops it."""

    run_class = _LeaksProcess

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.process: subprocess.Popen[bytes] | None = None


class IgnoresClose(ScriptedProvider):
    """``aclose()`` releases nothing and ends no run."""

    async def aclose(self) -> None:
        return None


class AcceptsUndeclaredResume(ScriptedProvider):
    """Declares no ``resume`` but accepts ``start(resume=...)`` anyway."""

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(interrupt=True, approvals=True, input_requests=True, usage=True)


class AcceptsUndeclaredInterrupt(ScriptedProvider):
    """Declares no ``interrupt`` but accepts ``interrupt()`` anyway."""

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(resume=True, approvals=True, input_requests=True, usage=True)


class _Reasoning(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, RunStarted):
            self.queue.append(
                ReasoningDelta(run_id=self.run_id, ts=event.ts, item_id="r", text=".")
            )
        return event


class UndeclaredReasoning(BrokenProvider):
    """Emits reasoning without declaring ``reasoning``."""

    run_class = _Reasoning

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(interrupt=True, resume=True, usage=True)


class _ZeroUsage(_Tampered):
    def bend(self, event: Event) -> Event:
        if event.terminal and not any(isinstance(e, Usage) for e in self.inner.events):
            self.queue.append(event)
            return Usage(run_id=self.run_id, ts=event.ts, input_tokens=0, output_tokens=0)
        return event


class ReportsZeroUsage(BrokenProvider):
    """Reports usage 0/0 when the runtime gave none."""

    run_class = _ZeroUsage


#: invariant → (the provider that breaks it, a scenario where it shows)
BROKEN: dict[str, tuple[type[ScriptedProvider], str]] = {
    "started-first": (MessageBeforeStarted, "happy_path"),
    "contract": (EmitsAfterTerminal, "happy_path"),
    "terminates": (TerminatesTwice, "tool_use"),
    "interrupt-terminates": (IgnoresInterrupt, "stuck"),
    "close-kills": (IgnoresClose, "stuck"),
    "approval-honoured": (IgnoresDenial, "needs_approval"),
    "input-honoured": (LosesInputAnswer, "input_request"),
    "resume-round-trips": (ForgetsSession, "multi_turn"),
    "early-close-releases": (LeaksTask, "long_stream"),
    "capabilities-refused": (AcceptsUndeclaredResume, "happy_path"),
    "capabilities-honest": (UndeclaredReasoning, "happy_path"),
    "usage-not-zero": (ReportsZeroUsage, "spawn_missing"),
}
