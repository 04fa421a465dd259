"""The eval targets without running a binary: finding the real binaries (or saying what to
install), each CLI's turns for a behaviour, whether later prompts carried the earlier ones,
and a crashed run ending the prompts. The binaries themselves: tests/interop/test_evals.py."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from stuntset.errors import UsageError
from stuntset.evals import binary_for, loads_eval
from stuntset.evals.spec import Step
from stuntset.evals.targets import (
    CliTarget,
    Workdir,
    _carried,
    _claude_turns,
    _codex_turns,
    _play_prompts,
    _scripted_turn,
)
from stuntset.providers import ScriptedProvider
from stuntset.script import Exit, Script, Text, ToolCall, ToolResult

SPEC = """
prompts = {prompts}
[[behaviour]]
steps = [{says}]
[expect]
sandbox = true
"""


def test_a_binary_named_in_the_environment_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "my-claude"
    mine.write_text("#!/bin/sh\n")
    monkeypatch.setenv("STUNTSET_CLAUDE_BIN", str(mine))
    assert binary_for("claude") == mine


def test_without_the_extra_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STUNTSET_CLAUDE_BIN", raising=False)
    monkeypatch.delenv("STUNTSET_CODEX_BIN", raising=False)
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)  # as if not installed
    with pytest.raises(UsageError, match=r"pip install 'stuntset\[claude\]'"):
        binary_for("claude")
    monkeypatch.setitem(sys.modules, "codex_cli_bin", None)  # the SDK without its binary
    with pytest.raises(UsageError, match="no codex binary ships with this install"):
        binary_for("codex")


def test_only_claude_and_codex_are_cli_targets() -> None:
    with pytest.raises(UsageError, match="no CLI target 'gemini': choose claude or codex"):
        CliTarget("gemini", binary=Path("/bin/true"))


def test_each_target_reads_a_file_its_own_way(tmp_path: Path) -> None:
    workdir = Workdir(tmp_path)
    read = [Step("read", "notes.md")]
    spec = loads_eval(SPEC.format(prompts='["p"]', says='{ say = "x" }'))
    assert _scripted_turn(read, workdir, spec) == [
        ToolCall("Read", {"file_path": "notes.md"}),
        ToolResult(""),
    ]
    assert _claude_turns(read, workdir) == [
        [ToolCall("Read", {"file_path": str(workdir.workspace / "notes.md")})]
    ]
    assert _codex_turns(read, workdir) == [[ToolCall("exec_command", {"cmd": "cat notes.md"})]]


def _requests(*bodies: object) -> list[SimpleNamespace]:
    return [SimpleNamespace(json=body) for body in bodies]


def test_continuity_is_seen_in_the_model_requests() -> None:
    prompts = ["first ask", "second ask"]
    carried = _requests({"input": "first ask"}, {"input": ["first ask", "second ask"]})
    assert _carried(carried, prompts) is True
    forgot = _requests({"input": "first ask"}, {"input": ["second ask"]})
    assert _carried(forgot, prompts) is False
    never_sent = _requests({"input": "first ask"})
    assert _carried(never_sent, prompts) is False
    assert _carried(carried, prompts[:1]) is None  # one prompt: nothing to carry


def test_a_crashed_run_ends_the_prompts_and_is_observed(tmp_path: Path) -> None:
    spec = loads_eval(SPEC.format(prompts='["one", "two"]', says='{ say = "x" }, { say = "y" }'))
    workdir = Workdir(tmp_path)
    workdir.prepare(spec)
    provider = ScriptedProvider(Script.of([Text("dying"), Exit(3)], [Text("never")]))

    async def play() -> object:
        return await _play_prompts(provider, spec, workdir, timeout=10.0)

    observed = anyio.run(play)
    assert observed.crashed is not None  # type: ignore[attr-defined]
    assert observed.crashed.startswith("exited: ")  # type: ignore[attr-defined]
    assert len(observed.sessions) == 1  # type: ignore[attr-defined]  # "two" never played
