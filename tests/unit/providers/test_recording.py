from __future__ import annotations

from pathlib import Path

import pytest

from stuntset import drive, scenarios
from stuntset.errors import UsageError
from stuntset.events import RunStarted
from stuntset.log import SqliteEventLog
from stuntset.providers import AgentProvider, ScriptedProvider, StuckProvider
from stuntset.providers.recording import Lifecycle, ProviderRegistry
from stuntset.runtime import SessionService
from stuntset.runtime.store import SessionStore

pytestmark = pytest.mark.anyio


async def test_the_lifecycle_is_recorded_in_order() -> None:
    registry = ProviderRegistry(
        {"scripted": lambda: ScriptedProvider(scenarios.build("needs_approval"))}
    )
    registry.register("stuck", StuckProvider)
    scripted = registry["scripted"]()
    stuck = registry["stuck"]()
    assert isinstance(scripted, AgentProvider)
    await drive(scripted.start("clean up"), approve="deny")
    await drive(stuck.start("wait"), interrupt_when=lambda e: isinstance(e, RunStarted))
    await stuck.aclose()
    assert registry.events() == [
        ("scripted", "created"),
        ("stuck", "created"),
        ("scripted", "started"),
        ("scripted", "responded"),
        ("stuck", "started"),
        ("stuck", "interrupted"),
        ("stuck", "closed"),
    ]
    assert registry.lifecycle[3] == Lifecycle("scripted", 1, "responded", "approval-1=deny")
    assert registry.lifecycle[5].detail == "interrupted by drive()"
    assert [p.name for p in registry.made["scripted"]] == ["scripted"]
    assert sorted(registry) == ["scripted", "stuck"]
    assert len(registry) == 2
    assert "stuck" in registry
    assert "nope" not in registry


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(
        UsageError, match=r"no provider named 'codex' in the registry \(known: stuck\)"
    ):
        ProviderRegistry({"stuck": StuckProvider})["codex"]


async def test_a_host_takes_the_registry_and_its_order_is_observable(tmp_path: Path) -> None:
    registry = ProviderRegistry(
        {"scripted": lambda: ScriptedProvider(scenarios.build("multi_turn", turns=2))}
    )
    log = SqliteEventLog(tmp_path / "events.db")
    store = SessionStore(tmp_path / "host.db")
    async with SessionService(log=log, store=store, providers=registry) as host:
        task = host.create_task(tmp_path)
        session = host.create_session(task.task_id, "scripted")
        for prompt in ("one", "two"):
            await host.start_turn(session.session_id, prompt)
            await host.wait_idle(session.session_id)
    log.close()
    store.close()
    assert registry.events("scripted") == [
        ("scripted", "created"),
        ("scripted", "started"),
        ("scripted", "started"),
        ("scripted", "closed"),
    ]


async def test_the_fake_runner_fixture_hands_out_catalog_providers(
    fake_runner: ProviderRegistry,
) -> None:
    assert "tool_use" in fake_runner
    assert "stuck" in fake_runner
    provider = fake_runner["tool_use"]()
    events = await drive(provider.start("go"))
    assert events[-1].type == "run.completed"
    assert fake_runner.events() == [("tool_use", "created"), ("tool_use", "started")]
