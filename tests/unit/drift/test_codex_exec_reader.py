"""The ``codex-exec`` column's adapter: ``codex exec --json`` read as normalized events, on
stuntset's fake ``codex`` (the catalog's faults) and on a replayed codex process (stdout lines
the fake never writes)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from stuntset import install_cli
from stuntset.cassettes.cli_replay import install_cli_replay
from stuntset.cassettes.format import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
)
from stuntset.drift.codex_exec import ExecProvider, failure_of
from stuntset.errors import UsageError
from stuntset.events import Event, RunCrashed
from stuntset.script import (
    Exit,
    Garbage,
    MalformedJson,
    OutOfOrder,
    RateLimit,
    Script,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)

pytestmark = pytest.mark.anyio


def _fake(tmp_path: Path, script: Script) -> ExecProvider:
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0.01)
    return ExecProvider(str(cli.path), cwd=str(cwd), env={"CODEX_HOME": str(tmp_path / "home")})


async def _events(provider: ExecProvider, prompt: str = "hello") -> list[Event]:
    try:
        return [event async for event in provider.start(prompt)]
    finally:
        await provider.aclose()


def _kinds(events: list[Event]) -> list[str]:
    return [e.type for e in events]


def _state_of(run: Any, tmp_path: Path) -> str:
    """A stalled fake's process state (signal masks, wait channel) and what it journaled."""
    process = run._process
    lines: list[str] = []
    if process is not None:
        proc = Path(f"/proc/{process.pid}")
        with contextlib.suppress(OSError):
            wanted = ("State", "SigQ", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt", "Threads")
            status = (proc / "status").read_text().splitlines()
            lines += [line for line in status if line.split(":")[0] in wanted]
            lines.append("wchan: " + (proc / "wchan").read_text())
    for journal in sorted((tmp_path / "bin").glob(".codex.stuntset/invocations/*.jsonl")):
        lines += journal.read_text().splitlines()[-8:]
    return "\n".join(lines)


def _crash(events: list[Event]) -> RunCrashed:
    last = events[-1]
    assert isinstance(last, RunCrashed), events
    return last


async def test_a_turn_with_a_tool_call(tmp_path: Path) -> None:
    script = Script.of(
        [
            Text("Looking."),
            ToolCall("bash", {"command": "ls"}),
            ToolResult("a.txt"),
            Text("Done."),
            Usage(30, 7),
        ]
    )
    provider = _fake(tmp_path, script)
    events = await _events(provider)
    assert _kinds(events) == [
        "run.started",
        "message.delta",
        "message.completed",
        "tool.started",
        "tool.completed",
        "message.delta",
        "message.completed",
        "usage",
        "run.completed",
    ]
    started = events[0]
    assert started.session_id == provider.session_id != ""  # type: ignore[attr-defined]
    tool = events[3]
    assert (tool.name, tool.input) == (  # type: ignore[attr-defined]
        "command_execution",
        {"command": "/bin/bash -lc ls"},
    )
    assert events[4].is_error is False  # type: ignore[attr-defined]
    assert (events[7].input_tokens, events[7].output_tokens) == (30, 7)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fault", "kind", "says"),
    [
        # the CLI itself breaks its stdout (cli=True; by default the model stream breaks)
        (MalformedJson(cli=True), "protocol", "a stdout line that is not JSON"),
        (MalformedJson(text="[1, 2]", cli=True), "protocol", "not a JSON object"),
        (Garbage(half_line=False, cli=True), "protocol", "undecodable bytes from codex exec"),
        # half a line, then EOF
        (StreamCut(cli=True), "protocol", "a stdout line that is not JSON"),
        (OutOfOrder(cli=True), "protocol", "changed, never started"),
        # the model stream breaks: codex retries, the retry meets the double's 500
        (StreamCut(), "http", "experiencing high demand"),
        (MalformedJson(), "http", "experiencing high demand"),
        (RateLimit(), "rate_limited", "exceeded retry limit, last status: 429"),
        (Exit(code=3, stderr="fatal: boom", cli=True), "exited", "exited with code 3"),
    ],
)
async def test_faults(tmp_path: Path, fault: Any, kind: str, says: str) -> None:
    events = await _events(_fake(tmp_path, Script.of([Text("Starting"), fault])))
    crash = _crash(events)
    assert crash.kind == kind
    assert says in crash.message
    assert _kinds(events).count("run.crashed") == 1


async def test_an_exit_names_the_last_stderr_line(tmp_path: Path) -> None:
    events = await _events(
        _fake(tmp_path, Script.of([Exit(code=2, stderr="one\nfatal: two", cli=True)]))
    )
    assert _crash(events).message.endswith("before the turn ended: fatal: two")


