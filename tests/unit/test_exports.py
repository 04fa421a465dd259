"""The public names: every name in ``stuntset.__all__`` and in each package's ``__all__`` is of
the kind it is documented as (module, function, class, protocol, exception, type alias,
constant), and every function and class is called once in a doc-like example below (a class
the library hands out, rather than one a user builds, may be met through ``isinstance``)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest

import stuntset

KINDS: dict[str, dict[str, str]] = {
    "stuntset": {
        "module": "events scenarios",
        "protocol": "AgentProvider AgentRun Clock IdGenerator",
        "exception": "CapabilityError ContractViolation HarnessFailure ScriptError "
        "ScriptExhausted StuntsetError UnknownScenario UnstubbedCall UnusedTurns UsageError "
        "WaitTimeout",
        "class": "Capabilities ContractChecker FakeClock Framing Match RandomIds Script "
        "ScriptedProvider SequentialIds StuckProvider SystemClock Turn TurnRequest",
        "function": "check_events collect_events current_clock current_ids deterministic drive "
        "install_cli load_script loads_script serve stub transport turn use_seams wait_for "
        "wait_for_async",
    },
    "stuntset.events": {
        "constant": "TERMINAL_TYPES",
        "type alias": "CrashKind Decision Event",
        "class": "ApprovalRequested ApprovalResolved EventBase InputRequested InputResolved "
        "MessageCompleted MessageDelta ReasoningCompleted ReasoningDelta RunCompleted RunCrashed "
        "RunKilled RunStarted ToolCompleted ToolStarted Usage",
        "function": "decode decode_lines encode encode_lines is_terminal to_builtins type_of "
        "with_seq",
    },
    "stuntset.errors": {
        "exception": "CapabilityError CassetteError CassetteMismatch ConformanceFailure "
        "ContractViolation DaemonError DeadlineExceeded EvalBelowThreshold EvalFileError "
        "FuzzFailure HarnessFailure SecretFound SnapshotMismatch UnusedInteractions "
        "InstalledPackageError InvalidEvent InvariantViolation LeftoverPaths LogFileError LogInUse "
        "MissingExtra PrefixUnstable ResilienceFailure ResourceLeak "
        "ScriptError ScriptExhausted StaleCursor StuntsetError ToolMismatch TrajectoryMismatch "
        "UnknownScenario UnstubbedCall UnusedTurns UsageError WaitTimeout WorkspaceMismatch",
    },
    "stuntset.script": {
        "constant": "AGENT_WIRE FAULT_KINDS STEP_KINDS",
        "type alias": "FaultStep Step TurnFunction",
        "class": "ApprovalRequest AuthExpired Delay Exit Garbage HttpError InputRequest "
        "MalformedJson Match OutOfOrder Overloaded PlayedTurn RateLimit RateLimitCredits "
        "RateLimitWindow RateLimits Reasoning Script "
        "ScriptPlayer SpawnFailure Stall StreamCut Text ToolCall ToolResult Turn TurnRequest "
        "Usage Wire",
        "function": "dumps_script kind_of load_script loads_script split_text turn",
    },
    "stuntset.providers": {
        "protocol": "AgentProvider AgentRun",
        "type alias": "Call",
        "class": "Capabilities ClaudeCodeProvider CodexProvider Interrupted PydanticAIProvider "
        "Responded ScriptedProvider ScriptedRun Started StuckProvider",
        "function": "crash_for",
    },
    "stuntset.providers.codex": {
        "class": "CodexProvider CodexRun",
        "function": "crash_of turn_crash",
    },
    "stuntset.log": {
        "protocol": "EventLog Subscription",
        "exception": "StaleCursor",
        "type alias": "SessionStatus Synchronous",
        "class": "ApprovalView InputView LogSubscription MemoryEventLog MessageView Projector "
        "RunView SessionView SqliteEventLog ToolCallView UsageView",
        "function": "diff_views project",
    },
    "stuntset.runtime": {
        "type alias": "ProviderFactory RunStatus",
        "class": "Checkpoint RunRecord SessionRecord SessionService SessionStore TaskRecord",
    },
    "stuntset.cassettes": {
        "constant": "FORMAT VERSION",
        "exception": "CassetteError SecretFound",
        "class": "Cassette Finding Frame Interaction RecordedRequest RecordedResponse ReplayedCli "
        "Scrubber",
        "function": "dumps_cassette install_cli_recorder install_cli_replay is_cassette "
        "load_cassette loads_cassette scan_for_secrets verify_tree write_cassette",
    },
    "stuntset.checks": {
        "constant": "CACHE_FIELDS CONFORMANCE_INVARIANTS CONTINUATION_INVARIANTS DEFAULT_SETTINGS "
        "HOST_TIMEOUT_INVARIANTS INVARIANTS RESILIENCE_RULES",
        "exception": "ConformanceFailure InstalledPackageError InvariantViolation LeftoverPaths "
        "PrefixUnstable ResilienceFailure ResourceLeak ToolMismatch TrajectoryMismatch "
        "WorkspaceMismatch",
        "class": "CommandResult ConformanceReport DeclaredTool InstalledPackage Leak LeakSnapshot "
        "ModelRequest "
        "PrefixDivergence "
        "PrefixReport ReceivedCall ResilienceJudge SettleGate TempTracker ToolCalls ToolStep "
        "TrajectoryResult Verdict WorkspaceChanges WorkspaceSnapshot",
        "function": "acheck_continuation check_continuation acheck_host_timeouts "
        "acheck_provider_conformance assert_prefix_stable "
        "assert_tool assert_trajectory check_event_log check_host_timeouts check_no_leaks "
        "check_provider_conformance check_resilience conformance_cases "
        "conformance_test declared_tools find_prefix_divergence first_user_message install_package "
        "match_trajectory model_requests resilience_verdicts trajectory_of verify_command within",
    },
    "stuntset.doubles.model": {
        "constant": "ANTHROPIC_MESSAGES GEMINI MODEL_WIRES OPENAI_CHAT OPENAI_RESPONSES",
        "class": "Framing JournalEntry LoopbackServer ModelDouble ModelTransport StandIn",
        "function": "serve transport",
    },
    "stuntset.wires": {
        "constant": "ANTHROPIC_MESSAGES API_PATHS API_PROVIDERS BEDROCK_CONVERSE BEDROCK_INVOKE "
        "EVENTSTREAM GEMINI MODEL_WIRES OPENAI_CHAT "
        "OPENAI_RESPONSES PLAIN_FRAMING PROVIDERS SSE WIRES WIRE_NAMES",
        "class": "Abort ApiProvider EventStreamParser Framing ModelWire Pause Plan PrefixView "
        "RenderContext Reply "
        "ResponseReader Seen SseParser Stall StatusFault StreamFraming WireClient WireCodec",
        "type alias": "Action HistoryCall Memo ProviderName StatusStep",
        "exception": "BadRequest EventStreamError",
        "protocol": "FrameLike",
        "function": "check_script codec_for decode_frame error_codec json_reply map_json memoized messages_history_calls models_codec "
        "parse_sse plan_of rate_limit_headers recorded_wire render stream_framing wire_named "
        "wire_of_path",
    },
    "stuntset.evals": {
        "constant": "TARGETS",
        "class": "Action Behaviour EvalResult EvalRunner EvalSpec Expect Grade Observation "
        "RunResult Skill Step Workdir",
        "function": "actions_of arun_eval assert_pass_rate binary_for grade load_eval loads_eval "
        "make_target render_html to_json wilson_interval write_html write_json",
    },
    "stuntset.drift": {
        "constant": "ALLOWLIST",
        "class": "Allowed Difference DriftCell DriftReport",
        "function": "drift first_difference load_allowlist normalize",
    },
    "stuntset.doubles.mcp": {
        "constant": "MCP_WIRE",
        "class": "McpCall McpDouble McpPrompt McpPromptArgument McpPromptMessage McpResource "
        "McpServerSpec McpTool",
        "function": "dumps_spec load_spec loads_spec spec_of",
    },
    "stuntset.console": {
        "class": "ConsoleSources",
        "function": "console_app daemon_console with_console",
    },
    "stuntset.browser": {
        "constant": "LAUNCH_ARGS",
        "class": "PageSnapshot SnapshotFiles WebSocketGate",
        "function": "find_chromium missing_reason",
    },
    "stuntset.doubles.cli": {
        "constant": "PROGRAMS",
        "protocol": "CliProgram",
        "class": "InstalledCli Invocation",
        "function": "install_cli",
    },
    "stuntset.doubles.cli.claude": {
        "constant": "CLAUDE CLAUDE_WIRE DEFAULT_MODEL VERSION",
        "class": "ClaudeProgram",
    },
    "stuntset.doubles.cli.codex": {
        "constant": "CODEX CODEX_WIRE DEFAULT_MODEL REFUSALS VERSION",
        "class": "CodexProgram",
        "function": "classify_tool",
    },
    "stuntset.doubles.cli.gemini": {
        "constant": "DEFAULT_MODEL GEMINI GEMINI_CLI_WIRE VERSION",
        "class": "GeminiProgram",
        "function": "v8_json_error",
    },
}


def kind_of(value: object) -> str:
    if inspect.ismodule(value):
        return "module"
    if isinstance(value, type):
        if getattr(value, "_is_protocol", False):
            return "protocol"
        return "exception" if issubclass(value, BaseException) else "class"
    if isinstance(value, types.UnionType) or typing.get_origin(value) is not None:
        return "type alias"
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return "function"
    return "constant"


def declared(module: str) -> dict[str, str]:
    return {name: kind for kind, names in KINDS[module].items() for name in names.split()}


@pytest.mark.parametrize("module", list(KINDS))
def test_each_public_name_is_of_its_documented_kind(module: str) -> None:
    loaded = importlib.import_module(module)
    assert len(set(loaded.__all__)) == len(loaded.__all__)
    assert set(declared(module)) == set(loaded.__all__)
    kinds = {name: kind_of(getattr(loaded, name)) for name in loaded.__all__}
    assert kinds == declared(module)


def test_every_package_with_public_names_is_listed() -> None:
    import pkgutil

    packages = {
        info.name
        for info in pkgutil.walk_packages(stuntset.__path__, "stuntset.")
        if info.ispkg and hasattr(importlib.import_module(info.name), "__all__")
    }
    assert packages <= set(KINDS)


def test_from_stuntset_import_stub_is_the_function() -> None:
    """Also when its submodule was imported first (loading a submodule sets the package's
    attribute of that name to the module)."""
    code = (
        "import inspect\nimport stuntset.stub\nfrom stuntset import stub\n"
        "import stuntset\nprint(inspect.isfunction(stub), inspect.isfunction(stuntset.stub))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True True"


def test_the_kind_check_tells_a_module_from_a_function() -> None:
    """The check that would have caught ``from stuntset import stub`` returning the module."""
    assert kind_of(importlib.import_module("stuntset.stub")) == "module"
    assert kind_of(stuntset.stub) == "function"


def test_every_lazy_top_level_name_is_public() -> None:
    assert set(stuntset._LAZY) == set(stuntset.__all__)
    assert set(stuntset.__all__) <= set(dir(stuntset))


def test_unknown_top_level_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        stuntset.nope  # type: ignore[attr-defined]  # noqa: B018


def test_importing_stuntset_stays_light() -> None:
    code = "import sys, stuntset; print(sorted(m for m in ('uvicorn', 'starlette', 'hypothesis', 'rich', 'click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_importing_stuntset_checks_does_not_import_hypothesis() -> None:
    code = "import sys, stuntset.checks; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- doc-like examples: each public function and class called once ---

EXAMPLES: dict[str, str] = {
    "seams and ids": """
