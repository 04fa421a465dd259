"""The model API's stream breaking under the fake claude, as the bundled Claude Code 2.1.332
meets it over the model double (observed; docs/protocol-reference.md, "claude: a broken model
stream"): after content it keeps the content and asks the model to resume, before any it
retries; the CLI's own stdout breaking is ``cli=True``, after which the fake exits."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import install_cli
from stuntset.doubles.cli.claude import retried
from stuntset.doubles.cli.claude._process.faults import RESUME
from stuntset.errors import ScriptExhausted
from stuntset.script import (
    Garbage,
    MalformedJson,
    OutOfOrder,
    Script,
    Step,
    StreamCut,
    Text,
    Turn,
    Usage,
)

STREAM = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
PROMPT = {"type": "user", "message": {"role": "user", "content": "hi"}}

#: Every model-stream fault, with the options that change its bytes (none changes the meaning).
MODEL_FAULTS: list[Step] = [
    StreamCut(),
    StreamCut(clean=True),
    StreamCut(after_events=2),
    MalformedJson(),
    MalformedJson(text="{not json"),
    Garbage(),
    Garbage(invalid_utf8=False, half_line=False),
    OutOfOrder(),
]


def play(tmp_path: Path, script: Script, **env: str) -> tuple[int, list[dict[str, Any]], str]:
    cli = install_cli("claude", script, bin_dir=tmp_path, time_scale=0.0)
    done = subprocess.run(
        [str(cli.path), *STREAM],
        input=json.dumps(PROMPT).encode() + b"\n",
        capture_output=True,
        timeout=30,
        env={**os.environ, **env},
    )
    assert b"Traceback" not in done.stderr
    return done.returncode, [json.loads(x) for x in done.stdout.splitlines()], done.stderr.decode()


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [m["subtype"] if m["type"] == "system" else m["type"] for m in messages]


def answer() -> list[Step]:
    return [Text("Recovered answer."), Usage(input_tokens=3, output_tokens=2)]


@pytest.mark.parametrize("fault", MODEL_FAULTS, ids=repr)
def test_after_content_the_cli_keeps_it_and_asks_the_model_to_resume(
    tmp_path: Path, fault: Step
) -> None:
    code, messages, _ = play(tmp_path, Script.of([Text("partial answer"), fault], answer()))
    assert kinds(messages) == ["init", "assistant", "user", "assistant", "result"]
    partial, resume, final, result = messages[1:]
    assert partial["message"]["content"] == [{"type": "text", "text": "partial answer"}]
    assert resume["message"] == {"role": "user", "content": [{"type": "text", "text": RESUME}]}
    assert resume["isSynthetic"] is True
    assert final["message"]["content"] == [{"type": "text", "text": "Recovered answer."}]
    assert (result["is_error"], result["result"], code) == (False, "Recovered answer.", 0)


@pytest.mark.parametrize("fault", [f for f in MODEL_FAULTS if not isinstance(f, OutOfOrder)])
def test_before_content_the_request_is_retried_with_no_status(tmp_path: Path, fault: Step) -> None:
    code, messages, _ = play(tmp_path, Script.of([fault], answer()))
    assert kinds(messages) == ["init", "api_retry", "assistant", "result"]
    retry = messages[1]
    assert (retry["error_status"], retry["error"], retry["retry_delay_ms"]) == (
        None,
        "unknown",
        0,
    )
    assert messages[-1]["result"] == "Recovered answer."
    assert code == 0


def test_events_out_of_order_are_retried_silently(tmp_path: Path) -> None:
    code, messages, _ = play(tmp_path, Script.of([OutOfOrder()], answer()))
    assert kinds(messages) == ["init", "assistant", "result"]
    assert messages[-1]["result"] == "Recovered answer."
    assert code == 0


@pytest.mark.parametrize("name", ["stream_cut", "malformed_json", "garbage_bytes", "out_of_order"])
def test_the_catalog_scenario_ends_with_the_doubles_500(tmp_path: Path, name: str) -> None:
    """One scripted turn: the new request meets the model double's 500 for a request no turn
    answers, which the real CLI reports as an API error (observed for all four)."""
    script = scenarios.build(name)
    cli = install_cli("claude", script, bin_dir=tmp_path, time_scale=0.0)
    done = subprocess.run(
        [str(cli.path), *STREAM],
        input=json.dumps(PROMPT).encode() + b"\n",
        capture_output=True,
        timeout=30,
    )
    messages = [json.loads(x) for x in done.stdout.splitlines()]
    result = messages[-1]
    assert (result["type"], result["is_error"], result["api_error_status"]) == (
        "result",
        True,
        500,
    )
    assert result["result"].startswith("API Error: 500 stuntset: no scripted turn answers")
    assert done.returncode == 1
    with pytest.raises(ScriptExhausted):
        cli.assert_all_used()
    assert retried(script.turns[0])


def test_broken_streams_count_against_the_retry_budget(tmp_path: Path) -> None:
    script = Script.of(Turn(steps=(Text("partial"), StreamCut()), times=5), answer())
    code, messages, _ = play(tmp_path, script, CLAUDE_CODE_MAX_RETRIES="2")
    assert kinds(messages).count("user") == 2  # two resumes, then the budget is spent
    assert messages[-1]["is_error"] is True
    assert code == 1


@pytest.mark.parametrize(
    "fault",
    [
        StreamCut(cli=True),
        MalformedJson(cli=True),
        Garbage(cli=True),
        Garbage(cli=True, half_line=False, invalid_utf8=False),
        OutOfOrder(cli=True),
    ],
    ids=repr,
)
def test_the_cli_itself_breaking_exits_non_zero(tmp_path: Path, fault: Step) -> None:
    """With ``cli=True`` the fake breaks its own stdout and then exits (1), with stdin still
    open: a client that skips the bad line sees the process end instead of waiting."""
    cli = install_cli("claude", Script.of([Text("partial"), fault]), bin_dir=tmp_path)
    proc = subprocess.Popen(
        [str(cli.path), *STREAM],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(PROMPT).encode() + b"\n")
    proc.stdin.flush()  # and left open: the fake must not wait for more input
    try:
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate()
    assert code == 1