async def test_a_missing_binary_fails_to_spawn(tmp_path: Path) -> None:
    provider = ExecProvider(str(tmp_path / "no" / "codex"), cwd=str(tmp_path))
    events = await _events(provider)
    assert _kinds(events) == ["run.started", "run.crashed"]
    assert _crash(events).kind == "spawn_failed"


async def test_interrupt_stops_a_stalled_turn(tmp_path: Path) -> None:
    provider = _fake(tmp_path, Script.of([Text("Thinking"), Stall()]))
    run = provider.start("hello")
    events: list[Event] = []
    try:
        # This hung once under load (the fake alive after the SIGTERM, its cause not found):
        # if it does again, it fails saying what the fake's signal state and journal were.
        with anyio.fail_after(30):
            async for event in run:
                events.append(event)
                if event.type == "message.completed":
                    await run.interrupt("enough")
                    await run.interrupt("twice")  # a no-op
    except TimeoutError:
        pytest.fail(f"the fake codex outlived its SIGTERM by 30 s\n{_state_of(run, tmp_path)}")
    finally:
        await provider.aclose()
    assert _kinds(events)[-1] == "run.killed"
    assert events[-1].reason == "enough"  # type: ignore[attr-defined]


async def test_interrupted_before_it_starts_nothing_runs(tmp_path: Path) -> None:
    provider = ExecProvider(str(tmp_path / "never-run"), cwd=str(tmp_path))
    run = provider.start("hello")
    await run.interrupt()
    assert _kinds([event async for event in run]) == ["run.started", "run.killed"]
    with pytest.raises(UsageError, match="codex exec never asks"):
        await run.respond("r1", "allow")


async def test_closing_a_running_turn_ends_it(tmp_path: Path) -> None:
    provider = _fake(tmp_path, Script.of([Text("Thinking"), Stall()]))
    run = provider.start("hello")
    async for event in run:
        if event.type == "message.completed":
            break
    await provider.aclose()  # the process is stopped and reaped
    assert _kinds([event async for event in run]) == ["run.killed"]


# --- stdout the fake never writes: a replayed codex process ---------------------------------


def _replayed(tmp_path: Path, lines: list[dict[str, Any]], status: int = 0) -> ExecProvider:
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    argv = ["exec", "--experimental-json", "--skip-git-repo-check", "--cd", str(cwd)]
    run = Interaction(
        id="i-1",
        wire="codex-cli",
        request=RecordedRequest(method="EXEC", path="codex", body={"argv": argv, "stdin": []}),
        response=RecordedResponse(
            status=status, frames=[Frame(t=0.0, data=json.dumps(line)) for line in lines]
        ),
    )
    replayed = install_cli_replay("codex", Cassette(interactions=[run]), bin_dir=tmp_path / "bin")
    return ExecProvider(str(replayed.path), cwd=str(cwd))


THREAD = {"type": "thread.started", "thread_id": "t-1"}
DONE = {"type": "turn.completed", "usage": {"input_tokens": 0, "output_tokens": 0}}


async def test_a_line_after_the_turn_ended_breaks_it(tmp_path: Path) -> None:
    late = {"type": "item.completed", "item": {"id": "item_9", "type": "agent_message"}}
    events = await _events(_replayed(tmp_path, [THREAD, {"type": "turn.started"}, DONE, late]))
    assert _kinds(events) == ["run.started", "run.crashed"]  # no usage: none was reported
    assert _crash(events).message.startswith("a line after the turn ended")


async def test_an_interrupt_after_the_turn_ended_changes_nothing(tmp_path: Path) -> None:
    done = {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}}
    provider = _replayed(tmp_path, [THREAD, done])
    run = provider.start("hello")
    kinds = []
    async for event in run:
        kinds.append(event.type)
        if event.type == "usage":  # the turn is over; the process may not have exited
            await run.interrupt()
    await provider.aclose()
    assert kinds == ["run.started", "usage", "run.completed"]


async def test_a_tool_item_completed_that_never_started_breaks_the_turn(tmp_path: Path) -> None:
    item = {
        "id": "item_1",
        "type": "mcp_tool_call",
        "server": "s",
        "tool": "t",
        "status": "completed",
    }
    events = await _events(_replayed(tmp_path, [THREAD, {"type": "item.completed", "item": item}]))
    assert _crash(events).message == "a mcp_tool_call item 'item_1' completed, never started"


