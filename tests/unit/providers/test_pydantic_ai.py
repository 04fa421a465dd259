"""``PydanticAIProvider`` over the model doubles: a real pydantic-ai ``Agent`` whose models
talk to the in-process double through the official SDKs (openai, anthropic) — the whole HTTP
path is real. Then the conformance suite over the catalog, per wire."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import openai
import pytest

pytest.importorskip("pydantic_ai")

from google.genai import errors as genai_errors
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests
from pydantic_ai import exceptions as ai_errors
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider

import stuntset
from _tls import shared_tls
from stuntset import scenarios
from stuntset.checks import check_provider_conformance
from stuntset.clock import SystemClock
from stuntset.doubles.model import ModelDouble
from stuntset.driver import drive
from stuntset.errors import UsageError
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
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
from stuntset.providers.pydantic_ai import PydanticAIProvider, crash_of
from stuntset.script import Script, Text, ToolCall

WIRES = ["openai-chat", "openai-responses", "anthropic", "gemini"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # pydantic-ai runs its agent in an asyncio task


def make_agent(double: ModelDouble, wire: str) -> Agent[None, str | DeferredToolRequests]:
    """An agent with the catalog's tools, whose model talks to ``double`` in-process."""
    http = httpx2.AsyncClient(transport=stuntset.transport(double=double), verify=shared_tls())
    model: Any
    if wire == "gemini":  # GoogleModel over the Gemini wire (google-genai under it)
        # a client with httpx's default 5 s timeout draws a warning from GoogleProvider
        timed = httpx2.AsyncClient(
            transport=stuntset.transport(double=double), timeout=60, verify=shared_tls()
        )
        model = GoogleModel("gemini-test", provider=GoogleProvider(api_key="k", http_client=timed))
    elif wire == "anthropic":
        model = AnthropicModel(
            "claude-test", provider=AnthropicProvider(api_key="k", http_client=http)
        )
    else:
        kind = OpenAIChatModel if wire == "openai-chat" else OpenAIResponsesModel
        model = kind("gpt-test", provider=OpenAIProvider(api_key="k", http_client=http))
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model, output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        return f"contents of {path}"

    @agent.tool_plain(requires_approval=True)
    def bash(command: str) -> str:
        return f"ran {command}"

    @agent.tool_plain
    def list_files(path: str) -> str:
        return "README.md\nsrc/"

    return agent


class World:
    """One double + agent + session store per script: providers made for the same script
    share them (what the conformance suite's resume check needs)."""

    def __init__(self, wire: str) -> None:
        self.wire = wire
        self.made: dict[int, tuple[ModelDouble, Agent[None, str], dict[str, list[ModelMessage]]]]
        self.made = {}

    def __call__(self, script: Script) -> PydanticAIProvider:
        if id(script) not in self.made:
            # A stall must really stall (until interrupted), not fire the client's read
            # timeout at once as it does under the deterministic clock.
            clock = SystemClock() if script.name == "stuck" else None
            double = ModelDouble(script, clock=clock)
            self.made[id(script)] = (double, make_agent(double, self.wire), {})
        double, agent, sessions = self.made[id(script)]
        return PydanticAIProvider(agent, sessions=sessions)

    def close(self) -> None:
        for double, _, _ in self.made.values():
            double.close()


@pytest.fixture(params=WIRES)
def world(request: pytest.FixtureRequest) -> Any:
    made = World(str(request.param))
    yield made
    made.close()


async def run_events(
    provider: PydanticAIProvider, prompt: str = "hi", *, resume: str | None = None, **kw: Any
) -> list[Event]:
    return await drive(provider.start(prompt, resume=resume), timeout=30, **kw)


def texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, MessageCompleted)]


