"""The fake claude process on its wire: stream-json out, control protocol in, bad input handled
as the real CLI handles it (never a traceback)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.doubles.cli.claude._client import StreamJsonClient
from stuntset.script import ApprovalRequest, Script, Text, ToolCall, ToolResult, Turn, Usage

STREAM = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
INIT = {"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize"}}
#: Skipping permissions is refused as root unless the sandbox is declared (as the real CLI).
SANDBOX = {**os.environ, "IS_SANDBOX": "1"}


def user(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}}


def lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


@dataclass
class Run:
    returncode: int
    stdout: bytes
    stderr: bytes
    messages: list[dict[str, Any]]


def run(cli: InstalledCli, stdin: bytes, *args: str, env: dict[str, str] | None = None) -> Run:
    done = subprocess.run(
        [str(cli.path), *(args or STREAM)], input=stdin, capture_output=True, timeout=30, env=env
    )
    assert b"Traceback" not in done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines() if line[:1] == b"{"]
    return Run(done.returncode, done.stdout, done.stderr, messages)


def Live(cli: InstalledCli, *args: str) -> StreamJsonClient:
    """A fake claude process driven message by message, as the SDK drives it (reads block; the
    test timeout bounds them)."""
    return StreamJsonClient(str(cli.path), *args, base=STREAM)


@pytest.fixture
def happy(tmp_path: Path) -> InstalledCli:
    return install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)


def test_version_answers_like_the_real_cli(happy: InstalledCli) -> None:
    done = run(happy, b"", "-v")
    assert (done.returncode, done.stdout) == (0, b"2.1.332 (Claude Code)\n")
    assert run(happy, b"", "--help").returncode == 0


def test_unknown_flags_exit_1_with_the_cli_text(happy: InstalledCli) -> None:
    done = run(happy, b"", *STREAM, "--bogus")
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        b"",
        b"error: unknown option '--bogus'\n",
    )
    assert happy.invocations[0].exit_code == 1


def test_initialize_then_a_turn(happy: InstalledCli) -> None:
    done = run(happy, lines(INIT, user("hi")))
    first, *rest = done.messages
    assert first["type"] == "control_response"
    assert first["response"]["request_id"] == "req_1"
    assert first["response"]["response"]["claude_code_version"] == "2.1.332"
    init, assistant, result = rest
    assert (init["subtype"], init["model"], init["claude_code_version"]) == (
        "init",
        "claude-sonnet-4-5",
        "2.1.332",
    )
    assert assistant["message"]["content"] == [
        {"type": "text", "text": "Hello! How can I help you today?"}
    ]
    assert result["subtype"] == "success"
    assert result["is_error"] is False
    assert result["usage"]["input_tokens"] == 12
    assert {m["session_id"] for m in rest} == {init["session_id"]}
    assert done.returncode == 0


def test_output_is_deterministic_across_installs(tmp_path: Path) -> None:
    outputs = []
    for name in ("a", "b"):
        cli = install_cli("claude", scenarios.build("tool_use"), bin_dir=tmp_path / name)
        outputs.append(
            run(cli, lines(user("hi")), *STREAM, "--include-partial-messages").stdout.replace(
                str(tmp_path / name).encode(), b""
            )
        )
    assert outputs[0] == outputs[1]


def test_session_state_frames_when_the_sdk_asks(happy: InstalledCli) -> None:
    env = happy.env() | {"CLAUDE_CODE_SDK_READS_SESSION_STATE": "1"}
    kinds = [(m["type"], m.get("state")) for m in run(happy, lines(user("hi")), env=env).messages]
    assert kinds[0] == ("system", "running")
    assert kinds[-1] == ("system", "idle")


def test_partial_messages_put_the_assistant_line_before_block_stop(tmp_path: Path) -> None:
    cli = install_cli("claude", Script.of([Text("a b c")]), bin_dir=tmp_path)
    done = run(cli, lines(user("hi")), *STREAM, "--include-partial-messages")
    kinds = [
        m["event"]["type"] if m["type"] == "stream_event" else m["type"] for m in done.messages
    ]
    assert kinds == [
        "system",
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "assistant",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "result",
    ]


def test_unknown_control_requests_get_the_cli_error(happy: InstalledCli) -> None:
    request = {"type": "control_request", "request_id": "r9", "request": {"subtype": "bogus"}}
    (response,) = run(happy, lines(request)).messages
    assert response["response"] == {
        "subtype": "error",
        "request_id": "r9",
        "error": "Unsupported control request subtype: bogus",
        "error_code": "unsupported_request",
    }


def test_malformed_stdin_exits_1_with_the_cli_message(happy: InstalledCli) -> None:
    done = run(happy, b'{"type": "user", bad\n')
    assert done.returncode == 1
    assert done.stderr == (
        b"Error parsing streaming input line (type=user, 20 chars): SyntaxError\n"
    )
    assert happy.invocations[0].stdin == [{"raw": '{"type": "user", bad'}]


def test_responses_for_unknown_requests_and_unknown_types_are_ignored(
    happy: InstalledCli,
) -> None:
    stray = {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "nope", "response": {}},
    }
    done = run(happy, lines(stray, {"type": "bogus"}))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert [e["event"] for e in happy.invocations[0].events].count("ignored") == 1


def test_multi_turn_session_then_resume_and_continue(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("multi_turn", turns=3), bin_dir=tmp_path)
    first = run(cli, lines(INIT, user("one"), user("two")))
    results = [m for m in first.messages if m["type"] == "result"]
    assert [r["result"] for r in results] == ["Answer number 1.", "Answer number 2."]
    session = results[0]["session_id"]
    resumed = run(cli, lines(INIT, user("three")), *STREAM, f"--resume={session}")
    assert {m.get("session_id") for m in resumed.messages[1:]} == {session}
    assert resumed.messages[-1]["result"] == "Answer number 3."
    cli.assert_all_used()
    assert run(cli, b"", *STREAM, "--continue").returncode == 0


def test_unknown_resume_fails_before_initialize(happy: InstalledCli) -> None:
    sid = "6f1e1c52-4a57-4f5e-9d1a-3b0e2a7c1d11"
    done = run(happy, lines(INIT), *STREAM, f"--resume={sid}")
    (result,) = done.messages  # no initialize answer, as with the real CLI
    assert result["subtype"] == "error_during_execution"
    assert result["is_error"] is True
    assert result["errors"] == [f"No conversation found with session ID: {sid}"]
    assert done.returncode == 1
    assert done.stderr == f"No conversation found with session ID: {sid}\n".encode()


def test_max_turns_ends_the_turn_like_the_cli(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("tool_use"), bin_dir=tmp_path)
    done = run(cli, lines(user("hi")), *STREAM, "--max-turns", "1")
    result = done.messages[-1]
    assert result["subtype"] == "error_max_turns"
    assert result["errors"] == ["Reached maximum number of turns (1)"]
    assert done.returncode == 1


def test_print_mode_text_and_json_output(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("multi_turn"), bin_dir=tmp_path)
    assert run(cli, b"", "-p", "hello").stdout == b"Answer number 1.\n"
    as_json = json.loads(run(cli, b"hello", "-p", "--output-format", "json").stdout)
    assert as_json["type"] == "result"
    assert as_json["result"] == "Answer number 2."
    empty = run(cli, b"", "-p")
    assert empty.returncode == 1
    assert b"Input must be provided" in empty.stderr


def test_approval_without_a_prompt_tool_is_denied_as_headless(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("needs_approval"), bin_dir=tmp_path)
    done = run(cli, lines(user("clean")))
    (tool_result,) = [m for m in done.messages if m["type"] == "user"]
    block = tool_result["message"]["content"][0]
    assert block["is_error"] is True
    assert block["content"].startswith("Claude requested permissions to use Bash")
    assert done.messages[-1]["permission_denials"][0]["tool_name"] == "Bash"


def test_can_use_tool_allow_with_updated_input(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("needs_approval"), bin_dir=tmp_path)
    live = Live(cli, "--permission-prompt-tool", "stdio")
    live.send(user("clean"))
    request = live.read_until("control_request")[-1]
    assert request["request"]["subtype"] == "can_use_tool"
    assert request["request"]["input"] == {"command": "rm -rf build/"}
    updated = {"command": "rm -rf dist/"}
    live.send(
        {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": request["request_id"],
                "response": {"behavior": "allow", "updatedInput": updated},
            },
        }
    )
    seen = live.read_until("result")
    (tool_result,) = [m for m in seen if m["type"] == "user"]
    assert tool_result["tool_use_result"]["input"] == updated
    assert live.close() == 0
    assert cli.invocations[0].control_responses[0]["response"]["response"]["updatedInput"] == (
        updated
    )


def test_interrupt_ends_a_stalled_turn_as_the_cli_does(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("stuck"), bin_dir=tmp_path)
    live = Live(cli)
    live.send(user("go"))
    live.read_until("assistant")
    live.send({"type": "control_request", "request_id": "r2", "request": {"subtype": "interrupt"}})
    seen = live.read_until("result")
    assert seen[0]["response"] == {
        "subtype": "success",
        "request_id": "r2",
        "response": {"still_queued": []},
    }
    assert seen[1]["message"]["content"] == [
        {"type": "text", "text": "[Request interrupted by user]"}
    ]
    assert seen[-1]["subtype"] == "error_during_execution"
    assert seen[-1]["terminal_reason"] == "aborted_streaming"
    assert live.close() == 1


def test_pre_tool_use_hook_can_deny(tmp_path: Path) -> None:
    script = Script.of([ToolCall("Bash", {"command": "ls"}), ToolResult("a.txt"), Text("done")])
    cli = install_cli("claude", script, bin_dir=tmp_path)
    live = Live(cli)
    hooks = {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}
    live.send({**INIT, "request": {"subtype": "initialize", "hooks": hooks}})
    live.read_until("control_response")
    live.send(user("list"))
    message = live.read_until("control_request")[-1]
    request = message["request"]
    assert request["subtype"] == "hook_callback"
    assert request["callback_id"] == "hook_0"
    assert request["input"]["hook_event_name"] == "PreToolUse"
    assert request["input"]["tool_input"] == {"command": "ls"}
    decision = {"hookSpecificOutput": {"permissionDecision": "deny"}}
    live.send(
        {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": message["request_id"],
                "response": decision,
            },
        }
    )
    seen = live.read_until("result")
    (tool_result,) = [m for m in seen if m["type"] == "user"]
    assert tool_result["message"]["content"][0]["is_error"] is True
    live.close()


def test_approval_step_for_a_named_tool(tmp_path: Path) -> None:
    script = Script.of(
        [ApprovalRequest(tool="Write", input={"path": "x"}), Text("asked")],
    )
    cli = install_cli("claude", script, bin_dir=tmp_path)
    done = run(
        cli, lines(user("go")), *STREAM, "--permission-mode", "bypassPermissions", env=SANDBOX
    )
    assert done.messages[-1]["result"] == "asked"
    assert done.messages[-1]["permission_denials"] == []


def test_ignored_sigterm_delays_death_then_exits_143(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("stuck"), bin_dir=tmp_path, ignore_sigterm=0.3)
    live = Live(cli)
    live.send(user("go"))
    live.read_until("assistant")
    sent = time.monotonic()
    live.proc.send_signal(signal.SIGTERM)
    code = live.close()
    assert code == 143
    assert time.monotonic() - sent >= 0.3
    assert any(e["event"] == "signal" for e in cli.invocations[0].events)


def test_slow_start_delays_everything(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path, startup_delay=0.2)
    started = time.monotonic()
    done = run(cli, lines(INIT, user("hi")))
    assert time.monotonic() - started >= 0.2
    assert done.messages[-1]["type"] == "result"


def test_interrupt_while_asking_cancels_the_prompt(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("needs_approval"), bin_dir=tmp_path)
    live = Live(cli, "--permission-prompt-tool", "stdio")
    live.send(user("clean"))
    asked = live.read_until("control_request")[-1]
    live.send({"type": "control_request", "request_id": "r5", "request": {"subtype": "interrupt"}})
    seen = live.read_until("result")
    assert seen[0] == {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "r5", "response": {"still_queued": []}},
    }
    assert seen[1] == {"type": "control_cancel_request", "request_id": asked["request_id"]}
    assert seen[-1]["terminal_reason"] == "aborted_streaming"
    assert live.close() == 1


def test_a_broken_double_says_so_in_one_line(happy: InstalledCli) -> None:
    (happy.state_dir / "state.json").write_text("{not json")
    done = run(happy, lines(user("hi")))
    assert done.returncode == 70
    assert done.stderr.startswith(b"stuntset fake CLI internal error: JSONDecodeError")
    assert done.stderr.count(b"\n") == 1
    events = happy.invocations[0].events
    assert "Traceback" in next(e for e in events if e["event"] == "internal_error")["traceback"]


def test_an_interrupt_right_behind_the_prompt_ends_the_turn_once(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("stuck"), bin_dir=tmp_path)
    interrupt = {"type": "control_request", "request_id": "r1", "request": {"subtype": "interrupt"}}
    done = run(cli, lines(user("go"), interrupt))
    results = [m for m in done.messages if m["type"] == "result"]
    assert len(results) == 1
    assert results[0]["terminal_reason"] == "aborted_streaming"
    assert done.returncode == 1


@pytest.mark.skipif(os.getuid() != 0, reason="the refusal is for root only")
def test_root_is_refused_bypass_permissions_as_the_real_cli_refuses_it(
    happy: InstalledCli,
) -> None:
    """Claude Code 2.1.332 run as root (observed): one line on stderr, nothing on stdout, exit
    1, before stdin is read. ``IS_SANDBOX=1`` lets it through."""
    env = {k: v for k, v in os.environ.items() if k not in ("IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP")}
    for flag in (["--permission-mode", "bypassPermissions"], ["--dangerously-skip-permissions"]):
        done = run(happy, lines(INIT, user("hi")), *STREAM, *flag, env=env)
        assert (done.returncode, done.stdout) == (1, b"")
        assert done.stderr == (
            b"--dangerously-skip-permissions cannot be used with root/sudo privileges for "
            b"security reasons\n"
        )


def test_dangerously_skip_permissions_is_bypass_mode(happy: InstalledCli) -> None:
    """Observed: the flag wins over ``--permission-mode`` in ``system/init``."""
    done = run(
        happy,
        lines(INIT, user("hi")),
        *STREAM,
        "--dangerously-skip-permissions",
        "--permission-mode",
        "plan",
        env=SANDBOX,
    )
    init = next(m for m in done.messages if m.get("subtype") == "init")
    assert init["permissionMode"] == "bypassPermissions"
    assert done.returncode == 0


def test_max_budget_ends_the_turn_after_the_response_that_spent_it(tmp_path: Path) -> None:
    """Claude Code 2.1.332 against the model double (observed): after each model response,
    cost >= budget ends the turn -- before the tool the response asked for runs --
    with ``{"subtype": "error_max_budget_usd", "is_error": true, "errors": ["Reached maximum
    budget ($0.005)"], "terminal_reason": "budget_exhausted", "stop_reason": "tool_use"}`` and
    no ``result`` text; the next prompt gets the same result at once (no model request);
    exit 1."""
    script = Script.of(
        [
            Text("Running it."),
            ToolCall("Bash", {"command": "echo hi"}),
            Usage(input_tokens=1000, output_tokens=100, cost=0.006),
            ToolResult("hi"),
            Text("done"),
        ],
        [Text("never played")],
    )
    cli = install_cli("claude", script, bin_dir=tmp_path)
    done = run(cli, lines(user("go"), user("again")), *STREAM, "--max-budget-usd", "0.005")
    results = [m for m in done.messages if m["type"] == "result"]
    assert [m["type"] for m in done.messages] == [
        "system", "assistant", "assistant", "result", "system", "result"
    ]  # fmt: skip
    for result, stop_reason in zip(results, ["tool_use", None], strict=True):
        assert result["subtype"] == "error_max_budget_usd"
        assert result["is_error"] is True
        assert result["errors"] == ["Reached maximum budget ($0.005)"]
        assert result["terminal_reason"] == "budget_exhausted"
        assert result["stop_reason"] == stop_reason
        assert "result" not in result
    assert results[0]["total_cost_usd"] == 0.006
    assert done.returncode == 1
    assert [index for index, _ in cli.unused_turns()] == [1]


def test_a_turn_within_budget_succeeds(tmp_path: Path) -> None:
    script = Script.of([Text("cheap"), Usage(input_tokens=10, output_tokens=5, cost=0.004)])
    cli = install_cli("claude", script, bin_dir=tmp_path)
    done = run(cli, lines(user("go")), *STREAM, "--max-budget-usd", "0.005")
    assert done.messages[-1]["subtype"] == "success"
    assert done.returncode == 0


def _hooks(**events: list[str]) -> str:
    """``--settings`` JSON with one command hook per command (matcher ``*``)."""
    return json.dumps(
        {
            "hooks": {
                event: [{"matcher": "*", "hooks": [{"type": "command", "command": c}]}]
                for event, commands in events.items()
                for c in commands
            }
        }
    )


TOOL_TURN = Script.of(
    [Text("Running it."), ToolCall("Bash", {"command": "echo hi"}), ToolResult("hi"), Text("ok")]
)


def test_settings_command_hooks_write_hook_events(tmp_path: Path) -> None:
    """Shapes and order observed with Claude Code 2.1.332 (``-p --settings <hooks>
    --include-hook-events``): SessionStart's pair first, UserPromptSubmit's before
    ``system/init``, PreToolUse's and PostToolUse's before the tool's result, Stop's before
    the result; each ``hook_started`` then ``hook_response`` with the hook's output and exit
    code. The hook reads its input as JSON on stdin."""
    cli = install_cli("claude", TOOL_TURN, bin_dir=tmp_path)
    settings = _hooks(
        SessionStart=["echo ss"],
        UserPromptSubmit=["echo up >&2"],
        PreToolUse=[f"cat > {tmp_path}/input.json"],
        PostToolUse=["echo post"],
        Stop=["true"],
    )
    flags = ["--settings", settings, "--include-hook-events", "--allowedTools", "Bash"]
    done = run(cli, lines(user("go")), *STREAM, *flags)
    seen = [m.get("subtype") or m["type"] for m in done.messages]
    assert seen == [
        "hook_started", "hook_response", "hook_started", "hook_response", "init",
        "assistant", "assistant", "hook_started", "hook_response", "hook_started",
        "hook_response", "user", "assistant", "hook_started", "hook_response", "success",
    ]  # fmt: skip
    started, response = done.messages[7:9]
    assert started == {
        "type": "system",
        "subtype": "hook_started",
        "hook_id": response["hook_id"],
        "hook_name": "PreToolUse:Bash",
        "hook_event": "PreToolUse",
        "uuid": started["uuid"],
        "session_id": done.messages[4]["session_id"],
    }
    assert (response["exit_code"], response["outcome"], response["stdout"]) == (0, "success", "")
    assert done.messages[0]["hook_name"] == "SessionStart:startup"
    up = done.messages[3]
    assert (up["hook_name"], up["stderr"], up["output"]) == ("UserPromptSubmit", "up\n", "up\n")
    hook_input = json.loads((tmp_path / "input.json").read_text())
    assert hook_input["hook_event_name"] == "PreToolUse"
    assert hook_input["tool_input"] == {"command": "echo hi"}
    assert done.messages[-1]["result"] == "ok"


def test_only_session_start_hook_events_without_the_flag(tmp_path: Path) -> None:
    """Observed: without ``--include-hook-events`` the hooks still run, and only
    SessionStart's events are written."""
    cli = install_cli("claude", TOOL_TURN, bin_dir=tmp_path)
    settings = _hooks(SessionStart=["echo ss"], PreToolUse=[f"touch {tmp_path}/ran"])
    done = run(cli, lines(user("go")), *STREAM, "--settings", settings, "--allowedTools", "Bash")
    hook_events = [m["hook_event"] for m in done.messages if "hook_event" in m]
    assert hook_events == ["SessionStart", "SessionStart"]
    assert (tmp_path / "ran").exists()


def test_a_pre_tool_use_hook_exiting_2_denies_the_tool(tmp_path: Path) -> None:
    """Observed: ``outcome: "error"``, ``exit_code: 2``, and the tool's result is the error
    ``PreToolUse:Bash hook error: [<command>]: <stderr>``; exit 1 is a non-blocking error."""
    cli = install_cli("claude", TOOL_TURN, bin_dir=tmp_path)
    settings = _hooks(PreToolUse=["echo nope >&2; exit 2"])
    flags = ["--settings", settings, "--include-hook-events", "--allowedTools", "Bash"]
    done = run(cli, lines(user("go")), *STREAM, *flags)
    response = next(m for m in done.messages if m.get("subtype") == "hook_response")
    assert (response["exit_code"], response["outcome"], response["stderr"]) == (
        2,
        "error",
        "nope\n",
    )
    (result,) = [m for m in done.messages if m["type"] == "user"]
    block = result["message"]["content"][0]
    assert block["content"] == "PreToolUse:Bash hook error: [echo nope >&2; exit 2]: nope\n"
    assert block["is_error"] is True
    assert done.messages[-1]["permission_denials"][0]["tool_name"] == "Bash"


def test_a_user_prompt_submit_hook_exiting_2_blocks_the_prompt(tmp_path: Path) -> None:
    """Observed (2.1.332, ``-p hi --settings`` with a UserPromptSubmit hook ``echo
    blocked-by-policy >&2; exit 2``): no model request; ``system/init``, then an
    ``informational`` warning whose content is also the result, then a ``success`` result with
    ``num_turns: 0``; exit 0. Without stderr the text says ``No stderr output``."""
    cli = install_cli("claude", Script.of([Text("served later")]), bin_dir=tmp_path)
    settings = _hooks(UserPromptSubmit=["grep -q blockme && echo policy >&2 && exit 2; exit 0"])
    done = run(cli, lines(user("blockme"), user("fine")), *STREAM, "--settings", settings)
    seen = [m.get("subtype") or m["type"] for m in done.messages]
    assert seen == ["init", "informational", "success", "init", "assistant", "success"]
    informational, blocked = done.messages[1:3]
    assert informational["content"] == (
        "UserPromptSubmit operation blocked by hook:\n"
        "[grep -q blockme && echo policy >&2 && exit 2; exit 0]: policy\n\n\n"
        "Original prompt: blockme"
    )
    assert informational["level"] == "warning"
    assert informational["prevent_continuation"] is True
    assert informational["prompt_submit_outcome"] == {
        "kind": "blocked_by_hook",
        "prompt_kept": False,
        "reason": "policy",
    }
    assert (blocked["result"], blocked["num_turns"], blocked["is_error"]) == (
        informational["content"],
        0,
        False,
    )
    assert "terminal_reason" not in blocked
    assert done.messages[-1]["result"] == "served later"  # the blocked prompt used no turn
    assert done.returncode == 0
    cli.assert_all_used()


def test_a_blocking_hook_without_stderr_says_so(tmp_path: Path) -> None:
    cli = install_cli("claude", Script.of([Text("never")]), bin_dir=tmp_path)
    settings = _hooks(UserPromptSubmit=["exit 2"])
    done = run(cli, lines(user("hi")), *STREAM, "--settings", settings)
    assert done.messages[-1]["result"] == (
        "UserPromptSubmit operation blocked by hook:\n[exit 2]: No stderr output\n\n"
        "Original prompt: hi"
    )
    assert "reason" not in done.messages[1]["prompt_submit_outcome"]
    assert [i for i, _ in cli.unused_turns()] == [0]


def test_a_stop_hook_exiting_2_makes_the_model_go_on(tmp_path: Path) -> None:
    """Observed (2.1.332, a Stop hook that exits 2 once): a synthetic user message with the
    hook's feedback, a ``stop-hook-error`` notification, a second model response, the Stop
    hooks again (now ``stop_hook_active``); one result over both responses."""
    script = Script.of(
        [Text("first answer"), Usage(input_tokens=10, output_tokens=2)],
        [Text("second answer"), Usage(input_tokens=20, output_tokens=3)],
    )
    cli = install_cli("claude", script, bin_dir=tmp_path)
    once = tmp_path / "once"
    hook = f"cat >> {tmp_path}/inputs; [ -f {once} ] && exit 0; touch {once}; echo more >&2; exit 2"
    done = run(cli, lines(user("hi")), *STREAM, "--settings", _hooks(Stop=[hook]))
    seen = [m.get("subtype") or m["type"] for m in done.messages]
    assert seen == ["init", "assistant", "user", "notification", "assistant", "success"]
    feedback = done.messages[2]
    assert feedback["message"]["content"] == [
        {"type": "text", "text": f"Stop hook feedback:\n[{hook}]: more\n"}
    ]
    assert feedback["isSynthetic"] is True
    assert feedback["timestamp"] == "2026-01-01T00:00:00.000Z"
    assert done.messages[3]["key"] == "stop-hook-error"
    result = done.messages[-1]
    assert (result["result"], result["num_turns"]) == ("second answer", 2)
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (30, 5)
    inputs = [json.loads(line) for line in (tmp_path / "inputs").read_text().splitlines()]
    assert [i["stop_hook_active"] for i in inputs] == [False, True]
    cli.assert_all_used()


def test_a_stop_hook_that_never_lets_go_runs_out_of_script(tmp_path: Path) -> None:
    cli = install_cli("claude", Script.of([Text("only")]), bin_dir=tmp_path)
    done = run(cli, lines(user("hi")), *STREAM, "--settings", _hooks(Stop=["exit 2"]))
    assert done.messages[2]["message"]["content"][0]["text"] == (
        "Stop hook feedback:\n[exit 2]: No stderr output"
    )
    assert done.messages[-1]["subtype"] == "error_during_execution"
    assert "has no turn for request #2" in done.stderr.decode()
    assert done.returncode == 1


def test_a_settings_path_that_is_not_there(happy: InstalledCli, tmp_path: Path) -> None:
    """Observed: text that is not JSON is a path, resolved against the working directory."""
    done = run(happy, lines(user("hi")), *STREAM, "--settings", "nope.json")
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == f"Error: Settings file not found: {os.getcwd()}/nope.json\n".encode()


def test_total_cost_is_the_processs_running_total_usage_is_the_turns(tmp_path: Path) -> None:
    """Observed (2.1.332, two prompts in one stream-json process at $0.006 each): the second
    result says total_cost_usd 0.012 and modelUsage costUSD 0.012; usage is that turn's."""
    script = Script.of(
        [Text("one"), Usage(input_tokens=10, output_tokens=5, cost=0.006)],
        [Text("two"), Usage(input_tokens=20, output_tokens=7, cost=0.006)],
    )
    cli = install_cli("claude", script, bin_dir=tmp_path)
    done = run(cli, lines(user("go"), user("again")), *STREAM)
    results = [m for m in done.messages if m["type"] == "result"]
    assert [r["total_cost_usd"] for r in results] == [0.006, 0.012]
    assert [r["usage"]["input_tokens"] for r in results] == [10, 20]
    assert [next(iter(r["modelUsage"].values()))["costUSD"] for r in results] == [0.006, 0.012]


@pytest.mark.parametrize(
    ("line", "described"),
    [
        (b'{"kind": "user", bad', b"type=unknown, 20 chars"),  # no "type" key at all
        (b'{"type": 5, bad', b"type=unknown, 15 chars"),  # a type that is no string
        # JSON that is not an object is skipped, as the real claude 2.1.332 skips it
        # (observed; test_claude_odd_stdin.py)
    ],
)
def test_a_stdin_line_that_is_no_message_names_its_type_or_unknown(
    happy: InstalledCli, line: bytes, described: bytes
) -> None:
    done = run(happy, line + b"\n")
    assert done.returncode == 1
    assert done.stderr == b"Error parsing streaming input line (" + described + b"): SyntaxError\n"


def test_control_requests_the_sdk_sends_get_the_cli_answers(happy: InstalledCli) -> None:
    def control(request_id: str, **request: Any) -> dict[str, Any]:
        return {"type": "control_request", "request_id": request_id, "request": request}

    done = run(
        happy,
        lines(
            INIT,
            control("m", subtype="mcp_status"),
            control("c", subtype="get_context_usage"),
            control("w", subtype="rewind_files"),
            control("s", subtype="set_model", model="claude-opus-x"),
            control("p", subtype="set_permission_mode", mode="acceptEdits"),
            control("i", subtype="interrupt"),  # nothing running: still answered
        ),
    )
    answers = {
        m["response"]["request_id"]: m["response"]["response"]
        for m in done.messages
        if m["type"] == "control_response"
    }
    assert answers["m"] == {"mcpServers": []}
    assert answers["c"]["maxTokens"] == 200000
    assert answers["w"] == {}
    assert answers["s"] == {"model": "claude-opus-x"}
    assert answers["p"] == {"mode": "acceptEdits"}
    assert answers["i"] == {"still_queued": []}
    assert done.returncode == 0


def test_continue_without_a_session_and_a_session_id_in_use_fail_as_the_cli(
    tmp_path: Path,
) -> None:
    cli = install_cli("claude", scenarios.build("multi_turn", turns=2), bin_dir=tmp_path)
    nothing = run(cli, lines(INIT, user("one")), *STREAM, "--continue")
    assert nothing.returncode == 1
    assert nothing.messages[-1]["errors"] == ["No conversation found to continue"]
    sid = "6f1e1c52-4a57-4f5e-9d1a-3b0e2a7c1d11"
    first = run(cli, lines(INIT, user("one")), *STREAM, f"--session-id={sid}")
    assert first.messages[-1]["session_id"] == sid
    again = run(cli, lines(INIT, user("two")), *STREAM, f"--session-id={sid}")
    assert again.returncode == 1
    assert again.messages[-1]["errors"] == [f"Error: Session ID {sid} is already in use."]


@pytest.mark.parametrize("request_id", [[1], {"a": 1}, 7, None])
def test_a_control_response_for_no_request_is_ignored_whatever_its_id(
    tmp_path: Path, request_id: Any
) -> None:
    """A response to no request it sent (a list or an object as its id used to be exit 70,
    "unhashable type", found by the stdin fuzz) is ignored; the turn is played."""
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    answer = {"type": "control_response", "response": {"request_id": request_id}}
    done = run(cli, lines(answer, user("hi")))
    assert done.returncode == 0
    assert done.messages[-1]["result"] == "Hello! How can I help you today?"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--session-id=notauuid"], "Error: Invalid session ID. Must be a valid UUID."),
        (["--session-id=6f1e1c52-4a57-4f5e-9d1a-3b0e2a7c1d1"], "Error: Invalid session ID."),
        (["--session-id=6f1e1c52_4a57-4f5e-9d1a-3b0e2a7c1d11"], "Error: Invalid session ID."),
        (["--session-id=6g1e1c52-4a57-4f5e-9d1a-3b0e2a7c1d11"], "Error: Invalid session ID."),
        (
            ["--session-id=notauuid", "--dangerously-skip-permissions"],
            "Error: Invalid session ID.",
        ),
        (
            ["--session-id=notauuid", "--resume", "abc"],
            "Error: --session-id with --continue or --resume also needs --fork-session.",
        ),
        (
            ["--session-id=6f1e1c52-4a57-4f5e-9d1a-3b0e2a7c1d11", "--continue"],
            "Error: --session-id with --continue or --resume also needs --fork-session.",
        ),
    ],
)
def test_a_session_id_is_checked_as_the_cli_checks_it(
    happy: InstalledCli, args: list[str], said: str
) -> None:
    """Observed (Claude Code 2.1.332): ``--session-id`` must be a UUID, and goes with
    ``--continue``/``--resume`` only beside ``--fork-session``, checked before the root check:
    one line on stderr, nothing on stdout, exit 1."""
    done = run(happy, lines(INIT, user("hi")), *STREAM, *args)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode().startswith(said)
    assert done.stderr.count(b"\n") == 1


