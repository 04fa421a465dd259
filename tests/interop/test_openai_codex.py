"""The real, unmodified ``openai-codex`` SDK against the fake ``codex`` (app-server mode), and
``codex exec`` driven exactly as ``@openai/codex-sdk`` drives it (same argv, prompt on stdin,
read as that SDK reads it; with the npm package itself where ``STUNTSET_CODEX_SDK`` points
at it). Every catalog scenario, pinning what the SDK returns or raises — and that nothing
hangs."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

openai_codex = pytest.importorskip("openai_codex")

from openai_codex import (  # noqa: E402
    ApprovalMode,
    AsyncCodex,
    Codex,
    CodexConfig,
    CodexError,
    CodexRpcError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    ServerBusyError,
    TransportClosedError,
)
from openai_codex.client import CodexClient  # noqa: E402
from openai_codex.generated.v2_all import (  # noqa: E402
    AccountRateLimitsUpdatedNotification,
    AgentMessageDeltaNotification,
    CommandExecutionThreadItem,
    ItemCompletedNotification,
    ReasoningSummaryTextDeltaNotification,
    ThreadReadResponse,
    ThreadReadStateChangedNotification,
    TurnCompletedNotification,
    TurnStatus,
)
from openai_codex.models import UnknownNotification  # noqa: E402

from node._node import need_node  # noqa: E402
from stuntset import scenarios  # noqa: E402
from stuntset.doubles.cli import InstalledCli, install_cli  # noqa: E402
from stuntset.errors import ScriptExhausted  # noqa: E402
from stuntset.script import (  # noqa: E402
    ApprovalRequest,
    AuthExpired,
    HttpError,
    Script,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

#: Catalog scenarios this module does not run over app-server, with the reason.
NOT_APPLICABLE: dict[str, str] = {}


def install(
    tmp_path: Path, script: str | Script, params: dict[str, Any] | None = None, **options: Any
) -> InstalledCli:
    built = scenarios.build(script, **(params or {})) if isinstance(script, str) else script
    return install_cli("codex", built, bin_dir=tmp_path / "bin", **options)


def config(cli: InstalledCli, tmp_path: Path) -> CodexConfig:
    return CodexConfig(
        codex_bin=str(cli.path), cwd=str(tmp_path), env={"CODEX_HOME": str(tmp_path / "home")}
    )


def _close_pipes(client: CodexClient, close: Callable[[], None]) -> None:
    """The SDK's ``close()`` closes stdin and stops the process but never closes its stdout and
    stderr pipes (a ResourceWarning whenever they are collected): close them after it."""
    proc = client._proc
    close()
    if proc is not None:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def opened(cli: InstalledCli, tmp_path: Path) -> Iterator[Codex]:
    """``with Codex(config=…) as codex``, closing what the SDK leaves open."""
    codex = Codex(config=config(cli, tmp_path))
    try:
        yield codex
    finally:
        _close_pipes(codex._client, codex.close)


@contextmanager
def low_level(
    cli: InstalledCli,
    tmp_path: Path,
    handler: Callable[[str, dict[str, Any] | None], dict[str, Any]] | None = None,
) -> Iterator[CodexClient]:
    """The SDK's ``CodexClient`` (where approvals are answered by a handler), started."""
    client = CodexClient(config=config(cli, tmp_path), approval_handler=handler)
    client.start()
    try:
        yield client
    finally:
        _close_pipes(client, client.close)


def run_turns(cli: InstalledCli, tmp_path: Path, turns: int = 1) -> list[Any]:
    """Run ``turns`` turns on one thread; each outcome is a ``TurnResult`` or the raised error
    (stopping there)."""
    outcomes: list[Any] = []
    with opened(cli, tmp_path) as codex:
        thread = codex.thread_start()
        for index in range(turns):
            try:
                outcomes.append(thread.run(f"prompt {index}"))
            except Exception as error:  # the SDK's own exception is what the test pins
                outcomes.append(error)
                break
    return outcomes


# --- the happy paths ---------------------------------------------------------------------------