@pytest.mark.anyio
async def test_a_text_turn_streams_deltas_usage_and_completes(world: World) -> None:
    provider = world(scenarios.build("happy_path"))
    events = await run_events(provider)
    started = events[0]
    assert isinstance(started, RunStarted)
    assert (started.provider, started.session_id) == ("pydantic-ai", provider.session_id)
    deltas = [e.text for e in events if isinstance(e, MessageDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == texts(events)[0] == "Hello! How can I help you today?"
    usage = [e for e in events if isinstance(e, Usage)]
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [(12, 9)]
    assert isinstance(events[-1], RunCompleted)


@pytest.mark.anyio
async def test_tool_calls_and_their_results_are_normalized(world: World) -> None:
    events = await run_events(world(scenarios.build("tool_use")))
    started = [e for e in events if isinstance(e, ToolStarted)]
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(s.name, s.input) for s in started] == [("read_file", {"path": "a.txt"})]
    assert [(c.tool_call_id, c.output, c.is_error) for c in completed] == [
        (started[0].tool_call_id, "contents of a.txt", False)
    ]
    assert texts(events) == ["Let me look at that file.", "The file says: hello from a.txt"]
    assert isinstance(events[-1], RunCompleted)


@pytest.mark.anyio
async def test_reasoning_arrives_as_reasoning_events(world: World) -> None:
    if world.wire == "openai-chat":
        pytest.skip("pydantic-ai does not read reasoning_content on the chat wire")
    events = await run_events(world(scenarios.build("interleaved_streaming")))
    reasoning = [e.text for e in events if isinstance(e, ReasoningCompleted)]
    assert "The user wants both files compared." in reasoning[0]


@pytest.mark.anyio
async def test_usage_the_model_did_not_report_is_absent_not_zero(world: World) -> None:
    events = await run_events(world(Script.of([Text("no usage here")])))
    assert not [e for e in events if isinstance(e, Usage)]
    assert texts(events) == ["no usage here"]


@pytest.mark.parametrize(
    ("scenario", "params", "kind", "retryable"),
    [
        ("auth_expired_mid_run", {}, "auth", False),
        ("rate_limited", {"failures": 3}, "rate_limited", True),
        ("stream_cut", {}, "protocol", True),
        ("malformed_json", {}, "protocol", False),
    ],
)
@pytest.mark.anyio
async def test_failures_become_classified_crashes(
    world: World, scenario: str, params: dict[str, Any], kind: str, retryable: bool
) -> None:
    events = await run_events(world(scenarios.build(scenario, **params)))
    crashed = events[-1]
    assert isinstance(crashed, RunCrashed), events[-1]
    assert (crashed.kind, crashed.retryable) == (kind, retryable)


@pytest.mark.anyio
async def test_a_new_provider_resumes_the_session_with_its_history(world: World) -> None:
    script = scenarios.build("multi_turn")
    first = world(script)
    assert texts(await run_events(first, "one")) == ["Answer number 1."]
    second = world(script)
    events = await run_events(second, "two", resume=first.session_id)
    assert texts(events) == ["Answer number 2."]
    assert second.session_id == first.session_id
    double = world.made[id(script)][0]
    assert "one" in str(double.requests[-1].body)  # the history went with the second request


@pytest.mark.anyio
async def test_interrupting_a_stalled_model_kills_the_run(world: World) -> None:
    provider = world(scenarios.build("stuck"))
    events = await drive(provider.start("hi"), interrupt_when=lambda e: isinstance(e, MessageDelta))
    assert isinstance(events[-1], RunKilled)
    await provider.aclose()


@pytest.mark.parametrize("decision", ["allow", "deny"])
@pytest.mark.anyio
async def test_a_tool_that_needs_approval_waits_for_the_decision(
    world: World, decision: str
) -> None:
    events = await run_events(world(scenarios.build("needs_approval")), approve=decision)
    (asked,) = [e for e in events if isinstance(e, ApprovalRequested)]
    (tool,) = [e for e in events if isinstance(e, ToolStarted)]
    assert (asked.tool, asked.input, asked.tool_call_id) == (
        "bash",
        {"command": "rm -rf build/"},
        tool.tool_call_id,
    )
    assert [e.decision for e in events if isinstance(e, ApprovalResolved)] == [decision]
    (result,) = [e for e in events if isinstance(e, ToolCompleted)]
    assert result.is_error is (decision == "deny")
    if decision == "allow":
        assert result.output == "ran rm -rf build/"
    assert texts(events)[-1] == "Done: the build directory is clean."
    assert isinstance(events[-1], RunCompleted)


@pytest.mark.anyio
async def test_misuse_is_refused_up_front(world: World) -> None:
    provider = world(scenarios.build("happy_path"))
    with pytest.raises(UsageError, match="no session 'nope'"):
        provider.start("hi", resume="nope")
    run = provider.start("hi")
    with pytest.raises(UsageError, match="no open request 'r1'"):
        await run.respond("r1", "allow")
    await run.aclose()


#: The other two wires over the scenarios where wires differ (the chat wire runs them all).
WIRE_SCENARIOS = [
    "happy_path",
    "tool_use",
    "needs_approval",
    "interleaved_streaming",
    "multi_turn",
    "spawn_missing",
    "auth_expired_mid_run",
    "rate_limited",
    "stream_cut",
    "malformed_json",
    "garbage_bytes",
    "out_of_order",
    "stuck",
]


@pytest.mark.slow
def test_the_provider_keeps_the_conformance_invariants_on_every_wire(world: World) -> None:
    chosen = None if world.wire == "openai-chat" else WIRE_SCENARIOS
    report = check_provider_conformance(world, scenarios=chosen, timeout=30)
    outcomes = report.outcomes()
    # the stuck run is interrupted once its scripted events arrived, never after a quiet wait
    assert outcomes["stuck"].stalled_by == "events"
    assert outcomes["happy_path"].terminal == "run.completed"
    assert outcomes["stuck"].terminal == "run.killed"
    # the openai and anthropic SDKs retry twice by default; google-genai never unless told
    retried = world.wire != "gemini"
    assert outcomes["rate_limited"].terminal == ("run.completed" if retried else "run.crashed")
    assert (outcomes["auth_expired_mid_run"].kind, outcomes["stream_cut"].kind) == (
        "auth",
        "protocol",
    )
    input_skipped = {("input-honoured", "input_request")} if chosen is None else set()
    assert {(r.invariant, r.scenario) for r in report.not_applicable()} == {
        *input_skipped,
        *((inv, "spawn_missing") for inv in ("started-first", "contract", "terminates")),
        *((inv, "spawn_missing") for inv in ("capabilities-honest", "usage-not-zero")),
        ("interrupt-terminates", "spawn_missing"),
        ("early-close-releases", "spawn_missing"),
    }


def _caused(error: BaseException, cause: BaseException) -> BaseException:
    error.__cause__ = cause
    return error


#: What the Gemini Developer API sends for an expired key (docs/protocol-gemini.md#errors).
KEY_EXPIRED = {
    "error": {
        "code": 400,
        "message": "API key expired. Please renew the API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
        ],
    }
}
_REQUEST = httpx2.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