from stuntset import FakeClock, RandomIds, SequentialIds, SystemClock, Clock, IdGenerator
from stuntset import current_clock, current_ids, deterministic, use_seams
clock = FakeClock()
assert clock.now() == 1767225600.0
assert SystemClock().now() > 0
assert SequentialIds().new("run") == "run-1"
assert RandomIds().new("run").startswith("run-")
with use_seams(clock=clock, ids=SequentialIds("x")):
    assert current_clock() is clock
with deterministic() as seams:
    assert current_ids().new("tool") == "tool-1"
assert isinstance(clock, Clock) and isinstance(seams.ids, IdGenerator)
""",
    "scripts": """
from stuntset import Match, Script, Turn, TurnRequest, load_script, loads_script, turn
from stuntset.script import (
    ApprovalRequest, AuthExpired, Delay, Exit, Garbage, HttpError, InputRequest, MalformedJson,
    OutOfOrder, Overloaded, PlayedTurn, RateLimit, Reasoning, ScriptPlayer, SpawnFailure, Stall,
    StreamCut, Text, ToolCall, ToolResult, Usage, Wire, dumps_script, kind_of, split_text,
)
steps = [Reasoning("think"), Text("hi"), ToolCall("read", {"p": "a"}), ToolResult("ok"),
         ApprovalRequest(tool="sh"), InputRequest("which?"), Delay(0.1), Usage(1, 2)]
