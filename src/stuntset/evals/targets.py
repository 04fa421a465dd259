"""Where an eval runs: the scripted provider (in process, nothing executes), or the real
``claude`` / ``codex`` binary that ships in the ``claude`` / ``codex`` extra, pointed at the
model doubles (offline; the binary really runs the commands, reads the skills and writes the
files) or, with ``live``, at the real provider.

On the doubles a behaviour becomes a script: each tool step one model turn (the binary runs
the tool and sends the result back), each ``say`` the turn that ends the prompt. The skills
are written where each CLI looks for them: ``.claude/skills/NAME/SKILL.md`` (Claude Code's
``Skill`` tool loads it) and ``.agents/skills/NAME/SKILL.md`` (Codex lists it in its
instructions and the model reads it with a command).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from stuntset.checks.trajectory import trajectory_of
from stuntset.checks.workspace import WorkspaceSnapshot
from stuntset.driver import drive
from stuntset.errors import UsageError
from stuntset.evals.criteria import Observation
from stuntset.evals.spec import Behaviour, EvalSpec, Step
from stuntset.events import Event, RunCrashed, RunStarted
from stuntset.script import Script, Text, ToolCall, ToolResult

__all__ = ["TARGETS", "Target", "Workdir", "binary_for", "make_target"]

TARGETS = ("scripted", "claude", "codex")
#: Environment variables that name the real binaries (else the one the extra ships).
BINARY_ENV = {"claude": "STUNTSET_CLAUDE_BIN", "codex": "STUNTSET_CODEX_BIN"}
LIVE_KEYS = {"claude": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY"}
_EXTRA_MODULE = {"claude": "claude_agent_sdk", "codex": "openai_codex"}


@dataclass(frozen=True)
class Workdir:
    """One run's directories: the agent's ``workspace``, a directory ``outside`` it with a
    canary file the agent must leave alone, and a ``home`` for the CLI's own state."""

    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def prepare(self, spec: EvalSpec) -> None:
        for directory in (self.workspace, self.outside, self.home):
            directory.mkdir(parents=True, exist_ok=True)
        (self.outside / "canary.txt").write_text("leave me alone\n")
        for relative, content in spec.files.items():
            path = self.workspace / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.fill(content))
        for skill in spec.skills.values():
            for root in (".claude/skills", ".agents/skills"):
                path = self.workspace / root / skill.name / "SKILL.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(skill.markdown())

    def fill(self, text: str) -> str:
        return text.replace("{workspace}", str(self.workspace)).replace(
            "{outside}", str(self.outside)
        )


class Target(Protocol):
    """Plays one run of a scenario (``behaviour`` is ``None`` live) and observes it."""

    name: str

    async def play(
        self, spec: EvalSpec, behaviour: Behaviour | None, workdir: Workdir
    ) -> Observation: ...


def binary_for(cli: str) -> Path:
    """The real ``cli`` binary: ``$STUNTSET_<CLI>_BIN``, else the one its extra ships."""
    named = os.environ.get(BINARY_ENV[cli])
    if named:
        path = Path(named)
        if not path.is_file():
            raise UsageError(f"{BINARY_ENV[cli]}={named}: no such file")
        return path
    spec = importlib.util.find_spec(_EXTRA_MODULE[cli])
    if spec is None or spec.origin is None:
        raise UsageError(
            f"the {cli} target needs the real {cli} binary: pip install 'stuntset[{cli}]' "
            f"(or set {BINARY_ENV[cli]})"
        )
    if cli == "claude":
        path = Path(spec.origin).parent / "_bundled" / "claude"
    else:
        found = importlib.util.find_spec("codex_cli_bin")
        path = (
            Path(found.origin).parent / "bin" / "codex"
            if found is not None and found.origin is not None
            else Path("")
        )
    if not path.is_file():
        raise UsageError(f"no {cli} binary ships with this install: set {BINARY_ENV[cli]}")
    return path


# --- the scripted provider ------------------------------------------------------------------


