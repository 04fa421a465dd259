"""The logic behind the pytest plugin's markers, kept out of the plugin so it is testable
and usable without pytest."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stuntset.errors import UsageError
from stuntset.providers import ScriptedProvider
from stuntset.scenarios import resolve_script_path, script_from
from stuntset.script import Script

__all__ = [
    "LIVE_BINARIES",
    "live_binary",
    "live_skip_reason",
    "provider_from_marker",
    "resolve_script_path",
    "script_from",
]

LIVE_HELP = "needs a real provider; deselected unless --live, skipped where an env var is unset"


def _env_names(args: Sequence[Any], kwargs: Mapping[str, Any], where: str) -> list[str]:
    env = kwargs.get("env", args[0] if args else None)
    names = [env] if isinstance(env, str) else list(env) if env else []
    if not names or not all(isinstance(n, str) and n for n in names):
        raise UsageError(
            f"{where}: @pytest.mark.live needs env=NAME (or a list of names) naming the "
            f"variable(s) that hold the real provider's key, got {env!r}"
        )
    return names


def live_skip_reason(args: Sequence[Any], kwargs: Mapping[str, Any], where: str) -> str | None:
    """Why a live test must be skipped in a ``--live`` run, or ``None`` to run it."""
    missing = [name for name in _env_names(args, kwargs, where) if not os.environ.get(name)]
    if missing:
        return f"live test needs {', '.join(missing)} set in the environment"
    return None


#: The environment variable naming the real executable a live test runs, per program.
LIVE_BINARIES = {"claude": "STUNTSET_CLAUDE_BIN", "codex": "STUNTSET_CODEX_BIN"}


def live_binary(program: str, environ: Mapping[str, str], where: str) -> Path | str:
    """The real ``program`` a live test runs (from ``STUNTSET_<PROGRAM>_BIN``: a path, or a
    name looked up on PATH), or why the test is skipped (a ``str``: the variable is unset).
    ``UsageError`` if it is set but names no executable."""
    variable = LIVE_BINARIES[program]
    value = environ.get(variable, "")
    if not value:
        return (
            f"live test needs {variable} set to the real {program} executable "
            f"(a path, or a name on PATH)"
        )
    found = shutil.which(value, path=environ.get("PATH"))
    if found is None:
        raise UsageError(
            f"{where}: {variable}={value!r} is not an executable file (give the path of the "
            f"real {program} binary, or its name on PATH)"
        )
    return Path(found)


def provider_from_marker(
    args: Sequence[Any],
    kwargs: dict[str, Any],
    fallback: Script | None,
    where: str,
    base: Path | None = None,
) -> tuple[ScriptedProvider, bool]:
    """The ``scripted_provider`` fixture's provider and whether unused turns are allowed."""
    __tracebackhide__ = True
    allow_unused = bool(kwargs.pop("allow_unused_turns", False))
    options = {k: kwargs.pop(k) for k in ("name", "model", "session_id") if k in kwargs}
    if args:
        script = script_from(args[0], kwargs, where, base)
    elif fallback is not None:
        script = fallback
    else:
        raise UsageError(
            f"{where}: the scripted_provider fixture needs a script: mark the test "
            f"@pytest.mark.scripted_provider(<Script | scenario name | path>) or override the "
            f"stuntset_script fixture"
        )
    return ScriptedProvider(script, **options), allow_unused