faults = [AuthExpired(), Exit(2), Garbage(), HttpError(500), MalformedJson(), OutOfOrder(),
          Overloaded(), RateLimit(), SpawnFailure(), Stall(), StreamCut(after_events=1)]
assert [kind_of(s) for s in steps][:2] == ["reasoning", "text"]
assert "".join(split_text("a b c", chunks=3)) == "a b c"
script = Script(turns=(Turn(steps=(Text("hello"),), match=Match(contains="hi")), turn(Text("bye"))))
assert loads_script(dumps_script(script), format="json").turns[0].steps == (Text("hello"),)
(tmp / "s.json").write_text(dumps_script(script))
assert load_script(tmp / "s.json").turns[1].steps == (Text("bye"),)
played = ScriptPlayer(script).next_turn(TurnRequest(input_text="hi"))
assert isinstance(played, PlayedTurn) and played.index == 0
assert isinstance(Wire(name="w", renders=frozenset({"text"})), Wire)
from stuntset.script import RateLimitCredits, RateLimits, RateLimitWindow
limits = RateLimits(primary=RateLimitWindow(used_percent=42.5, window_minutes=300),
                    credits=RateLimitCredits(has_credits=True, balance="12.50"))
limited = Script.of([Text("hi")], rate_limits=limits)
assert limited.rate_limits_of(limited.turns[0]) is limits
""",
    "providers and driving": """
import anyio
from stuntset import Capabilities, ScriptedProvider, StuckProvider, AgentProvider, AgentRun
from stuntset import collect_events, drive, scenarios, check_events, ContractChecker
from stuntset.providers import Interrupted, Responded, ScriptedRun, Started, crash_for
from stuntset.script import RateLimit
assert isinstance(Capabilities(approvals=True), Capabilities)
provider = ScriptedProvider(scenarios.build("tool_use"))
run = provider.start("go")
assert isinstance(run, ScriptedRun) and isinstance(run, AgentRun)
assert isinstance(provider, AgentProvider)
seen = anyio.run(lambda: drive(run))
check_events(seen)
checker = ContractChecker()
for event in seen:
    checker.feed(event)
checker.finish()
async def stuck():
    return await collect_events(StuckProvider().start("x"), until=lambda e: e.type == "run.started")
assert anyio.run(stuck)[0].type == "run.started"
assert crash_for(RateLimit())[0] == "rate_limited"
calls = [Started(run_id="r", prompt="p"), Interrupted(run_id="r", reason="x"),
         Responded(run_id="r", request_id="q", decision="allow")]
assert calls[0].prompt == "p"
""",
    "waiting and stubs": """
import anyio
from typing import Protocol
from stuntset import stub, wait_for, wait_for_async
class Store(Protocol):
    def load(self, key: str) -> bytes: ...
assert stub(Store, load=lambda key: b"x").load("k") == b"x"
assert wait_for(lambda: 42) == 42
async def main():
    return await wait_for_async(lambda: "ready")
assert anyio.run(main) == "ready"
""",
    "errors": """
from stuntset.errors import (
    CapabilityError, ConformanceFailure, ContractViolation, HarnessFailure, InvariantViolation,
    ScriptError, ScriptExhausted, StaleCursor, StuntsetError, UnknownScenario, UnstubbedCall,
    UnusedTurns, UsageError, WaitTimeout, LeftoverPaths, PrefixUnstable, ToolMismatch,
    TrajectoryMismatch, WorkspaceMismatch, InvalidEvent, LogFileError, LogInUse,
    InstalledPackageError, EvalFileError, EvalBelowThreshold, MissingExtra, ResourceLeak,
    CassetteError, CassetteMismatch, DaemonError, SecretFound, SnapshotMismatch,
    UnusedInteractions,
    DeadlineExceeded, FuzzFailure,
)
raised = [
    DeadlineExceeded("x"), FuzzFailure("x"),
    EvalFileError("x"), EvalBelowThreshold("x"),
    CapabilityError("no resume"), ConformanceFailure("x", invariant="contract", scenario=None,
    provider="p"), ContractViolation("x", rule="one-terminal", index=3), HarnessFailure("x"),
    InvariantViolation("x", invariant="gapless"), ScriptError("x", turn=0), ScriptExhausted("x"),
    StaleCursor("x", session_id="s", cursor=3, resume_at=1), StuntsetError("x"),
    UnknownScenario("x"), UnstubbedCall("x"), UnusedTurns("x"), UsageError("x"), WaitTimeout("x"),
    LeftoverPaths("x"), PrefixUnstable("x"), ToolMismatch("x"), TrajectoryMismatch("x"),
    WorkspaceMismatch("x"), InvalidEvent("x", index=0, field="ts"),
    LogFileError("x", path="host.db"), LogInUse("x", path="host.db", pid=1),
    InstalledPackageError("x"), MissingExtra("x"), ResourceLeak("x"),
    CassetteError("x"), CassetteMismatch("x"), DaemonError("x", field="f"), SecretFound("x"),
    SnapshotMismatch("x"), UnusedInteractions("x"),
]
assert all(isinstance(error, StuntsetError) for error in raised)
""",
    "events": """
from stuntset.events import (
    ApprovalRequested, ApprovalResolved, EventBase, InputRequested, InputResolved,
    MessageCompleted, MessageDelta, ReasoningCompleted, ReasoningDelta, RunCompleted, RunCrashed,
    RunKilled, RunStarted, ToolCompleted, ToolStarted, Usage, decode, decode_lines, encode,
    encode_lines, is_terminal, to_builtins, type_of, with_seq,
)
base = {"run_id": "r", "ts": 1.0}
run = [
    RunStarted(**base, session_id="s", provider="p"),
    ReasoningDelta(**base, item_id="i", text="t"), ReasoningCompleted(**base, item_id="i", text="t"),
    MessageDelta(**base, item_id="m", text="h"), MessageCompleted(**base, item_id="m", text="h"),
    ToolStarted(**base, tool_call_id="c", name="sh"),
    ApprovalRequested(**base, request_id="a", tool_call_id="c", tool="sh"),
    ApprovalResolved(**base, request_id="a", decision="allow"),
    ToolCompleted(**base, tool_call_id="c", output="ok"),
    InputRequested(**base, request_id="q", prompt="which?"),
    InputResolved(**base, request_id="q", text="main"),
    Usage(**base, input_tokens=1, output_tokens=2),
    RunCompleted(**base),
]
assert decode(encode(run[0])) == run[0]
assert decode_lines(encode_lines(run)) == run
assert is_terminal(run[-1]) and not is_terminal(run[0])
assert type_of(run[0]) == "run.started" == to_builtins(run[0])["type"]
assert with_seq(run[0], 1).seq == 1
assert isinstance(run[0], EventBase)
assert is_terminal(RunCrashed(**base, kind="auth", message="expired"))
assert is_terminal(RunKilled(**base))
""",
    "model doubles": """
