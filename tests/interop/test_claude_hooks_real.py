"""Claude Code hooks, the real binary against the fake: one hooks configuration (settings files
in the user, project and local places, ``settings=`` for ``--settings``, and a hook the SDK
registers) played by the bundled ``claude`` over the model double and by the fake ``claude``
playing the same script, both through claude-agent-sdk's ``query()``. Every hook appends the
JSON it was given to one log; the two logs, the hook messages the SDK yields, the hook
callback's inputs and what the hooks did (a denied tool, a timed-out hook's warning) must be
the same, up to ids and timings.

Hooks of one event run side by side in the real CLI, so their log lines and ``hook_response``
messages come in the order they finish: both sides are compared per event, as sets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

import stuntset
from stuntset.doubles.cli import install_cli
from stuntset.script import Match, Script, Text, ToolCall, ToolResult, Turn, Usage

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    ClaudeAgentOptions,
    HookEventMessage,
    HookMatcher,
    ResultMessage,
    SystemMessage,
    ToolResultBlock,
    UserMessage,
    query,
)

BUNDLED_CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.skipif(not BUNDLED_CLAUDE.exists(), reason="this wheel bundles no claude"),
    pytest.mark.real_time,
    pytest.mark.anyio,
]

PROMPT = "Run it, then write the notes"
SAFE = "Is this command safe?"


def model(notes: Path) -> Script:
    """The model: a Bash call, a Write call (a hook denies it), then the answer; and the
    answer of the prompt hook, which asks the model (the real CLI through the model double,
    the fake from this script), found by its prompt."""
    return Script.of(
        [
            ToolCall("Bash", {"command": "echo hi", "description": "say hi"}),
            ToolResult("hi"),
            ToolCall("Write", {"file_path": str(notes), "content": "x"}),
            ToolResult("written"),
            Text("done"),
            Usage(10, 5),
        ],
        Turn(
            steps=(Text('{"ok": true, "reason": "harmless"}'), Usage(3, 2)),
            match=Match(contains=SAFE),
        ),
    )


def log(label: str) -> dict[str, Any]:
    """A command hook appending ``label`` and its input to the log, in one write."""
    return {
        "type": "command",
        "command": f'printf \'%s %s\\n\' {label} "$(cat)" >> "$OUT/hooks.log"',
    }


def group(matcher: str | None, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"hooks": list(hooks)} if matcher is None else {"matcher": matcher, "hooks": list(hooks)}


DENY_WRITES = {"type": "command", "command": "echo no writes here >&2; exit 2"}
# a real timeout: the hook sleeps far longer than its half second (timeouts are seconds,
# fractions allowed); both CLIs kill it and warn that it gave no verdict
SLOW = {"type": "command", "command": "sleep 30", "timeout": 0.5}
USER = {"hooks": {"PreToolUse": [group("*", log("U_ALL")), group("Bash", log("DUP"))]}}
PROJECT = {
    "hooks": {
        "PreToolUse": [
            group("Bash", log("DUP")),  # identical to the user's: runs once
            group("Edit|Write", DENY_WRITES),
            group("mcp__.*", log("P_MCP")),
            group("B.*", log("P_REGEX")),
            group("Ba", log("P_PREFIX")),  # a name, not a prefix: never
            group("", log("P_EMPTY")),
            group("Bash", SLOW),
        ],
        "PostToolUse": [group("Bash", log("POST"))],
        "UserPromptSubmit": [group("Bash", log("UPS"))],  # matcher ignored
        "Stop": [group(None, log("STOP"))],
        "SessionStart": [group("startup", log("SS")), group("resume", log("SS_RESUME"))],
        "SessionEnd": [group(None, log("END"))],
    }
}
LOCAL = {
    "hooks": {"PreToolUse": [group("Bash", {"type": "prompt", "prompt": f"{SAFE} $ARGUMENTS"})]}
}


class Recorder(BaseHTTPRequestHandler):
    """Records each POST; answers an empty JSON object."""

    bodies: ClassVar[list[Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hook_server() -> Iterator[tuple[str, list[Any]]]:
    bodies: ClassVar[list[Any]] = []
    handler = type("Handler", (Recorder,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", bodies
    server.shutdown()
    server.server_close()
    thread.join()


async def play(side: str, where: Path, url: str, script: Script) -> dict[str, Any]:
    """Run the configuration on one side; what came back, and what the hooks logged."""
    cwd, config = where / "cwd", where / "home" / ".claude"
    (cwd / ".claude").mkdir(parents=True)
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps(USER))
    (cwd / ".claude" / "settings.json").write_text(json.dumps(PROJECT))
    (cwd / ".claude" / "settings.local.json").write_text(json.dumps(LOCAL))
    flag = {"hooks": {"PreToolUse": [group("Bash", {"type": "http", "url": url})]}}
    env = {
        "HOME": str(where / "home"),
        "CLAUDE_CONFIG_DIR": str(config),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "OUT": str(where),
    }
    callbacks: list[dict[str, Any]] = []

    async def sdk_hook(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        callbacks.append(data)
        return {}

    def options(cli_path: Path, extra_env: dict[str, str]) -> ClaudeAgentOptions:
        hooks: Any = {"PreToolUse": [HookMatcher(matcher="Bash|Write", hooks=[sdk_hook])]}
        return ClaudeAgentOptions(
            cli_path=str(cli_path),
            cwd=str(cwd),
            env={**env, **extra_env},
            model="claude-sonnet-4-5",
            settings=json.dumps(flag),
            allowed_tools=["Bash"],
            include_hook_events=True,
            hooks=hooks,
        )

    async def run(opts: ClaudeAgentOptions) -> list[Any]:
        with anyio.fail_after(120):
            return [m async for m in query(prompt=PROMPT, options=opts)]

    if side == "real":
        with stuntset.serve(script) as stand_in:
            key = {"ANTHROPIC_BASE_URL": stand_in.url("anthropic"), "ANTHROPIC_API_KEY": "test"}
            messages = await run(options(BUNDLED_CLAUDE, key))
            stand_in.verify()
    else:
        cli = install_cli("claude", script, bin_dir=where / "bin")
        messages = await run(options(cli.path, {}))
        cli.assert_all_used()
    lines = (where / "hooks.log").read_text().splitlines()
    logged = [(line.split(" ", 1)[0], json.loads(line.split(" ", 1)[1])) for line in lines]
    return {"messages": messages, "logged": logged, "callbacks": callbacks, "where": where}


class Ids:
    """Maps a run's ids to stable names, checking each id's shape where it is first seen."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.names: dict[str, str] = {}

    def name(self, kind: str, value: str) -> str:
        """``<kind n>``: the n-th distinct id of that kind."""
        if value not in self.names:
            count = sum(name.startswith(f"<{kind} ") for name in self.names.values())
            self.names[value] = f"<{kind} {count}>"
        return self.names[value]

    def hook_input(self, data: dict[str, Any]) -> dict[str, Any]:
        """A hook's input with its ids named and its timings checked, then dropped."""
        data = dict(data)
        session = data["session_id"]
        data["session_id"] = self.name("session", session)
        config = self.where / "home" / ".claude"
        project = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(self.where))
        assert data["transcript_path"] == f"{config}/projects/{project}-cwd/{session}.jsonl"
        assert data.pop("cwd") == str(self.where / "cwd")
        data["transcript_path"] = "<transcript>"
        if "prompt_id" in data:
            data["prompt_id"] = self.name("prompt", data["prompt_id"])
        if "tool_use_id" in data:
            data["tool_use_id"] = self.name("tool", data["tool_use_id"])
        if data["hook_event_name"] == "PostToolUse":
            # the tool's own output (the real Bash's, the script's) and how long it took
            assert isinstance(data.pop("duration_ms"), int)
            assert data.pop("tool_response")
        return data


