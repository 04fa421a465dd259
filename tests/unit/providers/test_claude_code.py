"""``ClaudeCodeProvider`` over the fake ``claude``: the real, unmodified claude-agent-sdk
spawns the double through ``cli_path``; the provider turns what the SDK yields into
normalized events. Then the conformance suite over the whole catalog."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (
    ClaudeAgentOptions,
    CLIConnectionError,
    CLIJSONDecodeError,
    ProcessError,
    ResultError,
)

from stuntset import scenarios
from stuntset.checks import check_provider_conformance
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.driver import drive
from stuntset.errors import UsageError
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    InputRequested,
    InputResolved,
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    ToolCompleted,
    ToolStarted,
    Usage,
)
from stuntset.providers.claude_code import ClaudeCodeProvider, crash_of
from stuntset.script import Script

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # each run's CLI session lives in an asyncio task


class Clis:
    """One fake ``claude`` per script (providers made for the same script share it, as the
    conformance suite's resume check needs), each in its own directory under tmp_path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = itertools.count()
        self.installed: dict[int, InstalledCli] = {}

    def cli(self, script: Script) -> InstalledCli:
        if id(script) not in self.installed:
            bin_dir = self.root / f"bin{next(self.count)}"
            cli = install_cli("claude", script, bin_dir=bin_dir, time_scale=0.1)
            self.installed[id(script)] = cli
        return self.installed[id(script)]

    def __call__(self, script: Script) -> ClaudeCodeProvider:
        return ClaudeCodeProvider(ClaudeAgentOptions(cli_path=self.cli(script).path))


@pytest.fixture
def clis(tmp_path: Path) -> Clis:
    return Clis(tmp_path)


async def play(provider: ClaudeCodeProvider, prompt: str = "hi", **options: Any) -> list[Event]:
    resume = options.pop("resume", None)
    return await drive(provider.start(prompt, resume=resume), timeout=30, **options)


def texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, MessageCompleted)]