import httpx2
from stuntset import serve, transport, scenarios
from stuntset.doubles.model import (
    Framing, JournalEntry, LoopbackServer, ModelDouble, ModelTransport, StandIn,
)
body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
double = ModelDouble(scenarios.build("happy_path"), framing=Framing(line_ending="\\r\\n"))
with httpx2.Client(transport=ModelTransport(double)) as client:
    assert client.post("http://x/v1/chat/completions", json=body).status_code == 200
assert isinstance(double.requests[0], JournalEntry)
with httpx2.Client(transport=transport(scenarios.build("happy_path"))) as client:
    assert client.post("http://x/v1/chat/completions", json=body).status_code == 200
with serve(scenarios.build("happy_path")) as stand_in:
    assert httpx2.post(stand_in.url("openai") + "/chat/completions", json=body).status_code == 200
stand_in = StandIn(scenarios.build("happy_path"), server_factory=lambda: LoopbackServer(port=0))
try:
    assert stand_in.url("anthropic").startswith("http://127.0.0.1:")
finally:
    stand_in.close()
""",
    "model wires": """
from stuntset import scenarios
from stuntset.ids import SequentialIds
from stuntset.wires import (
    API_PATHS, API_PROVIDERS, PLAIN_FRAMING, PROVIDERS, SSE, WIRES, WIRE_NAMES, Abort, ApiProvider,
    BadRequest, Framing, ModelWire, Pause, Seen, WireClient, Plan, PrefixView, RenderContext, Reply, ResponseReader, SseParser, Stall,
    StatusFault, StreamFraming, WireCodec, check_script, codec_for, error_codec, json_reply,
    memoized, messages_history_calls, parse_sse, plan_of, rate_limit_headers, recorded_wire,
    render, stream_framing, wire_named, wire_of_path, models_codec,
)
from stuntset.script import RateLimits, RateLimitWindow, Text
assert WIRE_NAMES[0] == "openai-chat" and "anthropic" in PROVIDERS and "/v1/models" in API_PATHS
assert isinstance(API_PROVIDERS[0], ApiProvider) and API_PROVIDERS[0].client_path == "/openai/v1"
chat = wire_named("openai-chat")
assert isinstance(chat.client, WireClient) and chat.client.path == "/v1/chat/completions"
seen = Seen()
chat.client.apply("", {"choices": [{"delta": {"content": "hi"}}]}, seen)
assert seen.text == "hi" and seen.summary() == "HTTP 0"
assert isinstance(chat, ModelWire) and chat is WIRES[0] and recorded_wire("http") is chat
assert wire_of_path("/openai/v1/chat/completions") is chat and chat.records("/v1/chat/completions")
codec = codec_for("/v1/chat/completions")
assert isinstance(codec, WireCodec) and error_codec(None, {}) is codec
tags = models_codec("ollama", "/api/tags")
assert tags is not None and models_codec("openai", "/api/tags") is None
assert tags.models_body(["llama3.2"], 0)["models"][0]["model"] == "llama3.2:latest"
check_script(scenarios.build("happy_path"))
plan = plan_of((Text("hi"),))
assert isinstance(plan, Plan)
ctx = RenderContext("m", "chatcmpl-1", "req-1", 0, SequentialIds(), 0, Framing())
reply = render(codec, plan, True, ctx)
assert isinstance(reply, Reply) and reply.status == 200
frames = parse_sse(b"".join(a for a in reply.actions if isinstance(a, bytes)))
reader = ResponseReader()
assert chat.read_frames([type("F", (), {"event": e, "data": d})() for e, d in frames], reader)
assert reader.steps()[0] == Text("hi", chunks=1)
assert SseParser().feed(b"data: x\\n\\n") == [(None, "x")]
assert stream_framing("text/event-stream; charset=utf-8") is SSE
assert isinstance(SSE, StreamFraming) and PLAIN_FRAMING == Framing()
view = chat.prefix_view({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]})
assert isinstance(view, PrefixView) and view.offset == 1
assert PrefixView({}, [], "messages", 0, [], {}).chained is False
body = {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}]}
assert messages_history_calls(body) == [("c", "f", None)]
assert json_reply(200, {"ok": True}).status == 200
from stuntset.wires import EVENTSTREAM, EventStreamError, EventStreamParser, decode_frame, map_json
bedrock = codec_for("/model/anthropic.claude-x-v1%3A0/converse-stream")
frames = EventStreamParser().feed(b"".join(a for a in render(bedrock, plan, True, ctx).actions if isinstance(a, bytes)))
assert stream_framing("application/vnd.amazon.eventstream") is EVENTSTREAM and frames[0][0] == "messageStart"
assert decode_frame(frames[0][1]).payload == b'{"role":"assistant"}'
assert map_json(frames[0][1], lambda doc: doc) == frames[0][1]
try:
    decode_frame("AAAA")
except EventStreamError as error:
    assert "whole message" in str(error) and isinstance(EventStreamError("x"), ValueError)
assert [Pause(0.1).seconds, repr(Stall()), Abort(reset=True).reset] == [0.1, "STALL", True]
assert codec.fault_reply(StatusFault(429, "slow", None, []), None).status == 429
window = RateLimitWindow(used_percent=50.0)
assert rate_limit_headers(RateLimits(primary=window))
memo: dict = {}
assert memoized(memo, "k", plan, lambda: 1) == memoized(memo, "k", plan, lambda: 2) == 1
try:
    codec.parse([], {})
except Exception as refused:  # the provider's 400, in its own error shape
    assert isinstance(refused, BadRequest) and refused.message
""",
    "CLI doubles": """