def by_event(items: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, list[str]]]:
    """Consecutive items of one event occurrence (event, tool call) as one sorted group."""
    groups: list[tuple[str, list[str]]] = []
    last = None
    for label, data in items:
        key = (data["hook_event_name"], data.get("tool_use_id"))
        if key != last:
            groups.append((data["hook_event_name"], []))
            last = key
        groups[-1][1].append(label)
    return [(event, sorted(labels)) for event, labels in groups]


def hook_messages(messages: list[Any]) -> list[tuple[Any, ...]]:
    """The hook messages (``hook_progress`` only shows on the real side when a hook runs
    long; it is timing, not shape), as a sorted list."""
    found = []
    for m in messages:
        if isinstance(m, HookEventMessage) and m.subtype != "hook_progress":
            d = m.data
            found.append(
                (m.subtype, d["hook_name"], d.get("exit_code"), d.get("outcome"), d.get("stderr"))
            )
        elif isinstance(m, SystemMessage) and m.subtype == "informational":
            verdict = m.data.get("hook_no_verdict", {})
            found.append(("informational", m.data["content"], verdict.get("timed_out")))
    return sorted(found, key=repr)


@pytest.mark.real_cli
async def test_the_same_hooks_fire_the_same_way_on_the_real_claude_and_the_fake(
    tmp_path: Path, hook_server: tuple[str, list[Any]]
) -> None:
    url, posted = hook_server
    script = model(tmp_path / "notes.txt")
    real = await play("real", tmp_path / "real", url, script)
    real_posts = list(posted)
    posted.clear()
    fake = await play("fake", tmp_path / "fake", url, script)
    fake_posts = list(posted)

    sides = {"real": real, "fake": fake}
    seen: dict[str, Any] = {}
    for side, played in sides.items():
        ids = Ids(played["where"])
        logged = [(label, ids.hook_input(data)) for label, data in played["logged"]]
        callbacks = [ids.hook_input(data) for data in played["callbacks"]]
        posts = [ids.hook_input(data) for data in (real_posts if side == "real" else fake_posts)]
        results = [
            (b.content, b.is_error)
            for m in played["messages"]
            if isinstance(m, UserMessage) and isinstance(m.content, list)
            for b in m.content
            if isinstance(b, ToolResultBlock)
        ]
        final = played["messages"][-1]
        assert isinstance(final, ResultMessage)
        seen[side] = {
            "order": by_event(played["logged"]),
            "inputs": sorted(logged, key=repr),
            "callbacks": callbacks,
            "posts": posts,
            "hook_messages": hook_messages(played["messages"]),
            "write_result": results[1],
            "result": (final.subtype, final.is_error, final.result),
            "denied": [d["tool_name"] for d in final.permission_denials or []],
        }

    # not vacuous: what the configuration does, on the real binary
    assert seen["real"]["order"] == [
        ("SessionStart", ["SS"]),
        ("UserPromptSubmit", ["UPS"]),
        ("PreToolUse", ["DUP", "P_EMPTY", "P_REGEX", "U_ALL"]),
        ("PostToolUse", ["POST"]),
        ("PreToolUse", ["P_EMPTY", "U_ALL"]),
        ("Stop", ["STOP"]),
        ("SessionEnd", ["END"]),
    ]
    assert seen["real"]["write_result"] == (
        "PreToolUse:Write hook error: [echo no writes here >&2; exit 2]: no writes here\n",
        True,
    )
    assert (
        "informational",
        "A hook didn't answer in time, so it didn't check this action.",
        True,
    ) in seen["real"]["hook_messages"]
    assert [p["tool_name"] for p in seen["real"]["posts"]] == ["Bash"]
    assert seen["real"]["result"] == ("success", False, "done")
    # and the fake does the same
    for key in seen["real"]:
        assert seen["fake"][key] == seen["real"][key], key


