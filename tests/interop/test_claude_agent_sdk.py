"""The real, unmodified claude-agent-sdk against the fake ``claude``: ``query()`` and
``ClaudeSDKClient`` through ``cli_path``, for every catalog scenario, pinning what the SDK yields
or raises (its own exception types) — and that nothing hangs."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    CLIJSONDecodeError,
    CLINotFoundError,
    HookEventMessage,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ProcessError,
    ResultError,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

from stuntset import scenarios  # noqa: E402
from stuntset.doubles.cli import InstalledCli, install_cli  # noqa: E402
from stuntset.doubles.cli.claude import retried  # noqa: E402
from stuntset.errors import ScriptExhausted  # noqa: E402
from stuntset.script import Garbage, RateLimit, Script, Text, Usage  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """claude-agent-sdk runs on asyncio."""
    return "asyncio"


def install(tmp_path: Path, name: str, **params: Any) -> InstalledCli:
    return install_cli("claude", scenarios.build(name, **params), bin_dir=tmp_path / "bin")


def options(cli: InstalledCli, **extra: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=cli.path, **extra)


async def collect(prompt: str, opts: ClaudeAgentOptions) -> list[Any]:
    with anyio.fail_after(20):
        return [message async for message in query(prompt=prompt, options=opts)]


async def collect_until_error(prompt: str, opts: ClaudeAgentOptions) -> tuple[list[Any], Any]:
    seen: list[Any] = []
    with anyio.fail_after(20):
        try:
            async for message in query(prompt=prompt, options=opts):
                seen.append(message)
        except Exception as error:
            return seen, error
    return seen, None


ECHO_HOOK = {"type": "command", "command": "echo checked"}


def texts(messages: list[Any]) -> list[str]:
    return [
        block.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for block in m.content
        if isinstance(block, TextBlock)
    ]


# --- the happy paths -------------------------------------------------------------------------


async def test_query_plain_text(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    messages = await collect("hello", options(cli))
    init, assistant, result = messages
    assert isinstance(init, SystemMessage)
    assert init.subtype == "init"
    assert init.data["claude_code_version"] == "2.1.332"
    assert texts([assistant]) == ["Hello! How can I help you today?"]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error, result.num_turns) == ("success", False, 1)
    assert result.result == "Hello! How can I help you today?"
    assert result.session_id == init.data["session_id"]
    assert result.usage is not None
    assert (result.usage["input_tokens"], result.usage["output_tokens"]) == (12, 9)
    (invocation,) = cli.invocations
    assert invocation.argv[:3] == ["--output-format", "stream-json", "--verbose"]
    assert invocation.env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"
    assert invocation.control_requests[0]["request"]["subtype"] == "initialize"
    assert invocation.user_messages[0]["message"]["content"] == "hello"
    assert invocation.exit_code == 0
    cli.assert_all_used()


async def test_init_reports_the_working_directory_the_sdk_chose(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    work = tmp_path / "project"
    work.mkdir()
    messages = await collect("hello", options(cli, cwd=work))
    assert messages[0].data["cwd"] == str(work)
    assert cli.invocations[0].cwd == str(work)


@pytest.mark.slow
async def test_found_first_on_path(tmp_path: Path) -> None:
    """The SDK prefers the binary bundled in its wheel over PATH (protocols.md §5.1). Where it
    has none (an sdist install, a platform without a bundled CLI) it searches PATH: shown with
    the SDK's own, unmodified files copied without ``_bundled/``, run in a fresh interpreter
    whose PATH starts with the double."""
    cli = install(tmp_path, "happy_path")
    source = Path(claude_agent_sdk.__file__).parent
    shutil.copytree(
        source, tmp_path / "sdk" / "claude_agent_sdk", ignore=shutil.ignore_patterns("_bundled")
    )
    program = (
        "import sys, anyio\n"
        f"sys.path.insert(0, {str(tmp_path / 'sdk')!r})\n"
        "from claude_agent_sdk import query, ResultMessage\n"
        "async def main():\n"
        "    async for m in query(prompt='hi'):\n"
        "        if isinstance(m, ResultMessage):\n"
        "            print(m.result)\n"
        "anyio.run(main)\n"
    )
    done = await anyio.run_process([sys.executable, "-c", program], env=cli.env(), check=False)
    assert done.stdout.decode().strip() == "Hello! How can I help you today?", done.stderr
    assert cli.invocations[0].exit_code == 0


async def test_tool_use_round_trip(tmp_path: Path) -> None:
    cli = install(tmp_path, "tool_use")
    messages = await collect("read a.txt", options(cli))
    calls = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content]
    (call,) = [b for b in calls if isinstance(b, ToolUseBlock)]
    # the catalog's read_file, played as claude's own Read (which numbers the lines)
    assert (call.name, call.input) == ("Read", {"file_path": "a.txt"})
    (result_block,) = [b for m in messages if isinstance(m, UserMessage) for b in m.content]
    assert isinstance(result_block, ToolResultBlock)
    assert result_block.tool_use_id == call.id
    assert result_block.content == "1\thello from a.txt"
    assert messages[-1].result == "The file says: hello from a.txt"
    assert messages[-1].num_turns == 2


async def test_thinking_blocks_and_parallel_calls(tmp_path: Path) -> None:
    cli = install(tmp_path, "interleaved_streaming")
    messages = await collect("compare", options(cli))
    blocks = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content]
    thinking = [b for b in blocks if isinstance(b, ThinkingBlock)]
    assert next(t.thinking for t in thinking).startswith("The user wants both files")
    assert all(t.signature for t in thinking)
    calls = [b.id for b in blocks if isinstance(b, ToolUseBlock)]
    answered = [
        b.tool_use_id
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert answered == calls
    assert len(set(calls)) == 2


async def test_partial_messages_stream_every_delta(tmp_path: Path) -> None:
    cli = install(tmp_path, "long_stream", deltas=200)
    messages = await collect("go", options(cli, include_partial_messages=True))
    deltas = [
        m.event["delta"]["text"]
        for m in messages
        if isinstance(m, StreamEvent) and m.event["type"] == "content_block_delta"
    ]
    assert len(deltas) == 200
    assert "".join(deltas) == texts(messages)[0]


async def test_multi_turn_client_keeps_one_session(tmp_path: Path) -> None:
    cli = install(tmp_path, "multi_turn", turns=3)
    answers, sessions = [], set()
    with anyio.fail_after(20):
        async with ClaudeSDKClient(options(cli)) as client:
            for prompt in ("one", "two", "three"):
                await client.query(prompt)
                async for message in client.receive_response():
                    if isinstance(message, ResultMessage):
                        answers.append(message.result)
                        sessions.add(message.session_id)
    assert answers == ["Answer number 1.", "Answer number 2.", "Answer number 3."]
    assert len(sessions) == 1
    assert len(cli.invocations) == 1
    cli.assert_all_used()


async def test_server_info_set_model_and_permission_mode(tmp_path: Path) -> None:
    cli = install(tmp_path, "multi_turn", turns=1)
    with anyio.fail_after(20):
        async with ClaudeSDKClient(options(cli)) as client:
            info = await client.get_server_info()
            assert info is not None
            assert info["claude_code_version"] == "2.1.332"
            await client.set_model("claude-opus-4-1")
            await client.set_permission_mode("acceptEdits")
            await client.query("one")
            seen = [m async for m in client.receive_response()]
    init = seen[0]
    assert isinstance(init, SystemMessage)
    assert (init.data["model"], init.data["permissionMode"]) == ("claude-opus-4-1", "acceptEdits")
    requests = [r["request"]["subtype"] for r in cli.invocations[0].control_requests]
    assert requests == ["initialize", "set_model", "set_permission_mode"]


async def test_resume_continues_the_recorded_session(tmp_path: Path) -> None:
    cli = install(tmp_path, "multi_turn", turns=2)
    first = await collect("one", options(cli))
    session = first[-1].session_id
    second = await collect("two", options(cli, resume=session))
    assert second[0].data["session_id"] == session
    assert second[-1].result == "Answer number 2."
    assert cli.invocations[1].argv.count(f"--resume={session}") == 1


async def test_continue_conversation_picks_the_latest_session(tmp_path: Path) -> None:
    cli = install(tmp_path, "multi_turn", turns=2)
    first = await collect("one", options(cli))
    second = await collect("two", options(cli, continue_conversation=True))
    assert second[-1].session_id == first[-1].session_id
    assert "--continue" in cli.invocations[1].argv


async def test_unknown_resume_fails_initialize_with_result_error(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    sid = "6f1e1c52-4a57-4f5e-9d1a-3b0e2a7c1d11"
    _seen, error = await collect_until_error("hi", options(cli, resume=sid))
    assert isinstance(error, ResultError)
    assert error.errors == [f"No conversation found with session ID: {sid}"]
    assert error.subtype == "error_during_execution"


async def test_can_use_tool_allow_with_updated_input(tmp_path: Path) -> None:
    cli = install(tmp_path, "needs_approval")
    asked: list[tuple[str, dict[str, Any], str | None]] = []

    async def decide(
        tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow:
        asked.append((tool, tool_input, context.tool_use_id))
        return PermissionResultAllow(updated_input={"command": "rm -rf dist/"})

    messages = await collect("clean", options(cli, can_use_tool=decide))
    ((tool, tool_input, tool_use_id),) = asked
    assert (tool, tool_input) == ("Bash", {"command": "rm -rf build/"})  # claude's own tool
    (result,) = [m for m in messages if isinstance(m, UserMessage)]
    output = "(Bash completed with no output)"  # what claude's Bash reports for no output
    assert result.tool_use_result == {"input": {"command": "rm -rf dist/"}, "output": output}
    assert result.content[0].tool_use_id == tool_use_id  # type: ignore[union-attr]
    assert messages[-1].result == "Done: the build directory is clean."
    assert messages[-1].permission_denials == []


async def test_can_use_tool_deny_skips_the_tool(tmp_path: Path) -> None:
    cli = install(tmp_path, "needs_approval")

    async def deny(
        tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultDeny:
        return PermissionResultDeny(message="not on my watch")

    messages = await collect("clean", options(cli, can_use_tool=deny))
    (result,) = [m for m in messages if isinstance(m, UserMessage)]
    block = result.content[0]
    assert isinstance(block, ToolResultBlock)
    assert (block.content, block.is_error) == ("not on my watch", True)
    assert messages[-1].permission_denials[0]["tool_name"] == "Bash"
    answer = cli.invocations[0].control_responses[0]["response"]["response"]
    assert answer == {"behavior": "deny", "message": "not on my watch"}


async def test_deny_with_interrupt_ends_the_turn(tmp_path: Path) -> None:
    cli = install(tmp_path, "needs_approval")

    async def deny(
        tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultDeny:
        return PermissionResultDeny(message="stop", interrupt=True)

    seen, error = await collect_until_error("clean", options(cli, can_use_tool=deny))
    assert isinstance(error, ResultError)
    assert error.terminal_reason == "aborted_streaming"
    assert isinstance(seen[-1], ResultMessage)
    assert seen[-1].subtype == "error_during_execution"


async def test_input_request_is_ask_user_question(tmp_path: Path) -> None:
    cli = install(tmp_path, "input_request")

    async def answer(
        tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow:
        assert tool == "AskUserQuestion"
        question = tool_input["questions"][0]["question"]
        return PermissionResultAllow(updated_input={**tool_input, "answers": {question: "main"}})

    messages = await collect("deploy", options(cli, can_use_tool=answer))
    (result,) = [m for m in messages if isinstance(m, UserMessage)]
    assert '"Which branch should I deploy?"="main"' in str(result.content[0].content)  # type: ignore[union-attr]
    assert messages[-1].result == "Thanks, deploying now."


async def test_hooks_are_called_before_the_tool(tmp_path: Path) -> None:
    cli = install(tmp_path, "tool_use")
    calls: list[dict[str, Any]] = []

    async def pre_tool(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        calls.append(data)
        return {}

    hooks: Any = {"PreToolUse": [HookMatcher(matcher="Read", hooks=[pre_tool])]}  # type: ignore[list-item]
    messages = await collect("read", options(cli, hooks=hooks))
    ((data),) = calls
    assert data["tool_name"] == "Read"
    assert data["tool_input"] == {"file_path": "a.txt"}
    assert messages[-1].result == "The file says: hello from a.txt"


async def test_settings_hooks_surface_as_hook_event_messages(tmp_path: Path) -> None:
    """Observed with the bundled Claude Code 2.1.332 through this SDK: command hooks from
    ``settings`` write ``hook_started``/``hook_response`` system messages with
    ``include_hook_events``, which the SDK yields as ``HookEventMessage``; hooks registered
    through ``hooks=`` (``hook_callback``) write none."""
    cli = install(tmp_path, "tool_use")
    settings = {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [ECHO_HOOK]}]}}
    callback_calls: list[str] = []

    async def pre_tool(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        callback_calls.append(data["hook_event_name"])
        return {}

    hooks: Any = {"PreToolUse": [HookMatcher(matcher="Read", hooks=[pre_tool])]}  # type: ignore[list-item]
    opts = options(
        cli,
        settings=json.dumps(settings),
        include_hook_events=True,
        hooks=hooks,
        allowed_tools=["Read"],
    )
    messages = await collect("read", opts)
    events = [m for m in messages if isinstance(m, HookEventMessage)]
    assert [(m.subtype, m.hook_event_name) for m in events] == [
        ("hook_started", "PreToolUse"),
        ("hook_response", "PreToolUse"),
    ]
    assert events[1].data["stdout"] == "checked\n"
    assert events[1].data["outcome"] == "success"
    assert events[1].data["hook_name"] == "PreToolUse:Read"
    assert callback_calls == ["PreToolUse"]
    assert messages[-1].result == "The file says: hello from a.txt"


async def test_a_user_prompt_submit_hook_exiting_2_blocks_the_prompt(tmp_path: Path) -> None:
    """Observed with the bundled Claude Code 2.1.332: a blocked prompt reaches no model; the
    SDK yields the ``informational`` warning as a ``SystemMessage`` and a successful
    ``ResultMessage`` with zero turns whose result says why."""
    cli = install(tmp_path, "happy_path")
    block = {"type": "command", "command": "echo not today >&2; exit 2"}
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [block]}]}}
    messages = await collect("hi", options(cli, settings=json.dumps(settings)))
    assert [type(m).__name__ for m in messages] == [
        "SystemMessage",
        "SystemMessage",
        "ResultMessage",
    ]
    warning, result = messages[1], messages[2]
    assert isinstance(warning, SystemMessage)
    assert warning.subtype == "informational"
    assert warning.data["prompt_submit_outcome"]["reason"] == "not today"
    assert isinstance(result, ResultMessage)
    assert (result.is_error, result.num_turns) == (False, 0)
    assert result.result == (
        "UserPromptSubmit operation blocked by hook:\n[echo not today >&2; exit 2]: not today\n"
        "\n\nOriginal prompt: hi"
    )
    assert [i for i, _ in cli.unused_turns()] == [0]  # no model request was made


async def test_a_settings_hook_exiting_2_denies_the_tool(tmp_path: Path) -> None:
    cli = install(tmp_path, "tool_use")
    deny = {"type": "command", "command": "echo not that file >&2; exit 2"}
    settings = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [deny]}]}}
    opts = options(cli, settings=json.dumps(settings), include_hook_events=True)
    messages = await collect("read", opts)
    (response,) = [
        m for m in messages if isinstance(m, HookEventMessage) and m.subtype == "hook_response"
    ]
    assert (response.data["exit_code"], response.data["outcome"]) == (2, "error")
    (result,) = [m for m in messages if isinstance(m, UserMessage)]
    block = result.content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.is_error is True
    assert block.content == (
        "PreToolUse:Read hook error: [echo not that file >&2; exit 2]: not that file\n"
    )


async def test_interrupt_a_stuck_turn(tmp_path: Path) -> None:
    cli = install(tmp_path, "stuck")
    seen: list[Any] = []
    with anyio.fail_after(20):
        async with ClaudeSDKClient(options(cli)) as client:
            await client.query("go")
            async for message in client.receive_messages():
                seen.append(message)
                if isinstance(message, AssistantMessage):
                    break
            await client.interrupt()
            async for message in client.receive_response():
                seen.append(message)
    result = seen[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error) == ("error_during_execution", True)
    interrupted = [m for m in seen if isinstance(m, UserMessage)]
    assert interrupted[0].content[0].text == "[Request interrupted by user]"  # type: ignore[union-attr]
    assert cli.invocations[0].exit_code == 1


async def test_slow_start_and_scaled_delays_still_complete(tmp_path: Path) -> None:
    script = scenarios.build("slow", delay=0.01, first_token_latency=0.1)
    cli = install_cli("claude", script, bin_dir=tmp_path, startup_delay=0.2, time_scale=0.5)
    started = time.monotonic()
    messages = await collect("hi", options(cli))
    assert time.monotonic() - started >= 0.2 + 0.05
    assert messages[-1].subtype == "success"
    # from the script, not the clock: 100 + 6 x 10 ms of scripted delays, 10 ms a response, +1
    assert messages[-1].duration_ms == 171


# --- the failures ------------------------------------------------------------------------------


async def test_spawn_missing_raises_cli_not_found(tmp_path: Path) -> None:
    cli = install(tmp_path, "spawn_missing")
    seen, error = await collect_until_error("hi", options(cli))
    assert seen == []
    assert isinstance(error, CLINotFoundError)
    assert str(cli.path) in str(error)


@pytest.mark.parametrize(
    ("name", "params", "status", "prose", "retries"),
    [
        # the CLI retries the 401 once; the retry meets the model double's 500 (observed)
        ("auth_expired_mid_run", {}, 500, "API Error: 500 stuntset: no scripted turn", 1),
        # 11 failures outlast the CLI's own 10 retries (observed with the bundled 2.1.332)
        ("rate_limited", {"failures": 11}, 429, "Request rejected (429) · Rate limit", 10),
        ("overloaded", {"failures": 11}, 529, "API Error: 529 Overloaded. This is a", 10),
    ],
)
async def test_api_errors_raise_result_error(
    tmp_path: Path, name: str, params: dict[str, Any], status: int, prose: str, retries: int
) -> None:
    cli = install(tmp_path, name, **params)
    seen, error = await collect_until_error("hi", options(cli))
    assert isinstance(error, ResultError)
    assert error.api_error_status == status
    assert error.terminal_reason == "api_error"
    assert prose in str(error)
    retried_ = [m for m in seen if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    assert [m.data["attempt"] for m in retried_] == list(range(1, retries + 1))
    synthetic = [m for m in seen if isinstance(m, AssistantMessage) and m.model == "<synthetic>"]
    assert synthetic[0].error is not None
    assert isinstance(seen[-1], ResultMessage)
    assert seen[-1].is_error is True


@pytest.mark.skipif(sys.platform == "win32" or os.getuid() != 0, reason="root only")
async def test_bypass_permissions_as_root_raises_process_error(tmp_path: Path) -> None:
    """The bundled Claude Code 2.1.332 through this SDK as root (observed): stderr
    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security
    reasons", exit 1 before ``initialize`` is answered: ``ProcessError`` (exit_code 1), no
    message."""
    cli = install(tmp_path, "happy_path")
    lines: list[str] = []
    no_sandbox = {"IS_SANDBOX": "0", "CLAUDE_CODE_BUBBLEWRAP": "0"}
    opts = options(cli, permission_mode="bypassPermissions", env=no_sandbox, stderr=lines.append)
    seen, error = await collect_until_error("hi", opts)
    assert seen == []
    assert isinstance(error, ProcessError)
    assert error.exit_code == 1
    assert lines == [
        "--dangerously-skip-permissions cannot be used with root/sudo privileges for security "
        "reasons"
    ]
    assert cli.unused_turns()


async def test_bypass_permissions_in_a_declared_sandbox(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    opts = options(cli, permission_mode="bypassPermissions", env={"IS_SANDBOX": "1"})
    messages = await collect("hi", opts)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert init.data["permissionMode"] == "bypassPermissions"
    assert messages[-1].subtype == "success"


async def test_max_budget_usd_raises_result_error(tmp_path: Path) -> None:
    """The bundled Claude Code 2.1.332 through this SDK with ``max_budget_usd=0.001`` and a
    response costing more (observed): the ``ResultMessage`` (``error_max_budget_usd``), then
    ``ResultError("Claude Code returned an error result: Reached maximum budget ($0.001)")``
    with ``terminal_reason == "budget_exhausted"``, ``result is None``, exit code 1."""
    script = Script.of([Text("one"), Usage(input_tokens=1000, output_tokens=100, cost=0.006)])
    cli = install_cli("claude", script, bin_dir=tmp_path / "bin")
    seen, error = await collect_until_error("hi", options(cli, max_budget_usd=0.001))
    assert texts(seen) == ["one"]
    assert isinstance(seen[-1], ResultMessage)
    assert seen[-1].subtype == "error_max_budget_usd"
    assert isinstance(error, ResultError)
    assert str(error) == (
        "Claude Code returned an error result: Reached maximum budget ($0.001) (exit code: 1)"
    )
    assert (error.subtype, error.terminal_reason, error.result, error.exit_code) == (
        "error_max_budget_usd",
        "budget_exhausted",
        None,
        1,
    )
    within = install_cli("claude", script, bin_dir=tmp_path)
    messages = await collect("hi", options(within, max_budget_usd=0.01))
    assert messages[-1].subtype == "success"


@pytest.mark.parametrize(
    ("name", "status", "error", "answer"),
    [
        ("rate_limited", 429, "rate_limit", "Sorry for the wait. Here is the answer."),
        ("overloaded", 529, "overloaded", "Back in service. Here is the answer."),
    ],
)
async def test_the_cli_retries_a_rate_limit_or_an_overload_itself(
    tmp_path: Path, name: str, status: int, error: str, answer: str
) -> None:
    """As the bundled Claude Code 2.1.332 does over the model double (observed): one
    ``system/api_retry`` (a plain ``SystemMessage`` to the SDK), then the retried request's
    answer, in one ``query()``; both scripted turns are used."""
    cli = install(tmp_path, name, failures=2)
    messages = await collect("hi", options(cli))
    retries = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    assert [m.data for m in retries] == [
        {
            "type": "system",
            "subtype": "api_retry",
            "attempt": attempt,
            "max_retries": 10,
            "retry_delay_ms": 1,
            "error_status": status,
            "error": error,
            "session_id": messages[-1].session_id,
            "uuid": m.data["uuid"],
        }
        for attempt, m in enumerate(retries, 1)
    ]
    assert len(retries) == 2
    assert texts(messages) == [answer]
    assert isinstance(messages[-1], ResultMessage)
    assert (messages[-1].is_error, messages[-1].result) == (False, answer)
    cli.assert_all_used()


async def test_a_retry_with_no_turn_left_meets_the_doubles_500(tmp_path: Path) -> None:
    """Only a 429 scripted: the real CLI's retry meets the model double's 500 for a request
    no turn answers (``x-should-retry: false``, not retried) and gives up with it (observed);
    the fake ends the same way, and the request is reported as on the double."""
    cli = install_cli("claude", Script.of([RateLimit()]), bin_dir=tmp_path)
    seen, error = await collect_until_error("hi", options(cli))
    assert isinstance(error, ResultError)
    assert error.api_error_status == 500
    assert "API Error: 500 stuntset: no scripted turn answers this request." in str(error)
    assert [m.subtype for m in seen if isinstance(m, SystemMessage)][-1] == "api_retry"
    with pytest.raises(ScriptExhausted, match="no turn for request #2"):
        cli.assert_all_used()


async def test_with_no_retries_allowed_the_first_rate_limit_ends_the_run(tmp_path: Path) -> None:
    """``CLAUDE_CODE_MAX_RETRIES=0`` (observed: the real CLI then gives up at once)."""
    cli = install(tmp_path, "rate_limited")
    opts = options(cli, env={"CLAUDE_CODE_MAX_RETRIES": "0"})
    seen, error = await collect_until_error("hi", opts)
    assert isinstance(error, ResultError)
    assert error.api_error_status == 429
    assert not [m for m in seen if isinstance(m, SystemMessage) and m.subtype == "api_retry"]
    messages = await collect("hi", options(cli))  # asked again, the next turn answers
    assert messages[-1].result == "Sorry for the wait. Here is the answer."
    cli.assert_all_used()


async def test_stream_cut_raises_process_error_after_the_partial_output(tmp_path: Path) -> None:
    cli = install(tmp_path, "stream_cut", cli=True)  # the CLI itself breaks
    seen, error = await collect_until_error("hi", options(cli))
    assert texts(seen) == ["partial0 partial1 partial2 partial3 partial4"]
    assert isinstance(error, ProcessError)
    assert error.exit_code == 1


async def test_malformed_json_raises_cli_json_decode_error(tmp_path: Path) -> None:
    cli = install(tmp_path, "malformed_json", cli=True)  # the CLI itself breaks
    seen, error = await collect_until_error("hi", options(cli))
    assert texts(seen) == ["Starting the answer"]
    assert isinstance(error, CLIJSONDecodeError)
    assert error.line.startswith('{"type": "content_block_delta"')


async def test_garbage_bytes_escape_as_a_raw_unicode_error(tmp_path: Path) -> None:
    """Invalid UTF-8 is not wrapped by the SDK: its text stream raises UnicodeDecodeError."""
    cli = install(tmp_path, "garbage_bytes", cli=True)  # the CLI itself breaks
    _, error = await collect_until_error("hi", options(cli))
    assert isinstance(error, UnicodeDecodeError)


@pytest.mark.slow
async def test_an_over_long_line_hits_the_sdk_buffer_limit(tmp_path: Path) -> None:
    """A single line over 1 MiB: ``CLIJSONDecodeError``. The SDK stops reading there and
    never closes its stdout pipe (a leak it reports as a ResourceWarning when collected:
    collected here, on purpose). The line is written by a fault step, so the process writes
    nothing after it: a line followed by more output would block the fake on a full pipe
    until the SDK's close() SIGTERMs it 5 s later."""
    line = Garbage(data='{"type":"assistant","x":"' + "x" * 1_100_000, invalid_utf8=False, cli=True)
    script = Script.of([Text("before"), line])
    cli = install_cli("claude", script, bin_dir=tmp_path)
    seen, error = await collect_until_error("hi", options(cli))
    assert texts(seen) == ["before"]
    assert isinstance(error, CLIJSONDecodeError)
    assert "exceeded maximum buffer size of 1048576" in str(error)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


