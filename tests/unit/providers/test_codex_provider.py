"""``CodexProvider`` over the fake ``codex`` (app-server mode): the real, unmodified
``openai-codex`` SDK spawns the double through ``codex_bin``; the provider turns the turn's
notifications into normalized events. Then the conformance suite over the catalog."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai_codex")

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
from stuntset.providers.codex import CodexProvider, turn_crash
from stuntset.script import AuthExpired, Script, Turn

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # each run's events reach an asyncio loop


class Clis:
    """One fake ``codex`` (and one ``CODEX_HOME``) per script: providers made for the same
    script share them, as the conformance suite's resume check needs."""

    def __init__(self, root: Path, **provider_options: Any) -> None:
        self.root = root
        self.count = itertools.count()
        self.installed: dict[int, tuple[InstalledCli, Path]] = {}
        self.provider_options = provider_options

    def cli(self, script: Script) -> InstalledCli:
        return self._installed(script)[0]

    def _installed(self, script: Script) -> tuple[InstalledCli, Path]:
        if id(script) not in self.installed:
            where = self.root / f"codex{next(self.count)}"
            cli = install_cli("codex", script, bin_dir=where / "bin", time_scale=0.01)
            self.installed[id(script)] = (cli, where)
        return self.installed[id(script)]

    def __call__(self, script: Script) -> CodexProvider:
        cli, where = self._installed(script)
        return CodexProvider(
            str(cli.path),
            cwd=str(self.root),
            env={"CODEX_HOME": str(where / "home")},
            **self.provider_options,
        )


@pytest.fixture
def clis(tmp_path: Path) -> Clis:
    return Clis(tmp_path)


async def play(provider: CodexProvider, prompt: str = "hi", **options: Any) -> list[Event]:
    resume = options.pop("resume", None)
    try:
        return await drive(provider.start(prompt, resume=resume), timeout=10, **options)
    finally:
        await provider.aclose()


def texts_before(events: list[Event], event: Event) -> list[MessageCompleted]:
    return [e for e in events[: events.index(event)] if isinstance(e, MessageCompleted)]


def texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, MessageCompleted)]


