"""Playing one catalog scenario in one column, twice, through the same SDK adapter:

``real``  the real binary (``claude`` bundled in the claude-agent-sdk wheel; ``codex`` from
          the openai-codex-cli-bin wheel; ``gemini``, ``@google/gemini-cli`` from npm, the one
          the Node tier installs in ``tests/node``) over the model double on loopback:
          ``claude`` reads ``ANTHROPIC_BASE_URL``, ``codex`` a custom model provider
          (``base_url``, Responses wire) in the ``config.toml`` of a ``CODEX_HOME`` of its own,
          ``gemini`` ``GOOGLE_GEMINI_BASE_URL`` (the Gemini wire) with the API-key auth method
          in a ``settings.json`` of its own (``gemini_cli.gemini_env``);
``fake``  stuntset's fake CLI playing the same script.

A column is a CLI and the interface it is driven through (``COLUMNS``):

``claude``          ``ClaudeCodeProvider`` (claude-agent-sdk): one ``ClaudeSDKClient`` per
                    run — connect, one query, its response, disconnect;
``claude-session``  one ``ClaudeSDKClient`` session for the whole scenario — connect, a query
                    and its response, the next query in the same session, ``interrupt()`` on
                    a stalled one (``claude_session``; which scenarios: ``sessions``);
``codex``           ``CodexProvider`` (openai-codex, ``codex app-server``);
``codex-exec``      ``codex exec --json``, read as ``@openai/codex-sdk`` reads it
                    (``codex_exec``: the Python SDK has no exec interface);
``gemini``          ``gemini -p … --output-format stream-json --yolo`` (``gemini_cli``: no
                    SDK drives the Gemini CLI; its headless stream is what an app reads).

Each side is played the way the conformance suite plays a run (approvals allowed, questions
answered ``yes``, a stalled run interrupted), so what comes back are two lists of normalized
events. Every program runs in a home and a working directory of its own under ``workdir``,
with no key but a dummy one.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from stuntset.checks._conformance_play import play, stall_expectation
from stuntset.errors import UsageError
from stuntset.events import Event
from stuntset.providers.base import AgentProvider
from stuntset.script import Script, Stall

__all__ = [
    "BINARY_ENV",
    "CLIS",
    "COLUMNS",
    "NODE_GEMINI",
    "PROMPT",
    "Played",
    "Side",
    "binary_version",
    "chosen_binary",
    "missing",
    "play_side",
    "real_binary",
]

#: column → the CLI it runs (the program, its model API wire and its fake).
COLUMNS = {
    "claude": "claude",
    "claude-session": "claude",
    "codex": "codex",
    "codex-exec": "codex",
    "gemini": "gemini",
}
CLIS = tuple(COLUMNS)
Side = Literal["real", "fake"]

#: The prompt every run gets (the conformance suite's: catalog scripts match any prompt).
PROMPT = "Hello from the stuntset conformance suite"

#: The package each CLI's real binary ships in, and the binary's place inside it.
_BINARIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "claude": ("claude_agent_sdk", ("_bundled", "claude")),
    "codex": ("codex_cli_bin", ("bin", "codex")),
}
#: Where the Node tier (``make node``: ``npm ci`` in ``tests/node``) installs the real
#: ``gemini`` (``@google/gemini-cli``), in a source checkout; no Python package ships it.
NODE_GEMINI = (
    Path(__file__).resolve().parents[3].joinpath("tests", "node", "node_modules", ".bin", "gemini")
)
#: The SDK each column is driven through (``codex exec`` has none: ``codex_exec`` reads it).
SDKS: dict[str, str | None] = {
    "claude": "claude_agent_sdk",
    "claude-session": "claude_agent_sdk",
    "codex": "openai_codex",
    "codex-exec": None,
    "gemini": None,
}
#: A stalling run with no event for this long (real time) is interrupted.
_QUIET = 15.0
#: Fake CLIs' time scale: their scripted delays shortened (the model double's are skipped).
_TIME_SCALE = {"claude": 0.1, "codex": 0.01, "gemini": 0.1}


@dataclass
class Played:
    """One side's run: its events, or why it could not be played."""

    events: list[Event] = field(default_factory=list)
    error: str | None = None
    requests: int = 0  # requests the model double received (the real side)
    seconds: float = 0.0  # wall time of the run, start to close
    cwd: str = ""  # the program's working directory (``$CWD`` in the compared steps)
    #: what the run's final result said beyond the events, as its adapter read it (the
    #: run's ``result_fields``: claude's ``ResultMessage`` subtype, ``is_error``,
    #: ``api_error_status`` and usage presence; codex's turn status, error info and usage
    #: presence); empty when no result came (or the column has none: ``claude-session``)
    result: dict[str, Any] = field(default_factory=dict)


#: The variables naming the real binary to drift against (before the bundled one).
BINARY_ENV = {
    "claude": "STUNTSET_CLAUDE_BIN",
    "codex": "STUNTSET_CODEX_BIN",
    "gemini": "STUNTSET_GEMINI_BIN",
}


