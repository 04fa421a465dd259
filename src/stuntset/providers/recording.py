"""A registry of providers by name for the layers above (a session host, a runner), recording
the lifecycle of every provider it hands out: created, started, interrupted, responded,
closed — in one ordered list, so a test asserts on what the host did, in what order.

::

    runners = ProviderRegistry({"scripted": lambda: ScriptedProvider(script), "stuck": StuckProvider})
    host = SessionService(log=log, store=store, providers=runners)
    ...
    assert [r.what for r in runners.lifecycle] == ["created", "started", "interrupted", "closed"]
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Literal

import msgspec

from stuntset.errors import UsageError
from stuntset.events import Event
from stuntset.providers.base import AgentProvider, AgentRun, Capabilities

__all__ = ["Lifecycle", "ProviderRegistry", "RecordingProvider", "RecordingRun"]

What = Literal["created", "started", "interrupted", "responded", "closed"]


class Lifecycle(msgspec.Struct, frozen=True):
    """One thing that happened to a provider handed out by a registry."""

    provider: str
    instance: int
    what: What
    detail: str | None = None


class RecordingRun:
    """A run that records its interrupts and responses, passing everything through."""

    def __init__(self, run: AgentRun, provider: RecordingProvider) -> None:
        self._run = run
        self._provider = provider

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def session_id(self) -> str:
        return self._run.session_id

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._run.__aiter__()

    async def interrupt(self, reason: str = "interrupted") -> None:
        self._provider._note("interrupted", reason)
        await self._run.interrupt(reason)

    async def respond(self, request_id: str, decision: str) -> None:
        self._provider._note("responded", f"{request_id}={decision}")
        await self._run.respond(request_id, decision)


class RecordingProvider:
    """An ``AgentProvider`` that records its lifecycle into its registry and delegates."""

    def __init__(
        self, inner: AgentProvider, registry: ProviderRegistry, name: str, instance: int
    ) -> None:
        self.inner = inner
        self._registry = registry
        self._label = name
        self._instance = instance
        self._note("created", None)

    def _note(self, what: What, detail: str | None) -> None:
        self._registry.lifecycle.append(Lifecycle(self._label, self._instance, what, detail))

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def session_id(self) -> str:
        return self.inner.session_id

    def start(self, prompt: str, *, resume: str | None = None) -> RecordingRun:
        self._note("started", prompt if resume is None else f"{prompt} (resume {resume})")
        return RecordingRun(self.inner.start(prompt, resume=resume), self)

    async def aclose(self) -> None:
        self._note("closed", None)
        await self.inner.aclose()


class ProviderRegistry(Mapping[str, Callable[[], AgentProvider]]):
    """Provider factories by name; each factory it hands out makes ``RecordingProvider``s.

    It is a ``Mapping`` of zero-argument factories, so it plugs in wherever a host takes a
    registry (``SessionService(providers=registry)``).
    """

    def __init__(self, factories: Mapping[str, Callable[[], AgentProvider]] | None = None) -> None:
        self._factories: dict[str, Callable[[], AgentProvider]] = dict(factories or {})
        self.lifecycle: list[Lifecycle] = []
        self.made: dict[str, list[RecordingProvider]] = {}

    def register(self, name: str, factory: Callable[[], AgentProvider]) -> None:
        """Add (or replace) the factory for ``name``."""
        self._factories[name] = factory

    def __getitem__(self, name: str) -> Callable[[], AgentProvider]:
        if name not in self._factories:
            known = ", ".join(sorted(self._factories)) or "none"
            raise UsageError(
                f"no provider named {name!r} in the registry (known: {known}); register it first"
            )
        factory = self._factories[name]

        def make() -> AgentProvider:
            made = self.made.setdefault(name, [])
            provider = RecordingProvider(factory(), self, name, len(made) + 1)
            made.append(provider)
            return provider

        return make

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)

    def events(self, name: str | None = None) -> list[tuple[str, What]]:
        """``(provider, what)`` pairs in order (of one provider name, or all)."""
        return [(r.provider, r.what) for r in self.lifecycle if name is None or r.provider == name]