async def test_a_text_turn_streams_deltas_usage_and_completes(clis: Clis) -> None:
    provider = clis(scenarios.build("happy_path"))
    events = await play(provider)
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.provider == "codex"
    assert started.session_id == provider.session_id != ""
    deltas = [e.text for e in events if isinstance(e, MessageDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == texts(events)[0] == "Hello! How can I help you today?"
    assert [(u.input_tokens, u.output_tokens) for u in events if isinstance(u, Usage)] == [(12, 9)]
    assert isinstance(events[-1], RunCompleted)


async def test_tool_calls_reasoning_and_results_are_normalized(clis: Clis) -> None:
    events = await play(clis(scenarios.build("interleaved_streaming")))
    started = [e for e in events if isinstance(e, ToolStarted)]
    completed = {e.tool_call_id: e for e in events if isinstance(e, ToolCompleted)}
    # the catalog's read_file, played as codex's own exec_command (`cat`)
    assert [(s.name, s.input["command"]) for s in started] == [
        ("command_execution", "/bin/bash -lc 'cat a.txt'"),
        ("command_execution", "/bin/bash -lc 'cat b.txt'"),
    ]
    assert [completed[s.tool_call_id].output for s in started] == ["alpha", "beta"]
    reasoning = [e.text for e in events if isinstance(e, ReasoningCompleted)]
    assert reasoning[0].startswith("The user wants both files compared.")
    assert texts(events)[-1] == "a.txt says alpha, b.txt says beta."
    assert isinstance(events[-1], RunCompleted)


@pytest.mark.parametrize(("decision", "wire"), [("allow", "accept"), ("deny", "decline")])
async def test_approvals_are_asked_and_the_decision_reaches_codex(
    clis: Clis, decision: str, wire: str
) -> None:
    script = scenarios.build("needs_approval")
    events = await play(clis(script), approve=decision)
    (asked,) = [e for e in events if isinstance(e, ApprovalRequested)]
    (tool,) = [e for e in events if isinstance(e, ToolStarted)]
    assert asked.tool == "command_execution"
    assert asked.input["command"] == "/bin/bash -lc 'rm -rf build/'"
    assert asked.tool_call_id == tool.tool_call_id
    # in wire order: the message and the tool's item/started came before Codex asked
    assert events.index(texts_before(events, asked)[0]) < events.index(tool) < events.index(asked)
    assert tool.name == "command_execution"
    assert [e.decision for e in events if isinstance(e, ApprovalResolved)] == [decision]
    (result,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert result.is_error is (decision == "deny")
    assert isinstance(events[-1], RunCompleted)
    (invocation,) = clis.cli(script).invocations
    answers = [m for m in invocation.stdin if "result" in m and "decision" in m["result"]]
    assert [a["result"]["decision"] for a in answers] == [wire]


async def test_auto_review_declares_no_approvals_and_never_asks(tmp_path: Path) -> None:
    provider = Clis(tmp_path, approvals="auto_review")(scenarios.build("needs_approval"))
    assert not provider.capabilities.approvals
    events = await play(provider)
    assert not [e for e in events if isinstance(e, ApprovalRequested)]
    assert isinstance(events[-1], RunCompleted)


async def test_in_plan_mode_a_question_is_an_input_request_and_the_answer_reaches_codex(
    tmp_path: Path,
) -> None:
    clis = Clis(tmp_path, collaboration_mode="plan")
    script = scenarios.build("input_request")
    provider = clis(script)
    assert provider.capabilities.input_requests
    events = await play(provider, answer="main")
    (asked,) = [e for e in events if isinstance(e, InputRequested)]
    assert asked.prompt == "Which branch should I deploy?"
    assert [e.text for e in texts_before(events, asked)] == ["Before I deploy, I need one detail."]
    assert [e.text for e in events if isinstance(e, InputResolved)] == ["main"]
    assert texts(events)[-1] == "Thanks, deploying now."
    (invocation,) = clis.cli(script).invocations
    assert "main" in str(invocation.stdin)


async def test_in_default_mode_codex_asks_nothing_and_declares_no_questions(clis: Clis) -> None:
    """Codex's default: it refuses the model's request_user_input call (observed on the real
    codex-cli 0.163): no input.requested, and the text after the question is a new message."""
    provider = clis(scenarios.build("input_request"))
    assert not provider.capabilities.input_requests
    events = await play(provider, answer="main")
    assert not [e for e in events if isinstance(e, InputRequested)]
    assert texts(events) == ["Before I deploy, I need one detail.", "Thanks, deploying now."]
    assert isinstance(events[-1], RunCompleted)


def test_a_collaboration_mode_codex_lacks_is_refused() -> None:
    with pytest.raises(UsageError, match="collaboration_mode must be 'default' or 'plan'"):
        CodexProvider("codex", collaboration_mode="pair")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("scenario", "params", "kind", "retryable"),
    [
        ("spawn_missing", {}, "spawn_failed", False),
        # codex retries the 401 (observed); the retry meets the double's 500: no turn left
        ("auth_expired_mid_run", {}, "http", True),
        ("rate_limited", {}, "rate_limited", True),
        # the model stream breaks: codex retries it, and meets the same 500
        ("stream_cut", {}, "http", True),
        ("malformed_json", {}, "http", True),
        ("garbage_bytes", {}, "http", True),
        # the CLI itself breaks
        ("malformed_json", {"cli": True}, "protocol", False),
        ("garbage_bytes", {"cli": True}, "protocol", False),
        ("out_of_order", {"cli": True}, "protocol", False),
        ("stream_cut", {"cli": True}, "protocol", False),
        ("crash_mid_turn", {"cli": True}, "exited", False),
        ("crash_mid_turn", {}, "http", True),
    ],
)
async def test_failures_become_classified_crashes(
    clis: Clis, scenario: str, params: dict[str, Any], kind: str, retryable: bool
) -> None:
    events = await play(clis(scenarios.build(scenario, **params)))
    assert isinstance(events[0], RunStarted)
    crashed = events[-1]
    assert isinstance(crashed, RunCrashed), crashed
    assert (crashed.kind, crashed.retryable) == (kind, retryable)


async def test_an_overload_past_codexs_retries_crashes_the_run_as_overloaded(
    tmp_path: Path,
) -> None:
    """Codex retries a 503 (``request_max_retries``, then ``stream_max_retries``); with both
    set to 0 by ``-c`` for the provider in use the first one fails the turn, which the adapter
    reads as ``overloaded``. With codex's defaults the catalog's single 503 is retried and the
    run completes with the next turn."""
    retries = (
        'model_provider="stuntset"',
        "model_providers.stuntset.request_max_retries=0",
        "model_providers.stuntset.stream_max_retries=0",
    )
    events = await play(Clis(tmp_path, config_overrides=retries)(scenarios.build("overloaded")))
    crashed = events[-1]
    assert isinstance(crashed, RunCrashed), crashed
    assert (crashed.kind, crashed.retryable) == ("overloaded", True)
    events = await play(Clis(tmp_path / "defaults")(scenarios.build("overloaded")))
    assert isinstance(events[-1], RunCompleted)
    assert texts(events) == ["Back in service. Here is the answer."]


def test_turn_errors_are_classified_by_codex_error_info() -> None:
    assert turn_crash({"message": "m", "codexErrorInfo": "unauthorized"}) == ("auth", "m", False)
    assert turn_crash({"message": "m", "codexErrorInfo": "serverOverloaded"})[0] == "overloaded"
    status = {"httpConnectionFailed": {"httpStatusCode": 502}}
    assert turn_crash({"message": "m", "codexErrorInfo": status}) == ("http", "m", True)
    assert turn_crash(None) == ("internal", "the turn failed", False)


async def test_a_new_provider_resumes_the_thread(clis: Clis) -> None:
    script = scenarios.build("multi_turn")
    first = clis(script)
    assert texts(await play(first, "one")) == ["Answer number 1."]
    second = clis(script)
    events = await play(second, "two", resume=first.session_id)
    assert texts(events) == ["Answer number 2."]
    assert second.session_id == first.session_id
    assert isinstance(events[0], RunStarted)
    assert events[0].session_id == first.session_id
    methods = [m.get("method") for m in clis.cli(script).invocations[-1].stdin]
    assert "thread/resume" in methods
    assert "thread/start" not in methods


async def test_interrupting_a_stuck_turn_kills_it_and_codex_exits(clis: Clis) -> None:
    script = scenarios.build("stuck")
    provider = clis(script)
    events = await play(provider, interrupt_when=lambda e: isinstance(e, MessageDelta))
    assert isinstance(events[-1], RunKilled)
    (invocation,) = clis.cli(script).invocations
    methods = [m.get("method") for m in invocation.stdin]
    assert "turn/interrupt" in methods
    assert invocation.exit_code is not None or invocation.events  # the process is gone


async def test_misuse_is_refused(clis: Clis) -> None:
    with pytest.raises(UsageError, match="approvals must be one of"):
        CodexProvider("codex", approvals="sometimes")  # type: ignore[arg-type]
    script = scenarios.build("happy_path")
    provider = clis(script)
    run = provider.start("hi")
    with pytest.raises(UsageError, match="no open request 'r1'"):
        await run.respond("r1", "allow")
    await run.interrupt()
    events = [event async for event in run]
    assert [type(e) for e in events] == [RunStarted, RunKilled]
    assert clis.cli(script).invocations == []  # never spawned


def test_runs_need_asyncio(clis: Clis) -> None:
    import anyio

    provider = clis(scenarios.build("happy_path"))

    async def iterate() -> None:
        with pytest.raises(UsageError, match="under asyncio, not trio"):
            await anext(aiter(provider.start("hi")))

    anyio.run(iterate, backend="trio")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["default", "plan"])
def test_the_provider_keeps_the_conformance_invariants_over_the_catalog(
    tmp_path: Path, mode: str
) -> None:
    clis = Clis(tmp_path, collaboration_mode=mode)
    report = check_provider_conformance(clis, timeout=10)
    # the stuck run is interrupted once its scripted events arrived, never after a quiet wait
    assert report.outcomes()["stuck"].stalled_by == "events"
    # in Default mode codex asks no questions, and declares none
    asked = [] if mode == "plan" else [("input-honoured", "input_request")]
    assert [(n.invariant, n.scenario) for n in report.not_applicable()] == asked
    outcomes = {name: (r.terminal, r.kind) for name, r in report.outcomes().items()}
    assert outcomes["happy_path"] == ("run.completed", None)
    assert outcomes["stuck"] == ("run.killed", None)
    assert outcomes["spawn_missing"] == ("run.crashed", "spawn_failed")
    assert outcomes["crash_mid_turn"] == ("run.crashed", "http")


async def test_events_out_of_order_in_the_model_stream_complete_the_turn(clis: Clis) -> None:
    """Observed (codex-cli 0.163): codex ignores content for an item never started, and the
    turn completes with no text and no usage."""
    events = await play(clis(scenarios.build("out_of_order")))
    assert [type(e).__name__ for e in events] == ["RunStarted", "RunCompleted"]


async def test_spent_auth_retries_crash_the_run_as_auth(clis: Clis) -> None:
    """Observed (codex-cli 0.163, ``stream_max_retries = 1``): a 401, "Reconnecting... 1/1",
    a 401 again: "unexpected status 401 Unauthorized: …", which the adapter reads as auth."""
    script = Script.of(Turn(steps=(AuthExpired(),), times=6))
    events = await play(clis(script))
    crashed = events[-1]
    assert isinstance(crashed, RunCrashed), crashed
    assert (crashed.kind, crashed.retryable) == ("auth", False)
    assert crashed.message.startswith("unexpected status 401 Unauthorized: OAuth token has")