async def test_out_of_order_is_not_detected_by_the_sdk(tmp_path: Path) -> None:
    cli = install(tmp_path, "out_of_order", cli=True)  # the CLI itself breaks
    seen, error = await collect_until_error("hi", options(cli))
    kinds = [type(m).__name__ for m in seen]
    assert kinds == ["SystemMessage", "UserMessage", "ResultMessage", "AssistantMessage"]
    assert seen[1].content[0].tool_use_id == "toolu_01NEVERSTARTED"
    assert isinstance(error, ProcessError)


async def test_crash_mid_turn_raises_process_error_with_the_exit_code(tmp_path: Path) -> None:
    cli = install(tmp_path, "crash_mid_turn", exit_code=3, cli=True)
    stderr: list[str] = []
    seen, error = await collect_until_error("hi", options(cli, stderr=stderr.append))
    assert isinstance(error, ProcessError)
    assert error.exit_code == 3
    assert stderr == ["fatal: unexpected error"]
    assert [type(m).__name__ for m in seen][-1] == "UserMessage"  # the partial work arrived
    assert cli.invocations[0].exit_code == 3


async def test_more_prompts_than_turns_is_a_result_error_and_script_exhausted(
    tmp_path: Path,
) -> None:
    cli = install(tmp_path, "happy_path")
    await collect("one", options(cli))
    _, error = await collect_until_error("two", options(cli))
    assert isinstance(error, ResultError)
    assert "has no turn for request #2" in str(error)
    with pytest.raises(ScriptExhausted, match="request #2"):
        cli.assert_all_used()