@pytest.mark.parametrize(
    ("error", "crash"),
    [
        (ai_errors.ModelHTTPError(503, "m"), ("overloaded", True)),
        (ai_errors.ModelHTTPError(529, "m"), ("overloaded", True)),
        (ai_errors.ModelHTTPError(403, "m"), ("auth", False)),
        (ai_errors.ModelHTTPError(400, "m"), ("http", False)),
        (ai_errors.ModelHTTPError(409, "m"), ("http", True)),
        (ai_errors.ModelAuthenticationError("m", "bad key"), ("auth", False)),
        (ai_errors.ModelRateLimitError("m", "slow down"), ("rate_limited", True)),
        (ai_errors.ModelUnavailableError("m", "busy"), ("overloaded", True)),
        (ai_errors.ModelTimeoutError("m", "too slow"), ("timeout", True)),
        (TimeoutError(), ("timeout", True)),
        (ai_errors.ModelConnectionError("m", "refused"), ("protocol", True)),
        (ai_errors.UnexpectedModelBehavior("no tool named x"), ("protocol", False)),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), ("protocol", False)),
        (httpx2.ReadTimeout("read", request=_REQUEST), ("timeout", True)),
        (httpx2.RemoteProtocolError("peer closed", request=_REQUEST), ("protocol", True)),
        (openai.APITimeoutError(request=_REQUEST), ("timeout", True)),
        (openai.APIConnectionError(request=_REQUEST), ("protocol", True)),
        (
            openai.RateLimitError(
                "slow", response=httpx2.Response(429, request=_REQUEST), body=None
            ),
            ("rate_limited", True),
        ),
        (openai.OpenAIError("something else"), ("internal", False)),
        (genai_errors.UnknownApiResponseError("Failed to parse"), ("protocol", False)),
        (
            genai_errors.ServerError(503, {"error": {"code": 503, "status": "UNAVAILABLE"}}),
            ("overloaded", True),
        ),
        (genai_errors.ClientError(401, {"error": {"code": 401}}), ("auth", False)),
        # Gemini's expired key: a 400 whose ErrorInfo reason says the key is bad
        (genai_errors.ClientError(400, KEY_EXPIRED), ("auth", False)),
        (
            genai_errors.ClientError(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT"}}),
            ("http", False),
        ),
        (ai_errors.ModelHTTPError(400, "m", body=KEY_EXPIRED), ("auth", False)),
        (genai_errors.APIError(0, {}), ("internal", False)),
        (
            _caused(ai_errors.ModelAPIError("m", "wrapped"), httpx2.ConnectTimeout("c")),
            ("timeout", True),
        ),
        (ValueError("a bug in a tool"), ("internal", False)),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None,
)
def test_every_kind_of_failure_out_of_an_agent_maps_to_its_crash_kind(
    error: BaseException, crash: tuple[str, bool]
) -> None:
    kind, message, retryable = crash_of(error)
    assert (kind, retryable) == crash
    assert message  # never an empty crash message, even for a bare TimeoutError()


