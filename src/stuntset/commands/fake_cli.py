"""``stuntset cli <program> --script FILE -- <args>``: run a fake CLI by hand.

Installs the fake in a temporary directory, runs it with the arguments after ``--`` on this
terminal's stdin/stdout/stderr, removes it, and exits with its exit code.
"""

from __future__ import annotations

import subprocess
import tempfile

from stuntset import scenarios
from stuntset.doubles.cli import install_cli
from stuntset.script import Script, load_script

__all__ = ["run_fake_cli"]


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
