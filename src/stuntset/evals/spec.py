"""Eval scenarios as files: what the agent is asked, the skills and files it finds, how the
model behaves on the doubles, and what a passing run looks like.

::

    prompt = "What does report.pdf say?"     # or prompts = ["first", "then"] for one session
    runs = 10                                # how many times `stuntset eval` plays it
    min_pass_rate = 0.7                      # optional: below it the command exits 1

    [files]                                  # the agent's workspace
    "extract.py" = "print('text of report')"

    [skills.pdf]                             # written for every CLI to find
    description = "Extract text from PDF files."
    instructions = "Run `python3 extract.py FILE`."

    [[behaviour]]                            # the model on the doubles: one chosen per run
    weight = 3
    steps = [{ skill = "pdf" }, { run = "python3 extract.py report.pdf" }, { say = "It says…" }]
    passes = true                            # optional: what the graders must say of it

    [expect]
    skill = "pdf"                            # skill decision: chosen…
    avoid = ["xlsx"]                         # …and these not (default: every other skill)
    read_before_use = true                   # compliance: SKILL.md read before acting
    commands = ["extract\\.py report\\.pdf"] # compliance: required steps (regexes)
    forbid = ["curl", "rm -rf"]              # compliance: commands no run may match
    order = ["skill:pdf", "run:extract"]     # workflow: tool order (a subsequence)
    sandbox = true                           # workflow: nothing beside the workspace changed
    sandbox_attempts = true                  # …and no call tried to write or reach there
    continuity = true                        # workflow: every prompt in one session

A behaviour's steps are ``skill`` (read that skill's instructions), ``run`` (a shell
command), ``read`` (a file), ``write`` (a file, with ``content``) and ``say`` (the answer that
ends the turn: one per prompt). In commands and paths ``{workspace}`` and ``{outside}`` stand
for the workspace and a directory beside it that the agent must leave alone. Errors name the
file and the field.

Offline (on the doubles) the behaviours are scripted: which one plays is drawn by weight, so
the pass rate follows the weights and tests the graders and the wiring, not the agent. A
behaviour's ``passes`` says what the graders must make of it; a run where they disagree is
reported (``stuntset eval`` exits 1). Only ``--live`` runs measure the agent.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stuntset.errors import EvalFileError

__all__ = [
    "STEP_KINDS",
    "Behaviour",
    "EvalSpec",
    "Expect",
    "Skill",
    "Step",
    "load_eval",
    "loads_eval",
]

STEP_KINDS = ("skill", "run", "read", "write", "say")
_TOP = {"name", "prompt", "prompts", "runs", "min_pass_rate", "files", "skills", "behaviour"}
_EXPECT = {
    "skill",
    "avoid",
    "read_before_use",
    "commands",
    "forbid",
    "order",
    "sandbox",
    "sandbox_attempts",
    "continuity",
}
_ORDER_KINDS = ("skill", "run", "read", "write")
_SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    instructions: str

    def markdown(self) -> str:
        """The SKILL.md both CLIs read: front matter, then the instructions."""
        return (
            f"---\nname: {self.name}\ndescription: {self.description}\n---\n\n"
            f"{self.instructions.rstrip()}\n"
        )


@dataclass(frozen=True)
class Step:
    """One thing the scripted model does: ``kind`` in ``STEP_KINDS`` and its ``value`` (the
    skill, the command, the path or the text); ``content`` for ``write``."""

    kind: str
    value: str
    content: str = ""


@dataclass(frozen=True)
class Behaviour:
    weight: float
    steps: tuple[Step, ...]
    #: what the graders must say of this behaviour (``None``: not declared)
    passes: bool | None = None

    def segments(self) -> list[tuple[Step, ...]]:
        """The steps of each prompt: each segment ends with its ``say``."""
        out: list[tuple[Step, ...]] = []
        current: list[Step] = []
        for step in self.steps:
            current.append(step)
            if step.kind == "say":
                out.append(tuple(current))
                current = []
        return out


@dataclass(frozen=True)
class Expect:
    skill: str | None = None
    avoid: tuple[str, ...] = ()
    read_before_use: bool = False
    commands: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    sandbox: bool = False
    sandbox_attempts: bool = False
    continuity: bool = False

    def criteria(self) -> list[str]:
        """The names of the criteria this expectation grades, in report order."""
        names = []
        if self.skill is not None:
            names.append("skill_chosen")
        if self.avoid:
            names.append("skills_avoided")
        if self.read_before_use:
            names.append("read_before_use")
        if self.commands:
            names.append("required_commands")
        if self.forbid:
            names.append("forbidden_commands")
        if self.order:
            names.append("tool_order")
        if self.sandbox:
            names.append("sandbox")
        if self.sandbox_attempts:
            names.append("sandbox_attempts")
        if self.continuity:
            names.append("continuity")
        return names


@dataclass(frozen=True)
class EvalSpec:
    """One eval scenario, loaded from ``source``."""

    name: str
    source: str
    prompts: tuple[str, ...]
    expect: Expect
    runs: int = 5
    min_pass_rate: float | None = None
    files: dict[str, str] = field(default_factory=dict)
    skills: dict[str, Skill] = field(default_factory=dict)
    behaviours: tuple[Behaviour, ...] = ()


def _fail(source: str, place: str, message: str) -> EvalFileError:
    return EvalFileError(f"{source}: {place}: {message}" if place else f"{source}: {message}")


def _string(source: str, place: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _fail(source, place, f"must be a string, got {type(value).__name__}")
    return value


def _strings(source: str, place: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _fail(source, place, f"must be a list of strings, got {type(value).__name__}")
    return tuple(_string(source, f"{place}[{n}]", item) for n, item in enumerate(value))


def _unknown(source: str, place: str, table: dict[str, Any], known: set[str]) -> None:
    extra = sorted(set(table) - known)
    if extra:
        where = f"{place}: " if place else ""
        raise EvalFileError(
            f"{source}: {where}unknown key {extra[0]!r} (known: {', '.join(sorted(known))})"
        )


def _step(source: str, place: str, raw: Any, skills: dict[str, Skill]) -> Step:
    if not isinstance(raw, dict):
        raise _fail(source, place, 'a step is a table such as { run = "make test" }')
    kinds = [k for k in raw if k in STEP_KINDS]
    if len(kinds) != 1:
        raise _fail(source, place, f"a step has exactly one of {', '.join(STEP_KINDS)}")
    (kind,) = kinds
    _unknown(source, place, raw, {kind, "content"} if kind == "write" else {kind})
    value = _string(source, f"{place}.{kind}", raw[kind])
    if kind == "skill" and value not in skills:
        raise _fail(source, f"{place}.skill", f"no skill {value!r} is declared under [skills]")
    content = _string(source, f"{place}.content", raw.get("content", ""))
    return Step(kind, value, content)


def _behaviours(
    source: str, raw: Any, skills: dict[str, Skill], prompts: int
) -> tuple[Behaviour, ...]:
    if not isinstance(raw, list):
        raise _fail(source, "behaviour", "must be an array of tables ([[behaviour]])")
    out = []
    for n, table in enumerate(raw):
        place = f"behaviour[{n}]"
        if not isinstance(table, dict):
            raise _fail(source, place, "must be a table")
        _unknown(source, place, table, {"weight", "steps", "passes"})
        passes = table.get("passes")
        if passes is not None:
            passes = _flag(source, f"{place}.passes", passes)
        weight = table.get("weight", 1)
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not math.isfinite(weight)
            or weight <= 0
            or weight > 1e12
        ):
            raise _fail(
                source,
                f"{place}.weight",
                f"must be a positive, finite number (at most 1e12), got {weight!r}",
            )
        steps_raw = table.get("steps")
        if not isinstance(steps_raw, list) or not steps_raw:
            raise _fail(source, f"{place}.steps", "must be a non-empty list of steps")
        steps = tuple(
            _step(source, f"{place}.steps[{i}]", s, skills) for i, s in enumerate(steps_raw)
        )
        behaviour = Behaviour(float(weight), steps, passes)
        if steps[-1].kind != "say" or len(behaviour.segments()) != prompts:
            raise _fail(
                source,
                f"{place}.steps",
                f"must end each of the {prompts} prompt(s) with a say step "
                f"(found {len(behaviour.segments())} say step(s), the last step is "
                f"{steps[-1].kind!r})",
            )
        out.append(behaviour)
    return tuple(out)


def _skills(source: str, raw: Any) -> dict[str, Skill]:
    if not isinstance(raw, dict):
        raise _fail(source, "skills", "must be a table of [skills.NAME] tables")
    out = {}
    for name, table in raw.items():
        place = f"skills.{name}"
        if not _SKILL_NAME.match(name):
            raise _fail(source, place, "a skill name is lowercase letters, digits and '-'")
        if not isinstance(table, dict):
            raise _fail(source, place, "must be a table with description and instructions")
        _unknown(source, place, table, {"description", "instructions"})
        for key in ("description", "instructions"):
            if key not in table:
                raise _fail(source, place, f"missing {key!r}")
        description = _string(source, f"{place}.description", table["description"])
        if "\n" in description:
            raise _fail(source, f"{place}.description", "must be one line")
        out[name] = Skill(
            name, description, _string(source, f"{place}.instructions", table["instructions"])
        )
    return out


def _files(source: str, raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise _fail(source, "files", "must be a table of path = content")
    out = {}
    for path, content in raw.items():
        parts = Path(path).parts
        if Path(path).is_absolute() or ".." in parts or not parts:
            raise _fail(source, f"files.{path!r}", "must be a relative path inside the workspace")
        out[path] = _string(source, f"files.{path!r}", content)
    return out


def _order_item(source: str, place: str, item: str) -> str:
    kind, _, _ = item.partition(":")
    if kind not in _ORDER_KINDS or ":" not in item:
        raise _fail(source, place, f"must be KIND:PATTERN with KIND in {', '.join(_ORDER_KINDS)}")
    _regex(source, place, item.partition(":")[2])
    return item


def _regex(source: str, place: str, pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as error:
        raise _fail(source, place, f"not a regular expression: {error}") from None
    return pattern


def _flag(source: str, place: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(source, place, f"must be true or false, got {value!r}")
    return value


def _expect(source: str, raw: Any, skills: dict[str, Skill], prompts: int) -> Expect:
    if not isinstance(raw, dict):
        raise _fail(source, "expect", "must be a table")
    _unknown(source, "expect", raw, _EXPECT)
    skill = raw.get("skill")
    if skill is not None:
        skill = _string(source, "expect.skill", skill)
        if skill not in skills:
            raise _fail(source, "expect.skill", f"no skill {skill!r} is declared under [skills]")
    if "avoid" in raw:
        avoid = _strings(source, "expect.avoid", raw["avoid"])
        for n, name in enumerate(avoid):
            if name not in skills:
                raise _fail(source, f"expect.avoid[{n}]", f"no skill {name!r} is declared")
    else:
        avoid = tuple(name for name in skills if name != skill) if skill else ()
    read_before_use = _flag(
        source, "expect.read_before_use", raw.get("read_before_use", bool(skill))
    )
    if read_before_use and skill is None:
        raise _fail(source, "expect.read_before_use", "needs expect.skill (which skill to read)")
    continuity = _flag(source, "expect.continuity", raw.get("continuity", prompts > 1))
    return Expect(
        skill=skill,
        avoid=avoid,
        read_before_use=read_before_use,
        commands=tuple(
            _regex(source, f"expect.commands[{n}]", c)
            for n, c in enumerate(_strings(source, "expect.commands", raw.get("commands", [])))
        ),
        forbid=tuple(
            _regex(source, f"expect.forbid[{n}]", c)
            for n, c in enumerate(_strings(source, "expect.forbid", raw.get("forbid", [])))
        ),
        order=tuple(
            _order_item(source, f"expect.order[{n}]", o)
            for n, o in enumerate(_strings(source, "expect.order", raw.get("order", [])))
        ),
        sandbox=_flag(source, "expect.sandbox", raw.get("sandbox", False)),
        sandbox_attempts=_flag(
            source, "expect.sandbox_attempts", raw.get("sandbox_attempts", False)
        ),
        continuity=continuity,
    )


def loads_eval(text: str, *, source: str = "<eval>", name: str | None = None) -> EvalSpec:
    """An eval scenario from TOML ``text``; errors name ``source`` and the field."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise EvalFileError(f"{source}: not TOML: {error}") from None
    except RecursionError:
        raise EvalFileError(f"{source}: not a usable eval file: nested too deep") from None
    except ValueError as error:  # an integer of more than 4,300 digits
        raise EvalFileError(f"{source}: not a usable eval file: {error}") from None
    _unknown(source, "", raw, _TOP | {"expect"})
    if ("prompt" in raw) == ("prompts" in raw):
        raise _fail(source, "prompt", "give exactly one of prompt or prompts")
    prompts = (
        (_string(source, "prompt", raw["prompt"]),)
        if "prompt" in raw
        else _strings(source, "prompts", raw["prompts"])
    )
    if not prompts or not all(p.strip() for p in prompts):
        raise _fail(source, "prompts", "every prompt must be non-empty")
    runs = raw.get("runs", 5)
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 10_000:
        raise _fail(source, "runs", f"must be a whole number from 1 to 10000, got {runs!r}")
    rate = raw.get("min_pass_rate")
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1
    ):
        raise _fail(source, "min_pass_rate", f"must be a number from 0 to 1, got {rate!r}")
    files = _files(source, raw.get("files", {}))
    skills = _skills(source, raw.get("skills", {}))
    behaviours = _behaviours(source, raw.get("behaviour", []), skills, len(prompts))
    expect = _expect(source, raw.get("expect", {}), skills, len(prompts))
    if not expect.criteria():
        raise _fail(source, "expect", "names no criterion: a run would pass whatever it did")
    eval_name = _string(source, "name", raw.get("name", name or "eval"))
    if (
        not eval_name.strip()
        or eval_name in (".", "..")
        or any(bad in eval_name for bad in ("/", "\\", "\0"))
        or len(eval_name) > 200
    ):
        raise _fail(
            source,
            "name",
            "names the run's folder: no '/', '\\' or NUL, not '.' or '..', not empty, "
            f"at most 200 characters; got {eval_name!r}",
        )
    return EvalSpec(
        name=eval_name,
        source=source,
        prompts=prompts,
        expect=expect,
        runs=runs,
        min_pass_rate=None if rate is None else float(rate),
        files=files,
        skills=skills,
        behaviours=behaviours,
    )


def load_eval(path: str | Path) -> EvalSpec:
    """The eval scenario in the TOML file at ``path`` (named after the file by default)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise EvalFileError(f"{path}: not a regular file (an eval file is TOML)")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise EvalFileError(f"{path}: cannot read it: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EvalFileError(f"{path}: not UTF-8 text (byte {error.start})") from None
    return loads_eval(text, source=str(path), name=path.stem)