def chosen_binary(
    program: str,
    given: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    node_gemini: Path = NODE_GEMINI,
) -> Path | None:
    """The real ``program`` (``claude``/``codex``/``gemini``) to drift against: ``given``
    (its ``--<program>-bin``), else ``$STUNTSET_<PROGRAM>_BIN``, else the bundled one (for
    ``gemini``, the Node tier's at ``node_gemini``; ``None`` when not installed). A named
    binary that is not an executable file is a ``UsageError``."""
    env = os.environ if environ is None else environ
    variable = BINARY_ENV[program]
    where, named = (f"--{program}-bin", given) if given else (variable, env.get(variable))
    if not named:
        return real_binary(program, node_gemini)
    path = Path(named)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"{where} {named}: not an executable file")
    return path


def binary_version(binary: Path, timeout: float = 60.0) -> str:
    """What ``binary --version`` prints (its first line), or why it could not say."""
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"version unknown: {error}"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else f"version unknown: exit {done.returncode}, no output"


def real_binary(cli: str, node_gemini: Path = NODE_GEMINI) -> Path | None:
    """The real binary of column ``cli`` shipped in its package (``gemini``: the Node tier's
    ``node_gemini``), or ``None`` when that is not installed."""
    program = COLUMNS.get(cli, cli)
    if program == "gemini":
        return node_gemini if node_gemini.is_file() else None
    package, inside = _BINARIES[program]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*inside)
    return path if path.is_file() else None


def missing(program: str, node_gemini: Path = NODE_GEMINI) -> str:
    """Why ``program``'s column cannot be played (no real binary was found), in one line."""
    variable, option = BINARY_ENV[program], f"--{program}-bin"
    if program == "gemini":
        return (
            f"no real gemini: none given ({option}, ${variable}) and the Node tier's "
            f"@google/gemini-cli is not installed ({node_gemini}: make node)"
        )
    return (
        f"no real {program}: none given ({option}, ${variable}) and the {program} extra's "
        f"bundled binary is not installed (pip install 'stuntset[{program}]')"
    )


def codex_home(home: Path, base_url: str, model: str = "gpt-5") -> dict[str, str]:
    """A ``CODEX_HOME`` whose ``config.toml`` sends the real ``codex`` to ``base_url`` (a
    Responses API), and the environment pointing at it."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "stuntset"\n'
        "[model_providers.stuntset]\n"
        'name = "stuntset"\n'
        f'base_url = "{base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "OPENAI_API_KEY"\n'
        # one retry, not five with backoff: a failure scenario's run ends in seconds, not
        # half a minute, and the retry (that 503 → recovered needs) is still exercised
        "request_max_retries = 1\n"
        "stream_max_retries = 1\n"
    )
    return {
        "CODEX_HOME": str(home),
        "HOME": str(home),
        "OPENAI_API_KEY": "sk-stuntset-drift",
        **NO_ENCLOSING_MAKE,
    }


#: A drift run started from make (``make real``, CI) hands MAKELEVEL and MAKEFLAGS to the real
#: binary, whose shell tool then runs the scripted ``make`` as a sub-make: "make[1]: Entering
#: directory …" around the scripted output (seen in CI). Emptied for both binaries.
NO_ENCLOSING_MAKE = {"MAKELEVEL": "", "MAKEFLAGS": "", "MFLAGS": ""}


def claude_env(home: Path, base_url: str) -> dict[str, str]:
    """The environment sending the real ``claude`` to the Anthropic API at ``base_url``."""
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-stuntset-drift",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **NO_ENCLOSING_MAKE,
    }


def _claude(cli_path: Path, cwd: Path, env: dict[str, str] | None = None) -> AgentProvider:
    from claude_agent_sdk import ClaudeAgentOptions

    from stuntset.providers.claude_code import ClaudeCodeProvider

    options: dict[str, Any] = {"cli_path": str(cli_path), "cwd": str(cwd), "stderr": _quiet}
    if env is not None:
        options.update(env=env, model="claude-sonnet-4-5")
    return ClaudeCodeProvider(ClaudeAgentOptions(**options))


def _codex(cli_path: Path, cwd: Path, env: dict[str, str]) -> AgentProvider:
    from stuntset.providers.codex import CodexProvider

    return CodexProvider(str(cli_path), cwd=str(cwd), env=env)


def _quiet(line: str) -> None:
    """The CLIs' stderr is not part of the comparison."""


def _exec(cli_path: Path, cwd: Path, env: dict[str, str]) -> AgentProvider:
    from .codex_exec import ExecProvider

    return ExecProvider(str(cli_path), cwd=str(cwd), env=env)


def _gemini(binary: Path, cwd: Path, home: Path, base_url: str) -> AgentProvider:
    from .gemini_cli import GeminiCliProvider, gemini_env

    env = {**gemini_env(home, base_url), **NO_ENCLOSING_MAKE}
    return GeminiCliProvider(str(binary), cwd=str(cwd), env=env)


