"""The fake ``gemini``'s command line beyond the observed transcripts: yargs-style flags
(``--flag=value``, ``--no-flag``, arrays, ``--``), ``--version`` / ``--help``, a bad choice,
no input (exit 42), the interactive UI it does not simulate, and piped stdin joined to the
prompt. Each ends with its status and text; none fails inside (exit 70)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stuntset.doubles.cli import install_cli
from stuntset.script import Script, Text

from ._gemini_cli import MEASURING

#: (argv after ``gemini``, stdin, exit status, text in stdout or stderr)
CASES = [
    (["--version"], None, 0, ""),
    (["-h"], None, 0, "Usage: gemini"),
    (["-o", "xml", "-p", "hi"], None, 1, "xml"),
    (["--frobnicate", "-p", "hi"], None, 1, "frobnicate"),
    (["-i", "hi"], None, 1, "interactive UI is not simulated"),
    (["--output-format=json"], b"", 42, "No input provided"),
    (["-p", "and this", "-o", "text"], b"piped text", 0, "Hello"),
    (["--no-sandbox", "--debug=false", "-o", "text", "--", "-p", "as words"], None, 0, "Hello"),
    (["--include-directories", "a", "b", "-o", "text", "-p", "hi"], None, 0, "Hello"),
    (["--extensions=x", "-o", "text", "-p", "hi"], None, 0, "Hello"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "stdin", "status", "said"), CASES, ids=[" ".join(c[0]) for c in CASES]
)
def test_a_command_line_ends_with_its_status(
    tmp_path: Path, argv: list[str], stdin: bytes | None, status: int, said: str
) -> None:
    cli = install_cli("gemini", Script.of([Text("Hello")]), bin_dir=tmp_path / "bin")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **MEASURING,
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "GEMINI_API_KEY": "test-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    done = subprocess.run(
        [str(cli.path), *argv],
        input=stdin if stdin is not None else b"",
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    out = done.stdout.decode() + done.stderr.decode()
    assert "internal error" not in out, out
    assert done.returncode == status, out
    assert said in out
