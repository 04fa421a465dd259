"""Playing one side of one scenario in one column (``drift.runners``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk")

from stuntset import scenarios
from stuntset.drift.runners import play_side

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the claude adapter runs its CLI sessions on asyncio


async def test_the_developers_own_claude_settings_do_not_reach_the_fake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake claude reads user-level hooks as the real CLI does; drift runs it, like the
    real one, in a home of its own."""
    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    fired = tmp_path / "fired"
    hook = {"type": "command", "command": f"echo x >> {fired}"}
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    script = scenarios.build("happy_path")
    played = await play_side("claude", "fake", script, tmp_path / "fake")
    assert played.error is None
    assert [e.type for e in played.events][-1] == "run.completed"
    assert not fired.exists()