import subprocess
from stuntset import install_cli, scenarios
from stuntset.doubles.cli import PROGRAMS, CliProgram, InstalledCli, Invocation
claude = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp / "bin", time_scale=0)
assert isinstance(claude, InstalledCli)
program: CliProgram = claude.program  # a protocol (not runtime-checkable): a type to implement
assert program.name in PROGRAMS
prompt = b'{"type":"user","message":{"role":"user","content":"hi"}}\\n'
args = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
subprocess.run([str(claude.path), *args], input=prompt, capture_output=True, check=True)
assert isinstance(claude.invocations[0], Invocation)
from stuntset.doubles.cli.claude import CLAUDE, ClaudeProgram
from stuntset.doubles.cli.codex import CODEX, CodexProgram, classify_tool
assert isinstance(CLAUDE, ClaudeProgram) and isinstance(CODEX, CodexProgram)
assert ClaudeProgram().name == "claude" and CodexProgram().name == "codex"
assert classify_tool("exec_command", {"cmd": "ls"})[0] == "command"
assert classify_tool("Bash", {"command": "ls"})[0] == "unsupported"  # codex has no Bash
from stuntset.doubles.cli.gemini import GEMINI, GeminiProgram, v8_json_error
assert isinstance(GEMINI, GeminiProgram) and GeminiProgram().name in PROGRAMS
assert v8_json_error('{"a": "tr') == "Unterminated string in JSON at position 9"
""",
    "mcp double": """
from stuntset.doubles.mcp import (
    MCP_WIRE, McpCall, McpDouble, McpPrompt, McpPromptArgument, McpPromptMessage, McpResource,
    McpServerSpec, McpTool, dumps_spec, load_spec, loads_spec, spec_of,
)
from stuntset.script import Script, ToolCall, ToolResult
prompt = McpPrompt(
    name="review", arguments=(McpPromptArgument(name="code"),),
    messages=(McpPromptMessage(text="Review {code}"),),
)
spec = McpServerSpec(
    script=MCP_WIRE.check(Script.of([ToolCall("read_file"), ToolResult("hi")])),
    tools=(McpTool(name="ls"),), resources=(McpResource(uri="file:///a", name="a"),),
    prompts=(prompt,),
)
(tmp / "spec.json").write_text(dumps_spec(spec))
assert load_spec(tmp / "spec.json").listed_tools() == loads_spec(dumps_spec(spec), format="json").listed_tools()
with McpDouble(spec_of(spec.script, tools=["ls"]), root=tmp / "mcp") as double:
    assert double.stdio_command()[1:3] == ["-m", "stuntset.doubles.mcp.stdio"]
    assert double.calls == []
    assert McpCall(transport="stdio", session="s", method="ping", outcome="request").id is None
""",
    "session log and host": """
import anyio
from stuntset import scenarios, drive
from stuntset.providers import ScriptedProvider
from stuntset.log import (
    ApprovalView, EventLog, InputView, LogSubscription, MemoryEventLog, MessageView, Projector,
    RunView, SessionView, SqliteEventLog, Subscription, ToolCallView, UsageView, diff_views,
    project,
)
from stuntset.runtime import (
    Checkpoint, RunRecord, SessionRecord, SessionService, SessionStore, TaskRecord,
)
events = anyio.run(drive, ScriptedProvider(scenarios.build("tool_use")).start("go"))
log = SqliteEventLog(tmp / "log.db")
memory = MemoryEventLog()
for store in (log, memory):
    store.append("s", events)
assert isinstance(log, EventLog) and project(log.read("s")) == project(memory.read("s"))
projector = Projector()
for event in events:
    projector.feed(event)
assert diff_views(projector.view(), project(events)) == []
assert isinstance(project(events), SessionView)
views = [RunView(run_id="r"), MessageView(run_id="r", item_id="i", text="t"),
         ToolCallView(run_id="r", tool_call_id="c", name="sh"), UsageView(),
         ApprovalView(run_id="r", request_id="a", tool="sh"), InputView(run_id="r", request_id="q", prompt="?")]
assert views[0].status == "running"
async def subscribed():
    subscription = memory.subscribe("s")
    assert isinstance(subscription, LogSubscription) and isinstance(subscription, Subscription)
    first = await subscription.__anext__()
    await subscription.aclose()
    return first
assert anyio.run(subscribed) == memory.read("s")[0]
rows = SessionStore(tmp / "store.db")
rows.put(TaskRecord(task_id="t", workdir=str(tmp), created_at=1.0))
rows.put(SessionRecord(session_id="s", task_id="t", provider="happy_path", created_at=1.0,
                       checkpoint=Checkpoint(resume="x", run_id="r", seq=1)))
rows.put(RunRecord(run_id="r", session_id="s", prompt="p", status="completed", started_at=1.0))
assert rows.get(TaskRecord, "t").workdir == str(tmp)
host = SessionService(log=MemoryEventLog(), store=rows, providers={})
assert host.log is not None
rows.close()
log.close()
""",
    "cassettes": """
from stuntset.cassettes import (
    FORMAT, Cassette, CassetteError, Finding, Frame, Interaction, RecordedRequest,
    RecordedResponse, ReplayedCli, Scrubber, SecretFound, dumps_cassette, install_cli_recorder,
    install_cli_replay, is_cassette, load_cassette, loads_cassette, scan_for_secrets,
    verify_tree, write_cassette,
)
request = RecordedRequest(method="POST", path="/v1/chat/completions", body={"model": "m"})
response = RecordedResponse(status=200, frames=[Frame(t=0.0, data="{}")])
cassette = Cassette(interactions=[Interaction(id="i-1", wire="openai-chat", request=request,
                                              response=response)])
path = write_cassette(tmp / "c.jsonl", cassette, scrubber=Scrubber())
assert is_cassette(path) and load_cassette(path).interactions[0].id == "i-1"
assert loads_cassette(dumps_cassette(cassette)).interactions[0].request.path == request.path
assert verify_tree(tmp)[1] == []
found = scan_for_secrets(b'{"key": "sk-proj-' + b"a" * 40 + b'"}')
assert isinstance(found[0], Finding)
assert isinstance(SecretFound("c.jsonl:1: an API key"), CassetteError) and FORMAT
real = tmp / "real-claude"
real.write_text("#!/bin/sh\\n")
real.chmod(0o755)
assert install_cli_recorder("claude", real, tmp / "rec.jsonl", bin_dir=tmp / "rec").exists()
run = Interaction(
    id="i-1", wire="claude-cli",
    request=RecordedRequest(method="EXEC", path="claude", body={"argv": ["-p", "hi"], "cwd": "/",
                                                                "stdin": []}),
    response=RecordedResponse(status=0, frames=[Frame(t=0.1, data='{"type":"result"}')]),
)
replayed = install_cli_replay("claude", Cassette(interactions=[run]), bin_dir=tmp / "replay")
assert isinstance(replayed, ReplayedCli)
""",
    "adapters (with their extras installed)": """