def _scripted_turn(steps: Sequence[Step], workdir: Workdir, spec: EvalSpec) -> list[Any]:
    out: list[Any] = []
    for step in steps:
        value = workdir.fill(step.value)
        if step.kind == "skill":
            out += [
                ToolCall("Skill", {"skill": value}),
                ToolResult(spec.skills[value].instructions),
            ]
        elif step.kind == "run":
            out += [ToolCall("Bash", {"command": value}), ToolResult("")]
        elif step.kind == "read":
            out += [ToolCall("Read", {"file_path": value}), ToolResult("")]
        elif step.kind == "write":
            out += [
                ToolCall("Write", {"file_path": value, "content": step.content}),
                ToolResult("written"),
            ]
        else:
            out.append(Text(value))
    return out


class ScriptedTarget:
    """The scripted provider plays the behaviour: fast and exact; nothing executes."""

    name = "scripted"

    async def play(
        self, spec: EvalSpec, behaviour: Behaviour | None, workdir: Workdir
    ) -> Observation:
        from stuntset.providers.scripted import ScriptedProvider

        assert behaviour is not None
        script = Script.of(*(_scripted_turn(seg, workdir, spec) for seg in behaviour.segments()))
        provider = ScriptedProvider(script)
        return await _play_prompts(provider, spec, workdir, timeout=10.0)


async def _play_prompts(
    provider: Any, spec: EvalSpec, workdir: Workdir, *, timeout: float
) -> Observation:
    events: list[Event] = []
    sessions: list[str] = []
    crashed = None
    for n, prompt in enumerate(spec.prompts):
        resume = provider.session_id if n else None
        run = provider.start(prompt, resume=resume or None)
        got = await drive(run, approve="allow", answer="yes", check=False, timeout=timeout)
        events += got
        sessions.append(
            provider.session_id
            or next((e.session_id for e in got if isinstance(e, RunStarted)), "")
        )
        crash = next((e for e in got if isinstance(e, RunCrashed)), None)
        if crash is not None:
            crashed = f"{crash.kind}: {crash.message}"
            break
    return Observation(
        steps=trajectory_of(events),
        sessions=sessions,
        workspace=workdir.workspace,
        outside=workdir.outside,
        crashed=crashed,
    )


# --- the real binaries ----------------------------------------------------------------------


def _claude_turns(steps: Sequence[Step], workdir: Workdir) -> list[list[Any]]:
    turns: list[list[Any]] = []
    for step in steps:
        value = workdir.fill(step.value)
        if step.kind == "skill":
            turns.append([ToolCall("Skill", {"skill": value})])
        elif step.kind == "run":
            turns.append([ToolCall("Bash", {"command": value})])
        elif step.kind == "read":
            turns.append([ToolCall("Read", {"file_path": str(workdir.workspace / value)})])
        elif step.kind == "write":
            path = str(workdir.workspace / value)
            turns.append([ToolCall("Write", {"file_path": path, "content": step.content})])
        else:
            turns.append([Text(value)])
    return turns


def _codex_turns(steps: Sequence[Step], workdir: Workdir) -> list[list[Any]]:
    turns: list[list[Any]] = []
    for step in steps:
        value = workdir.fill(step.value)
        if step.kind == "skill":
            command = f"cat .agents/skills/{value}/SKILL.md"
        elif step.kind == "run":
            command = value
        elif step.kind == "read":
            command = f"cat {value}"
        elif step.kind == "write":
            command = f"cat > {value} <<'STUNTSET_EOF'\n{step.content}\nSTUNTSET_EOF"
        else:
            turns.append([Text(value)])
            continue
        turns.append([ToolCall("exec_command", {"cmd": command})])
    return turns


def _carried(requests: Sequence[Any], prompts: Sequence[str]) -> bool | None:
    """Whether every model request that carries a later prompt also carries the earlier."""
    if len(prompts) < 2:
        return None
    bodies = [json.dumps(r.json) for r in requests]
    for n in range(1, len(prompts)):
        later = [b for b in bodies if json.dumps(prompts[n])[1:-1] in b]
        if not later:
            return False
        earlier = [json.dumps(p)[1:-1] for p in prompts[:n]]
        if not all(all(e in b for e in earlier) for b in later):
            return False
    return True


