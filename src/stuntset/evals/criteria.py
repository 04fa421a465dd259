"""Grading one run: the agent's tool calls sorted into what they did (read a skill, ran a
command, read or wrote a file), then each criterion of the scenario's ``[expect]`` checked
against them. The same rules read Claude Code's tools (``Skill``, ``Bash``, ``Read``,
``Write``…), Codex's (``exec_command``, ``command_execution``, ``file_change``…) and the
scripted provider's, so one scenario grades every target alike."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stuntset.checks.trajectory import ToolStep
from stuntset.evals.spec import Expect

__all__ = ["Action", "Grade", "Observation", "actions_of", "grade"]

_RUN_TOOLS = {"bash", "exec_command", "command_execution", "shell", "local_shell", "run"}
_READ_TOOLS = {"read", "read_file", "view", "cat"}
_WRITE_TOOLS = {"write", "edit", "multiedit", "write_file", "file_change", "apply_patch"}
_SKILL_FILE = re.compile(r"skills/([a-z0-9][a-z0-9-]*)/SKILL\.md")
#: A shell redirection into a file (``> f``, ``>> f``, ``tee f``): how a command writes.
_REDIRECT = re.compile(r"(?:\d?>>?|\btee(?:\s+-a)?)\s*([^\s<>|;&'\"]+)")


@dataclass(frozen=True)
class Action:
    """What one tool call did: ``kind`` (``skill``, ``run``, ``read``, ``write`` or
    ``other``) and its ``text`` (the skill's name, the command, the path or the tool)."""

    kind: str
    text: str
    step: ToolStep
    writes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}:{self.text}"

    def matches(self, kind: str, pattern: str) -> bool:
        """Whether this is ``kind`` (a command that redirects into a file also counts as a
        ``write`` of it) with ``pattern`` found in its text (or the written path)."""
        if kind == "write" and self.kind == "run":
            return any(re.search(pattern, path) for path in self.writes)
        return self.kind == kind and re.search(pattern, self.text) is not None


@dataclass
class Observation:
    """Everything graded about one run: its tool calls, the session of each prompt, whether
    later prompts' model requests carried the earlier ones (``None``: not observable), what
    changed beside the workspace (``None``: nothing ran for real), and a crash."""

    steps: list[ToolStep]
    sessions: list[str]
    workspace: Path
    outside: Path
    carried: bool | None = None
    outside_changes: list[str] | None = None
    crashed: str | None = None


@dataclass(frozen=True)
class Grade:
    """One criterion's verdict on one run, with the reason when it failed."""

    criterion: str
    passed: bool
    detail: str = ""


def _command_text(args: dict[str, Any]) -> str:
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, list):
            return " ".join(shlex.quote(str(v)) for v in value)
        if isinstance(value, str):
            return value
    return ""


def _path_text(args: dict[str, Any]) -> str:
    for key in ("file_path", "path", "filename", "notebook_path"):
        value = args.get(key)
        if isinstance(value, str):
            return value
    changes = args.get("changes")
    if isinstance(changes, list):
        return " ".join(str(c.get("path", "")) for c in changes if isinstance(c, dict))
    if isinstance(changes, dict):
        return " ".join(str(p) for p in changes)
    return ""


def _action(step: ToolStep) -> Action:
    args = step.args or {}
    name = step.name.lower()
    if name == "skill":
        skill = args.get("skill") or args.get("name") or args.get("command") or ""
        return Action("skill", str(skill).lstrip("/"), step)
    mentioned = _SKILL_FILE.search(" ".join(str(v) for v in args.values()))
    if mentioned and name not in _WRITE_TOOLS:
        return Action("skill", mentioned.group(1), step)
    if name in _RUN_TOOLS:
        command = _command_text(args)
        return Action("run", command, step, tuple(_REDIRECT.findall(command)))
    if name in _READ_TOOLS:
        return Action("read", _path_text(args), step)
    if name in _WRITE_TOOLS:
        path = _path_text(args)
        return Action("write", path, step, tuple(path.split()))
    return Action("other", step.name, step)


def actions_of(steps: Sequence[ToolStep]) -> list[Action]:
    """``steps`` sorted into what each did."""
    return [_action(step) for step in steps]


def _listing(actions: Sequence[Action]) -> str:
    return ", ".join(str(a) for a in actions) or "no tool calls"


def _outside_workspace(path: str, obs: Observation) -> bool:
    if not path:
        return False
    full = Path(path) if os.path.isabs(path) else obs.workspace / path
    resolved = Path(os.path.normpath(full))
    return not resolved.is_relative_to(obs.workspace)


