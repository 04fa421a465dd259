"""The logic behind the pytest plugin's markers, kept out of the plugin so it is testable
and usable without pytest."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stuntset import scenarios
from stuntset.errors import UsageError
from stuntset.providers import ScriptedProvider
from stuntset.script import Script, load_script

__all__ = ["live_skip_reason", "provider_from_marker", "script_from"]

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


def script_from(spec: Any, params: Mapping[str, Any], where: str) -> Script:
    """A script from a marker argument: a ``Script``, a scenario name, or a file path."""
    __tracebackhide__ = True
    if isinstance(spec, Script):
        if params:
            raise UsageError(f"{where}: scenario parameters {sorted(params)} given with a Script")
        return spec
    if isinstance(spec, Path) or (isinstance(spec, str) and spec.endswith((".toml", ".json"))):
        return load_script(spec)
    if isinstance(spec, str):
        return scenarios.build(spec, **params)
    raise UsageError(
        f"{where}: expected a Script, a scenario name or a .toml/.json path, got {spec!r}"
    )


def provider_from_marker(
    args: Sequence[Any],
    kwargs: dict[str, Any],
    fallback: Script | None,
    where: str,
) -> tuple[ScriptedProvider, bool]:
    """The ``scripted_provider`` fixture's provider and whether unused turns are allowed."""
    __tracebackhide__ = True
    allow_unused = bool(kwargs.pop("allow_unused_turns", False))
    options = {k: kwargs.pop(k) for k in ("name", "model", "session_id") if k in kwargs}
    if args:
        script = script_from(args[0], kwargs, where)
    elif fallback is not None:
        script = fallback
    else:
        raise UsageError(
            f"{where}: the scripted_provider fixture needs a script: mark the test "
            f"@pytest.mark.scripted_provider(<Script | scenario name | path>) or override the "
            f"stuntset_script fixture"
        )
    return ScriptedProvider(script, **options), allow_unused
