"""The fake claude's own retries of a failed model request, as the bundled Claude Code 2.1.332
retries over the model double (observed; docs/protocol-reference.md): ``system/api_retry``
messages, the script's retry-after, the retried request taking the next scripted turn, and
the API error once the retries are spent or no turn is left."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.doubles.cli.claude import CLAUDE, retried
from stuntset.errors import ScriptExhausted, UnusedTurns
from stuntset.script import (
    AuthExpired,
    HttpError,
    Match,
    Overloaded,
    RateLimit,
    Script,
    Step,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

STREAM = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
PROMPT = {"type": "user", "message": {"role": "user", "content": "hi"}}


@dataclass
class Run:
    returncode: int
    stderr: str
    messages: list[dict[str, Any]]

    def of(self, subtype: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("subtype") == subtype]

    @property
    def kinds(self) -> list[str]:
        return [m["subtype"] if m["type"] == "system" else m["type"] for m in self.messages]

    @property
    def result(self) -> dict[str, Any]:
        (result,) = [m for m in self.messages if m["type"] == "result"]
        return result


def install(tmp_path: Path, script: Script) -> InstalledCli:
    return install_cli("claude", script, bin_dir=tmp_path, time_scale=0.0)


def run(cli: InstalledCli, prompt: dict[str, Any] = PROMPT, **env: str) -> Run:
    """One prompt, stdin closed behind it (as ``query()`` does)."""
    done = subprocess.run(
        [str(cli.path), *STREAM],
        input=json.dumps(prompt).encode() + b"\n",
        capture_output=True,
        timeout=30,
        env={**os.environ, **env},
    )
    assert b"Traceback" not in done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    return Run(done.returncode, done.stderr.decode(), messages)


def answer(text: str = "Here is the answer.") -> list[Step]:
    return [Text(text), Usage(input_tokens=12, output_tokens=9)]


def test_a_rate_limit_is_retried_and_the_next_turn_answers(tmp_path: Path) -> None:
    cli = install(tmp_path, scenarios.build("rate_limited"))
    done = run(cli)
    assert done.kinds == ["init", "api_retry", "assistant", "result"]
    (retry,) = done.of("api_retry")
    session = done.messages[0]["session_id"]
    assert retry == {
        "type": "system",
        "subtype": "api_retry",
        "attempt": 1,
        "max_retries": 10,
        "retry_delay_ms": 1,  # the scenario's retry-after-ms
        "error_status": 429,
        "error": "rate_limit",
        "session_id": session,
        "uuid": retry["uuid"],
    }
    assert list(retry)[-2:] == ["session_id", "uuid"]  # the real CLI's key order
    assert done.result["is_error"] is False
    assert done.result["result"] == "Sorry for the wait. Here is the answer."
    assert done.result["num_turns"] == 1
    assert done.returncode == 0
    cli.assert_all_used()  # one prompt used both turns, as one request and its retry would


@pytest.mark.parametrize(
    ("step", "status", "error"),
    [
        (Overloaded(), 529, "overloaded"),
        (HttpError(503), 503, "server_error"),
        (HttpError(500), 500, "server_error"),
        (HttpError(502), 502, "server_error"),
        (HttpError(408), 408, "server_error"),
        (HttpError(409), 409, "server_error"),
        (HttpError(429), 429, "rate_limit"),
        (HttpError(503, error_type="overloaded_error"), 503, "overloaded"),
        (AuthExpired(), 401, "authentication_failed"),  # observed: a 401 is retried too
        (HttpError(401), 401, "authentication_failed"),
    ],
)
def test_what_the_real_cli_retries_is_retried(
    tmp_path: Path, step: Step, status: int, error: str
) -> None:
    done = run(install(tmp_path, Script.of([step], answer())))
    (retry,) = done.of("api_retry")
    assert (retry["error_status"], retry["error"]) == (status, error)
    assert done.result["result"] == "Here is the answer."


@pytest.mark.parametrize(
    "step",
    [
        HttpError(503, should_retry=False),  # observed: not retried
        HttpError(400),
        HttpError(404),
        HttpError(403),
    ],
)
def test_other_api_errors_end_the_turn_at_once(tmp_path: Path, step: Step) -> None:
    cli = install(tmp_path, Script.of([step], answer()))
    done = run(cli)
    assert done.of("api_retry") == []
    assert done.kinds == ["init", "assistant", "result"]
    assert done.result["is_error"] is True
    assert done.returncode == 1
    with pytest.raises(UnusedTurns):
        cli.assert_all_used()


def test_a_fault_after_content_is_not_retried(tmp_path: Path) -> None:
    """After content the model double sends the 429 in-band; the real CLI gives up at once
    (observed), and so does the fake."""
    cli = install(tmp_path, Script.of([Text("partial"), RateLimit()], answer()))
    done = run(cli)
    assert done.of("api_retry") == []
    assert done.result["api_error_status"] == 429
    with pytest.raises(UnusedTurns, match="turn 1"):
        cli.assert_all_used()


def test_retries_spent_end_with_the_real_clis_rate_limit_error(tmp_path: Path) -> None:
    """11 × 429: ten retries (attempts 1-10), then the eleventh failure is the result, as the
    bundled 2.1.332 ended it (observed, after about three minutes of its own backoff)."""
    cli = install(tmp_path, scenarios.build("rate_limited", failures=11))
    done = run(cli)
    assert [m["attempt"] for m in done.of("api_retry")] == list(range(1, 11))
    assert {m["max_retries"] for m in done.of("api_retry")} == {10}
    synthetic, result = done.messages[-2:]
    prose = "API Error: Request rejected (429) \u00b7 Rate limit reached. Please try again later."
    assert synthetic["message"]["content"] == [{"type": "text", "text": prose}]
    assert synthetic["message"]["model"] == "<synthetic>"
    assert (synthetic["error"], synthetic["is_api_error_message"]) == ("rate_limit", True)
    assert (synthetic["api_error_status"], synthetic["api_error_type"]) == (
        429,
        "rate_limit_error",
    )
    assert {k: result[k] for k in ("subtype", "is_error", "api_error_status", "result")} == {
        "subtype": "success",
        "is_error": True,
        "api_error_status": 429,
        "result": prose,
    }
    assert (result["api_error_type"], result["terminal_reason"]) == (
        "rate_limit_error",
        "api_error",
    )
    assert done.returncode == 1
    with pytest.raises(UnusedTurns, match="turn 1"):  # the answer nobody got to
        cli.assert_all_used()


@pytest.mark.parametrize(
    ("base_url", "where"),
    [
        (None, "https://status.claude.com"),
        ("https://api.anthropic.com", "https://status.claude.com"),
        ("http://127.0.0.1:8123/anthropic", "your inference gateway (127.0.0.1:8123)"),
    ],
)
def test_a_spent_overload_is_worded_as_the_real_cli_words_a_5xx(
    tmp_path: Path, base_url: str | None, where: str
) -> None:
    cli = install(tmp_path, scenarios.build("overloaded", failures=11))
    env = dict(os.environ)
    env.pop("ANTHROPIC_BASE_URL", None)
    if base_url is not None:
        env["ANTHROPIC_BASE_URL"] = base_url
    done = subprocess.run(
        [str(cli.path), *STREAM],
        input=json.dumps(PROMPT).encode() + b"\n",
        capture_output=True,
        timeout=30,
        env=env,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["result"] == (
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary \u2014 try "
        f"again in a moment. If it persists, check {where}."
    )
    assert result["api_error_type"] == "overloaded_error"


@pytest.mark.parametrize(
    ("setting", "retries", "reported"),
    [("0", 0, None), ("2", 2, 2), ("20", 3, 15), ("many", 3, 10), ("-1", 3, 10)],
)
def test_claude_code_max_retries_sets_the_budget(
    tmp_path: Path, setting: str, retries: int, reported: int | None
) -> None:
    """Observed: ``0`` gives up at once, ``2`` retries twice, ``20`` reports 15."""
    cli = install(tmp_path, scenarios.build("rate_limited", failures=3))
    done = run(cli, CLAUDE_CODE_MAX_RETRIES=setting)
    attempts = done.of("api_retry")
    assert len(attempts) == retries
    assert {m["max_retries"] for m in attempts} == (set() if reported is None else {reported})
    assert done.result["is_error"] is (retries < 3)


def test_a_retry_with_no_turn_left_meets_the_doubles_500(tmp_path: Path) -> None:
    """Only a 429 scripted: the real CLI's retry meets the double's 500 for a request no turn
    answers (``x-should-retry: false``: not retried) and ends with it (observed); the fake
    writes the same, and the test side reports the request as the double would."""
    cli = install(tmp_path, Script.of([RateLimit()]))
    done = run(cli)
    assert done.kinds == ["init", "api_retry", "assistant", "result"]
    assert done.result["api_error_status"] == 500
    assert done.result["api_error_type"] == "api_error"
    assert done.result["result"].startswith(
        "API Error: 500 stuntset: no scripted turn answers this request. script '<python>' has "
        "no turn for request #2"
    )
    assert done.messages[-2]["error"] == "server_error"
    assert "stuntset: script '<python>' has no turn for request #2" in done.stderr
    assert done.returncode == 1
    with pytest.raises(ScriptExhausted, match="request #2"):
        cli.assert_all_used()


def test_the_retry_delay_is_the_scripts_retry_after(tmp_path: Path) -> None:
    """The fake waits what the script says (scaled by ``time_scale``), never the real CLI's
    backoff; the wait counts in the result's ``duration_ms``."""
    script = Script.of(
        [RateLimit(retry_after_ms=None, retry_after=2)],
        [Overloaded(retry_after_ms=250)],
        [HttpError(503)],  # no retry-after at all
        answer(),
    )
    done = run(install(tmp_path, script))
    assert [m["retry_delay_ms"] for m in done.of("api_retry")] == [2000, 250, 0]
    assert [m["attempt"] for m in done.of("api_retry")] == [1, 2, 3]
    assert done.result["duration_ms"] >= 2250


