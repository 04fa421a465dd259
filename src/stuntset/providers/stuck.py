"""``StuckProvider``: every run starts and then never finishes by itself.

How its runs take a cancel is the ``cancel`` option, for testing the timeouts, cancel
buttons and watchdogs of the layers above against the three ways a runtime hangs:

- ``"ends"`` (the default): ``interrupt()`` ends the run with ``run.killed``;
- ``"ignored"``: ``interrupt()`` returns at once and has no effect, the run goes on;
- ``"blocks"``: ``interrupt()`` itself never returns (until the run is closed).

In every mode ``aclose()`` (of the run or of the provider) ends the run with ``run.killed``
and releases a blocked ``interrupt()``: closing is the teardown, so nothing is left waiting.
Nothing sleeps: a run waits on an event that only ``interrupt()`` (mode ``"ends"``) or
``aclose()`` sets.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio

from stuntset.errors import UsageError
from stuntset.providers.base import Capabilities, Interrupted
from stuntset.providers.scripted import ScriptedProvider, ScriptedRun
from stuntset.script import Script, Stall, Step, Text, Turn, TurnRequest

__all__ = ["CancelMode", "StuckProvider"]

#: How a stuck run takes ``interrupt()``: it ``"ends"`` the run, is ``"ignored"``, or ``"blocks"``.
CancelMode = Literal["ends", "ignored", "blocks"]
_MODES: tuple[CancelMode, ...] = ("ends", "ignored", "blocks")

_CAPABILITIES = Capabilities(interrupt=True, resume=True)


class StuckProvider(ScriptedProvider):
    """A provider whose runs hang: ``run.started`` (and an optional ``preamble`` message),
    then nothing. ``cancel`` says what ``interrupt()`` does (see the module): ``"ends"`` the
    run with ``run.killed``, is ``"ignored"``, or ``"blocks"`` the caller. ``aclose()``
    always ends the run.

    ``blocked_interrupts`` counts the ``interrupt()`` calls waiting right now (mode
    ``"blocks"``), so a test can wait until its host is stuck in one.
    """

    __test__ = False

    def __init__(
        self,
        *,
        preamble: str | None = None,
        cancel: CancelMode = "ends",
        name: str = "stuck",
        **options: Any,
    ) -> None:
        if cancel not in _MODES:
            raise UsageError(
                f"StuckProvider(cancel={cancel!r}): cancel is one of {', '.join(_MODES)}"
            )
        self.cancel: CancelMode = cancel
        self.blocked_interrupts = 0
        steps: list[Step] = [Text(preamble)] if preamble else []
        steps.append(Stall())

        def stuck_turn(request: TurnRequest) -> list[Step]:
            return steps

        super().__init__(Script.from_function(stuck_turn, name="stuck"), name=name, **options)

    @property
    def capabilities(self) -> Capabilities:
        return _CAPABILITIES

    def _make_run(self, run_id: str, turn: Turn) -> ScriptedRun:
        if self.cancel == "ends":
            return ScriptedRun(self, run_id, turn)
        return _DeafRun(self, run_id, turn)


class _DeafRun(ScriptedRun):
    """A stuck run whose ``interrupt()`` is ignored or blocks; only a close ends it."""

    __test__ = False

    def __init__(self, provider: StuckProvider, run_id: str, turn: Turn) -> None:
        super().__init__(provider, run_id, turn)
        self._stuck = provider
        self._closed: anyio.Event | None = None

    async def interrupt(self, reason: str = "interrupted") -> None:
        self._stuck.calls.append(Interrupted(run_id=self.run_id, reason=reason))
        if self._stuck.cancel == "ignored" or self._killed is not None or self.finished:
            return
        if self._closed is None:
            self._closed = anyio.Event()
        self._stuck.blocked_interrupts += 1
        try:
            await self._closed.wait()  # set only by kill(), i.e. by a close
        finally:
            self._stuck.blocked_interrupts -= 1

    def kill(self, reason: str) -> None:
        # called by aclose() of the run or the provider (interrupt() above never calls it)
        super().kill(reason)
        if self._closed is not None:
            self._closed.set()