from claude_agent_sdk import ClaudeAgentOptions
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from stuntset import AgentProvider, install_cli, scenarios
from stuntset.providers import ClaudeCodeProvider, CodexProvider, PydanticAIProvider
claude = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp / "claude")
codex = install_cli("codex", scenarios.build("happy_path"), bin_dir=tmp / "codex")
adapters = [
    ClaudeCodeProvider(ClaudeAgentOptions(cli_path=claude.path)),
    CodexProvider(str(codex.path)),
    PydanticAIProvider(Agent(TestModel())),
]
assert all(isinstance(adapter, AgentProvider) for adapter in adapters)
from stuntset.providers.codex import CodexRun, crash_of, turn_crash
assert isinstance(adapters[1].start("hello"), CodexRun)  # not started until iterated
assert crash_of(FileNotFoundError("no codex"))[0] == "spawn_failed"
assert turn_crash({"codexErrorInfo": {"x": {"httpStatusCode": 429}}})[0] == "rate_limited"
""",
    "checks for your own agent": """
import anyio, httpx2, sys
from stuntset.checks import (
    CACHE_FIELDS, CommandResult, DeclaredTool, ModelRequest, PrefixDivergence, PrefixReport,
    ReceivedCall, SettleGate, TempTracker, ToolCalls, ToolStep, TrajectoryResult,
    WorkspaceChanges, WorkspaceSnapshot, assert_prefix_stable, assert_tool, assert_trajectory,
    declared_tools, find_prefix_divergence, first_user_message, match_trajectory,
    model_requests, trajectory_of, verify_command, within,
)
from stuntset import drive, scenarios
from stuntset.doubles.model import ModelDouble, ModelTransport
from stuntset.providers import ScriptedProvider
from stuntset.script import Script, Text
tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
double = ModelDouble(Script.of([Text("one")], [Text("two")]))
history = [{"role": "user", "content": "hi"}]
with httpx2.Client(transport=ModelTransport(double)) as client:
    for _ in range(2):
        body = {"model": "m", "messages": history, "tools": [tool]}
        reply = client.post("http://x/v1/chat/completions", json=body).json()
        history = [*history, reply["choices"][0]["message"], {"role": "user", "content": "more"}]
report = assert_prefix_stable(double)
assert isinstance(report, PrefixReport) and report.requests == 2
assert find_prefix_divergence(double).divergence is None
requests = model_requests(double)
assert PrefixDivergence(before=requests[0], after=requests[1], findings=[]).findings == []
assert CACHE_FIELDS
assert isinstance(requests[0], ModelRequest) and first_user_message(requests[0])
assert isinstance(declared_tools(double)[0][1]["get_weather"], DeclaredTool)
assert assert_tool(double, "get_weather", description="Weather.").name == "get_weather"
calls = ToolCalls()
def get_weather(city: str) -> str:
    return f"sunny in {city}"
calls.record(get_weather)(city="Paris")
assert isinstance(assert_tool(calls, "get_weather", arguments={"city": "Paris"}), ReceivedCall)
events = anyio.run(lambda: drive(ScriptedProvider(scenarios.build("tool_use")).start("go")))
steps = trajectory_of(events)
assert assert_trajectory(events, [ToolStep(s.name) for s in steps], args="ignore") == steps
assert isinstance(match_trajectory(events, []), TrajectoryResult)
(tmp / "a.txt").write_text("a")
snapshot = WorkspaceSnapshot.take(tmp)
assert isinstance(snapshot, WorkspaceSnapshot)
(tmp / "b.txt").write_text("b")
assert isinstance(snapshot.assert_changes(added=["b.txt"]), WorkspaceChanges)
done = verify_command([sys.executable, "-c", "print('ok')"], stdout_contains="ok")
assert isinstance(done, CommandResult)
gate = SettleGate("tools")
async def bounded():
    async with within(5, what="the run", gate=gate):
        with gate.hold("tool call t1"):
            pass
anyio.run(bounded)
tracker = TempTracker(tmp / "tmp")
assert tracker.close() == []
from stuntset.checks import InstalledPackage, InstalledPackageError, install_package
try:
    install_package(tmp / "no-project")
except ValueError as refused:
    assert "no pyproject.toml" in str(refused)
package = InstalledPackage(tmp, "p", tmp / "p.whl", tmp / "venv", tmp)
assert package.python == tmp / "venv" / "bin" / "python"
assert issubclass(InstalledPackageError, AssertionError)
InstalledPackageError("x")
from stuntset.checks import Leak, LeakSnapshot, ResourceLeak, check_no_leaks
with check_no_leaks(kinds=["temp_dirs"]):
    pass
snapshot = LeakSnapshot.take(kinds=["temp_dirs"])
assert isinstance(snapshot, LeakSnapshot)
assert snapshot.leaks() == [] and str(Leak("tasks", "a task")) == "a task"
assert issubclass(ResourceLeak, AssertionError)
ResourceLeak("x")
from stuntset.checks import (
    RESILIENCE_RULES, ResilienceFailure, ResilienceJudge, Verdict, check_resilience,
    resilience_verdicts,
)
from stuntset.script import RateLimit, Turn
double = ModelDouble(Script.of(Turn(steps=(RateLimit(retry_after_ms=1000),)), [Text("ok")]))
with httpx2.Client(transport=ModelTransport(double)) as client:
    for _ in range(2):
        client.post("http://x/v1/chat/completions", json={"model": "m", "messages": history})
assert [v.rule for v in resilience_verdicts(double)] == ["retry_after_ignored"]
assert isinstance(resilience_verdicts(double)[0], Verdict) and "no_backoff" in RESILIENCE_RULES
try:
    check_resilience(double)
except ResilienceFailure as failure:
    assert failure.verdicts and issubclass(ResilienceFailure, AssertionError)
assert ResilienceFailure("x", verdicts=[]).verdicts == []
judge = ResilienceJudge([double], ignore=["retry_after_ignored"])
judge.check()
assert judge.verdicts() == []
""",
    "checks": """
from stuntset.checks import (
    CONFORMANCE_INVARIANTS, DEFAULT_SETTINGS, ConformanceReport, acheck_provider_conformance,
    check_event_log, check_provider_conformance, conformance_cases, conformance_test,
)
import anyio
from stuntset.log import MemoryEventLog
from stuntset.providers import ScriptedProvider
check_event_log(MemoryEventLog, stateful=False)
report = check_provider_conformance(ScriptedProvider, scenarios=["happy_path"])
assert isinstance(report, ConformanceReport)
async def main():
    return await acheck_provider_conformance(ScriptedProvider, scenarios=["happy_path"])