async def test_items_and_notices(tmp_path: Path) -> None:
    """Warnings, retry notices and plans are not events; tool items of every kind are."""
    items = [
        {"id": "w", "type": "error", "message": "Model metadata not found"},
        {"id": "p", "type": "todo_list", "items": []},
        {"id": "r", "type": "reasoning", "text": "Hmm."},
        {
            "id": "m",
            "type": "mcp_tool_call",
            "server": "docs",
            "tool": "find",
            "arguments": {"q": 1},
        },
        {"id": "f", "type": "file_change", "changes": [{"path": "a", "kind": "add"}]},
        {"id": "s", "type": "web_search", "query": "q"},
    ]
    lines: list[dict[str, Any]] = [THREAD, {"type": "error", "message": "Reconnecting... 1/5"}]
    lines += [{"type": "item.started", "item": item} for item in items[1:]]
    lines += [{"type": "item.updated", "item": items[1]}]
    failed = {**items[3], "status": "failed", "error": {"message": "no such doc"}}
    lines += [{"type": "item.completed", "item": i} for i in (items[0], items[2], failed)]
    lines += [{"type": "item.completed", "item": {**items[4], "status": "declined"}}]
    lines += [{"type": "item.completed", "item": items[5]}]
    lines += [{"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}}]
    events = await _events(_replayed(tmp_path, lines, status=1))
    assert _kinds(events) == [
        "run.started",
        "tool.started",
        "tool.started",
        "tool.started",
        "reasoning.delta",
        "reasoning.completed",
        "tool.completed",
        "tool.completed",
        "tool.completed",
        "run.crashed",
    ]
    names = [(e.name, e.server) for e in events[1:4]]  # type: ignore[attr-defined]
    assert names == [("find", "docs"), ("file_change", None), ("web_search", None)]
    results = [(e.output, e.is_error) for e in events[6:9]]  # type: ignore[attr-defined]
    assert results == [
        ("no such doc", True),
        ({"changes": [{"path": "a", "kind": "add"}]}, True),
        ("q", False),
    ]
    assert (_crash(events).kind, _crash(events).retryable) == ("auth", False)


def test_failure_kinds_from_the_message() -> None:
    assert failure_of("exceeded retry limit, last status: 429 Too Many Requests") == (
        "rate_limited",
        True,
    )
    assert failure_of("unexpected status 503 Service Unavailable: busy") == ("overloaded", True)
    assert failure_of("unexpected status 400 Bad Request: no") == ("http", False)
    assert failure_of("unexpected status 502 Bad Gateway") == ("http", True)
    assert failure_of("stream disconnected before completion: gone") == ("protocol", True)
    high_demand = "We\u2019re currently experiencing high demand, which may cause temporary errors."
    assert failure_of(high_demand) == ("http", True)  # codex's words for a 5xx
    assert failure_of("something else") == ("internal", False)


async def test_the_turns_end_is_kept_beyond_the_events(tmp_path: Path) -> None:
    provider = _fake(tmp_path, Script.of([Text("Hi."), Usage(input_tokens=3, output_tokens=2)]))
    run = provider.start("hello")
    try:
        [event async for event in run]
    finally:
        await provider.aclose()
    assert run.result_fields == {"status": "completed", "usage": True}


async def test_a_process_that_outlives_its_sigterm_is_killed_and_says_so(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    script = Script.of([Text("Thinking"), Stall()])
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", ignore_sigterm=600.0)
    env = {"CODEX_HOME": str(tmp_path / "home")}
    provider = ExecProvider(str(cli.path), cwd=str(cwd), env=env, close_timeout=0.5)
    run = provider.start("hello")
    events: list[Event] = []
    try:
        with anyio.fail_after(30):  # not the fake's 600 s: the reader's 0.5 s, then SIGKILL
            async for event in run:
                events.append(event)
                if event.type == "message.completed":
                    await run.interrupt("enough")
    finally:
        await provider.aclose()
    assert _kinds(events)[-1] == "run.killed"
    reason = events[-1].reason  # type: ignore[attr-defined]
    assert reason.startswith("enough (SIGKILL: still running 0.5 s after SIGTERM (State ")
    assert "SigCgt" in reason  # the kernel's view: it had a handler for the signal


async def test_interrupted_while_it_is_being_started_it_is_stopped_once_it_runs(
    tmp_path: Path,
) -> None:
    # the interrupt lands while the consumer is inside the spawn (before the process exists);
    # the process is stopped as soon as it does, and the stalled turn ends instead of hanging
    provider = _fake(tmp_path, Script.of([Text("Thinking"), Stall()]))
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
