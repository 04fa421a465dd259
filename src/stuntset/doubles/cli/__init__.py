"""Fake agent command-line programs: executables that speak the real CLIs' stream protocols.

::

    claude = stuntset.install_cli("claude", script, bin_dir=tmp_path)
    options = ClaudeAgentOptions(cli_path=claude.path)   # or env=claude.env() for PATH lookup
    ...
    claude.invocations        # argv, env, every stdin/stdout message, exit code — per run

The executable starts as a fresh, lean process (only the runtime, no ``stuntset`` import),
plays the script compiled at install time, and journals what happened. One package per
program (``claude``, ``codex``, ``gemini``), each with its fake-process code in ``_process``. Beside
them, the plumbing every program shares: ``_install`` (test process: the launcher, the
plan file, the journal read back) and ``_runtime`` (fake process: JSON, the stdin reader
and pump, the journal, the shared state, signals); ``_replay_run`` is the fake process
that replays a recorded ``<name>-cli`` cassette.
"""

from __future__ import annotations

import os
from typing import Any

from stuntset.doubles.cli._install import CliProgram, InstalledCli, Invocation, install
from stuntset.errors import UsageError
from stuntset.script import Script

__all__ = ["PROGRAMS", "CliProgram", "InstalledCli", "Invocation", "install_cli"]


def _programs() -> dict[str, CliProgram]:
    from stuntset.doubles.cli.claude import CLAUDE
    from stuntset.doubles.cli.codex import CODEX
    from stuntset.doubles.cli.gemini import GEMINI

    return {program.name: program for program in (CLAUDE, CODEX, GEMINI)}


#: Names ``install_cli`` knows, for messages (the programs load on first use). ``"gemini"`` is
#: also a model wire's name: the structure test allows it here as the fake CLI's name.
PROGRAMS = ("claude", "codex", "gemini")


def install_cli(
    name: str | CliProgram,
    script: Script,
    *,
    bin_dir: str | os.PathLike[str] | None = None,
    time_scale: float = 1.0,
    startup_delay: float = 0.0,
    ignore_sigterm: float | None = None,
) -> InstalledCli:
    """Install the fake CLI ``name`` (``"claude"``) in ``bin_dir``, playing ``script``.

    Raises ``ScriptError`` now if the script cannot be rendered by that CLI. See
    ``stuntset.doubles.cli._install.install`` for the knobs.
    """
    options: dict[str, Any] = {
        "bin_dir": bin_dir,
        "time_scale": time_scale,
        "startup_delay": startup_delay,
        "ignore_sigterm": ignore_sigterm,
    }
    if isinstance(name, str):
        programs = _programs()
        if name not in programs:
            raise UsageError(f"no fake CLI named {name!r}; known: {', '.join(sorted(programs))}")
        return install(programs[name], script, **options)
    return install(name, script, **options)