def test_an_upper_case_uuid_is_a_session_id(happy: InstalledCli) -> None:
    sid = "6F1E1C52-4A57-4F5E-9D1A-3B0E2A7C1D11"
    done = run(happy, lines(INIT, user("hi")), *STREAM, f"--session-id={sid}")
    assert done.returncode == 0
    assert done.messages[-1]["session_id"] == sid


def test_the_shared_state_does_not_grow_with_the_sessions_seen(tmp_path: Path) -> None:
    """Each session is a record of its own: ``state.json`` stays the size it had after the
    first session (a spawn reads the session it resumes, not every one before it), and the
    first session still resumes with its turn count after many others."""
    script = Script.of(Turn(steps=(Text("hi"),), times=40), name="s")
    cli = install_cli("claude", script, bin_dir=tmp_path)
    first = run(cli, lines(INIT, user("one")), *STREAM)
    sid = first.messages[-1]["session_id"]
    state = cli.state_dir / "state.json"
    size = len(state.read_bytes().rstrip())
    for _ in range(12):
        assert run(cli, lines(INIT, user("more")), *STREAM).returncode == 0
    assert len(state.read_bytes().rstrip()) <= size + 4  # counters gain digits, nothing more
    assert len(list((cli.state_dir / "sessions").iterdir())) == 13
    again = run(cli, lines(INIT, user("two")), *STREAM, "--resume", sid)
    assert (again.returncode, again.messages[-1]["session_id"]) == (0, sid)
    assert again.messages[-1]["num_turns"] == 1