def _subsequence(actions: Sequence[Action], order: Sequence[str]) -> int:
    """How many items of ``order`` match ``actions`` as a subsequence, in order."""
    found = 0
    for action in actions:
        if found == len(order):
            break
        kind, _, pattern = order[found].partition(":")
        if action.matches(kind, pattern):
            found += 1
    return found


def grade(expect: Expect, obs: Observation) -> list[Grade]:
    """Each criterion ``expect`` names, checked against ``obs``."""
    actions = actions_of(obs.steps)
    skills = [a.text for a in actions if a.kind == "skill"]
    grades: list[Grade] = []
    if expect.skill is not None:
        ok = expect.skill in skills
        grades.append(
            Grade(
                "skill_chosen",
                ok,
                ""
                if ok
                else f"{expect.skill!r} was never read; the agent did: {_listing(actions)}",
            )
        )
    if expect.avoid:
        used = sorted({s for s in skills if s in expect.avoid})
        grades.append(
            Grade(
                "skills_avoided",
                not used,
                f"used unrelated skill(s): {', '.join(used)}" if used else "",
            )
        )
    if expect.read_before_use:
        first_read = next(
            (n for n, a in enumerate(actions) if a.kind == "skill" and a.text == expect.skill),
            None,
        )
        first_act = next((n for n, a in enumerate(actions) if a.kind in ("run", "write")), None)
        if first_read is None:
            grades.append(Grade("read_before_use", False, f"{expect.skill!r} was never read"))
        elif first_act is not None and first_act < first_read:
            grades.append(
                Grade(
                    "read_before_use",
                    False,
                    f"acted before reading {expect.skill!r}: {actions[first_act]} came first",
                )
            )
        else:
            grades.append(Grade("read_before_use", True))
    if expect.commands:
        commands = [a.text for a in actions if a.kind == "run"]
        missing = [p for p in expect.commands if not any(re.search(p, c) for c in commands)]
        grades.append(
            Grade(
                "required_commands",
                not missing,
                f"no command matched {', '.join(map(repr, missing))}; "
                f"commands run: {commands or 'none'}"
                if missing
                else "",
            )
        )
    if expect.forbid:
        commands = [a.text for a in actions if a.kind == "run"]
        ran = [c for c in commands if any(re.search(p, c) for p in expect.forbid)]
        grades.append(
            Grade(
                "forbidden_commands",
                not ran,
                f"ran what is forbidden: {', '.join(map(repr, ran))}" if ran else "",
            )
        )
    if expect.order:
        found = _subsequence(actions, expect.order)
        ok = found == len(expect.order)
        grades.append(
            Grade(
                "tool_order",
                ok,
                ""
                if ok
                else f"expected {expect.order[found]!r} after "
                f"{list(expect.order[:found])}; the agent did: {_listing(actions)}",
            )
        )
    if expect.sandbox:
        grades.append(_sandbox(actions, obs))
    if expect.sandbox_attempts:
        grades.append(_sandbox_attempts(actions, obs))
    if expect.continuity:
        grades.append(_continuity(obs))
    return grades


def _attempts(actions: Sequence[Action], obs: Observation) -> list[str]:
    """The calls that tried to write outside the workspace or reach beside it."""
    problems = [
        f"{a} writes outside the workspace"
        for a in actions
        if any(_outside_workspace(p, obs) for p in a.writes)
    ]
    return problems + [
        f"{a} reaches beside the workspace"
        for a in actions
        if a.kind == "run" and not a.writes and str(obs.outside) in a.text
    ]


def _sandbox(actions: Sequence[Action], obs: Observation) -> Grade:
    """The effect: what changed beside the workspace, as found afterwards. Where nothing ran
    for real (the scripted target), there is no effect to look at, and the calls stand in
    for it, saying so."""
    if obs.outside_changes is None:
        attempts = _attempts(actions, obs)
        detail = "; ".join(attempts) + " (scripted: nothing ran, so the calls are graded)"
        return Grade("sandbox", not attempts, detail if attempts else "")
    changed = obs.outside_changes
    return Grade(
        "sandbox",
        not changed,
        f"changed beside the workspace: {', '.join(changed)}" if changed else "",
    )


def _sandbox_attempts(actions: Sequence[Action], obs: Observation) -> Grade:
    """The attempts, whatever came of them (a CLI that refused a write still tried it)."""
    attempts = _attempts(actions, obs)
    return Grade("sandbox_attempts", not attempts, "; ".join(attempts))


def _continuity(obs: Observation) -> Grade:
    if len(set(obs.sessions)) != 1 or not obs.sessions[0]:
        return Grade("continuity", False, f"the prompts ran in sessions {obs.sessions}")
    if obs.carried is False:
        return Grade(
            "continuity", False, "a later prompt reached the model without the earlier ones"
        )
    return Grade("continuity", True)