# Real time, on purpose (~5.3 s): the SDK's own escalation (5 s after stdin EOF, then
# SIGTERM) is what this test proves, and the SDK reads the real clock.
@pytest.mark.slow
async def test_a_process_ignoring_sigterm_is_killed_and_nothing_hangs(tmp_path: Path) -> None:
    """disconnect() closes stdin, waits 5 s for the exit, then SIGTERMs (then 5 s, SIGKILL): a
    stalled turn that ignores SIGTERM for 0.3 s still ends, and disconnect() returns (~5.3 s)."""
    cli = install_cli("claude", scenarios.build("stuck"), bin_dir=tmp_path, ignore_sigterm=0.3)
    with anyio.fail_after(30):
        async with ClaudeSDKClient(options(cli)) as client:
            await client.query("go")
            async for message in client.receive_messages():
                if isinstance(message, AssistantMessage):
                    break
    (invocation,) = cli.invocations
    assert any(e["event"] == "signal" for e in invocation.events)
    assert invocation.exit_code == 143


# --- the whole catalog through one client ------------------------------------------------------

#: What a ClaudeSDKClient sees per scenario: each turn's result subtype/is_error (and the CLI's
#: own retries, ``api_retry``), or the error.
EXPECTED: dict[str, Any] = {
    "happy_path": ["success"],
    "tool_use": ["success"],
    "needs_approval": ["success"],
    "input_request": ["success"],
    "interleaved_streaming": ["success"],
    "long_stream": ["success"],
    "multi_turn": ["success", "success", "success"],
    "spawn_missing": CLINotFoundError,
    # the CLI retries the 401; the retry meets the model double's 500 (no turn left)
    "auth_expired_mid_run": ["api_retry", "error:api_error"],
    "rate_limited": ["api_retry", "success"],
    "overloaded": ["api_retry", "success"],
    # the model stream breaks: the CLI asks again and meets the same 500
    "stream_cut": ["error:api_error"],
    "malformed_json": ["error:api_error"],
    "garbage_bytes": ["error:api_error"],
    "out_of_order": ["error:api_error"],
    "crash_mid_turn": ["api_retry", "error:api_error"],  # the connection drops, retried
    "stuck": ["error:aborted_streaming"],
    "slow": ["success"],
}