class CliTarget:
    """The real ``claude`` or ``codex`` binary, over the model doubles or (``live``) the
    real provider, through stuntset's provider adapter for it."""

    def __init__(self, cli: str, *, live: bool = False, binary: Path | None = None) -> None:
        if cli not in ("claude", "codex"):
            raise UsageError(f"no CLI target {cli!r}: choose claude or codex")
        if live and not os.environ.get(LIVE_KEYS[cli]):
            raise UsageError(f"eval --live on {cli} needs {LIVE_KEYS[cli]} set")
        self.name = f"{cli}-live" if live else cli
        self.cli = cli
        self.live = live
        self.binary = binary if binary is not None else binary_for(cli)

    async def play(
        self, spec: EvalSpec, behaviour: Behaviour | None, workdir: Workdir
    ) -> Observation:
        from stuntset.doubles.model import serve

        outside = WorkspaceSnapshot.take(workdir.outside)
        async with AsyncExitStack() as stack:
            base_url = None
            stand_in = None
            if not self.live:
                assert behaviour is not None
                make = _claude_turns if self.cli == "claude" else _codex_turns
                turns = [t for seg in behaviour.segments() for t in make(seg, workdir)]
                stand_in = stack.enter_context(serve(Script.of(*turns)))
                base_url = stand_in.url("anthropic" if self.cli == "claude" else "openai")
            provider = self._provider(workdir, base_url)
            stack.push_async_callback(provider.aclose)
            obs = await _play_prompts(provider, spec, workdir, timeout=120.0)
            if stand_in is not None:
                obs.carried = _carried(stand_in.requests, spec.prompts)
        changes = outside.changes()
        obs.outside_changes = [
            f"{kind} {path}"
            for kind, paths in (
                ("added", changes.added),
                ("modified", changes.modified),
                ("deleted", changes.deleted),
            )
            for path in paths
        ]
        return obs

    def _provider(self, workdir: Workdir, base_url: str | None) -> Any:
        if self.cli == "claude":
            return self._claude_provider(workdir, base_url)
        return self._codex_provider(workdir, base_url)

    def _claude_provider(self, workdir: Workdir, base_url: str | None) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions

        from stuntset.providers.claude_code import ClaudeCodeProvider

        env = {
            "HOME": str(workdir.home),
            "CLAUDE_CONFIG_DIR": str(workdir.home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        if base_url is not None:
            env |= {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "stuntset"}
        options = ClaudeAgentOptions(
            cli_path=str(self.binary),
            env=env,
            cwd=str(workdir.workspace),
            setting_sources=["project"],
            model=None if self.live else "claude-sonnet-4-5",
        )
        return ClaudeCodeProvider(options, close_timeout=30.0)

    def _codex_provider(self, workdir: Workdir, base_url: str | None) -> Any:
        from stuntset.providers.codex import CodexProvider

        env = {"CODEX_HOME": str(workdir.home)}
        # the workspace writable, nothing else: Codex's own sandbox, as users run it
        config = 'sandbox_mode = "workspace-write"\n'
        if base_url is not None:
            env["OPENAI_API_KEY"] = "stuntset"
            config = (
                f'model = "gpt-5"\nmodel_provider = "stuntset"\n{config}\n'
                f'[model_providers.stuntset]\nname = "stuntset"\nbase_url = "{base_url}"\n'
                'wire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n'
            )
        (workdir.home / "config.toml").write_text(config)
        return CodexProvider(
            str(self.binary),
            cwd=str(workdir.workspace),
            env=env,
            model=None if self.live else "gpt-5",
            close_timeout=30.0,
        )


def make_target(name: str, *, live: bool = False) -> Target:
    """The target called ``name`` (one of ``TARGETS``)."""
    if name == "scripted":
        if live:
            raise UsageError("the scripted target has no live mode: choose claude or codex")
        return ScriptedTarget()
    if name in ("claude", "codex"):
        return CliTarget(name, live=live)
    raise UsageError(f"no eval target {name!r}: choose one of {', '.join(TARGETS)}")


def remove(workdir: Workdir) -> None:
    shutil.rmtree(workdir.root, ignore_errors=True)
