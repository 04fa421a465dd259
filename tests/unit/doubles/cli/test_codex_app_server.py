"""``codex app-server`` on the fake, spoken to raw (no SDK): the JSON-RPC framing and the
server's answers to bad input, as the real 0.163.0 server gives them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from stuntset import scenarios
from stuntset.doubles.cli import install_cli
from stuntset.doubles.cli._codex_app_server import KNOWN_METHODS
from stuntset.script import Script, Text

INITIALIZE = {
    "id": "1",
    "method": "initialize",
    "params": {
        "clientInfo": {"name": "probe", "title": "Probe", "version": "0.0.1"},
        "capabilities": {"experimentalApi": True},
    },
}


def talk(
    tmp_path: Path, lines: list[Any], script: Script | None = None, *args: str
) -> tuple[list[dict[str, Any]], str, int]:
    """Send ``lines`` (objects as JSON, strings as they are), close stdin, read everything."""
    cli = install_cli(
        "codex", script or scenarios.build("happy_path"), bin_dir=tmp_path / "bin", time_scale=0
    )
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    done = subprocess.run(
        [str(cli.path), *(args or ("app-server", "--listen", "stdio://"))],
        input=text,
        capture_output=True,
        text=True,
        timeout=10,
    )
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr, done.returncode


def test_handshake_and_a_turn(tmp_path: Path) -> None:
    out, _, code = talk(
        tmp_path,
        [
            INITIALIZE,
            {"method": "initialized"},
            {"id": "2", "method": "thread/start", "params": {"cwd": str(tmp_path)}},
        ],
    )
    assert code == 0
    assert out[0]["id"] == "1"
    assert out[0]["result"]["userAgent"].startswith("probe/0.163.0 (")
    assert out[1]["id"] == "2"
    thread = out[1]["result"]["thread"]
    assert (thread["cwd"], thread["status"], thread["cliVersion"]) == (
        str(tmp_path),
        {"type": "idle"},
        "0.163.0",
    )
    assert out[2]["method"] == "thread/started"
    assert "jsonrpc" not in out[0]


def test_turn_notifications_in_the_real_order(tmp_path: Path) -> None:
    start = {"id": "2", "method": "thread/start", "params": {}}
    out, _, _ = talk(tmp_path, [INITIALIZE, start])
    thread_id = out[1]["result"]["thread"]["id"]
    turn = {
        "id": "3",
        "method": "turn/start",
        "params": {"threadId": thread_id, "input": [{"type": "text", "text": "hi"}]},
    }
    out, _, _ = talk(tmp_path, [INITIALIZE, start, turn], Script.of([Text("a b")]))
    after = out[out.index(next(m for m in out if m.get("id") == "3")) :]
    assert after[0]["result"]["turn"]["status"] == "inProgress"
    methods = [m["method"] for m in after[1:]]
    assert methods == [
        "thread/status/changed",
        "turn/started",
        "item/started",
        "item/completed",
        "item/started",
        "item/agentMessage/delta",
        "item/agentMessage/delta",
        "item/completed",
        "thread/tokenUsage/updated",
        "thread/status/changed",
        "turn/completed",
    ]
    stamps = [m["emittedAtMs"] for m in after[1:]]
    assert stamps == sorted(stamps)
    assert after[-1]["params"]["turn"]["status"] == "completed"


def test_bad_input_gets_the_real_servers_answers(tmp_path: Path) -> None:
    out, stderr, code = talk(
        tmp_path,
        [
            {"id": "0", "method": "thread/start", "params": {}},
            INITIALIZE,
            {**INITIALIZE, "id": "1b"},
            "this is not json",
            "[1, 2]",
            {"id": "2", "method": "bogus/method", "params": {}},
            {"id": 3, "method": "thread/start"},
            {"id": "4", "method": "turn/start", "params": {"threadId": "x"}},
            {"id": "5", "method": "thread/resume", "params": {"threadId": "nope"}},
            {"id": "6", "method": "thread/fork", "params": {"threadId": "nope"}},
            {"id": "7", "result": {"decision": "accept"}},
        ],
    )
    assert code == 0
    errors = {m["id"]: m["error"] for m in out if "error" in m}
    assert errors["0"] == {"code": -32600, "message": "Not initialized"}
    assert errors["1b"] == {"code": -32600, "message": "Already initialized"}
    assert errors["2"]["code"] == -32600
    assert errors["2"]["message"].startswith(
        "Invalid request: unknown variant `bogus/method`, expected one of `initialize`, "
    )
    assert errors[3] == {"code": -32600, "message": "Invalid request: missing field `params`"}
    assert errors["4"] == {"code": -32600, "message": "Invalid request: missing field `input`"}
    assert errors["5"] == {"code": -32600, "message": "no rollout found for thread id nope"}
    assert errors["6"]["code"] == -32601
    assert stderr.count("Failed to deserialize JSONRPCMessage") == 2
    assert "Traceback" not in stderr


def test_known_methods_cover_what_the_sdk_calls() -> None:
    sdk_methods = {
        "initialize",
        "thread/start",
        "thread/resume",
        "thread/read",
        "thread/list",
        "thread/fork",
        "turn/start",
        "turn/interrupt",
        "turn/steer",
        "model/list",
        "account/read",
    }
    assert sdk_methods <= set(KNOWN_METHODS)


def test_model_list_and_account(tmp_path: Path) -> None:
    out, _, _ = talk(
        tmp_path,
        [
            INITIALIZE,
            {"id": "2", "method": "model/list", "params": {"includeHidden": False}},
            {"id": "3", "method": "account/read", "params": {}},
        ],
    )
    assert out[1]["result"]["data"][0]["isDefault"] is True
    assert out[2]["result"]["requiresOpenaiAuth"] is True


def test_app_server_command_line(tmp_path: Path) -> None:
    _, stderr, code = talk(tmp_path, [], None, "app-server", "--listen", "foo://x")
    assert code == 2
    assert "unsupported --listen URL `foo://x`" in stderr
    _, stderr, code = talk(tmp_path, [], None, "app-server", "--listen", "ws://127.0.0.1:1")
    assert code == 2
    assert "only --listen stdio:// is simulated" in stderr
    out, _, code = talk(tmp_path, [INITIALIZE], None, "--config", "model=o3", "app-server")
    assert (code, out[0]["id"]) == (0, "1")
