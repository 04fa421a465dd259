"""A recorded CLI run turns back into the script that produced it: each catalog scenario is
played by the fake ``claude`` / ``codex`` to its real client through the recording tee, and
``to-script`` reads the transcript back — same text, tool calls, results, approvals, questions
and usage, turn by turn. The script it gives plays again on the fakes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from stuntset import scenarios
from stuntset.cassettes import (
    Cassette,
    CassetteError,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    load_cassette,
)
from stuntset.cassettes.cli_record import install_cli_recorder
from stuntset.cassettes.cli_script import cli_turns
from stuntset.cassettes.to_script import dumps_script_toml, script_from_cassette
from stuntset.doubles.cli import install_cli
from stuntset.doubles.cli._neutral import native_tools
from stuntset.script import (
    ApprovalRequest,
    Exit,
    HttpError,
    MalformedJson,
    Script,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    kind_of,
    loads_script,
)

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")
openai_codex = pytest.importorskip("openai_codex")

from openai_codex import CodexConfig  # noqa: E402
from openai_codex.client import CodexClient  # noqa: E402

#: What a transcript keeps of a step: its kind and content (not ids, chunking or signatures,
#: which the CLI makes up or does not show).
DROPPED = {
    "kind",
    "id",
    "tool_call_id",
    "chunks",
    "chunk_size",
    "interval",
    "fragments",
    "signature",
}


def essence(script: Script) -> list[list[tuple[str, Any]]]:
    out = []
    for turn in script.turns:
        steps = []
        for step in turn.steps:
            if isinstance(step, ApprovalRequest):  # its tool and input: the ones it asks about
                steps.append(("approval_request", None))
                continue
            fields = {k: v for k, v in msgspec.to_builtins(step).items() if k not in DROPPED}
            steps.append((kind_of(step), fields))
        out.append(steps)
    return out


def prompts(script: Script) -> list[str]:
    return [f"prompt {n}" for n in range(len(script.turns))]


async def _claude(cli_path: Path, script: Script) -> None:
    async def allow(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        if name == "AskUserQuestion":
            answers = {q["question"]: "yes" for q in tool_input["questions"]}
            return claude_agent_sdk.PermissionResultAllow(
                updated_input={**tool_input, "answers": answers}
            )
        return claude_agent_sdk.PermissionResultAllow()

    options = claude_agent_sdk.ClaudeAgentOptions(cli_path=str(cli_path), can_use_tool=allow)
    async with claude_agent_sdk.ClaudeSDKClient(options) as client:
        for prompt in prompts(script):
            await client.query(prompt)
            [m async for m in client.receive_response()]


def drive_claude(cli_path: Path, script: Script) -> None:
    anyio.run(_claude, cli_path, script)


def drive_codex_exec(cli_path: Path, script: Script, tmp_path: Path) -> None:
    subprocess.run(
        [str(cli_path), "exec", "--json", "-"],
        input=b"prompt 0",
        capture_output=True,
        env={"CODEX_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def drive_app_server(cli_path: Path, script: Script, tmp_path: Path) -> None:
    def answer(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        return {"answers": {}} if method.endswith("requestUserInput") else {"decision": "accept"}

    config = CodexConfig(
        codex_bin=str(cli_path), cwd=str(tmp_path), env={"CODEX_HOME": str(tmp_path / "home")}
    )
    client = CodexClient(config=config, approval_handler=answer)
    client.start()
    process = client._proc
    try:
        client.initialize()
        ask = {"approvalPolicy": "on-request", "approvalsReviewer": "user"}
        thread = client.thread_start(ask).thread.id
        # Plan mode: codex asks the user only there (in Default mode it refuses the question)
        plan = {"collaborationMode": {"mode": "plan", "settings": {"model": "gpt-5"}}}
        for prompt in prompts(script):
            client.wait_for_turn_completed(client.turn_start(thread, prompt, plan).turn.id)
    finally:
        client.close()
        if process is not None:  # the SDK leaves these two to the garbage collector
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            # nor does it wait for the process: the recorder writes its cassette as it ends
            process.wait(30)


def recorded(tmp_path: Path, name: str, script: Script, drive: Any) -> Cassette:
    real = install_cli(name, script, bin_dir=tmp_path / "real", time_scale=0)
    cassette = tmp_path / "run.jsonl"
    recorder = install_cli_recorder(name, real.path, cassette, bin_dir=tmp_path / "rec")
    drive(recorder, script)
    return load_cassette(cassette)


CONTENT = ["happy_path", "tool_use", "interleaved_streaming", "long_stream"]
ASKING = ["needs_approval", "input_request", "multi_turn"]


@pytest.mark.real_time
@pytest.mark.parametrize("scenario", CONTENT + ASKING)
def test_a_claude_run_reads_back_as_its_script(tmp_path: Path, scenario: str) -> None:
    script = scenarios.build(scenario)
    back = script_from_cassette(recorded(tmp_path, "claude", script, drive_claude))
    # the fake played the catalog's tools as claude's own (Read, Bash): so did the cassette
    assert essence(back) == essence(native_tools(script, "claude"))
    assert [turn.name for turn in back.turns][:1] == ["i-1.1"]


@pytest.mark.real_time
@pytest.mark.parametrize("scenario", CONTENT)
def test_a_codex_exec_run_reads_back_as_its_script(tmp_path: Path, scenario: str) -> None:
    script = scenarios.build(scenario)

    def drive(path: Path, played: Script) -> None:
        drive_codex_exec(path, played, tmp_path)

    back = script_from_cassette(recorded(tmp_path, "codex", script, drive))
    assert essence(back) == essence(native_tools(script, "codex"))


@pytest.mark.real_time
@pytest.mark.parametrize("scenario", CONTENT + ASKING)
def test_a_codex_app_server_session_reads_back_as_its_script(tmp_path: Path, scenario: str) -> None:
    script = scenarios.build(scenario)

    def drive(path: Path, played: Script) -> None:
        drive_app_server(path, played, tmp_path)

    back = script_from_cassette(recorded(tmp_path, "codex", script, drive))
    assert essence(back) == essence(native_tools(script, "codex"))


@pytest.mark.real_time
def test_the_script_plays_again_and_survives_toml(tmp_path: Path) -> None:
    script = scenarios.build("needs_approval")
    back = script_from_cassette(recorded(tmp_path, "claude", script, drive_claude))
    again = loads_script(dumps_script_toml(back))
    native = native_tools(script, "claude")
    assert essence(again) == essence(native)
    second = recorded(tmp_path / "again", "claude", again, drive_claude)
    assert essence(script_from_cassette(second)) == essence(native)


def _run(wire: str, frames: list[str], *, status: int = 0, argv: list[str] | None = None) -> Any:
    return Interaction(
        id="i-1",
        wire=wire,
        request=RecordedRequest(method="EXEC", path="x", body={"argv": argv or [], "stdin": []}),
        response=RecordedResponse(
            status=status,
            frames=[
                Frame(
                    t=0.0, data=f.removesuffix("<cut>"), event="partial" if "<cut>" in f else None
                )
                for f in frames
            ],
        ),
    )


def test_how_a_run_ended_becomes_the_fault_that_ends_its_turn() -> None:
    text = json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "a"}]}}
    )

    def turns(frames: list[str], status: int = 0, wire: str = "claude-cli") -> list[Any]:
        cassette = Cassette(interactions=[_run(wire, frames, status=status)])
        return [list(turn.steps) for turn in script_from_cassette(cassette).turns]

    assert turns([text], status=3) == [[Text("a"), Exit(code=3)]]
    # the CLI's own stdout broke (cli=True): a fake CLI replays it as recorded
    assert turns([text]) == [[Text("a"), StreamCut(clean=True, cli=True)]]
    assert turns([text, '{"type":"assi<cut>'], status=1) == [
        [Text("a"), StreamCut(clean=False, cli=True)]
    ]
    assert turns([text, "not json", text]) == [
        [Text("a"), MalformedJson("not json", cli=True)],
        [Text("a"), StreamCut(clean=True, cli=True)],
    ]
    failed = json.dumps({"type": "turn.failed", "error": {"message": "unexpected status 429"}})
    assert turns([failed], wire="codex-cli") == [[HttpError(429, message="unexpected status 429")]]
    interrupted = json.dumps(
        {"method": "turn/completed", "params": {"turn": {"status": "interrupted"}}}
    )
    app = Cassette(interactions=[_run("codex-cli", [interrupted], argv=["app-server"])])
    assert [list(t.steps) for t in script_from_cassette(app).turns] == [[Stall()]]
    used = {"tokenUsage": {"last": {"inputTokens": 4, "outputTokens": 1}}}
    failed_turn = {"turn": {"status": "failed", "error": {"message": "429 Too Many Requests"}}}
    lines = [
        json.dumps({"method": "thread/tokenUsage/updated", "params": used}),
        json.dumps({"method": "turn/completed", "params": failed_turn}),
    ]
    app = Cassette(interactions=[_run("codex-cli", lines, argv=["app-server"])])
    assert [list(t.steps) for t in script_from_cassette(app).turns] == [
        [Usage(4, 1), HttpError(429, message="429 Too Many Requests")]  # the fault last
    ]


def test_an_unknown_cli_transcript_is_refused_by_name() -> None:
    with pytest.raises(CassetteError, match="i-1: a gemini-cli transcript cannot be read"):
        script_from_cassette(Cassette(interactions=[_run("gemini-cli", [])]))


def test_claudes_running_cost_becomes_each_turns_share() -> None:
    def result(total: float) -> str:
        usage = {"input_tokens": 3, "output_tokens": 1}
        return json.dumps({"type": "result", "total_cost_usd": total, "usage": usage})

    cassette = Cassette(interactions=[_run("claude-cli", [result(0.006), result(0.012)])])
    costs = [turn.steps[-1] for turn in script_from_cassette(cassette).turns]
    assert costs == [Usage(3, 1, cost=0.006), Usage(3, 1, cost=0.006)]


def test_codex_items_of_every_tool_kind_read_back_as_calls_and_results() -> None:
    def item(event: str, **fields: Any) -> str:
        return json.dumps({"type": event, "item": fields})

    frames = [
        item("item.started", type="command_execution", id="c1", command="git status"),
        item(
            "item.completed",
            type="command_execution",
            id="c1",
            aggregated_output="clean",
            exit_code=0,
        ),
        # completed without a start: the call and its result together
        item(
            "item.completed",
            type="file_change",
            id="f1",
            status="failed",
            changes=[{"path": "a.py", "kind": {"type": "add"}}, {"path": "b.py", "kind": None}],
        ),
        item("item.completed", type="web_search", id="w1", query="stuntset"),
        item(
            "item.completed",
            type="todo_list",
            id="t1",
            items=[{"text": "plan", "completed": True}, {"text": "do"}],
        ),
        item(
            "item.completed",
            type="mcp_tool_call",
            id="m1",
            server="docs",
            tool="lookup",
            arguments={"q": 1},
            error={"message": "no such tool"},
        ),
        item(
            "item.completed",
            type="mcp_tool_call",
            id="m2",
            server="docs",
            tool="lookup",
            result={"content": [{"type": "text", "text": "found"}, {"type": "image"}]},
        ),
        item("item.completed", type="something_new", id="x1"),  # neither tool nor content
        json.dumps({"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}}),
    ]
    (turn,) = cli_turns(_run("codex-cli", frames))
    content = [{"type": "text", "text": "found"}, {"type": "image"}]  # not all text: kept whole
    assert list(turn.steps) == [
        ToolCall("exec_command", {"cmd": "git status"}, id="c1"),
        ToolResult("clean", tool_call_id="c1"),
        ToolCall(
            "apply_patch",
            {"changes": [{"path": "a.py", "kind": "add"}, {"path": "b.py", "kind": "update"}]},
            id="f1",
        ),
        ToolResult("", is_error=True, tool_call_id="f1"),
        ToolCall("web_search", {"query": "stuntset"}, id="w1"),
        ToolResult("", tool_call_id="w1"),
        ToolCall(
            "update_plan",
            {
                "plan": [
                    {"step": "plan", "status": "completed"},
                    {"step": "do", "status": "pending"},
                ]
            },
            id="t1",
        ),
        ToolResult("", tool_call_id="t1"),
        ToolCall("mcp__docs__lookup", {"q": 1}, id="m1"),
        ToolResult("no such tool", is_error=True, tool_call_id="m1"),
        ToolCall("mcp__docs__lookup", {}, id="m2"),
        ToolResult(content, tool_call_id="m2"),
        Usage(5, 2),
    ]


def test_claude_lines_that_are_not_steps_are_passed_over() -> None:
    def line(**message: Any) -> str:
        return json.dumps(message)

    ask = {
        "type": "control_request",
        "request_id": "r1",
        "request": {
            "subtype": "can_use_tool",
            "tool_name": "Bash",
            "input": {"command": "rm -rf /"},
            "tool_use_id": "t1",
        },
    }
    frames = [
        line(
            type="assistant",
            message={
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "rm -rf /"},
                    },
                    {"type": "redacted_thinking", "data": "…"},  # no step stands for it
                ]
            },
        ),
        line(type="control_request", request_id="r0", request={"subtype": "hook_callback"}),
        json.dumps(ask),
        line(
            type="user",
            message={
                "content": [
                    {"type": "text", "text": "a user block that is no tool result"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "denied",
                        "is_error": True,
                    },
                ]
            },
        ),
        line(type="result", is_error=True, api_error_status=529, result="Overloaded"),
    ]
    interaction = _run("claude-cli", frames)
    denial = {
        "type": "control_response",
        "response": {"request_id": "r1", "response": {"behavior": "deny"}},
    }
    interaction.request.body["stdin"] = [
        {"t": 0.0, "data": "not json"},  # passed over
        {"t": 0.1, "data": json.dumps(denial)},
    ]
    (turn,) = cli_turns(interaction)
    assert list(turn.steps) == [
        ToolCall("Bash", {"command": "rm -rf /"}, id="t1"),
        ApprovalRequest(tool="Bash", input={"command": "rm -rf /"}, tool_call_id="t1"),
        HttpError(529, message="Overloaded"),  # the denial's result: the fake makes it itself
    ]