def test_a_crash_message_names_the_status_or_the_exception_type() -> None:
    assert crash_of(ai_errors.ModelHTTPError(503, "m", "busy"))[1].startswith("HTTP 503: ")
    assert crash_of(TimeoutError())[1] == "TimeoutError"
    assert crash_of(ValueError("bad"))[1] == "ValueError: bad"
    assert crash_of(httpx2.ReadTimeout("read", request=_REQUEST))[1] == "ReadTimeout: read"


@pytest.mark.anyio
async def test_a_tool_deferred_for_external_execution_crashes_the_run_naming_it() -> None:
    # PydanticAIProvider answers approvals only: a tool the agent hands back for the caller
    # to run itself (CallDeferred) is a crash that names the tool, not a silent hang.
    double = ModelDouble(Script.of([ToolCall("fetch_remote", {"url": "u"}), Text("never")]))
    agent = make_agent(double, "openai-chat")

    @agent.tool_plain
    def fetch_remote(url: str) -> str:
        raise CallDeferred

    try:
        events = await run_events(PydanticAIProvider(agent))
    finally:
        double.close()
    crashed = events[-1]
    assert isinstance(crashed, RunCrashed), events
    assert (crashed.kind, crashed.retryable) == ("internal", False)
    assert crashed.message == (
        "the agent deferred tool calls for external execution (fetch_remote); "
        "PydanticAIProvider answers approvals only"
    )


@pytest.mark.anyio
async def test_interrupting_a_run_waiting_for_approval_kills_it(world: World) -> None:
    provider = world(scenarios.build("needs_approval"))
    run = provider.start("hi")
    async for event in run:
        if isinstance(event, ApprovalRequested):
            break
    rest: list[Event] = []

    async def consume() -> None:
        rest.extend([event async for event in run])

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(consume)
        await anyio.wait_all_tasks_blocked()  # the run waits for the decision
        await run.interrupt("user pressed stop")
    assert len(rest) == 1
    assert isinstance(rest[0], RunKilled)
    assert rest[0].reason == "user pressed stop"
    await run.interrupt()  # once ended, a no-op
    assert run.events[-1] is rest[0]
    await provider.aclose()


@pytest.mark.anyio
async def test_an_approval_takes_allow_or_deny_only(world: World) -> None:
    provider = world(scenarios.build("needs_approval"))
    run = provider.start("hi")
    asked = None
    async for event in run:
        if isinstance(event, ApprovalRequested):
            asked = event
            break
    assert asked is not None
    assert run.open_requests == {asked.request_id: "approval"}
    with pytest.raises(UsageError, match=r"takes 'allow' or 'deny', got 'maybe'"):
        await run.respond(asked.request_id, "maybe")
    assert run.open_requests == {asked.request_id: "approval"}  # still open after a refusal
    await run.aclose()
    assert repr(provider).startswith("PydanticAIProvider(agent=")
    await provider.aclose()