def make_real(cli: str, binary: Path, where: Path, base_url: str) -> AgentProvider:
    """A provider for column ``cli``'s real binary at ``binary``, its model API at
    ``base_url``."""
    cwd = where / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    if COLUMNS[cli] == "gemini":
        return _gemini(binary, cwd, where / "home", base_url)
    if COLUMNS[cli] == "claude":
        return _claude(binary, cwd, claude_env(where / "home", base_url))
    env = codex_home(where / "codex-home", base_url)
    return _exec(binary, cwd, env) if cli == "codex-exec" else _codex(binary, cwd, env)


def make_fake(cli: str, script: Script, where: Path) -> AgentProvider:
    """A provider for column ``cli``'s fake playing ``script``."""
    from stuntset.doubles.cli import install_cli

    program = COLUMNS[cli]
    cwd = where / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    installed = install_cli(program, script, bin_dir=where / "bin", time_scale=_TIME_SCALE[program])
    if program == "gemini":  # the same settings as the real one's (it calls no model API)
        return _gemini(installed.path, cwd, where / "home", "http://127.0.0.1:9/gemini")
    if program == "claude":  # a home of its own, as the real one: no user-level hooks
        home = where / "home"
        return _claude(
            installed.path, cwd, {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
        )
    # the same config.toml as the real binary's (the fake reads its retry settings; it calls
    # no model API, so the URL is never used)
    env = codex_home(where / "codex-home", "http://127.0.0.1:9/openai/v1")
    return (
        _exec(installed.path, cwd, env) if cli == "codex-exec" else _codex(installed.path, cwd, env)
    )


def _stalls(script: Script) -> bool:
    return any(isinstance(s, Stall) for t in script.turns for s in t.steps)


async def _play(
    provider: AgentProvider, script: Script, timeout: float, prompts: Sequence[str] | None
) -> Played:
    if prompts is not None:  # the claude-session column: one ClaudeSDKClient session
        from .claude_session import play_session

        began = time.monotonic()
        events, error = await play_session(provider, script, prompts, timeout=timeout, quiet=_QUIET)
        return Played(events, error, seconds=time.monotonic() - began)
    began = time.monotonic()
    try:
        run = provider.start(PROMPT)
        played = await play(
            run,
            timeout=timeout,
            stall_after=_QUIET,
            approve=lambda event: "allow",
            answer=lambda event: "yes",
            interrupt_when_quiet=_stalls(script),
            stalled=stall_expectation(script, provider.capabilities),
        )
    finally:
        await provider.aclose()
    error = None
    if played.error is not None:
        error = f"iterating the run raised {played.error!r}"
    elif played.timed_out:
        error = f"no terminal event within {timeout:g} s"
    result = dict(getattr(run, "result_fields", None) or {})
    return Played(played.events, error, seconds=time.monotonic() - began, result=result)


async def play_side(
    cli: str,
    side: Side,
    script: Script,
    where: Path,
    *,
    binary: Path | None = None,
    serve: Callable[[Script], Any] | None = None,
    timeout: float = 60.0,
    prompts: Sequence[str] | None = None,
) -> Played:
    """Play ``script`` on ``side`` of column ``cli`` in ``where``: the fake, or the real
    ``binary`` over a model double from ``serve`` (``stuntset.serve`` by default). With
    ``prompts`` (the ``claude-session`` column), one session sends them one after another."""
    from stuntset.errors import ScriptError

    if side == "fake":
        try:
            provider = make_fake(cli, script, where)
        except ScriptError as error:
            return Played(error=f"the fake cannot render it: {error}")
        return await _play(provider, script, timeout, prompts)
    assert binary is not None
    if _spawns_nothing(script):  # the real program's equivalent: its binary is not there
        provider = make_real(cli, where / "missing" / binary.name, where, "http://127.0.0.1:9")
        return await _play(provider, script, timeout, prompts)
    if serve is None:
        from stuntset.doubles.model.serve import serve as serve_double

        serve = serve_double
    try:
        stand_in = serve(script)
    except ScriptError as error:
        return Played(error=f"the model double cannot render it: {error}")
    with stand_in:
        url = stand_in.url(_WIRES[COLUMNS[cli]])
        provider = make_real(cli, binary, where, url)
        played = await _play(provider, script, timeout, prompts)
        played.requests = len(stand_in.requests)
    return played


#: The model double's wire each CLI's real binary calls.
_WIRES: dict[str, Literal["anthropic", "openai", "gemini"]] = {
    "claude": "anthropic",
    "codex": "openai",
    "gemini": "gemini",
}


def _spawns_nothing(script: Script) -> bool:
    """The script's first step is a ``SpawnFailure`` (the runtime's binary is missing)."""
    from stuntset.script import SpawnFailure

    first = script.turns[0].steps[:1] if script.turns else []
    return bool(first) and isinstance(first[0], SpawnFailure)
