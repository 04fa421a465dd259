"""``stuntset cli <program> --script FILE -- <args>``: run a fake CLI by hand.

Installs the fake in a temporary directory, runs it with the arguments after ``--`` on this
terminal's stdin/stdout/stderr, removes it, and exits with its exit code.

``stuntset cli install <program> --script FILE --dir DIR`` installs it for good (for a test
in another language: its path is printed), ``stuntset cli invocations <program> --dir DIR``
prints what each run of it did (JSON lines) and ``stuntset cli verify`` checks, as a Python
test's teardown does, that it was used as scripted.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tempfile
from pathlib import Path

from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.errors import UnusedTurns, UsageError
from stuntset.script import Script, dumps_script, load_script, loads_script

__all__ = ["invocations_jsonl", "run_fake_cli", "run_install", "verify_installed"]


def run_fake_cli(
    program: str, script_path: str | None, scenario: str | None, args: list[str]
) -> int:
    """Play ``script_path`` (or the ``scenario``, default ``happy_path``) as ``program``."""
    script: Script = (
        load_script(script_path)
        if script_path is not None
        else scenarios.build(scenario or "happy_path")
    )
    with tempfile.TemporaryDirectory(prefix=f"stuntset-{program}-") as directory:
        cli = install_cli(program, script, bin_dir=directory)
        if not cli.spawnable:
            print(f"{program}: No such file or directory (the script's spawn_failure)")
            return 127
        return subprocess.run([str(cli.path), *args], check=False).returncode


# --- ``stuntset cli install`` / ``invocations`` / ``verify``: fakes for another language's tests


def _script(script_path: str | None, scenario: str | None, params: tuple[str, ...]) -> Script:
    """The script to install: a file, or a scenario with ``name=value`` parameters."""
    if script_path is not None and (scenario is not None or params):
        raise UsageError("--script: give a script file or --scenario (with --param), not both")
    if script_path is not None:
        return load_script(script_path)
    name = scenario or "happy_path"
    raw: dict[str, str] = {}
    for pair in params:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"--param {pair!r}: write name=value (e.g. --param failures=2)")
        raw[key] = value
    scenarios.get(name)
    return scenarios.build(name, **scenarios.coerce_params(name, raw, where="--param", text=True))


def _directory(directory: str, *, must_exist: bool) -> Path:
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--dir {directory}: not a directory")
    if must_exist and not path.is_dir():
        raise UsageError(f"--dir {directory}: no such directory")
    return path


def run_install(
    program: str,
    script_path: str | None,
    scenario: str | None,
    params: tuple[str, ...],
    directory: str,
    *,
    time_scale: float = 1.0,
    as_json: bool = False,
) -> str:
    """Install the fake ``program`` in ``directory`` playing the script; what to print (its
    path, or a JSON object with its path, state and journal folder)."""
    script = _script(script_path, scenario, params)
    folder = _directory(directory, must_exist=False)
    if not (time_scale >= 0 and time_scale != float("inf")):
        raise UsageError(f"--time-scale {time_scale}: must be a finite number, 0 or more")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--dir {directory}: cannot make it ({error.strerror})") from None
    cli = install_cli(program, script, bin_dir=folder, time_scale=time_scale)
    (cli.state_dir / _SCRIPT_FILE).write_text(dumps_script(script), encoding="utf-8")
    if not as_json:
        return str(cli.path)
    return json.dumps(
        {
            "path": str(cli.path),
            "spawnable": cli.spawnable,
            "bin_dir": str(cli.bin_dir),
            "state_dir": str(cli.state_dir),
            "invocations": str(cli.state_dir / "invocations"),
            "script": script.label(),
        }
    )


#: The installed script, kept in the state folder for ``stuntset cli verify``.
_SCRIPT_FILE = "script.json"


def _installed(program: str, directory: str) -> InstalledCli:
    """The fake ``program`` ``stuntset cli install`` put in ``directory``."""
    folder = _directory(directory, must_exist=True).resolve()
    state_dir = folder / f".{program}.stuntset"
    script_file = state_dir / _SCRIPT_FILE
    if not script_file.is_file():
        raise UsageError(
            f"--dir {directory}: no fake {program} installed there by `stuntset cli install "
            f"{program} --dir {directory}`"
        )
    script = loads_script(script_file.read_text("utf-8"), format="json", source=str(script_file))
    from stuntset.doubles.cli import _programs

    path = folder / program
    return InstalledCli(
        _programs()[program],
        script,
        path=path,
        state_dir=state_dir,
        owns=None,
        spawnable=path.exists(),
    )


def invocations_jsonl(program: str, directory: str) -> str:
    """One JSON line per invocation of the installed fake, in start order."""
    lines = []
    for run in _installed(program, directory).invocations:
        data = dataclasses.asdict(run)
        del data["events"]
        lines.append(json.dumps(data))
    return "".join(line + "\n" for line in lines)


def verify_installed(program: str, directory: str, *, allow_unused_turns: bool) -> str:
    """What the fixtures check at teardown (``HarnessFailure``: exit 1): no invocation
    asked for a turn the script lacked, and every turn was used."""
    cli = _installed(program, directory)
    if allow_unused_turns:
        cli.assert_not_exhausted()
    else:
        try:
            cli.assert_all_used()
        except UnusedTurns as failure:  # the option is this command's, not a marker's
            raise UnusedTurns(
                str(failure).replace(
                    "pass allow_unused_turns=True (marker or fixture option)",
                    "pass --allow-unused-turns",
                )
            ) from None
    return f"fake {program} in {directory}: {len(cli.invocations)} invocation(s), all as scripted"
