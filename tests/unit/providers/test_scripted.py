from __future__ import annotations

import anyio
import pytest

from stuntset import events as ev
from stuntset import scenarios
from stuntset.contract import check_events
from stuntset.driver import drive
from stuntset.errors import CapabilityError, ScriptError, ScriptExhausted, UnusedTurns, UsageError
from stuntset.events import encode_lines
from stuntset.providers import (
    AgentProvider,
    AgentRun,
    Capabilities,
    Interrupted,
    Responded,
    ScriptedProvider,
    Started,
    crash_for,
)
from stuntset.script import (
    Delay,
    Exit,
    HttpError,
    InputRequest,
    Reasoning,
    Script,
    Stall,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from stuntset.seams import deterministic
from stuntset.waiting import collect_events

pytestmark = pytest.mark.anyio


def types(events: list[ev.Event]) -> list[str]:
    return [e.type for e in events]


@pytest.mark.parametrize("entry", scenarios.all(), ids=lambda e: e.name)
async def test_every_scenario_keeps_the_contract(entry: scenarios.Scenario) -> None:
    provider = ScriptedProvider(entry.build())
    while provider.player.unused():
        events = await drive(
            provider.start("go"),
            interrupt_when=lambda e: entry.name == "stuck" and isinstance(e, ev.MessageCompleted),
        )
        check_events(events)
    provider.assert_all_turns_used()


async def test_a_tool_turn_renders_the_expected_events() -> None:
    provider = ScriptedProvider(scenarios.build("tool_use"))
    events = await drive(provider.start("read a.txt"))
    assert types(events) == [
        "run.started", *["message.delta"] * 6, "message.completed", "tool.started",
        "tool.completed", *["message.delta"] * 6, "message.completed", "usage", "run.completed",
    ]  # fmt: skip
    started = events[0]
    assert isinstance(started, ev.RunStarted)
    assert (started.run_id, started.session_id, started.provider) == (
        "run-1",
        "session-1",
        "scripted",
    )
    tool = events[8]
    assert isinstance(tool, ev.ToolStarted)
    assert (tool.tool_call_id, tool.name, tool.input) == ("tool-1", "read_file", {"path": "a.txt"})
    assert (
        "".join(e.text for e in events if isinstance(e, ev.MessageDelta) and e.item_id == "msg-1")
        == "Let me look at that file."
    )


def test_event_json_is_byte_identical_across_runs() -> None:
    def once() -> bytes:
        async def main() -> bytes:
            return encode_lines(
                await drive(ScriptedProvider(scenarios.build("interleaved_streaming")).start("x"))
            )

        with deterministic():
            return anyio.run(main)

    first, second = once(), once()
    assert first == second
    assert b'"ts":1767225600.0' in first


async def test_parallel_tool_results_answer_calls_in_order() -> None:
    events = await drive(ScriptedProvider(scenarios.build("interleaved_streaming")).start("x"))
    completed = [e for e in events if isinstance(e, ev.ToolCompleted)]
    assert [(e.tool_call_id, e.output) for e in completed] == [
        ("tool-1", "alpha"),
        ("tool-2", "beta"),
    ]
    assert "reasoning.delta" in types(events)


async def test_explicit_ids_are_kept() -> None:
    script = Script.of(
        [
            ToolCall("a", id="call_A"),
            ToolCall("b", id="call_B"),
            ToolResult("B", tool_call_id="call_B"),
            ToolResult("A"),
        ]
    )
    events = await drive(ScriptedProvider(script).start("x"))
    assert [(e.tool_call_id, e.output) for e in events if isinstance(e, ev.ToolCompleted)] == [
        ("call_B", "B"),
        ("call_A", "A"),
    ]


async def test_approval_blocks_until_answered() -> None:
    provider = ScriptedProvider(scenarios.build("needs_approval"))
    run = provider.start("clean")
    events = await collect_events(run, until=lambda e: isinstance(e, ev.ApprovalRequested))
    request = events[-1]
    assert isinstance(request, ev.ApprovalRequested)
    assert (request.request_id, request.tool_call_id, request.tool) == (
        "approval-1",
        "tool-1",
        "bash",
    )
    assert request.input == {"command": "rm -rf build/"}
    assert run.open_requests == {"approval-1": "approval"}
    await run.respond("approval-1", "allow")
    rest = await collect_events(run)
    assert types(rest)[:2] == ["approval.resolved", "tool.completed"]
    assert isinstance(rest[-1], ev.RunCompleted)
    assert provider.calls == [
        Started(run_id="run-1", prompt="clean"),
        Responded(run_id="run-1", request_id="approval-1", decision="allow"),
    ]


async def test_a_denied_tool_completes_as_an_error_and_skips_its_result() -> None:
    events = await drive(
        ScriptedProvider(scenarios.build("needs_approval")).start("x"), approve="deny"
    )
    done = [e for e in events if isinstance(e, ev.ToolCompleted)]
    assert len(done) == 1
    assert done[0].is_error
    assert done[0].output == "permission denied by the user"
    assert isinstance(events[-1], ev.RunCompleted)


async def test_input_request_takes_the_answer() -> None:
    events = await drive(
        ScriptedProvider(scenarios.build("input_request")).start("deploy"), answer="main"
    )
    resolved = next(e for e in events if isinstance(e, ev.InputResolved))
    assert (resolved.request_id, resolved.text) == ("input-1", "main")


async def test_respond_refuses_unknown_requests_and_bad_decisions() -> None:
    run = ScriptedProvider(scenarios.build("needs_approval")).start("x")
    await collect_events(run, until=lambda e: isinstance(e, ev.ApprovalRequested))
    with pytest.raises(
        UsageError, match=r"no open request 'nope' \(open: approval-1 \(approval\)\)"
    ):
        await run.respond("nope", "allow")
    with pytest.raises(UsageError, match="takes 'allow' or 'deny', got 'maybe'"):
        await run.respond("approval-1", "maybe")
    await run.interrupt()
    assert types(await collect_events(run)) == ["run.killed"]


@pytest.mark.parametrize(
    "blocker", [Stall(), Delay(3600), InputRequest("?")], ids=["stall", "delay", "input"]
)
async def test_interrupt_ends_a_waiting_run_as_killed(blocker: object) -> None:
    provider = ScriptedProvider(Script.of([Text("hi"), blocker]))  # type: ignore[list-item]
    run = provider.start("x")
    events = await drive(
        run, interrupt_when=lambda e: isinstance(e, ev.MessageCompleted), answer=lambda e: "never"
    )
    assert isinstance(events[-1], ev.RunKilled)
    assert events[-1].reason == "interrupted by drive()"
    assert Interrupted(run_id="run-1", reason="interrupted by drive()") in provider.calls


async def test_interrupt_between_deltas() -> None:
    run = ScriptedProvider(Script.of([Text("one two three four")])).start("x")
    events = await drive(run, interrupt_when=lambda e: isinstance(e, ev.MessageDelta))
    assert types(events) == ["run.started", "message.delta", "run.killed"]


async def test_delays_run_on_the_clock_seam(stuntset_clock: object) -> None:
    from stuntset.clock import FakeClock

    assert isinstance(stuntset_clock, FakeClock)
    events = await drive(
        ScriptedProvider(scenarios.build("slow", delay=0.5, first_token_latency=2)).start("x")
    )
    deltas = [e.ts - events[0].ts for e in events if isinstance(e, ev.MessageDelta)]
    assert deltas[:3] == [2.0, 2.5, 3.0]


@pytest.mark.parametrize(
    ("step", "kind", "retryable"),
    [
        (HttpError(401), "auth", False),
        (HttpError(403), "auth", False),
        (HttpError(429), "rate_limited", True),
        (HttpError(529), "overloaded", True),
        (HttpError(503), "overloaded", True),
        (HttpError(500), "http", True),
        (HttpError(400), "http", False),
        (HttpError(409), "http", True),
        (HttpError(400, should_retry=True), "http", True),
        (HttpError(500, should_retry=False), "http", False),
        (Exit(2, stderr="boom\n"), "exited", False),
    ],
)
async def test_faults_crash_the_run_as_an_adapter_would(
    step: object, kind: str, retryable: bool
) -> None:
    events = await drive(ScriptedProvider(Script.of([Text("a"), step])).start("x"))  # type: ignore[list-item]
    crash = events[-1]
    assert isinstance(crash, ev.RunCrashed)
    assert (crash.kind, crash.retryable) == (kind, retryable)
    assert crash_for(step) == (crash.kind, crash.message, crash.retryable)  # type: ignore[arg-type]
    assert crash_for(Text("a")) is None


async def test_exit_message_carries_code_and_stderr() -> None:
    events = await drive(ScriptedProvider(Script.of([Exit(2, stderr="boom\n")])).start("x"))
    assert events[-1] == ev.RunCrashed(
        run_id="run-1",
        ts=events[-1].ts,
        kind="exited",
        message="the runtime exited with code 2 mid-turn: boom",
    )


async def test_reasoning_and_usage() -> None:
    events = await drive(
        ScriptedProvider(Script.of([Reasoning("think"), Usage(3, 4, cost=0.01)])).start("x")
    )
    assert types(events) == [
        "run.started",
        "reasoning.delta",
        "reasoning.completed",
        "usage",
        "run.completed",
    ]
    assert events[3] == ev.Usage(
        run_id="run-1", ts=events[3].ts, input_tokens=3, output_tokens=4, cost=0.01
    )


async def test_resume_continues_the_session() -> None:
    provider = ScriptedProvider(scenarios.build("multi_turn", turns=2), session_id="s-7")
    first = await drive(provider.start("one"))
    assert first[0].session_id == "s-7"  # type: ignore[union-attr]
    second = await drive(provider.start("two", resume="s-9"))
    assert second[0].session_id == "s-9"  # type: ignore[union-attr]
    assert provider.session_id == "s-9"
    assert provider.prompts == ["one", "two"]


async def test_running_out_of_turns_and_unused_turns() -> None:
    provider = ScriptedProvider(Script.of([Text("a")], [Text("b")]))
    await drive(provider.start("1"))
    with pytest.raises(UnusedTurns, match="allow_unused_turns"):
        provider.assert_all_turns_used()
    await drive(provider.start("2"))
    with pytest.raises(ScriptExhausted, match="all 2 turns were used"):
        provider.start("3")


async def test_function_scripts_render_the_request() -> None:
    provider = ScriptedProvider(Script.from_function(lambda r: [Text(f"echo: {r.input_text}")]))
    events = await drive(provider.start("ping"))
    assert events[-2] == ev.MessageCompleted(
        run_id="run-1", ts=events[-2].ts, item_id="msg-1", text="echo: ping"
    )


async def test_function_turns_are_checked_against_the_agent_wire() -> None:
    provider = ScriptedProvider(Script.from_function(lambda r: [ToolCall("x")]))
    with pytest.raises(ScriptError, match="every tool_call needs a tool_result"):
        provider.start("x")


async def test_aclose_kills_running_runs_and_iteration_resumes() -> None:
    provider = ScriptedProvider(Script.of([Text("a"), Stall()]))
    run = provider.start("x")
    assert types(await collect_events(run, until=lambda e: e.type == "message.completed")) == [
        "run.started", "message.delta", "message.completed"
    ]  # fmt: skip
    await provider.aclose()
    assert types(await collect_events(run)) == ["run.killed"]
    assert run.finished
    await run.aclose()


async def test_it_is_an_agent_provider_with_every_capability() -> None:
    provider = ScriptedProvider(Script.of([Text("a")]))
    assert isinstance(provider, AgentProvider)
    run = provider.start("x")
    assert isinstance(run, AgentRun)
    await run.aclose()
    assert types(run.events) == []
    assert provider.capabilities == Capabilities(
        approvals=True, input_requests=True, interrupt=True, resume=True, reasoning=True, usage=True
    )
    assert "session_id='session-1'" in repr(provider)


def test_capabilities_refuse_what_is_not_declared() -> None:
    caps = Capabilities(interrupt=True)
    caps.require("interrupt", provider="p")
    with pytest.raises(
        CapabilityError, match=r"provider 'p' cannot do 'approvals' \(it declares: interrupt\)"
    ):
        caps.require("approvals", provider="p")
    with pytest.raises(CapabilityError, match="unknown capability 'teleport'"):
        caps.require("teleport", provider="p")
    with pytest.raises(CapabilityError, match="declares: nothing"):
        Capabilities().require("usage", provider="p")
