"""``codex exec --json`` on the real binary (over the Responses model double) and on the fake,
line by line: the same script, the same ``CODEX_HOME/config.toml`` (``stuntset drift``'s: one
silent retry, one announced attempt) and ``-c`` options, the same JSONL and exit status
(docs/protocol-reference.md, "``codex exec``: retrying a 5xx")."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import stuntset
from stuntset.doubles.cli import install_cli
from stuntset.drift.runners import codex_home, real_binary
from stuntset.script import HttpError, Overloaded, Script, Text, Turn, Usage

REAL_CODEX = real_binary("codex")
needs_real_codex = pytest.mark.skipif(REAL_CODEX is None, reason="no real codex binary here")

EXEC = ("exec", "--experimental-json", "--skip-git-repo-check")


def retries(requests: int, streams: int) -> tuple[str, ...]:
    """``-c`` options setting the retries of the ``stuntset`` provider (the one in use in the
    config.toml ``codex_home`` writes)."""
    return (
        "-c",
        f"model_providers.stuntset.request_max_retries={requests}",
        "-c",
        f"model_providers.stuntset.stream_max_retries={streams}",
    )


def shown(stdout: str) -> list[dict[str, Any]]:
    """The JSONL lines without what differs by nature: the thread id, item ids, the request
    ids and URL the error texts quote, and the real binary's warning items (its custom
    provider has no model metadata)."""
    lines = []
    for raw in stdout.splitlines():
        line = json.loads(raw)
        item = line.get("item")
        if isinstance(item, dict):
            if item.get("type") == "error":
                continue
            line["item"] = {k: v for k, v in item.items() if k != "id"}
        if "thread_id" in line:
            line["thread_id"] = "…"
        if "message" in line:
            line["message"] = line["message"].split(", url: ")[0]
        if "error" in line:
            line["error"] = {"message": line["error"]["message"].split(", url: ")[0]}
        lines.append(line)
    return lines


def on_real(where: Path, script: Script, options: tuple[str, ...]) -> tuple[list[Any], int, str]:
    assert REAL_CODEX is not None
    with stuntset.serve(script) as stand_in:
        env = codex_home(where / "home", stand_in.url("openai"))
        done = _run(REAL_CODEX, where, options, env)
    if done.returncode == 0 or done.stdout:  # it asked the model
        stand_in.verify()
    return shown(done.stdout), done.returncode, _refusal(done.stderr)


def on_fake(where: Path, script: Script, options: tuple[str, ...]) -> tuple[list[Any], int, str]:
    cli = install_cli("codex", script, bin_dir=where / "bin", time_scale=0)
    env = codex_home(where / "home", "http://127.0.0.1:9/openai/v1")  # the fake calls no API
    done = _run(cli.path, where, options, env)
    if done.returncode == 0 or done.stdout:
        cli.assert_all_used()
    return shown(done.stdout), done.returncode, _refusal(done.stderr)


def _refusal(stderr: str) -> str:
    """What stderr says when codex refuses its configuration (else nothing)."""
    at = stderr.find("Error loading config.toml")
    return stderr[at:] if at >= 0 else ""


def _run(
    binary: Path, where: Path, options: tuple[str, ...], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    cwd = where / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(binary), *options, *EXEC, "--cd", str(cwd)],
        input="Hello",
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


ANSWER = [Text("Back in service."), Usage(12, 9)]

CASES = {
    # config.toml's one silent retry, then the answer
    "503-silent": (Script.of(Turn(steps=(Overloaded(),), times=1), ANSWER), ()),
    # one silent retry, then "Reconnecting... 1/1", then the answer
    "503-announced": (Script.of(Turn(steps=(Overloaded(),), times=2), ANSWER), ()),
    # every retry spent: the last 503 fails the turn
    "503-spent": (Script.of(Turn(steps=(Overloaded(),), times=4)), ()),
    # -c over config.toml: two announced attempts, no silent retry; a 500 is "high demand",
    # in the notices and in the failure
    "500-spent": (Script.of(Turn(steps=(HttpError(500),), times=3)), retries(0, 2)),
    # a built-in provider's table is refused, from -c as from config.toml
    "reserved": (Script.of(ANSWER), ("-c", "model_providers.openai.request_max_retries=1")),
}


# real time: the real binary starts and talks to the double over loopback (about a second a
# case, more for the retries' backoff)
@pytest.mark.real_cli
@needs_real_codex
@pytest.mark.real_time
@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", list(CASES))
def test_retries_and_settings_match_the_real_binary(tmp_path: Path, case: str) -> None:
    script, options = CASES[case]
    real = on_real(tmp_path / "real", script, options)
    fake = on_fake(tmp_path / "fake", script, options)
    assert fake == real
    assert bool(real[2]) == (case == "reserved")
