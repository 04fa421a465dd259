"""Keyed smoke tests per agent CLI, on one scenario file: the ``doubles`` half runs in every
run (the fake CLI plays ``scenarios/hello.toml``); the ``live`` half runs only with
``--live``, the key and ``STUNTSET_CLAUDE_BIN``/``STUNTSET_CODEX_BIN`` set (skipped saying
which is missing otherwise), on the real binary. The assertions hold for both: the run ends
with a successful result."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

SCENARIO = "scenarios/hello.toml"
PROMPT = "Reply with the single word: hello"


def tiers(env: str) -> list[Any]:
    return ["doubles", pytest.param("live", marks=pytest.mark.live(env=env))]


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("tier", tiers("ANTHROPIC_API_KEY"))
@pytest.mark.fake_claude(SCENARIO)
def test_claude_answers(tier: str, claude_bin: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(claude_bin), "-p", PROMPT, "--output-format", "stream-json", "--verbose"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=tmp_path,
    )
    result = json_lines(done.stdout)[-1]
    assert result["type"] == "result"
    assert result["is_error"] is False
    assert "hello" in result["result"].lower()


@pytest.mark.parametrize("tier", tiers("OPENAI_API_KEY"))
@pytest.mark.fake_codex(SCENARIO)
def test_codex_answers(tier: str, codex_bin: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(codex_bin), "exec", "--json", "--skip-git-repo-check", PROMPT],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=tmp_path,
    )
    events = json_lines(done.stdout)
    assert events[-1]["type"] == "turn.completed"
    said = [
        e["item"]["text"]
        for e in events
        if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
    ]
    assert "hello" in " ".join(said).lower()