def test_the_expectations_cover_the_catalog() -> None:
    assert sorted(EXPECTED) == sorted(scenarios.names())


async def answer_everything(
    tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
) -> PermissionResultAllow:
    if tool == "AskUserQuestion":
        question = tool_input["questions"][0]["question"]
        return PermissionResultAllow(updated_input={**tool_input, "answers": {question: "yes"}})
    return PermissionResultAllow()


async def drive(cli: InstalledCli) -> list[str]:
    """One query per scripted turn, except for a turn that answers a request the CLI retried
    by itself (the query before it took it)."""
    outcomes: list[str] = []
    results = 0
    handed_on = False
    async with ClaudeSDKClient(options(cli, can_use_tool=answer_everything)) as client:
        for index, turn in enumerate(cli.script.turns):
            for _ in range(turn.times):
                if handed_on:
                    handed_on = retried(turn)
                    continue
                handed_on = retried(turn)
                await client.query(f"prompt {index}")
                async for message in client.receive_messages():
                    if isinstance(message, AssistantMessage) and cli.script.name == "stuck":
                        await client.interrupt()
                    if isinstance(message, SystemMessage) and message.subtype == "api_retry":
                        outcomes.append("api_retry")
                    if isinstance(message, ResultMessage):
                        outcomes.append(
                            "success"
                            if not message.is_error
                            else f"error:{_terminal_reason(cli, results)}"
                        )
                        results += 1
                        break
    return outcomes


