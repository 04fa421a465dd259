"""``StuckProvider``: every run starts and then never finishes until interrupted or closed."""

from __future__ import annotations

from typing import Any

from stuntset.providers.base import Capabilities
from stuntset.providers.scripted import ScriptedProvider
from stuntset.script import Script, Stall, Step, Text, TurnRequest

__all__ = ["StuckProvider"]

_CAPABILITIES = Capabilities(interrupt=True, resume=True)


class StuckProvider(ScriptedProvider):
    """A provider whose runs hang: ``run.started`` (and an optional ``preamble`` message),
    then nothing until ``interrupt()`` or ``aclose()`` ends them with ``run.killed``.

    For testing the timeouts, cancel buttons and watchdogs of the layers above.
    """

    __test__ = False

    def __init__(self, *, preamble: str | None = None, name: str = "stuck", **options: Any) -> None:
        steps: list[Step] = [Text(preamble)] if preamble else []
        steps.append(Stall())

        def stuck_turn(request: TurnRequest) -> list[Step]:
            return steps

        super().__init__(Script.from_function(stuck_turn, name="stuck"), name=name, **options)

    @property
    def capabilities(self) -> Capabilities:
        return _CAPABILITIES