assert anyio.run(main).provider == report.provider
assert conformance_cases(scenarios=["happy_path"])
assert callable(conformance_test(scenarios=["happy_path"]))
assert "contract" in CONFORMANCE_INVARIANTS and DEFAULT_SETTINGS.max_examples
from stuntset.checks import HOST_TIMEOUT_INVARIANTS, acheck_host_timeouts, check_host_timeouts
from stuntset.runtime import SessionService, SessionStore
def make_host(providers):
    return SessionService(log=MemoryEventLog(), store=SessionStore(":memory:"),
                          providers=providers, turn_timeout=0.01, cancel_grace=0.01)
check_host_timeouts(make_host, timeout=5)
anyio.run(lambda: acheck_host_timeouts(make_host, timeout=5))
assert "timeout-ends-run" in HOST_TIMEOUT_INVARIANTS
import tempfile
from stuntset.checks import CONTINUATION_INVARIANTS, acheck_continuation, check_continuation
from stuntset.log import SqliteEventLog
class Owning(SessionService):
    def __init__(self, providers, directory):
        db = directory / "host.db"
        super().__init__(log=SqliteEventLog(db), store=SessionStore(db), providers=providers)
    def close(self):
        self.store.close()
        self.log.close()
check_continuation(Owning)
with tempfile.TemporaryDirectory() as folder:
    anyio.run(lambda: acheck_continuation(Owning, directory=__import__("pathlib").Path(folder)))
assert "thread-kept" in CONTINUATION_INVARIANTS
""",
    "evals": """
import anyio
from pathlib import Path
from stuntset.checks import ToolStep
from stuntset.evals import (
    TARGETS, Action, Behaviour, EvalResult, EvalRunner, EvalSpec, Expect, Grade, Observation,
    RunResult, Skill, Step, Workdir, actions_of, arun_eval, assert_pass_rate, binary_for, grade,
    load_eval, loads_eval, make_target, render_html, to_json, wilson_interval, write_html,
    write_json,
)
(tmp / "e.toml").write_text(
    'prompt = "p"\\n[[behaviour]]\\nsteps = [{ run = "ls" }, { say = "done" }]\\n'
    '[expect]\\ncommands = ["ls"]\\n'
)
spec = load_eval(tmp / "e.toml")
assert isinstance(spec, EvalSpec)
assert loads_eval('prompt = "q"\\n[expect]\\nsandbox = true').prompts == ("q",)
assert isinstance(spec.behaviours[0], Behaviour) and isinstance(spec.behaviours[0].steps[0], Step)
assert isinstance(spec.expect, Expect) and Skill("s", "d", "i").markdown().startswith("---")
result = anyio.run(lambda: arun_eval(spec, make_target("scripted"), runs=2))
assert isinstance(result, EvalResult) and isinstance(result.runs[0], RunResult)
assert_pass_rate(result, 1.0)
assert EvalRunner(tmp)("e.toml", runs=1).passed == 1
assert wilson_interval(2, 2)[1] == 1.0 and "scripted" in TARGETS
write_json(tmp / "r.json", [result], seed=0); write_html(tmp / "r.html", [result], seed=0)
assert to_json([result], seed=0)["results"][0]["passed"] == 2 and "<table>" in render_html([result], seed=0)
obs = Observation(steps=[ToolStep("Bash", {"command": "ls"})], sessions=["s"],
                  workspace=Path(tmp), outside=Path(tmp) / "out")
assert isinstance(grade(spec.expect, obs)[0], Grade) and isinstance(actions_of(obs.steps)[0], Action)
assert isinstance(Workdir(tmp), Workdir) and binary_for("claude").name == "claude"
""",
    "drift": """
from stuntset.drift import (
    ALLOWLIST, Allowed, Difference, DriftCell, DriftReport, drift, first_difference,
    load_allowlist, normalize,
)
from stuntset.events import RunCompleted, RunKilled
real = normalize([RunCompleted(run_id="r", ts=0)])
difference = first_difference(real, normalize([RunKilled(run_id="r", ts=0)]))
assert isinstance(difference, Difference) and difference.field == "step"
assert all(entry.reason.startswith("race:") for entry in load_allowlist(ALLOWLIST))
completed, killed = ["run.completed stop_reason='end_turn'"], ["run.killed"]
allowed = Allowed("codex", "stuck", 0, "step", completed, killed, "race: y")
assert allowed.covers("codex", "stuck", difference)
version = tmp / "codex"  # a stand-in that only says its version: no scenario is run
version.write_text("#!/bin/sh\\necho codex-cli 9.9.9\\n")
version.chmod(0o755)
report = drift(["codex"], [], codex_bin=version)
assert isinstance(report, DriftReport) and not report.failed
assert report.binaries == {"codex": f"{version} (codex-cli 9.9.9)"}
assert "`happy_path`" in DriftReport([DriftCell("happy_path", "codex", "same")]).markdown()
""",
    "console and browser tier": """
from pathlib import Path
from stuntset.console import ConsoleSources, console_app, daemon_console, with_console
from stuntset.browser import (
    LAUNCH_ARGS, PageSnapshot, SnapshotFiles, WebSocketGate, find_chromium, missing_reason,
)
from stuntset.doubles.model import ModelDouble
from stuntset.doubles.model.app import ModelApp
app = console_app(ConsoleSources(cassettes=tmp))
assert callable(daemon_console(cassettes=tmp)) and app.routes
double = ModelDouble()
assert callable(with_console(ModelApp(double), double, port=8080, token="t"))
files = SnapshotFiles(tmp / "snapshots", "test_page", ci=False)
assert files.check("main", "- heading") == "recorded"
class Page:  # what the gate and the snapshot use of a Playwright page
    routes = []
    def route_web_socket(self, url, handler):
        self.routes.append(url)