def _terminal_reason(cli: InstalledCli, index: int) -> str:
    results = [m for i in cli.invocations for m in i.stdout if m["type"] == "result"]
    return str(results[index].get("terminal_reason"))


@pytest.mark.parametrize("name", scenarios.names())
async def test_every_catalog_scenario(tmp_path: Path, name: str) -> None:
    script = scenarios.build(name)
    if name == "slow":
        script = scenarios.build("slow", delay=0.001, first_token_latency=0.01)
    cli = install_cli("claude", script, bin_dir=tmp_path)
    expected = EXPECTED[name]
    with anyio.fail_after(20):
        if isinstance(expected, list):
            assert await drive(cli) == expected
            if name in ASKS_AGAIN:
                with pytest.raises(ScriptExhausted):  # the request no turn answered
                    cli.assert_all_used()
            else:
                cli.assert_all_used()
        else:
            with pytest.raises(expected):
                await drive(cli)


#: The scenarios whose one scripted turn ends in a request the CLI makes again by itself.
ASKS_AGAIN = {
    "auth_expired_mid_run",
    "stream_cut",
    "malformed_json",
    "garbage_bytes",
    "out_of_order",
    "crash_mid_turn",
}

#: What the SDK does when the CLI itself breaks (``cli=True``): it raises, or (out of order:
#: a result came before the bad content) the turn ends; the fake has exited either way.
CLI_BREAKS: dict[str, Any] = {
    "crash_mid_turn": ProcessError,
    "stream_cut": ProcessError,
    "malformed_json": CLIJSONDecodeError,
    "garbage_bytes": UnicodeDecodeError,
    "out_of_order": ["success"],
}


@pytest.mark.parametrize("name", sorted(CLI_BREAKS))
async def test_the_cli_itself_breaking_ends_the_turn(tmp_path: Path, name: str) -> None:
    cli = install_cli("claude", scenarios.build(name, cli=True), bin_dir=tmp_path)
    expected = CLI_BREAKS[name]
    with anyio.fail_after(20):
        if isinstance(expected, list):
            assert await drive(cli) == expected
        else:
            with pytest.raises(expected):
                await drive(cli)
    (invocation,) = cli.invocations
    assert invocation.exit_code == 1