async def test_a_text_turn_streams_deltas_usage_and_completes(clis: Clis) -> None:
    provider = clis(scenarios.build("happy_path"))
    events = await play(provider)
    started = events[0]
    assert isinstance(started, RunStarted)
    assert (started.provider, started.session_id) == ("claude-code", provider.session_id)
    deltas = [e.text for e in events if isinstance(e, MessageDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == texts(events)[0] == "Hello! How can I help you today?"
    assert [(u.input_tokens, u.output_tokens) for u in events if isinstance(u, Usage)] == [(12, 9)]
    assert isinstance(events[-1], RunCompleted)


async def test_the_new_session_id_is_given_to_the_cli(clis: Clis) -> None:
    script = scenarios.build("happy_path")
    provider = clis(script)
    await play(provider)
    (invocation,) = clis.cli(script).invocations
    assert f"--session-id={provider.session_id}" in invocation.argv
    assert invocation.exit_code == 0


async def test_tool_calls_reasoning_and_results_are_normalized(clis: Clis) -> None:
    events = await play(clis(scenarios.build("interleaved_streaming")))
    started = [e for e in events if isinstance(e, ToolStarted)]
    completed = {e.tool_call_id: e for e in events if isinstance(e, ToolCompleted)}
    # the catalog's read_file, played as claude's own Read (which numbers the lines)
    assert [(s.name, s.input) for s in started] == [
        ("Read", {"file_path": "a.txt"}),
        ("Read", {"file_path": "b.txt"}),
    ]
    assert [completed[s.tool_call_id].output for s in started] == ["1\talpha", "1\tbeta"]
    reasoning = [e.text for e in events if isinstance(e, ReasoningCompleted)]
    assert reasoning[0].startswith("The user wants both files compared.")
    assert texts(events)[-1] == "a.txt says alpha, b.txt says beta."


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_approvals_are_asked_and_the_decision_reaches_the_cli(
    clis: Clis, decision: str
) -> None:
    script = scenarios.build("needs_approval")
    events = await play(clis(script), approve=decision)
    (asked,) = [e for e in events if isinstance(e, ApprovalRequested)]
    (tool,) = [e for e in events if isinstance(e, ToolStarted)]
    assert (asked.tool, asked.input, asked.tool_call_id) == (
        "Bash",
        {"command": "rm -rf build/"},
        tool.tool_call_id,
    )
    assert [e.decision for e in events if isinstance(e, ApprovalResolved)] == [decision]
    (result,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert result.is_error is (decision == "deny")
    assert isinstance(events[-1], RunCompleted)
    (invocation,) = clis.cli(script).invocations
    (answer,) = invocation.control_responses
    assert answer["response"]["response"]["behavior"] == decision


async def test_a_question_is_an_input_request_and_the_answer_reaches_the_cli(
    clis: Clis,
) -> None:
    script = scenarios.build("input_request")
    events = await play(clis(script), answer="main")
    (asked,) = [e for e in events if isinstance(e, InputRequested)]
    assert asked.prompt == "Which branch should I deploy?"
    assert [e.text for e in events if isinstance(e, InputResolved)] == ["main"]
    assert texts(events)[-1] == "Thanks, deploying now."
    (invocation,) = clis.cli(script).invocations
    assert "main" in str(invocation.control_responses)


@pytest.mark.parametrize(
    ("scenario", "params", "kind", "retryable"),
    [
        ("spawn_missing", {}, "spawn_failed", False),
        # the CLI retries the 401 (observed); the retry meets the double's 500: no turn left
        ("auth_expired_mid_run", {}, "http", True),
        # beyond the CLI's own 10 retries
        ("rate_limited", {"failures": 11}, "rate_limited", True),
        ("overloaded", {"failures": 11}, "overloaded", True),
        # the model stream breaks: the CLI asks again, and meets the same 500
        ("stream_cut", {}, "http", True),
        ("malformed_json", {}, "http", True),
        ("garbage_bytes", {}, "http", True),
        ("out_of_order", {}, "http", True),
        # the CLI itself breaks
        ("stream_cut", {"cli": True}, "exited", False),
        ("malformed_json", {"cli": True}, "protocol", False),
        ("garbage_bytes", {"cli": True}, "protocol", False),
        ("out_of_order", {"cli": True}, "protocol", False),
        ("crash_mid_turn", {"cli": True}, "exited", False),
        ("crash_mid_turn", {}, "http", True),
    ],
)
async def test_cli_failures_become_classified_crashes(
    clis: Clis, scenario: str, params: dict[str, Any], kind: str, retryable: bool
) -> None:
    events = await play(clis(scenarios.build(scenario, **params)))
    crashed = events[-1]
    assert isinstance(crashed, RunCrashed), events[-1]
    assert (crashed.kind, crashed.retryable) == (kind, retryable)


@pytest.mark.parametrize("scenario", ["rate_limited", "overloaded"])
async def test_the_clis_own_retries_are_no_event_and_the_run_completes(
    clis: Clis, scenario: str
) -> None:
    """The CLI's ``system/api_retry`` messages (one per retry) have no normalized event: the
    run reads as the retried request's answer, as the real claude's does (drift)."""
    script = scenarios.build(scenario, failures=3)
    events = await play(clis(script))
    assert [type(e).__name__ for e in events] == [
        "RunStarted",
        *["MessageDelta"] * sum(isinstance(e, MessageDelta) for e in events),
        "MessageCompleted",
        "Usage",
        "RunCompleted",
    ]
    (invocation,) = clis.cli(script).invocations
    retries = [m for m in invocation.stdout if m.get("subtype") == "api_retry"]
    assert [m["attempt"] for m in retries] == [1, 2, 3]


async def test_a_new_provider_resumes_the_session(clis: Clis) -> None:
    script = scenarios.build("multi_turn")
    first = clis(script)
    assert texts(await play(first, "one")) == ["Answer number 1."]
    second = clis(script)
    events = await play(second, "two", resume=first.session_id)
    assert texts(events) == ["Answer number 2."]
    assert second.session_id == first.session_id
    assert f"--resume={first.session_id}" in clis.cli(script).invocations[-1].argv


async def test_interrupting_a_stuck_turn_kills_it_and_the_cli_exits(clis: Clis) -> None:
    script = scenarios.build("stuck")
    provider = clis(script)
    events = await play(provider, interrupt_when=lambda e: isinstance(e, MessageDelta))
    assert isinstance(events[-1], RunKilled)
    await provider.aclose()
    (invocation,) = clis.cli(script).invocations
    assert invocation.exit_code is not None  # the process ended (not left running)


async def test_misuse_is_refused_up_front(clis: Clis) -> None:
    with pytest.raises(UsageError, match=r"options\.resume"):
        ClaudeCodeProvider(ClaudeAgentOptions(resume="abc"))
    provider = clis(scenarios.build("happy_path"))
    run = provider.start("hi")
    with pytest.raises(UsageError, match="no open request 'r1'"):
        await run.respond("r1", "allow")
    await run.aclose()


def test_runs_need_asyncio(clis: Clis) -> None:
    import anyio

    provider = clis(scenarios.build("happy_path"))

    async def iterate() -> None:
        with pytest.raises(UsageError, match="under asyncio, not trio"):
            await anext(aiter(provider.start("hi")))

    anyio.run(iterate, backend="trio")


@pytest.mark.slow
def test_the_provider_keeps_the_conformance_invariants_over_the_catalog(clis: Clis) -> None:
    report = check_provider_conformance(clis, timeout=30)
    # the stuck run is interrupted once its scripted events arrived, never after a quiet wait
    assert report.outcomes()["stuck"].stalled_by == "events"
    assert report.not_applicable() == []
    outcomes = {name: (r.terminal, r.kind) for name, r in report.outcomes().items()}
    assert outcomes["happy_path"] == ("run.completed", None)
    assert outcomes["stuck"] == ("run.killed", None)
    assert outcomes["spawn_missing"] == ("run.crashed", "spawn_failed")
    assert outcomes["crash_mid_turn"] == ("run.crashed", "http")


@pytest.mark.parametrize(
    ("error", "crash"),
    [
        (ResultError("API Error: 529", data={"api_error_status": 529}), ("overloaded", True)),
        (ResultError("API Error: 401", data={"api_error_status": 401}), ("auth", False)),
        (ResultError("API Error: 400", data={"api_error_status": 400}), ("http", False)),
        (ResultError("max turns", data={"subtype": "error_max_turns"}), ("exited", False)),
        (ProcessError("Command failed", exit_code=1), ("exited", False)),
        (CLIJSONDecodeError('{"type', ValueError("x")), ("protocol", False)),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), ("protocol", False)),
        (CLIConnectionError("Working directory does not exist: /nope"), ("spawn_failed", False)),
        (CLIConnectionError("ProcessTransport is not ready for writing"), ("exited", False)),
        (TimeoutError(), ("timeout", True)),
        (RuntimeError("Control request timeout: initialize"), ("timeout", True)),
        (ValueError("a bug"), ("internal", False)),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None,
)
def test_every_kind_of_sdk_failure_maps_to_its_crash_kind(
    error: BaseException, crash: tuple[str, bool]
) -> None:
    kind, message, retryable = crash_of(error)
    assert (kind, retryable) == crash
    assert message


def test_a_crash_message_keeps_the_sdk_text_and_says_what_was_undecodable() -> None:
    assert crash_of(TimeoutError())[1] == "TimeoutError"
    assert crash_of(ValueError("a bug"))[1] == "ValueError: a bug"
    assert crash_of(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"))[1].startswith(
        "undecodable bytes from the CLI: "
    )


async def test_a_run_interrupted_before_it_is_iterated_is_killed_without_a_cli(
    clis: Clis,
) -> None:
    script = scenarios.build("happy_path")
    provider = clis(script)
    run = provider.start("hi")
    await run.interrupt("changed my mind")
    events = [event async for event in run]
    assert [type(e) for e in events] == [RunStarted, RunKilled]
    killed = events[1]
    assert isinstance(killed, RunKilled)
    assert killed.reason == "changed my mind"
    assert not clis.cli(script).invocations  # no CLI was spawned
    assert repr(provider).startswith("ClaudeCodeProvider(cli_path=")
    await provider.aclose()


async def test_an_approval_takes_allow_or_deny_and_an_interrupt_ends_the_wait(
    clis: Clis,
) -> None:
    script = scenarios.build("needs_approval")
    provider = clis(script)
    run = provider.start("hi")
    asked = None
    async for event in run:
        if isinstance(event, ApprovalRequested):
            asked = event
            break
    assert asked is not None
    with pytest.raises(UsageError, match=r"takes 'allow' or 'deny', got 'yes'"):
        await run.respond(asked.request_id, "yes")
    await run.interrupt("stop")
    rest = [event async for event in run]
    killed = rest[-1]
    assert isinstance(killed, RunKilled)
    assert killed.reason == "stop"
    assert not [e for e in rest if isinstance(e, ApprovalResolved)]
    await provider.aclose()
    (invocation,) = clis.cli(script).invocations
    assert invocation.exit_code is not None  # the CLI did not outlive the run


async def test_the_result_messages_fields_are_kept_beyond_the_events(clis: Clis) -> None:
    provider = clis(scenarios.build("happy_path"))
    run = provider.start("hi")
    events = await drive(run, timeout=30)
    assert isinstance(events[-1], RunCompleted)
    assert run.result_fields == {  # type: ignore[attr-defined]
        "subtype": "success",
        "is_error": False,
        "api_error_status": None,
        "usage": True,
    }
