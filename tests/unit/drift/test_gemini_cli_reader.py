"""The drift ``gemini`` column's adapter (``stuntset.drift.gemini_cli``) reading the fake
``gemini``'s stream-json: messages, tools, usage, the crash kinds of its error results, a
stdout that ends without a result, an interrupt, a binary that is not there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from stuntset.doubles.cli import install_cli
from stuntset.drift.gemini_cli import GeminiCliProvider, failure_of, gemini_env, make_fake
from stuntset.drift.normalize import normalize
from stuntset.errors import UsageError
from stuntset.events import Event, RunCrashed
from stuntset.script import (
    AuthExpired,
    Exit,
    Garbage,
    HttpError,
    MalformedJson,
    RateLimit,
    Script,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

pytestmark = pytest.mark.anyio


async def _events(provider: GeminiCliProvider, prompt: str = "hello") -> list[Event]:
    try:
        return [event async for event in provider.start(prompt)]
    finally:
        await provider.aclose()


def _kinds(events: list[Event]) -> list[str]:
    return [e.type for e in events]


async def test_a_turn_with_a_tool_call(tmp_path: Path) -> None:
    script = Script.of(
        [
            Text("Looking."),
            ToolCall("read_file", {"file_path": "a.txt"}),
            ToolResult("hi"),
            Text("It says hi."),
            Usage(input_tokens=7, output_tokens=3),
        ]
    )
    events = await _events(make_fake(script, tmp_path, time_scale=0))
    assert _kinds(events) == [
        "run.started",
        "message.delta",
        "message.completed",
        "tool.started",
        "tool.completed",
        "message.delta",
        "message.delta",
        "message.delta",
        "message.completed",
        "usage",
        "run.completed",
    ]
    steps = normalize(events)
    tool = next(step for step in steps if step["type"] == "tool.started")
    assert (tool["name"], tool["input"]) == ("read_file", {"file_path": "a.txt"})
    done = next(step for step in steps if step["type"] == "tool.completed")
    assert (done["output"], done["is_error"]) == ("hi", False)


@pytest.mark.parametrize(
    ("steps", "kind"),
    [
        ([RateLimit()], "rate_limited"),  # retried once (maxAttempts 2), then given up
        ([AuthExpired()], "auth"),  # the Developer API's 400 API_KEY_INVALID
        ([HttpError(403)], "auth"),
        ([Text("part"), StreamCut()], "protocol"),
        ([Text("part"), MalformedJson()], "protocol"),
    ],
)
async def test_error_results_are_crashes_of_their_kind(
    tmp_path: Path, steps: Any, kind: str
) -> None:
    turns = (Turn(steps=tuple(steps), times=2 if isinstance(steps[0], RateLimit) else 1),)
    events = await _events(make_fake(Script(turns=turns), tmp_path, time_scale=0))
    last = events[-1]
    assert isinstance(last, RunCrashed), events
    assert last.kind == kind


def test_failure_of_reads_the_status_the_message_quotes() -> None:
    assert failure_of('[API Error: {"error":{"code":503,"message":"x"}}]') == ("overloaded", True)
    assert failure_of("[API Error: terminated]") == ("protocol", True)
    assert failure_of("something else") == ("internal", False)


async def test_an_exit_before_the_result_names_the_last_stderr_line(tmp_path: Path) -> None:
    events = await _events(
        make_fake(Script.of([Text("hi"), Exit(3, "boom", cli=True)]), tmp_path, time_scale=0)
    )
    last = events[-1]
    assert isinstance(last, RunCrashed)
    assert last.kind == "exited"
    assert "code 3" in last.message
    assert last.message.endswith("boom")


async def test_a_missing_binary_fails_to_spawn(tmp_path: Path) -> None:
    provider = GeminiCliProvider(str(tmp_path / "no" / "gemini"), cwd=str(tmp_path))
    events = await _events(provider)
    assert _kinds(events) == ["run.started", "run.crashed"]
    assert events[-1].kind == "spawn_failed"  # type: ignore[attr-defined]


async def test_interrupt_stops_a_stalled_run(tmp_path: Path) -> None:
    provider = make_fake(Script.of([Text("Thinking"), Stall()]), tmp_path, time_scale=0)
    run = provider.start("hello")
    events: list[Event] = []
    async for event in run:
        events.append(event)
        if event.type == "message.delta":
            await run.interrupt("enough")
    await provider.aclose()
    assert _kinds(events)[-1] == "run.killed"
    with pytest.raises(UsageError, match="never asks"):
        await run.respond("r1", "allow")


@pytest.mark.parametrize("broken", [MalformedJson(cli=True), Garbage(cli=True)])
async def test_the_cli_s_own_broken_stdout_is_a_protocol_crash(tmp_path: Path, broken: Any) -> None:
    script = Script.of([Text("Hello"), broken])
    events = await _events(make_fake(script, tmp_path, time_scale=0))
    crash = events[-1]
    assert isinstance(crash, RunCrashed)
    assert crash.kind in ("protocol", "exited")


async def test_a_process_that_outlives_its_sigterm_is_killed_and_says_so(tmp_path: Path) -> None:
    script = Script.of([Text("Thinking"), Stall()])
    cli = install_cli("gemini", script, bin_dir=tmp_path / "bin", ignore_sigterm=600.0)
    env = gemini_env(tmp_path / "home", "http://127.0.0.1:9/gemini")
    provider = GeminiCliProvider(str(cli.path), cwd=str(tmp_path), env=env, close_timeout=0.5)
    run = provider.start("hello")
    events: list[Event] = []
    try:
        with anyio.fail_after(30):  # not the fake's 600 s: the reader's 0.5 s, then SIGKILL
            async for event in run:
                events.append(event)
                if event.type == "message.delta":
                    await run.interrupt("enough")
    finally:
        await provider.aclose()
    assert _kinds(events)[-1] == "run.killed"
    reason = events[-1].reason  # type: ignore[attr-defined]
    assert reason.startswith("enough (SIGKILL: still running 0.5 s after SIGTERM (State ")


async def test_interrupted_while_it_is_being_started_it_is_stopped_once_it_runs(
    tmp_path: Path,
) -> None:
    provider = make_fake(Script.of([Text("Thinking"), Stall()]), tmp_path, time_scale=0)
    run = provider.start("hello")
    events: list[Event] = []
    spawning = anyio.Event()
    spawn = run._spawn

    async def spawn_then_tell() -> None:
        spawning.set()
        await spawn()

    # lint-mocks: allow a spy on when the spawn begins (the race needs that moment)
    run._spawn = spawn_then_tell  # type: ignore[method-assign]

    async def consume() -> None:
        events.extend([event async for event in run])

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(consume)
                await spawning.wait()
                await run.interrupt("early")
    finally:
        await provider.aclose()
    assert _kinds(events)[-1] == "run.killed"
    assert events[-1].reason == "early"  # type: ignore[attr-defined]