def test_attempts_count_per_request_and_a_retry_after_tool_results_carries_them(
    tmp_path: Path,
) -> None:
    """Two 429s, an answer that calls a tool, a 429 on the request with its result (attempts
    start over: a new request), and the retried request still carries the tool result: the
    turn that matches ``tool_result=True`` answers it, not the one before it."""
    script = Script.of(
        Turn(steps=(RateLimit(),), times=2),
        [ToolCall("read_file", {"path": "a"}, id="toolu_01A"), ToolResult("alpha"), RateLimit()],
        Turn(steps=(Text("wrong"),), match=Match(tool_result=False)),
        Turn(steps=(Text("alpha it is"),), match=Match(tool_result=True)),
    )
    cli = install(tmp_path, script)
    done = run(cli)
    assert [m["attempt"] for m in done.of("api_retry")] == [1, 2, 1]
    assert done.kinds == [
        "init",
        "api_retry",
        "api_retry",
        "assistant",  # the tool call
        "user",  # its result
        "api_retry",
        "assistant",
        "result",
    ]
    assert done.result["result"] == "alpha it is"
    with pytest.raises(UnusedTurns, match="turn 2"):
        cli.assert_all_used()


def test_a_retried_first_request_carries_the_prompts_tool_results(tmp_path: Path) -> None:
    script = Script.of(
        [RateLimit()],
        Turn(steps=(Text("wrong"),), match=Match(tool_result=False)),
        Turn(steps=(Text("right"),), match=Match(tool_result=True)),
    )
    results = [{"type": "tool_result", "tool_use_id": "toolu_01X", "content": "42"}]
    prompt = {"type": "user", "message": {"role": "user", "content": results}}
    done = run(install(tmp_path, script), prompt)
    assert done.result["result"] == "right"