def test_thread_start_and_run(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    with opened(cli, tmp_path) as codex:
        assert codex.metadata.serverInfo is not None
        assert str(codex.metadata.serverInfo.version).startswith("0.163.0 ")
        thread = codex.thread_start()
        result = thread.run("Say hello")
    assert result.status == TurnStatus.completed
    assert result.final_response == "Hello! How can I help you today?"
    assert result.usage is not None
    assert (result.usage.total.input_tokens, result.usage.total.output_tokens) == (12, 9)
    assert [item.root.type for item in result.items] == ["userMessage", "agentMessage"]
    cli.assert_all_used()
    (invocation,) = cli.invocations
    assert invocation.argv == ["app-server", "--listen", "stdio://"]
    methods = [m.get("method") for m in invocation.stdin]
    assert methods[:4] == ["initialize", "initialized", "thread/start", "turn/start"]


def test_streaming_a_turn_yields_typed_notifications(tmp_path: Path) -> None:
    cli = install(tmp_path, "interleaved_streaming")
    with opened(cli, tmp_path) as codex:
        handle = codex.thread_start().turn("Compare a.txt and b.txt")
        events = list(handle.stream())
    unknown = [e.method for e in events if isinstance(e.payload, UnknownNotification)]
    assert unknown == []
    deltas = [
        e.payload.delta for e in events if isinstance(e.payload, AgentMessageDeltaNotification)
    ]
    assert "".join(deltas) == "Reading both files.a.txt says alpha, b.txt says beta."
    thinking = [
        e.payload.delta
        for e in events
        if isinstance(e.payload, ReasoningSummaryTextDeltaNotification)
    ]
    assert "".join(thinking).startswith("The user wants both files compared.")
    completed = [
        e.payload.item.root for e in events if isinstance(e.payload, ItemCompletedNotification)
    ]
    # the catalog's read_file, played as codex's own exec_command (`cat`)
    tools = [item for item in completed if item.type == "commandExecution"]
    assert [(t.command, t.aggregated_output, t.status.value) for t in tools] == [
        ("/bin/bash -lc 'cat a.txt'", "alpha", "completed"),
        ("/bin/bash -lc 'cat b.txt'", "beta", "completed"),
    ]
    assert events[-1].method == "turn/completed"


def test_every_notification_and_response_validates_against_the_sdk_models(tmp_path: Path) -> None:
    script = Script.of(
        [
            Text("Running it."),
            ToolCall("bash", {"command": "make test"}),
            ToolResult("ok\n"),
            ToolCall("apply_patch", {"path": "a.py"}),
            ToolResult("patched"),
            ToolCall("web_search", {"query": "codex"}),
            ToolResult("results"),
            ToolCall("update_plan", {"plan": [{"step": "test", "status": "completed"}]}),
            ToolResult(""),
            Usage(input_tokens=5, output_tokens=2),
        ]
    )
    cli = install(tmp_path, script)
    with opened(cli, tmp_path) as codex:
        events = list(codex.thread_start().turn("go").stream())
    assert [e.method for e in events if isinstance(e.payload, UnknownNotification)] == []
    kinds = [
        e.payload.item.root.type for e in events if isinstance(e.payload, ItemCompletedNotification)
    ]
    assert kinds == ["userMessage", "agentMessage", "commandExecution", "fileChange", "webSearch"]
    methods = {e.method for e in events}
    assert {"turn/plan/updated", "item/commandExecution/outputDelta"} <= methods
    command = next(
        e.payload.item.root
        for e in events
        if isinstance(e.payload, ItemCompletedNotification)
        and isinstance(e.payload.item.root, CommandExecutionThreadItem)
    )
    assert (command.command, command.aggregated_output, command.exit_code) == (
        "/bin/bash -lc 'make test'",
        "ok\n",
        0,
    )


def test_rate_limits_and_read_state_reach_the_sdk_typed(tmp_path: Path) -> None:
    """The two notifications the real 0.163.0 server sends as a turn ends (observed raw):
    ``account/rateLimits/updated`` (limit "codex", nothing else known without rate-limit
    headers) and ``thread/readState/changed`` (first unread: the thread's first turn). Neither
    names a turn, so the SDK routes them to its global queue, as the generated models."""
    cli = install(tmp_path, "multi_turn", {"turns": 2})
    with opened(cli, tmp_path) as codex:
        thread = codex.thread_start()
        first = thread.run("first")
        thread.run("second")
        rates: list[AccountRateLimitsUpdatedNotification] = []
        states: list[ThreadReadStateChangedNotification] = []
        while len(rates) < 2 or len(states) < 2:  # all were routed before turn/completed
            payload = codex._client.next_notification().payload
            if isinstance(payload, AccountRateLimitsUpdatedNotification):
                rates.append(payload)
            elif isinstance(payload, ThreadReadStateChangedNotification):
                states.append(payload)
            else:
                assert not isinstance(payload, UnknownNotification), payload
    assert [r.rate_limits.limit_id for r in rates] == ["codex", "codex"]
    assert rates[0].rate_limits.primary is None
    assert [s.thread_id for s in states] == [thread.id, thread.id]
    unread = [s.read_state.first_unread for s in states]
    assert [u.root.turn_id for u in unread if u is not None] == [first.id, first.id]


def test_multi_turn_usage_is_the_thread_total(tmp_path: Path) -> None:
    cli = install(tmp_path, "multi_turn")
    outcomes = run_turns(cli, tmp_path, turns=3)
    assert [o.final_response for o in outcomes] == [
        "Answer number 1.",
        "Answer number 2.",
        "Answer number 3.",
    ]
    assert [o.usage.last.input_tokens for o in outcomes] == [10, 20, 30]
    assert [o.usage.total.input_tokens for o in outcomes] == [10, 30, 60]
    cli.assert_all_used()


def test_resume_a_thread_in_a_new_process(tmp_path: Path) -> None:
    cli = install(tmp_path, "multi_turn", {"turns": 2})
    with opened(cli, tmp_path) as codex:
        thread = codex.thread_start()
        first = thread.run("first")
    with opened(cli, tmp_path) as codex:
        resumed = codex.thread_resume(thread.id)
        second = resumed.run("second")
        read = resumed.read(include_turns=True)
    assert resumed.id == thread.id
    assert (first.final_response, second.final_response) == ("Answer number 1.", "Answer number 2.")
    assert second.usage is not None
    assert second.usage.total.input_tokens == 30
    assert isinstance(read, ThreadReadResponse)
    assert [t.status for t in read.thread.turns] == [TurnStatus.completed, TurnStatus.completed]
    assert len({t.id for t in read.thread.turns}) == 2  # unique across processes
    assert len(cli.invocations) == 2


@pytest.fixture
def anyio_backend() -> str:
    """``AsyncCodex`` runs on asyncio."""
    return "asyncio"


@pytest.mark.anyio
async def test_async_codex_runs_a_turn(tmp_path: Path) -> None:
    cli = install(tmp_path, "tool_use")
    codex = AsyncCodex(config=config(cli, tmp_path))
    async with codex:
        proc = codex._client._sync._proc  # its pipes outlive close(), as with Codex
        thread = await codex.thread_start()
        result = await thread.run("read a.txt")
    assert proc is not None
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    assert result.final_response == "The file says: hello from a.txt"
    cli.assert_all_used()


def test_resume_an_unknown_thread_raises_invalid_request(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    with (
        opened(cli, tmp_path) as codex,
        pytest.raises(InvalidRequestError, match="no rollout found for thread id nope"),
    ):
        codex.thread_resume("nope")


def test_refused_turns_raise_the_sdks_rpc_errors(tmp_path: Path) -> None:
    """``thread.run()`` meets the refusals the real 0.163.0 server gives (observed raw): a
    scripted overload is ``-32001`` without ``data``, which this SDK maps to a plain
    ``CodexRpcError`` (its ``ServerBusyError`` and overload retry need ``server_overloaded``
    data the real server does not send); too long an input is ``InvalidParamsError`` with the
    server's ``input_error_code`` data; a thread this process has not resumed is
    ``InvalidRequestError``. The scripted turn after the refusal still plays."""
    script = Script.of([HttpError(503, error_type="server_overloaded")], [Text("accepted")])
    cli = install(tmp_path, script)
    with opened(cli, tmp_path) as codex:
        thread = codex.thread_start()
        with pytest.raises(CodexRpcError) as overloaded:
            thread.run("first")
        assert not isinstance(overloaded.value, ServerBusyError)
        assert (overloaded.value.code, overloaded.value.data) == (-32001, None)
        with pytest.raises(InvalidParamsError, match="Input exceeds the maximum length") as big:
            thread.run("y" * 1048577)
        assert big.value.data["input_error_code"] == "input_too_large"
        assert thread.run("second").final_response == "accepted"
    with (
        opened(cli, tmp_path) as codex,
        pytest.raises(InvalidRequestError, match="thread not found"),
    ):
        codex._client.turn_start(thread.id, "not resumed here")
    cli.assert_all_used()


def test_interrupt_a_stuck_turn(tmp_path: Path) -> None:
    cli = install(tmp_path, "stuck")
    with opened(cli, tmp_path) as codex:
        handle = codex.thread_start().turn("think forever")
        seen: list[str] = []
        for event in handle.stream():
            seen.append(event.method)
            if event.method == "item/agentMessage/delta":
                assert handle.interrupt() is not None
            if isinstance(event.payload, TurnCompletedNotification):
                assert event.payload.turn.status == TurnStatus.interrupted
    assert seen[-1] == "turn/completed"


def test_interrupt_with_a_stale_turn_id_is_refused(tmp_path: Path) -> None:
    cli = install(tmp_path, "stuck")
    with opened(cli, tmp_path) as codex:
        thread = codex.thread_start()
        handle = thread.turn("think forever")
        for event in handle.stream():
            if event.method == "item/agentMessage/delta":
                with pytest.raises(InvalidRequestError, match="expected active turn id"):
                    codex._client.turn_interrupt(thread.id, "not-the-turn")
                handle.interrupt()


def approvals_script() -> Script:
    return Script.of(
        [
            ToolCall("bash", {"command": "rm -rf build/"}),
            ApprovalRequest(),
            ToolResult("removed"),
            ToolCall("apply_patch", {"path": "notes.md"}),
            ApprovalRequest(),
            ToolResult("written"),
            Text("Done."),
        ]
    )


@pytest.mark.parametrize(
    ("decision", "statuses"),
    [("accept", ["completed", "completed"]), ("decline", ["declined", "declined"])],
)
def test_approvals_answered_by_the_client(
    tmp_path: Path, decision: str, statuses: list[str]
) -> None:
    cli = install(tmp_path, approvals_script())
    asked: list[tuple[str, dict[str, Any] | None]] = []

    def handler(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        asked.append((method, params))
        return {"decision": decision}

    with low_level(cli, tmp_path, handler) as client:
        client.initialize()
        thread = client.thread_start({"approvalPolicy": "on-request", "approvalsReviewer": "user"})
        started = client.turn_start(thread.thread.id, "clean up")
        completed = client.wait_for_turn_completed(started.turn.id)
    assert completed.turn.status == TurnStatus.completed
    assert [method for method, _ in asked] == [
        "item/commandExecution/requestApproval",
        "item/fileChange/requestApproval",
    ]
    first = asked[0][1]
    assert first is not None
    assert first["command"] == "/bin/bash -lc 'rm -rf build/'"
    (invocation,) = cli.invocations
    answers = [m for m in invocation.stdin if "result" in m and "decision" in m["result"]]
    assert [a["result"]["decision"] for a in answers] == [decision, decision]
    items = [
        m["params"]["item"]
        for m in invocation.stdout
        if m.get("method") == "item/completed"
        and m["params"]["item"]["type"] in ("commandExecution", "fileChange")
    ]
    assert [i["status"] for i in items] == statuses


def test_approval_mode_deny_all_declines_without_asking(tmp_path: Path) -> None:
    cli = install(tmp_path, "needs_approval")
    with opened(cli, tmp_path) as codex:
        result = codex.thread_start(approval_mode=ApprovalMode.deny_all).run("clean")
    commands = [i.root for i in result.items if isinstance(i.root, CommandExecutionThreadItem)]
    assert [c.status.value for c in commands] == ["declined"]
    assert not [m for m in cli.invocations[0].stdout if "id" in m and "method" in m]


@pytest.mark.parametrize(
    ("mode", "questions"), [("plan", ["item/tool/requestUserInput"]), ("default", [])]
)
def test_a_question_is_a_server_request_in_plan_mode_only(
    tmp_path: Path, mode: str, questions: list[str]
) -> None:
    """Codex asks (``item/tool/requestUserInput``) in its Plan collaboration mode; in Default
    mode it refuses the model's call and the turn goes on unasked (both observed on the real
    codex-cli 0.163), the texts around the question two messages."""
    cli = install(tmp_path, "input_request")
    asked: list[str] = []

    def handler(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        asked.append(method)
        assert params is not None
        return {"answers": {params["questions"][0]["id"]: {"answers": ["main"]}}}

    collaboration = {"collaborationMode": {"mode": mode, "settings": {"model": "gpt-5"}}}
    with low_level(cli, tmp_path, handler) as client:
        client.initialize()
        thread = client.thread_start({})
        started = client.turn_start(thread.thread.id, "deploy", collaboration)
        completed = client.wait_for_turn_completed(started.turn.id)
        read = client.thread_read(thread.thread.id, include_turns=True)
    assert asked == questions
    assert completed.turn.status == TurnStatus.completed
    said = [
        item.root.text
        for turn in read.thread.turns
        for item in turn.items
        if getattr(item.root, "type", None) == "agentMessage"
    ]
    assert said == ["Before I deploy, I need one detail.", "Thanks, deploying now."]


def test_unknown_and_unsimulated_methods(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    with low_level(cli, tmp_path) as client:
        with pytest.raises(InvalidRequestError, match="Not initialized"):
            client.thread_start({})
        client.initialize()
        with pytest.raises(InvalidRequestError, match="unknown variant `bogus/method`"):
            client.request("bogus/method", {}, response_model=ThreadReadResponse)
        with pytest.raises(MethodNotFoundError, match="does not simulate"):
            client.request("thread/fork", {"threadId": "x"}, response_model=ThreadReadResponse)
        with pytest.raises(InvalidRequestError, match="missing field `input`"):
            client.request("turn/start", {"threadId": "x"}, response_model=ThreadReadResponse)
    assert cli.unused_turns()  # nothing played


# --- the catalog, scenario by scenario ---------------------------------------------------------

# What the SDK does with each catalog scenario, turn by turn: the final response, or the
# exception type and a fragment of its message. Faults never hang: the SDK's reader thread fails
# every waiter when the transport breaks.
EXPECTED: dict[str, list[Any]] = {
    "happy_path": ["Hello! How can I help you today?"],
    "tool_use": ["The file says: hello from a.txt"],
    "needs_approval": ["Done: the build directory is clean."],
    "input_request": ["Thanks, deploying now."],
    "interleaved_streaming": ["a.txt says alpha, b.txt says beta."],
    "multi_turn": ["Answer number 1.", "Answer number 2.", "Answer number 3."],
    "slow": ["This answer takes its time to arrive."],
    # codex ignores the model's content for an item never started: the turn completes with
    # no final response (observed)
    "out_of_order": [None],
    # codex retries the 401 (observed); the retry meets the model double's 500: no turn left
    "auth_expired_mid_run": [(RuntimeError, "experiencing high demand")],
    # Codex retries a 429/overload itself; what reaches the SDK is the turn that gave up
    "rate_limited": [
        (RuntimeError, "exceeded retry limit, last status: 429"),
        "Sorry for the wait. Here is the answer.",
    ],
    # codex retries the 503 (request_max_retries) and the turn completes with the next one
    "overloaded": ["Back in service. Here is the answer."],
    # the model stream breaks: codex retries ("Reconnecting... n/m") and meets the same 500
    "stream_cut": [(RuntimeError, "experiencing high demand")],
    "malformed_json": [(RuntimeError, "experiencing high demand")],
    "garbage_bytes": [(RuntimeError, "experiencing high demand")],
    "crash_mid_turn": [(RuntimeError, "experiencing high demand")],  # the connection drops
}

#: The scenarios whose one scripted turn ends in a request codex makes again by itself (the
#: request no turn answers: ``ScriptExhausted`` at ``assert_all_used``).
ASKS_AGAIN = {
    "auth_expired_mid_run",
    "stream_cut",
    "malformed_json",
    "garbage_bytes",
    "crash_mid_turn",
}

#: The CLI itself breaks (``cli=True``): what the SDK does with the fake's bad output, after
#: which the fake has exited. Faults never hang: the SDK's reader thread fails every waiter
#: when the transport breaks.
CLI_BREAKS: dict[str, list[Any]] = {
    "crash_mid_turn": [(TransportClosedError, "Codex process closed stdout")],
    "stream_cut": [(CodexError, "Invalid JSON-RPC line")],
    "malformed_json": [(CodexError, "Invalid JSON-RPC line")],
    # invalid UTF-8 kills the SDK's text-mode reader thread: not even a CodexError
    "garbage_bytes": [(UnicodeDecodeError, "can't decode byte 0xff")],
    # the SDK does not notice an impossible order: the orphan delta is dropped, the turn
    # completes (with no final response: the late message arrives after turn/completed)
    "out_of_order": [None],
}


def test_every_scenario_is_covered() -> None:
    covered = set(EXPECTED) | {"long_stream", "spawn_missing", "stuck"} | set(NOT_APPLICABLE)
    assert covered == set(scenarios.names())


def check_outcome(name: str, outcome: Any, expected: Any) -> None:
    if isinstance(expected, tuple):
        kind, fragment = expected
        assert isinstance(outcome, kind), (name, outcome)
        assert fragment in str(outcome), (name, outcome)
    else:
        assert outcome == expected, (name, outcome)


def _used(cli: InstalledCli, name: str) -> None:
    if name in ASKS_AGAIN:
        with pytest.raises(ScriptExhausted):
            cli.assert_all_used()
    else:
        cli.assert_all_used()


@pytest.mark.parametrize(
    ("name", "params"),
    [(name, {}) for name in sorted(EXPECTED)]
    + [(name, {"cli": True}) for name in sorted(CLI_BREAKS)],
)
def test_catalog_scenario(tmp_path: Path, name: str, params: dict[str, Any]) -> None:
    expected = CLI_BREAKS[name] if params else EXPECTED[name]
    cli = install(tmp_path, name, params, time_scale=0.01)
    outcomes: list[Any] = []
    with opened(cli, tmp_path) as codex:
        thread = codex.thread_start()
        for index in range(len(expected)):
            try:
                outcomes.append(thread.run(f"prompt {index}").final_response)
            except Exception as error:
                outcomes.append(error)
                if not isinstance(error, RuntimeError):
                    break  # the transport is gone
    assert len(outcomes) == len(expected)
    for outcome, wanted in zip(outcomes, expected, strict=True):
        check_outcome(name, outcome, wanted)
    if params:  # the CLI itself broke: it exited
        # The SDK stops at the bad line, before the process has exited, and closes the client:
        # its SIGTERM may reach the fake before the fake's own exit 1 (a race of the two
        # processes, seen under load). Either way the process ended after its broken output.
        (ended,) = cli.wait_ended()
        terminated = any(e["event"] == "signal" for e in ended.events)
        assert ended.exit_code == 1 or (ended.exit_code is None and terminated), ended.events
        cli.assert_all_used()
    else:
        _used(cli, name)


def test_long_stream_loses_no_delta(tmp_path: Path) -> None:
    cli = install(tmp_path, "long_stream")
    with opened(cli, tmp_path) as codex:
        events = list(codex.thread_start().turn("go").stream())
    deltas = [
        e.payload.delta for e in events if isinstance(e.payload, AgentMessageDeltaNotification)
    ]
    assert len(deltas) == 400
    assert "".join(deltas) == scenarios.build("long_stream").turns[0].steps[0].text  # type: ignore[union-attr]


def test_spawn_missing(tmp_path: Path) -> None:
    cli = install(tmp_path, "spawn_missing", {"binary": "codex"})
    assert not cli.path.exists()
    with pytest.raises(FileNotFoundError, match="Codex binary not found"):
        Codex(config=config(cli, tmp_path))


def test_script_exhausted_fails_the_turn_and_the_check(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    outcomes = run_turns(cli, tmp_path, turns=2)
    assert isinstance(outcomes[1], RuntimeError)
    assert "has no turn for request #2" in str(outcomes[1])
    with pytest.raises(ScriptExhausted):
        cli.assert_all_used()


def test_close_on_a_process_ignoring_sigterm_does_not_hang(tmp_path: Path) -> None:
    cli = install(tmp_path, "stuck", ignore_sigterm=0.2)
    with opened(cli, tmp_path) as codex:
        handle = codex.thread_start().turn("think forever")
        for event in handle.stream():
            if event.method == "item/agentMessage/delta":
                break
    # close(): SIGTERM is ignored for 0.2 s, then the process dies as SIGTERM would
    (invocation,) = cli.invocations
    signals = [e for e in invocation.events if e["event"] == "signal"]
    assert signals
    assert invocation.exit_code == 143


# --- exec mode, as @openai/codex-sdk drives it --------------------------------------------------


class ExecThread:
    """``@openai/codex-sdk`` 0.163.0's ``Thread.run`` transcribed (dist/index.js): the same
    argv, the prompt written to stdin and closed, every stdout line parsed as JSON, the
    thread id kept for ``resume``, ``turn.failed`` and a non-zero exit raised."""

    def __init__(self, codex_path: Path, cwd: Path, **options: Any) -> None:
        self.codex_path = codex_path
        self.cwd = cwd
        self.options = options
        self.id: str | None = None

    def argv(self) -> list[str]:
        args = [str(self.codex_path), "exec", "--experimental-json"]
        if self.options.get("model"):
            args += ["--model", self.options["model"]]
        if self.options.get("sandbox_mode"):
            args += ["--sandbox", self.options["sandbox_mode"]]
        args += ["--cd", str(self.cwd), "--skip-git-repo-check"]
        if self.options.get("approval_policy"):
            args += ["--config", f'approval_policy="{self.options["approval_policy"]}"']
        if self.id is not None:
            args += ["resume", self.id]
        return args

    def events(self, prompt: str) -> Iterator[dict[str, Any]]:
        env = {**os.environ, "CODEX_INTERNAL_ORIGINATOR_OVERRIDE": "codex_sdk_ts"}
        with subprocess.Popen(
            self.argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        ) as child:
            assert child.stdin is not None
            assert child.stdout is not None
            child.stdin.write(prompt.encode())
            child.stdin.close()
            try:
                for raw in child.stdout:
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    try:
                        event = json.loads(line)
                    except ValueError:
                        raise RuntimeError(f"Failed to parse item: {line}") from None
                    if event["type"] == "thread.started":
                        self.id = event["thread_id"]
                    elif event["type"] == "turn.completed":
                        event["usage"].setdefault("cache_write_input_tokens", 0)
                    yield event
                code = child.wait(timeout=10)
                if code != 0:
                    assert child.stderr is not None
                    detail = f"signal {-code}" if code < 0 else f"code {code}"
                    stderr = child.stderr.read().decode("utf-8", "replace")
                    raise RuntimeError(f"Codex Exec exited with {detail}: {stderr}")
            finally:
                if child.poll() is None:
                    child.kill()

    def run(self, prompt: str) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        final = ""
        usage = None
        for event in self.events(prompt):
            if event["type"] == "item.completed":
                if event["item"]["type"] == "agent_message":
                    final = event["item"]["text"]
                items.append(event["item"])
            elif event["type"] == "turn.completed":
                usage = event["usage"]
            elif event["type"] == "turn.failed":
                raise RuntimeError(event["error"]["message"])
        return {"items": items, "finalResponse": final, "usage": usage}


EXEC_EXPECTED: dict[str, list[Any]] = {
    **EXPECTED,
    "long_stream": [" ".join(f"word{i}" for i in range(400))],
    # exec never asks (request_user_input is unavailable in codex's default mode): the texts
    # around the question are one message, as the real exec shows them over the model double
    "input_request": ["Thanks, deploying now."],
    # the TS SDK's final response starts empty: no message, no answer
    "out_of_order": [""],
    "crash_mid_turn": [(RuntimeError, "experiencing high demand")],  # the connection drops
}
#: The CLI itself breaks (``cli=True``), read as ``@openai/codex-sdk`` reads it.
EXEC_CLI_BREAKS: dict[str, list[Any]] = {
    "crash_mid_turn": [(RuntimeError, "Codex Exec exited with code 1: Reading prompt")],
    # the TS SDK keeps reading after turn.completed, then sees the fake exit 1
    "out_of_order": [(RuntimeError, "Codex Exec exited with code 1")],
    "stream_cut": [(RuntimeError, "Failed to parse item")],
    "malformed_json": [(RuntimeError, "Failed to parse item")],
    "garbage_bytes": [(RuntimeError, "Failed to parse item")],
}


def test_exec_covers_the_catalog() -> None:
    assert set(EXEC_EXPECTED) | {"spawn_missing", "stuck"} == set(scenarios.names())


@pytest.mark.parametrize(
    ("name", "params"),
    [(name, {}) for name in sorted(EXEC_EXPECTED)]
    + [(name, {"cli": True}) for name in sorted(EXEC_CLI_BREAKS)],
)
def test_exec_catalog_scenario(tmp_path: Path, name: str, params: dict[str, Any]) -> None:
    expected = EXEC_CLI_BREAKS[name] if params else EXEC_EXPECTED[name]
    cli = install(tmp_path, name, params, time_scale=0.01)
    thread = ExecThread(cli.path, tmp_path)
    for index, wanted in enumerate(expected):
        try:
            outcome: Any = thread.run(f"prompt {index}")["finalResponse"]
        except RuntimeError as error:
            outcome = error
        check_outcome(name, outcome, wanted)
    assert all(i.argv[:2] == ["exec", "--experimental-json"] for i in cli.invocations)
    if params:
        cli.assert_all_used()
    else:
        _used(cli, name)


def test_exec_resume_keeps_the_thread_and_totals(tmp_path: Path) -> None:
    cli = install(tmp_path, "multi_turn", {"turns": 2})
    thread = ExecThread(cli.path, tmp_path)
    first = thread.run("one")
    thread_id = thread.id
    second = thread.run("two")
    assert thread.id == thread_id
    assert first["usage"]["input_tokens"] == 10
    assert second["usage"]["input_tokens"] == 30
    second_argv = cli.invocations[1].argv
    assert second_argv[-2:] == ["resume", thread_id]
    assert [i["id"] for i in second["items"]] == ["item_0"]


def test_exec_stuck_is_ended_by_the_client(tmp_path: Path) -> None:
    cli = install(tmp_path, "stuck")
    thread = ExecThread(cli.path, tmp_path)
    events = thread.events("go")
    seen = [next(events)["type"], next(events)["type"], next(events)["type"]]
    assert seen == ["thread.started", "turn.started", "item.completed"]
    events.close()  # the reader's finally kills the child, as the TS SDK's does
    (invocation,) = cli.invocations
    assert invocation.exit_code is None  # killed mid-turn: no exit was recorded


def test_exec_spawn_missing(tmp_path: Path) -> None:
    cli = install(tmp_path, "spawn_missing", {"binary": "codex"})
    with pytest.raises(FileNotFoundError):
        ExecThread(cli.path, tmp_path).run("hi")


_NODE_SCRIPT = """
const { Codex } = await import(process.env.CODEX_SDK_ENTRY);
const codex = new Codex({ codexPathOverride: process.env.FAKE_CODEX });
const thread = codex.startThread({ skipGitRepoCheck: true, workingDirectory: process.cwd() });
const out = [];
for (const prompt of ["one", "two"]) {
  try {
    const turn = await thread.run(prompt);
    out.push({ final: turn.finalResponse, usage: turn.usage, items: turn.items.length });
  } catch (error) {
    out.push({ error: String(error.message) });
  }
}
out.push({ threadId: thread.id });
console.log(JSON.stringify(out));
"""


@pytest.mark.node
def test_the_typescript_sdk_itself(tmp_path: Path) -> None:
    # tests/node's locked @openai/codex-sdk (``make node``): skipped without node, failed under CI
    setup = need_node()
    entry = setup.entry("@openai/codex-sdk") / "dist" / "index.js"
    script = Script.of(
        [Text("first answer"), Usage(input_tokens=10, output_tokens=2)],
        [Text("second answer"), Usage(input_tokens=20, output_tokens=3)],
    )
    cli = install(tmp_path, script)
    program = tmp_path / "drive.mjs"
    program.write_text(_NODE_SCRIPT)
    env = {**os.environ, "CODEX_SDK_ENTRY": entry.as_uri(), "FAKE_CODEX": str(cli.path)}
    done = subprocess.run(
        [setup.node, str(program)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    first, second, ident = json.loads(done.stdout)
    assert first["final"] == "first answer"
    assert first["usage"]["input_tokens"] == 10
    assert second["final"] == "second answer"
    assert second["usage"]["input_tokens"] == 30
    assert ident["threadId"] == cli.invocations[0].stdout[0]["thread_id"]
    assert cli.invocations[1].argv[:2] == ["exec", "--experimental-json"]
    assert cli.invocations[1].env.get("CODEX_INTERNAL_ORIGINATOR_OVERRIDE") == "codex_sdk_ts"
    cli.assert_all_used()


def test_a_failed_turn_as_the_real_server_ends_it(tmp_path: Path) -> None:
    """Six 401s: codex's five stream retries (its default), then the turn fails with the
    sixth (observed with one retry: "unexpected status 401 …", read as auth)."""
    cli = install(tmp_path, Script.of(Turn(steps=(AuthExpired(),), times=6)))
    with opened(cli, tmp_path) as codex:
        events = list(codex.thread_start().turn("check").stream())
    # (thread/status/changed carries no turn id: it goes to the SDK's global queue)
    assert [e.method for e in events[-2:]] == ["error", "turn/completed"]
    completed = events[-1].payload
    assert isinstance(completed, TurnCompletedNotification)
    turn = completed.turn
    assert (turn.status, turn.items) == (TurnStatus.failed, [])
    assert turn.error is not None
    assert turn.error.message.startswith("unexpected status 401 Unauthorized: OAuth token")
    assert turn.error.codex_error_info is not None
    assert turn.error.codex_error_info.model_dump(by_alias=True, mode="json") == {
        "httpConnectionFailed": {"httpStatusCode": 401}
    }


def test_the_sdks_default_auto_review_approves_without_asking(tmp_path: Path) -> None:
    cli = install(tmp_path, approvals_script())
    with opened(cli, tmp_path) as codex:
        events = list(codex.thread_start().turn("clean up").stream())
    assert [e.method for e in events if isinstance(e.payload, UnknownNotification)] == []
    reviews = [e for e in events if e.method == "item/autoApprovalReview/completed"]
    assert len(reviews) == 2
    assert not [m for m in cli.invocations[0].stdout if "id" in m and "method" in m]
    statuses = [
        e.payload.item.root.status.value
        for e in events
        if isinstance(e.payload, ItemCompletedNotification)
        and e.payload.item.root.type in ("commandExecution", "fileChange")
    ]
    assert statuses == ["completed", "completed"]


def test_a_tool_codex_lacks_shows_nothing_and_asks_nothing(tmp_path: Path) -> None:
    """Observed on codex-cli 0.163 over the model double: a call of a tool codex does not
    have is answered "unsupported call" to the model; the client sees no item and no
    approval request, and the model's next response is a new message."""
    script = Script.of(
        [
            Text("Let me look."),
            ToolCall("list_things", {"path": "."}),
            ApprovalRequest(),
            ToolResult("what the script says it printed"),
            Text("That tool is not there."),
        ]
    )
    cli = install(tmp_path, script)
    with opened(cli, tmp_path) as codex:
        events = list(codex.thread_start().turn("look").stream())
    items = [
        e.payload.item.root for e in events if isinstance(e.payload, ItemCompletedNotification)
    ]
    assert [(i.type, getattr(i, "text", None)) for i in items if i.type != "userMessage"] == [
        ("agentMessage", "Let me look."),
        ("agentMessage", "That tool is not there."),
    ]
    assert not [m for m in cli.invocations[0].stdout if "id" in m and "method" in m]
    assert not [e for e in events if "Approval" in e.method]  # not even the auto-reviewer
    assert events[-1].method == "turn/completed"