gate = WebSocketGate(Page())
assert Page.routes[0].match("ws://127.0.0.1:1/ws?token=t") and gate.forwarded == 0
assert PageSnapshot(Page(), files, tmp / "failures").selector == "main"
found, reason = find_chromium(), missing_reason()
assert "--headless" in LAUNCH_ARGS and (reason is None or "Chromium" in reason or "Playwright" in reason)
assert found is None or Path(found).name
""",
}


def exercised(snippet: str, namespace: dict[str, Any]) -> set[int]:
    """The objects the snippet calls (``f(...)``), or checks with ``isinstance``/``issubclass``."""
    found: set[int] = set()
    for node in ast.walk(ast.parse(snippet)):
        if not isinstance(node, ast.Call):
            continue
        targets = [node.func]
        if isinstance(node.func, ast.Name) and node.func.id in {"isinstance", "issubclass"}:
            targets = [node.args[1]]
        for target in targets:
            if isinstance(target, ast.Name | ast.Attribute):
                try:
                    found.add(id(eval(ast.unparse(target), namespace)))
                except Exception:  # a method of a local object: not a public name
                    continue
    return found


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory: pytest.TempPathFactory) -> set[int]:
    from stuntset.seams import deterministic

    seen: set[int] = set()
    for title, snippet in EXAMPLES.items():
        namespace: dict[str, Any] = {"tmp": tmp_path_factory.mktemp("example")}
        with deterministic():
            exec(compile(snippet, f"<example: {title}>", "exec"), namespace)
        seen |= exercised(snippet, namespace)
    return seen


@pytest.mark.parametrize("module", list(KINDS))
def test_every_function_and_class_is_called_in_an_example(
    module: str, examples_run: set[int]
) -> None:
    loaded = importlib.import_module(module)
    # protocols are types to implement, not to call: they are only kind-checked
    callables = [n for n, k in declared(module).items() if k in {"function", "class", "exception"}]
    missing = [name for name in callables if id(getattr(loaded, name)) not in examples_run]
    assert missing == []


def test_the_example_check_sees_only_what_is_called() -> None:
    namespace = {"f": len, "g": abs, "C": int}
    assert exercised("f([1])\ng\nisinstance(1, C)", namespace) == {id(len), id(int)}


# --- one declaration: the TYPE_CHECKING imports, the lazy tables and __all__ agree -----------


def _import_statements(init: Path, package: str) -> dict[str, tuple[str, str, bool]]:
    """``{public name: (module, attribute, lazy)}`` for every name the package's ``__init__``
    binds with an import: at module level (eager) or under ``if TYPE_CHECKING:`` (lazy, what
    a type checker reads in place of the ``__getattr__``)."""
    tree = ast.parse(init.read_text("utf-8"))
    found: dict[str, tuple[str, str, bool]] = {}
    for node in tree.body:
        lazy = isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for statement in node.body if isinstance(node, ast.If) and lazy else [node]:
            if isinstance(statement, ast.ImportFrom) and statement.module not in {
                "typing",
                "__future__",
            }:
                for alias in statement.names:
                    found[alias.asname or alias.name] = (str(statement.module), alias.name, lazy)
    return found


def _promised(module: str, attribute: str, package: str) -> object:
    """The object an ``from module import attribute`` statement promises."""
    if module == package:  # ``from stuntset import events``: the submodule
        return importlib.import_module(f"{module}.{attribute}")
    return getattr(importlib.import_module(module), attribute)


def declaration_breaks(package: str) -> list[str]:
    """Where a lazily exporting package's public names disagree with its imports: a lazy
    name missing from ``__all__`` or from the lazy lookup, a public name no import declares,
    or a name that resolves to another object than its import promises (``stub`` the module
    where the function is meant)."""
    loaded = importlib.import_module(package)
    init = Path(str(loaded.__file__))
    statements = _import_statements(init, package)
    public = set(loaded.__all__)
    breaks = [
        f"{package}.{name}: public but no import declares it"
        for name in sorted(public - set(statements))
    ]
    for name, (module, attribute, lazy) in sorted(statements.items()):
        if name not in public:
            if lazy:
                breaks.append(f"{package}.{name}: imported under TYPE_CHECKING but not in __all__")
            continue
        try:
            value = getattr(loaded, name)
        except AttributeError:
            breaks.append(f"{package}.{name}: declared, but the lazy lookup does not know it")
            continue
        promised = _promised(module, attribute, package)
        if value is not promised:
            breaks.append(
                f"{package}.{name}: resolves to {value!r}, but its import promises {promised!r}"
            )
    return breaks


def lazy_packages() -> list[str]:
    """Every package of stuntset whose ``__init__`` looks names up lazily (``__getattr__``)."""
    root = Path(stuntset.__file__).parent
    found = []
    for init in sorted(root.rglob("__init__.py")):
        if "def __getattr__" in init.read_text("utf-8"):
            found.append(".".join(init.parent.relative_to(root.parent).parts))
    return found


def test_the_lazy_packages_are_found() -> None:
    assert {"stuntset", "stuntset.script", "stuntset.providers", "stuntset.checks"} <= set(
        lazy_packages()
    )


@pytest.mark.parametrize("package", lazy_packages())
def test_each_public_name_is_what_its_import_declares(package: str) -> None:
    assert declaration_breaks(package) == []


def test_top_level_lazy_table_and_all_are_derived_from_one_declaration() -> None:
    """``_PUBLIC`` is the declaration; the imports a type checker reads name exactly its
    names (each resolving to what it promises: the test above)."""
    declared = {name for names in stuntset._PUBLIC.values() for name in names.split()}
    assert set(stuntset._LAZY) == declared
    assert stuntset.__all__ == sorted(declared)
    assert set(_import_statements(Path(stuntset.__file__), "stuntset")) == declared


def test_the_declaration_check_names_a_name_that_resolves_to_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "lazypkg"
    package.mkdir()
    (package / "tool.py").write_text("def tool():\n    return 1\n")
    (package / "extra.py").write_text("VALUE = 2\n")
    (package / "__init__.py").write_text(
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n"
        "    from lazypkg.tool import tool as tool\n"
        "    from lazypkg.extra import VALUE as VALUE\n"
        "    from lazypkg.extra import HIDDEN as HIDDEN\n"
        "def __getattr__(name):\n"
        "    import importlib\n"
        "    if name == 'tool':\n"
        "        return importlib.import_module('lazypkg.tool')  # the module, not the function\n"
        "    raise AttributeError(name)\n"
        "__all__ = ['tool', 'VALUE', 'missing']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    breaks = declaration_breaks("lazypkg")
    assert breaks[0] == "lazypkg.missing: public but no import declares it"
    assert breaks[1] == "lazypkg.HIDDEN: imported under TYPE_CHECKING but not in __all__"
    assert breaks[2] == "lazypkg.VALUE: declared, but the lazy lookup does not know it"
    assert breaks[3].startswith("lazypkg.tool: resolves to <module 'lazypkg.tool'")
    assert ", but its import promises <function tool at " in breaks[3]
    assert len(breaks) == 4


def test_the_reference_page_of_stuntset_lists_every_name_it_exports() -> None:
    """mkdocstrings renders a re-exported name only when the page names it: the page's
    members are ``stuntset.__all__`` without its modules, no more, no fewer."""
    page = (Path(__file__).parents[2] / "docs" / "reference" / "stuntset.md").read_text()
    listed = re.findall(r"^ {8}- (\w+)$", page, flags=re.M)
    exported = [
        name
        for name in stuntset.__all__
        if not isinstance(getattr(stuntset, name), types.ModuleType)
    ]
    assert listed == exported