def test_an_interrupt_during_the_wait_ends_the_turn(tmp_path: Path) -> None:
    # real time, on purpose: the fake waits 10 s (unscaled) and the interrupt must cut it
    script = Script.of([RateLimit(retry_after_ms=None, retry_after=10)], answer())
    cli = install_cli("claude", script, bin_dir=tmp_path)
    proc = subprocess.Popen([str(cli.path), *STREAM], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(json.dumps(PROMPT).encode() + b"\n")
    proc.stdin.flush()
    seen = []
    while (message := json.loads(proc.stdout.readline()))["type"] != "result":
        seen.append(message["subtype"] if message["type"] == "system" else message["type"])
        if message.get("subtype") == "api_retry":
            interrupt = {
                "type": "control_request",
                "request_id": "i",
                "request": {"subtype": "interrupt"},
            }
            proc.stdin.write(json.dumps(interrupt).encode() + b"\n")
            proc.stdin.flush()
    proc.stdin.close()
    assert proc.wait(timeout=30) == 1
    proc.stdout.close()
    assert message["terminal_reason"] == "aborted_streaming"
    assert seen[-1] == "user"  # [Request interrupted by user]


def test_the_plan_marks_which_faults_are_retried() -> None:
    script = Script.of(
        [RateLimit()],
        [Text("x"), Overloaded()],
        [ToolCall("t", {}, id="toolu_01B"), ToolResult("r"), HttpError(500, retry_after=1)],
        [HttpError(500, should_retry=False)],
        [Text("done")],
    )
    ops = [turn["ops"][-1] for turn in CLAUDE.compile(script)["turns"]]
    # (…, retry-after in seconds or None when not retried, the request follows a tool result)
    assert [op[-2:] for op in ops[:4]] == [
        (0.001, False),
        (None, False),
        (1.0, True),
        (None, False),
    ]
    assert [retried(turn) for turn in script.turns] == [True, False, True, False, False]


def test_spent_auth_retries_end_with_the_real_clis_authentication_error(tmp_path: Path) -> None:
    """Observed (2.1.332, ``CLAUDE_CODE_MAX_RETRIES=1``, two 401s): one ``api_retry``, then
    "Failed to authenticate. API Error: 401 <message>" with ``api_error_status`` 401."""
    cli = install(tmp_path, Script.of(Turn(steps=(AuthExpired(),), times=2)))
    done = run(cli, CLAUDE_CODE_MAX_RETRIES="1")
    assert [(m["error_status"], m["error"]) for m in done.of("api_retry")] == [
        (401, "authentication_failed")
    ]
    prose = (
        "Failed to authenticate. API Error: 401 OAuth token has expired. Please obtain a new "
        "token or refresh your existing token."
    )
    assert done.messages[-2]["error"] == "authentication_failed"
    assert {k: done.result[k] for k in ("is_error", "api_error_status", "api_error_type")} == {
        "is_error": True,
        "api_error_status": 401,
        "api_error_type": "authentication_error",
    }
    assert done.result["result"] == prose
    assert done.returncode == 1


def test_the_auth_scenario_ends_as_the_real_cli_ends_it(tmp_path: Path) -> None:
    """``auth_expired_mid_run`` scripts one turn: the real CLI retries the 401, its retry
    meets the double's 500 (no turn left), and it ends with that API error (observed)."""
    cli = install(tmp_path, scenarios.build("auth_expired_mid_run"))
    done = run(cli)
    (retry,) = done.of("api_retry")
    assert (retry["error_status"], retry["error"]) == (401, "authentication_failed")
    assert done.result["api_error_status"] == 500
    assert done.result["result"].startswith(
        "API Error: 500 stuntset: no scripted turn answers this request."
    )
    assert done.returncode == 1