# --- what a hook's answer does -------------------------------------------------------------

BASH = ToolCall("Bash", {"command": "echo hi", "description": "say hi"})
#: name → (the hooks settings, the script): each a way a hook blocks or lets an action through
SHAPES: dict[str, tuple[dict[str, Any], Script]] = {
    # a prompt hook's "ok": false denies the tool and ends the turn (terminal "hook_stopped")
    "prompt_denies": (
        {"PreToolUse": [group("Bash", {"type": "prompt", "prompt": "Safe? $ARGUMENTS"})]},
        Script.of(
            [BASH, ToolResult("hi"), Text("never said")],
            [Text('{"ok": false, "reason": "not today"}'), Usage(3, 2)],
        ),
    ),
    # with continueOnBlock the model is told and goes on
    "prompt_denies_and_continues": (
        {
            "PreToolUse": [
                group(
                    "Bash",
                    {"type": "prompt", "prompt": "Safe? $ARGUMENTS", "continueOnBlock": True},
                )
            ]
        },
        Script.of(
            [BASH, ToolResult("hi"), Text("then I stop")],
            [Text('{"ok": false, "reason": "not today"}')],
        ),
    ),
    # an agent hook answers through its StructuredOutput tool
    "agent_denies": (
        {"PreToolUse": [group("Bash", {"type": "agent", "prompt": "Verify: $ARGUMENTS"})]},
        Script.of(
            [BASH, ToolResult("hi"), Text("then I stop")],
            [ToolCall("StructuredOutput", {"ok": False, "reason": "agent says no"})],
        ),
    ),
    # a prompt hook's answer that is not JSON: no verdict, the tool runs
    "prompt_says_nothing_usable": (
        {"PreToolUse": [group("Bash", {"type": "prompt", "prompt": "Safe? $ARGUMENTS"})]},
        Script.of([BASH, ToolResult("hi"), Text("ran")], [Text("sure, why not")]),
    ),
    # a prompt hook's "ok": false on UserPromptSubmit stops the prompt (no model request)
    "prompt_stops_the_prompt": (
        {"UserPromptSubmit": [group(None, {"type": "prompt", "prompt": "Allowed? $ARGUMENTS"})]},
        Script.of([Text('{"ok": false, "reason": "no prompts today"}')]),
    ),
    # a command's JSON "decision": "block" on UserPromptSubmit blocks it
    "json_blocks_the_prompt": (
        {
            "UserPromptSubmit": [
                group(
                    None,
                    {
                        "type": "command",
                        "command": 'echo \'{"decision": "block", "reason": "r1"}\'',
                    },
                )
            ]
        },
        Script.of([Text("never asked")], [Text("spare")]),
    ),
    # Stop: a prompt hook's "ok": false makes the model go on, once
    "prompt_keeps_the_model_going": (
        {"Stop": [group(None, {"type": "prompt", "prompt": "Done? $ARGUMENTS"})]},
        Script.of(
            [Text("first")],
            [Text('{"ok": false, "reason": "not done yet"}')],
            [Text("second")],
            [Text('{"ok": true, "reason": "done"}')],
        ),
    ),
    # PostToolUse: "continue": false ends the turn after the tool's result
    "post_tool_stops": (
        {
            "PostToolUse": [
                group("Bash", {"type": "command", "command": "echo '{\"continue\": false}'"})
            ]
        },
        Script.of([BASH, ToolResult("hi"), Text("never said")]),
    ),
}
#: Shapes whose script the real CLI leaves partly unplayed (the turn ended early).
PARTLY_PLAYED = {"prompt_denies", "post_tool_stops", "json_blocks_the_prompt"}


def shown(messages: list[Any]) -> list[tuple[Any, ...]]:
    """What the SDK yielded, without ids, timings and the init message's inventory."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            if m.subtype in ("init", "hook_progress"):
                continue
            data = m.data
            out.append(
                (
                    "system",
                    m.subtype,
                    data.get("hook_name"),
                    data.get("outcome"),
                    data.get("content"),
                    json.dumps(data.get("prompt_submit_outcome")),
                    json.dumps(data.get("hook_no_verdict", {}).get("timed_out")),
                )
            )
        elif isinstance(m, UserMessage):
            content = m.content
            if isinstance(content, list):
                content = [
                    (b.content, b.is_error) if isinstance(b, ToolResultBlock) else repr(b)
                    for b in content
                ]
            out.append(("user", repr(content)))
        elif isinstance(m, ResultMessage):
            out.append(
                (
                    "result",
                    m.subtype,
                    m.is_error,
                    m.result,
                    m.num_turns,
                    m.stop_reason,
                    m.terminal_reason,
                    [d["tool_name"] for d in m.permission_denials or []],
                )
            )
        else:  # an assistant message: its blocks without their ids
            blocks = getattr(m, "content", None) or []
            out.append(
                (
                    type(m).__name__,
                    repr([(b.name, b.input) if hasattr(b, "name") else b for b in blocks]),
                )
            )
    return out


@pytest.mark.real_cli
@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_what_a_hook_answer_does_is_the_same_on_the_real_claude_and_the_fake(
    tmp_path: Path, shape: str
) -> None:
    hooks, script = SHAPES[shape]
    played = {}
    for side in ("real", "fake"):
        where = tmp_path / side
        cwd = where / "cwd"
        (cwd / ".claude").mkdir(parents=True)
        (cwd / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        env = {
            "HOME": str(where / "home"),
            "CLAUDE_CONFIG_DIR": str(where / "home" / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        common: dict[str, Any] = {
            "cwd": str(cwd),
            "model": "claude-sonnet-4-5",
            "allowed_tools": ["Bash"],
        }
        with anyio.fail_after(120):
            if side == "real":
                with stuntset.serve(script) as stand_in:
                    env.update(
                        ANTHROPIC_BASE_URL=stand_in.url("anthropic"), ANTHROPIC_API_KEY="test"
                    )
                    opts = ClaudeAgentOptions(cli_path=str(BUNDLED_CLAUDE), env=env, **common)
                    messages = [m async for m in query(prompt="go", options=opts)]
                    stand_in.verify(allow_unused_turns=shape in PARTLY_PLAYED)
            else:
                cli = install_cli("claude", script, bin_dir=where / "bin")
                opts = ClaudeAgentOptions(cli_path=str(cli.path), env=env, **common)
                messages = [m async for m in query(prompt="go", options=opts)]
                if shape not in PARTLY_PLAYED:
                    cli.assert_all_used()
        played[side] = shown(messages)
    assert played["fake"] == played["real"]
