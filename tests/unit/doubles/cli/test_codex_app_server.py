"""``codex app-server`` on the fake, spoken to raw (no SDK): the JSON-RPC framing and the
server's answers to bad input, as the real 0.163.0 server gives them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.doubles.cli.codex._process.requests import KNOWN_METHODS
from stuntset.script import (
    ApprovalRequest,
    Exit,
    HttpError,
    InputRequest,
    RateLimit,
    RateLimitCredits,
    RateLimits,
    RateLimitWindow,
    Reasoning,
    Script,
    Stall,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

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
    return converse(cli, lines, *args)


def converse(
    cli: InstalledCli, lines: list[Any], *args: str
) -> tuple[list[dict[str, Any]], str, int]:
    """One invocation of an installed fake (its threads persist to the next), its
    ``CODEX_HOME`` an empty folder beside it (no machine's config.toml)."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    done = subprocess.run(
        [str(cli.path), *(args or ("app-server", "--listen", "stdio://"))],
        input=text,
        capture_output=True,
        text=True,
        timeout=10,
        env={**os.environ, "CODEX_HOME": str(cli.path.parent.parent / "codex-home")},
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
        "account/rateLimits/updated",
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]
    stamps = [m["emittedAtMs"] for m in after[1:]]
    assert stamps == sorted(stamps)
    assert after[-1]["params"]["turn"]["status"] == "completed"


def _closing(seen: list[dict[str, Any]]) -> list[str]:
    """The turn-closing notifications among ``seen``, in order."""
    wanted = (
        "thread/tokenUsage/updated",
        "account/rateLimits/updated",
        "thread/readState/changed",
        "thread/status/changed",
        "error",
        "turn/completed",
    )
    return [
        m["method"]
        for m in seen
        if m.get("method") in wanted
        and m.get("params", {}).get("status", {}).get("type") != "active"
    ]


def test_rate_limits_and_read_state_as_turns_end(tmp_path: Path) -> None:
    """As observed from the real codex-cli 0.163.0 app-server (against a Responses server that
    sends no rate-limit headers): after a model response's ``thread/tokenUsage/updated`` comes
    ``account/rateLimits/updated`` with ``limitId`` "codex" and every other field null (an
    interrupted turn's too); a failed turn leaves the thread in ``systemError``; every
    ended turn of a durable thread — completed, failed (after its ``error``) or interrupted —
    sends ``thread/readState/changed`` whose ``firstUnread`` stays the thread's first ended
    turn, also in a later process, with a new ``revision``; an ephemeral thread sends none."""
    script = Script.of(
        [RateLimit()], [Text("ok"), Usage(1, 1)], [Text("waiting"), Stall()], [Text("eph")]
    )
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    session = _Session(cli.path)
    session.request("1", "initialize", INITIALIZE["params"])
    thread_id = session.request("2", "thread/start", {})["result"]["thread"]["id"]
    for number in range(2):
        session.request(f"t{number}", "turn/start", _turn_start("", thread_id)["params"])
        session.until(lambda m: m.get("method") == "turn/completed")
    session.close()
    assert _closing(session.seen) == [
        "thread/status/changed",
        "error",
        "thread/readState/changed",
        "turn/completed",
        "thread/tokenUsage/updated",
        "account/rateLimits/updated",
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
    ]
    statuses = [
        m["params"]["status"]["type"]
        for m in session.seen
        if m.get("method") == "thread/status/changed"
    ]
    assert statuses == ["active", "systemError", "active", "idle"]  # a failure: systemError
    rate = next(m for m in session.seen if m.get("method") == "account/rateLimits/updated")
    assert rate["params"] == {
        "rateLimits": {
            "limitId": "codex",
            "limitName": None,
            "normalModelSlug": None,
            "primary": None,
            "secondary": None,
            "credits": None,
            "individualLimit": None,
            "spendControlReached": None,
            "planType": None,
            "rateLimitReachedType": None,
        }
    }
    failed = next(m for m in session.seen if m.get("method") == "turn/completed")
    first = {"type": "turn", "turnId": failed["params"]["turn"]["id"]}
    states = [m for m in session.seen if m.get("method") == "thread/readState/changed"]

    session = _Session(cli.path)  # a later process: the thread is resumed, then interrupted
    session.request("1", "initialize", INITIALIZE["params"])
    session.request("r", "thread/resume", {"threadId": thread_id})
    turn = session.request("t2", "turn/start", _turn_start("", thread_id)["params"])
    session.until(lambda m: m.get("method") == "item/agentMessage/delta")
    interrupt = {"threadId": thread_id, "turnId": turn["result"]["turn"]["id"]}
    session.send({"id": "i", "method": "turn/interrupt", "params": interrupt})
    session.until(lambda m: m.get("method") == "turn/completed")
    ephemeral = session.request("e", "thread/start", {"ephemeral": True})["result"]["thread"]
    session.request("t3", "turn/start", _turn_start("", ephemeral["id"])["params"])
    session.until(lambda m: m.get("method") == "turn/completed" and m["params"]["turn"]["items"])
    session.close()
    assert _closing(session.seen) == [
        "account/rateLimits/updated",  # the interrupted turn: no usage reported, rate limits
        "thread/readState/changed",
        "thread/status/changed",
        "turn/completed",
        "thread/tokenUsage/updated",  # the ephemeral thread's turn: no read state
        "account/rateLimits/updated",
        "thread/status/changed",
        "turn/completed",
    ]
    states += [m for m in session.seen if m.get("method") == "thread/readState/changed"]
    assert [m["params"]["threadId"] for m in states] == [thread_id] * 3
    assert [m["params"]["readState"]["firstUnread"] for m in states] == [first] * 3
    assert len({m["params"]["readState"]["revision"] for m in states}) == 3


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


def _turn_start(request_id: str, thread_id: Any, text: str = "hi") -> dict[str, Any]:
    return {
        "id": request_id,
        "method": "turn/start",
        "params": {"threadId": thread_id, "input": [{"type": "text", "text": text}]},
    }


def test_turn_start_is_refused_where_the_real_server_refuses_it(tmp_path: Path) -> None:
    """Every answer below was observed from the real codex-cli 0.163.0 app-server (driven raw
    against the stuntset Responses double): serde's texts for bad params, the Rust ``uuid``
    crate's for a bad thread id, "thread not found" for a thread not loaded in this process
    (checked before the input's size), and ``-32602`` with ``input_error_code`` data above
    1,048,576 characters. No turn starts and no scripted turn is used."""
    cli = install_cli("codex", Script.of([Text("played")]), bin_dir=tmp_path / "bin")
    start = {"id": "2", "method": "thread/start", "params": {}}
    out, _, _ = converse(cli, [INITIALIZE, start])
    other_process = out[1]["result"]["thread"]["id"]  # not resumed in the next invocation
    out, _, _ = converse(cli, [INITIALIZE, start])
    mine = out[1]["result"]["thread"]["id"]
    huge = "y" * 1048577
    bad = [
        _turn_start("a", ""),
        _turn_start("b", "abc"),
        _turn_start("c", "01a22b41-cfaf-7f20-b14d"),
        _turn_start("d", "01a22b41-cfaf-7f20-b14d-6aee89b5457"),
        _turn_start("e", "x1a22b41-cfaf-7f20-b14d-6aee89b5457c"),
        _turn_start("f", 5),
        _turn_start("g", "01A22B41CFAF7F20B14D6AEE89B5457C"),
        _turn_start("h", other_process),
        _turn_start("i", "01a22b41-cfaf-7f20-b14d-6aee89b5457c", huge),
        _turn_start("j", mine, huge),
        {"id": "k", "method": "turn/start", "params": {"threadId": mine, "input": "hello"}},
        {"id": "l", "method": "turn/start", "params": {"threadId": mine, "input": [{"type": "x"}]}},
        {
            "id": "m",
            "method": "turn/start",
            "params": {"threadId": mine, "input": [{"type": "text"}]},
        },
    ]
    resume = {"id": "r", "method": "thread/resume", "params": {"threadId": mine}}
    out, stderr, code = converse(cli, [INITIALIZE, resume, *bad])
    assert code == 0
    errors = {m["id"]: m["error"] for m in out if "error" in m}
    invalid = "invalid thread id: "
    assert errors == {
        "a": {
            "code": -32600,
            "message": invalid + "invalid length: expected length 32 for simple format, found 0",
        },
        "b": {
            "code": -32600,
            "message": invalid + "invalid length: expected length 32 for simple format, found 3",
        },
        "c": {"code": -32600, "message": invalid + "invalid group count: expected 5, found 4"},
        "d": {
            "code": -32600,
            "message": invalid + "invalid group length in group 4: expected 12, found 11",
        },
        "e": {
            "code": -32600,
            "message": invalid + "invalid character: expected an optional prefix of "
            "`urn:uuid:` followed by [0-9a-fA-F-], found `x` at 1",
        },
        "f": {
            "code": -32600,
            "message": "Invalid request: invalid type: integer `5`, expected a string",
        },
        "g": {"code": -32600, "message": "thread not found: 01a22b41-cfaf-7f20-b14d-6aee89b5457c"},
        "h": {"code": -32600, "message": f"thread not found: {other_process}"},
        "i": {"code": -32600, "message": "thread not found: 01a22b41-cfaf-7f20-b14d-6aee89b5457c"},
        "j": {
            "code": -32602,
            "message": "Input exceeds the maximum length of 1048576 characters.",
            "data": {
                "input_error_code": "input_too_large",
                "max_chars": 1048576,
                "actual_chars": 1048577,
            },
        },
        "k": {
            "code": -32600,
            "message": 'Invalid request: invalid type: string "hello", expected a sequence',
        },
        "l": {
            "code": -32600,
            "message": "Invalid request: unknown variant `x`, expected one of `text`, `image`, "
            "`localImage`, `audio`, `localAudio`, `skill`, `mention`",
        },
        "m": {"code": -32600, "message": "Invalid request: missing field `text`"},
    }
    assert not [m for m in out if m.get("method") == "turn/started"]
    assert "Traceback" not in stderr
    # the refused requests used no scripted turn: the next one plays it
    out, _, _ = converse(cli, [INITIALIZE, resume, _turn_start("n", mine)])
    completed = [m for m in out if m.get("method") == "turn/completed"]
    assert completed[0]["params"]["turn"]["items"][0]["text"] == "played"
    cli.assert_all_used()


def test_a_scripted_refusal_answers_turn_start(tmp_path: Path) -> None:
    """``HttpError`` with an app-server ``error_type`` first in a turn: the server refuses the
    turn itself (no notification at all), as the real one answers an overloaded ingress queue
    (``-32001`` "Server overloaded; retry later.", no ``data``: codex-rs
    app-server-transport) or bad params; the turn after it plays normally."""
    script = Script.of(
        [HttpError(503, error_type="server_overloaded")],
        [HttpError(400, "turn refused by policy", error_type="invalid_params")],
        [Text("accepted")],
    )
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin")
    start = {"id": "2", "method": "thread/start", "params": {}}
    out, _, _ = converse(cli, [INITIALIZE, start])
    thread_id = out[1]["result"]["thread"]["id"]
    resume = {"id": "2", "method": "thread/resume", "params": {"threadId": thread_id}}
    turns = [_turn_start(f"t{n}", thread_id) for n in range(3)]
    out, _, code = converse(cli, [INITIALIZE, resume, *turns])
    assert code == 0
    after_start = out[2:]  # initialize, thread/resume
    assert after_start[0] == {
        "error": {"code": -32001, "message": "Server overloaded; retry later."},
        "id": "t0",
    }
    assert after_start[1] == {
        "error": {"code": -32602, "message": "turn refused by policy"},
        "id": "t1",
    }
    assert after_start[2]["id"] == "t2"
    assert after_start[2]["result"]["turn"]["status"] == "inProgress"
    completed = [m for m in out if m.get("method") == "turn/completed"]
    assert len(completed) == 1
    assert completed[0]["params"]["turn"]["items"][0]["text"] == "accepted"


def test_turn_start_on_a_busy_thread_steers_into_the_running_turn(tmp_path: Path) -> None:
    """The real 0.163.0 server refuses nothing here: a ``turn/start`` while the thread's turn
    runs answers with that turn (same id, ``startedAt`` null) and steers the input into it,
    as ``turn/steer`` does: the stalled response's message is completed, the rate limits
    follow, the input shows as a ``userMessage`` item and the next scripted turn answers the
    follow-up request; the turn then completes (observed; the schema says ``turnTrigger``
    is "ignored when this request steers an already-active turn")."""
    script = Script.of([Text("waiting"), Stall()], [Text("and more"), Usage(3, 2)])
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    session = _Session(cli.path)
    session.request("1", "initialize", INITIALIZE["params"])
    thread_id = session.request("2", "thread/start", {})["result"]["thread"]["id"]
    first = session.request("3", "turn/start", _turn_start("3", thread_id)["params"])
    turn_id = first["result"]["turn"]["id"]
    session.until(lambda m: m.get("method") == "item/agentMessage/delta")
    mark = len(session.seen)
    second = session.request("4", "turn/start", _turn_start("4", thread_id, "and this")["params"])
    assert second["result"]["turn"]["id"] == turn_id
    assert second["result"]["turn"]["startedAt"] is None
    done = session.until(lambda m: m.get("method") == "turn/completed")
    session.close()
    after = [m for m in session.seen[mark:] if "method" in m]
    assert [(m["method"], m["params"].get("item", {}).get("type")) for m in after] == [
        ("item/completed", "agentMessage"),
        ("account/rateLimits/updated", None),
        ("item/started", "userMessage"),
        ("item/completed", "userMessage"),
        ("item/started", "agentMessage"),
        ("item/agentMessage/delta", None),
        ("item/agentMessage/delta", None),
        ("item/completed", "agentMessage"),
        ("thread/tokenUsage/updated", None),
        ("account/rateLimits/updated", None),
        ("thread/readState/changed", None),
        ("thread/status/changed", None),
        ("turn/completed", None),
    ]
    assert after[0]["params"]["item"]["text"] == "waiting"
    assert after[3]["params"]["item"]["content"][0]["text"] == "and this"
    assert done["params"]["turn"]["status"] == "completed"
    assert [
        m["params"]["turn"]["id"] for m in session.seen if m.get("method") == "turn/started"
    ] == [turn_id]
    cli.assert_all_used()


def test_a_steer_while_tools_run_waits_for_them_and_the_responses_end(tmp_path: Path) -> None:
    """Observed (a real command running when the steer came): the response that called the
    tool is not dropped; its tool finishes, its usage and rate limits follow, then the input
    shows and the next scripted turn answers the follow-up request (the rest of the steered
    turn is never played: the follow-up request ends with the user's input, not the tool
    result, so the model double answers it from the next turn too)."""
    script = Script.of(
        [
            ToolCall("bash", {"command": "make"}),
            ApprovalRequest(),
            Usage(5, 1),  # the tool call's response (a usage after the result is the next one's)
            ToolResult("built"),
            Text("never shown"),
        ],
        [Text("Steered"), Usage(7, 2)],
    )
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    session = _Session(cli.path, decision=None)  # the approval is answered below
    session.request("1", "initialize", INITIALIZE["params"])
    params = {"approvalPolicy": "on-request", "approvalsReviewer": "user"}
    thread_id = session.request("2", "thread/start", params)["result"]["thread"]["id"]
    turn = session.request("3", "turn/start", _turn_start("3", thread_id)["params"])
    turn_id = turn["result"]["turn"]["id"]
    asked = session.until(lambda m: m.get("method") == "item/commandExecution/requestApproval")
    text = [{"type": "text", "text": "and then this"}]
    steer = {"threadId": thread_id, "expectedTurnId": turn_id, "input": text}
    assert session.request("s", "turn/steer", steer)["result"] == {"turnId": turn_id}
    mark = len(session.seen)
    session.send({"id": asked["id"], "result": {"decision": "accept"}})
    session.until(lambda m: m.get("method") == "turn/completed")
    session.close()
    after = [m for m in session.seen[mark:] if "method" in m]
    assert [(m["method"], m["params"].get("item", {}).get("type")) for m in after] == [
        ("serverRequest/resolved", None),
        ("item/commandExecution/outputDelta", None),
        ("item/completed", "commandExecution"),
        ("thread/tokenUsage/updated", None),
        ("account/rateLimits/updated", None),
        ("item/started", "userMessage"),
        ("item/completed", "userMessage"),
        ("item/started", "agentMessage"),
        ("item/agentMessage/delta", None),
        ("item/completed", "agentMessage"),
        ("thread/tokenUsage/updated", None),
        ("account/rateLimits/updated", None),
        ("thread/readState/changed", None),
        ("thread/status/changed", None),
        ("turn/completed", None),
    ]
    usage = [m["params"]["tokenUsage"] for m in after if m["method"] == "thread/tokenUsage/updated"]
    assert [(u["last"]["inputTokens"], u["total"]["inputTokens"]) for u in usage] == [
        (5, 5),
        (7, 12),
    ]
    assert after[6]["params"]["item"]["content"][0]["text"] == "and then this"
    assert after[-1]["params"]["turn"]["status"] == "completed"


RESERVED_TEXT = (
    "model_providers contains reserved built-in provider IDs: `openai`. Built-in providers "
    "cannot be overridden. Rename your custom provider (for example, `openai-custom`)."
)


def test_a_built_in_providers_table_from_an_option_stops_the_server(tmp_path: Path) -> None:
    """Observed: ``-c model_providers.openai.…`` ends ``codex app-server`` at once, exit 1."""
    out, stderr, code = talk(
        tmp_path,
        [INITIALIZE],
        None,
        "-c",
        "model_providers.openai.request_max_retries=1",
        "app-server",
    )
    assert (out, code) == ([], 1)
    assert stderr == f"Error: {RESERVED_TEXT}\nin `model_providers`\n\n"


def test_a_config_toml_codex_refuses_is_reported_and_ignored(tmp_path: Path) -> None:
    """Observed: the server logs it, answers ``initialize``, then sends ``configWarning``
    "Invalid configuration; using defaults." pointing at the ``model_providers`` key, and goes
    on without the file (here: codex's default retries, so one 503 is retried silently)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model_provider = "openai"\n[model_providers.openai]\nrequest_max_retries = 0\n'
    )
    cli = install_cli(
        "codex", Script.of([HttpError(503)], [Text("back")]), bin_dir=tmp_path / "bin", time_scale=0
    )
    start = {"id": "2", "method": "thread/start", "params": {}}
    session = _Session(cli.path, env={"CODEX_HOME": str(home)})
    session.request("1", "initialize", INITIALIZE["params"])
    thread_id = session.request("2", "thread/start", start["params"])["result"]["thread"]["id"]
    text = [{"type": "text", "text": "hi"}]
    session.request("3", "turn/start", {"threadId": thread_id, "input": text})
    session.until(lambda m: m.get("method") == "turn/completed")
    session.close()
    assert session.seen[1] == {
        "method": "configWarning",
        "params": {
            "summary": "Invalid configuration; using defaults.",
            "details": f"{home}/config.toml:2:2: {RESERVED_TEXT}",
            "path": f"{home}/config.toml",
            "range": {"start": {"line": 2, "column": 2}, "end": {"line": 2, "column": 16}},
        },
        "emittedAtMs": session.seen[1]["emittedAtMs"],
    }
    assert session.seen[-1]["params"]["turn"]["status"] == "completed"
    assert [m for m in session.seen if m.get("method") == "error"] == []
    cli.assert_all_used()


def test_the_retries_come_from_the_provider_in_use(tmp_path: Path) -> None:
    """config.toml's provider, ``-c`` options over it: one announced retry, no silent one."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model_provider = "mine"\n[model_providers.mine]\nname = "mine"\n'
        "request_max_retries = 3\nstream_max_retries = 1\n"
    )
    script = Script.of([HttpError(502)], [Text("back")])
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    session = _Session(
        cli.path,
        args=("-c", "model_providers.mine.request_max_retries=0"),
        env={"CODEX_HOME": str(home)},
    )
    session.request("1", "initialize", INITIALIZE["params"])
    thread_id = session.request("2", "thread/start", {})["result"]["thread"]["id"]
    text = [{"type": "text", "text": "hi"}]
    session.request("3", "turn/start", {"threadId": thread_id, "input": text})
    session.until(lambda m: m.get("method") == "turn/completed")
    session.close()
    errors = [m["params"] for m in session.seen if m.get("method") == "error"]
    assert [(e["error"]["message"], e["willRetry"]) for e in errors] == [
        ("Reconnecting... 1/1", True)
    ]
    cli.assert_all_used()


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


# --- every message against the protocol schema the real 0.163.0 binary generates ---------------

_RESPONSES = {
    "initialize": "v1/InitializeResponse.json",
    "thread/start": "v2/ThreadStartResponse.json",
    "thread/resume": "v2/ThreadResumeResponse.json",
    "thread/read": "v2/ThreadReadResponse.json",
    "thread/list": "v2/ThreadListResponse.json",
    "turn/start": "v2/TurnStartResponse.json",
    "turn/interrupt": "v2/TurnInterruptResponse.json",
    "turn/steer": "v2/TurnSteerResponse.json",
    "model/list": "v2/ModelListResponse.json",
    "account/read": "v2/GetAccountResponse.json",
}


@pytest.fixture(scope="module")
def real_schema(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``codex app-server generate-json-schema`` from the real binary the SDK pins."""
    codex_cli_bin = pytest.importorskip("codex_cli_bin")
    out = tmp_path_factory.mktemp("codex-schema")
    subprocess.run(
        [
            str(codex_cli_bin.bundled_codex_path()),
            "app-server",
            "generate-json-schema",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return out


class _Session:
    """A raw JSON-RPC client that answers server requests (unless ``decision`` is None) and
    records every message."""

    def __init__(
        self,
        path: Path,
        decision: Any = "accept",
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        # CODEX_HOME: an empty folder beside the fake unless given (no machine's config.toml)
        home = {"CODEX_HOME": str(path.parent.parent / "codex-home")}
        self.proc = subprocess.Popen(
            [str(path), *args, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **home, **(env or {})},
        )
        self.seen: list[dict[str, Any]] = []
        self.methods: dict[Any, str] = {}
        self.decision = decision  # the answer to every approval request

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        if "id" in message and "method" in message:
            self.methods[message["id"]] = message["method"]
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, request_id: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send({"id": request_id, "method": method, "params": params})
        return self.until(lambda m: m.get("id") == request_id and "method" not in m)

    def until(self, done: Any) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            self.seen.append(message)
            if "id" in message and "method" in message and self.decision is not None:
                answer = (
                    {"answers": {}}
                    if "UserInput" in message["method"]
                    else {"decision": self.decision}
                )
                self.send({"id": message["id"], "result": answer})
            if done(message):
                return dict(message)
        raise AssertionError("the fake closed stdout")

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.seen.extend(json.loads(line) for line in self.proc.stdout)
        self.proc.stdout.close()
        self.proc.wait(timeout=10)


@pytest.mark.real_cli
def test_every_message_validates_against_the_real_protocol_schema(
    tmp_path: Path, real_schema: Path
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    limits = RateLimits(
        primary=RateLimitWindow(used_percent=42.5, window_minutes=300, resets_at=1767240000),
        secondary=RateLimitWindow(used_percent=7),
        credits=RateLimitCredits(has_credits=True, balance="12.50"),
    )
    script = Script.of(
        Turn(
            rate_limits=limits,
            steps=(
                Reasoning("thinking it over"),
                ToolCall("bash", {"command": "ls"}),
                ApprovalRequest(),
                ToolResult("a.txt"),
                ToolCall("apply_patch", {"path": "a.md"}),
                ApprovalRequest(),
                ToolResult("ok"),
                ToolCall("mcp__stuntset__lookup", {"q": "x"}),
                ToolResult("found"),
                ToolCall("web_search", {"query": "y"}),
                ToolResult("results"),
                ToolCall("update_plan", {"plan": [{"step": "a", "status": "pending"}]}),
                ToolResult(""),
                InputRequest("which branch?"),
                Text("done"),
                Usage(3, 4),
            ),
        ),
        [RateLimit()],
        [HttpError(502)],  # retried: "Reconnecting... 1/1" (request retries are 0 here)
        [Text("back")],
        [Text("waiting"), Stall()],
        [Text("steered"), Stall()],  # the follow-up request after turn/steer
    )
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    retries = (
        'model_provider="stuntset"',
        "model_providers.stuntset.request_max_retries=0",
        "model_providers.stuntset.stream_max_retries=1",
    )
    session = _Session(cli.path, args=tuple(a for r in retries for a in ("-c", r)))
    session.request("1", "initialize", INITIALIZE["params"])
    session.send({"method": "initialized"})
    params = {"approvalPolicy": "on-request", "approvalsReviewer": "user", "cwd": str(tmp_path)}
    thread_id = session.request("2", "thread/start", params)["result"]["thread"]["id"]
    plan = {"mode": "plan", "settings": {"model": "gpt-5"}}  # Plan mode: codex asks questions
    for number in range(4):
        text = [{"type": "text", "text": f"turn {number}"}]
        turn_params = {"threadId": thread_id, "input": text, "collaborationMode": plan}
        turn = session.request(f"t{number}", "turn/start", turn_params)
        turn_id = turn["result"]["turn"]["id"]
        if number == 3:
            session.until(lambda m: m.get("method") == "item/agentMessage/delta")
            session.request(
                "s", "turn/steer", {"threadId": thread_id, "expectedTurnId": turn_id, "input": text}
            )
            session.until(
                lambda m: (
                    m.get("method") == "item/agentMessage/delta"
                    and m["params"]["delta"] == "steered"
                )
            )
            session.send(
                {
                    "id": "i",
                    "method": "turn/interrupt",
                    "params": {"threadId": thread_id, "turnId": turn_id},
                }
            )
        session.until(lambda m: m.get("method") == "turn/completed")
    session.request("3", "thread/read", {"threadId": thread_id, "includeTurns": True})
    session.request("4", "thread/list", {})
    session.request("5", "thread/resume", {"threadId": thread_id})
    session.request("6", "model/list", {"includeHidden": False})
    session.request("7", "account/read", {})
    session.close()

    validators: dict[str, Any] = {}

    def load(name: str) -> Any:
        """A validator for one schema file, built once (building is the slow part)."""
        if name not in validators:
            schema = json.loads((real_schema / name).read_text())
            validators[name] = jsonschema.validators.validator_for(schema)(schema)
        return validators[name]

    notification, server_request = load("ServerNotification.json"), load("ServerRequest.json")
    checked: set[str] = set()
    for message in session.seen:
        if "method" in message and "id" in message:
            server_request.validate(message)
            checked.add(message["method"])
        elif "method" in message:
            body = {k: v for k, v in message.items() if k != "emittedAtMs"}
            notification.validate(body)
            checked.add(message["method"])
        else:
            method = session.methods[message["id"]]
            load(_RESPONSES[method]).validate(message["result"])
            checked.add(method)
    assert {
        "item/commandExecution/requestApproval",
        "item/fileChange/requestApproval",
        "item/tool/requestUserInput",
        "serverRequest/resolved",
        "item/reasoning/summaryTextDelta",
        "turn/plan/updated",
        "error",
        "thread/tokenUsage/updated",
        "account/rateLimits/updated",
        "thread/readState/changed",
    } <= checked
    assert set(_RESPONSES) <= checked
    statuses = [
        m["params"]["turn"]["status"] for m in session.seen if m.get("method") == "turn/completed"
    ]
    assert statuses == ["completed", "failed", "completed", "interrupted"]
    shown = [
        m["params"]["rateLimits"]
        for m in session.seen
        if m.get("method") == "account/rateLimits/updated"
    ]
    assert shown[0]["primary"] == {
        "usedPercent": 43,
        "windowDurationMins": 300,
        "resetsAt": 1767240000,
    }
    retried = [m["params"] for m in session.seen if m.get("method") == "error"][1]
    assert (retried["error"]["message"], retried["willRetry"]) == ("Reconnecting... 1/1", True)
    cli.assert_all_used()


_APPROVED_TOOLS = Script.of(
    [
        ToolCall("bash", {"command": "ls"}),
        ApprovalRequest(),
        ToolResult("a.txt"),
        ToolCall("apply_patch", {"path": "a.md"}),
        ApprovalRequest(),
        ToolResult("ok"),
        ToolCall("mcp__stuntset__lookup", {"q": "x"}),
        ApprovalRequest(),
        ToolResult("found"),
        Text("done"),
    ]
)


def _one_turn(
    tmp_path: Path, script: Script, thread: dict[str, Any], decision: Any = "accept"
) -> list[dict[str, Any]]:
    """Start a thread with ``thread`` params, play one turn, return every message seen."""
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    session = _Session(cli.path, decision)
    session.request("1", "initialize", INITIALIZE["params"])
    params = {"cwd": str(tmp_path), **thread}
    thread_id = session.request("2", "thread/start", params)["result"]["thread"]["id"]
    text = [{"type": "text", "text": "go"}]
    session.request("t", "turn/start", {"threadId": thread_id, "input": text})
    session.until(lambda m: m.get("method") == "turn/completed")
    session.close()
    return session.seen


def _completed_tools(seen: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        m["params"]["item"]["type"]: m["params"]["item"]
        for m in seen
        if m.get("method") == "item/completed"
        and m["params"]["item"]["type"] in ("commandExecution", "fileChange", "mcpToolCall")
    }


def test_the_auto_reviewer_approves_each_action_without_asking_the_client(
    tmp_path: Path,
) -> None:
    seen = _one_turn(tmp_path, _APPROVED_TOOLS, {"approvalsReviewer": "auto_review"})
    assert not [m for m in seen if "id" in m and "method" in m]  # no approval request sent
    reviews = [m["params"] for m in seen if m.get("method") == "item/autoApprovalReview/completed"]
    actions = [review["action"] for review in reviews]
    assert [a["type"] for a in actions] == ["command", "applyPatch", "mcpToolCall"]
    assert actions[0]["command"] == "/bin/bash -lc ls"  # as the item shows the command
    assert actions[1]["files"] == [f"{tmp_path}/a.md"]
    assert actions[2]["toolName"] == "lookup"
    assert {r["review"]["status"] for r in reviews} == {"approved"}
    started = [m for m in seen if m.get("method") == "item/autoApprovalReview/started"]
    assert [m["params"]["reviewId"] for m in started] == [r["reviewId"] for r in reviews]
    assert {t["status"] for t in _completed_tools(seen).values()} == {"completed"}


def test_approval_policy_never_declines_every_action_unasked(tmp_path: Path) -> None:
    seen = _one_turn(tmp_path, _APPROVED_TOOLS, {"approvalPolicy": "never"})
    assert not [m for m in seen if "id" in m and "method" in m]
    tools = _completed_tools(seen)
    assert tools["commandExecution"]["status"] == "declined"
    assert tools["fileChange"]["status"] == "declined"
    assert tools["mcpToolCall"]["status"] == "failed"
    assert tools["mcpToolCall"]["error"] == {"message": "user rejected the tool call"}
    assert seen[-1]["params"]["turn"]["status"] == "completed"


def test_a_cancel_decision_declines_the_action_and_interrupts_the_turn(tmp_path: Path) -> None:
    seen = _one_turn(tmp_path, _APPROVED_TOOLS, {"approvalsReviewer": "user"}, "cancel")
    asked = [m for m in seen if "id" in m and "method" in m]
    assert [m["method"] for m in asked] == ["item/commandExecution/requestApproval"]
    tools = _completed_tools(seen)
    assert list(tools) == ["commandExecution"]  # nothing after the cancelled action ran
    assert tools["commandExecution"]["status"] == "declined"
    assert seen[-1]["params"]["turn"]["status"] == "interrupted"


def _raw_turn(
    tmp_path: Path, script: Script, *, keep_stdin: bool = False
) -> tuple[list[bytes], bytes, int]:
    """One turn on a fresh thread; stdout as raw lines (faults write what is not JSON).
    ``keep_stdin``: stdin stays open until the fake has exited (a client still talking)."""
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    proc = subprocess.Popen(
        [str(cli.path), "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    start = {"id": "2", "method": "thread/start", "params": {}}
    proc.stdin.write(f"{json.dumps(INITIALIZE)}\n{json.dumps(start)}\n".encode())
    proc.stdin.flush()
    answer: dict[str, Any] = {}
    while answer.get("id") != "2":
        answer = json.loads(proc.stdout.readline())
    turn = _turn_start("t", answer["result"]["thread"]["id"])
    proc.stdin.write(f"{json.dumps(turn)}\n".encode())
    if keep_stdin:  # the output is a few kB (fits the pipe): wait first, bounded
        proc.stdin.flush()
        try:
            proc.wait(timeout=10)
        finally:
            proc.kill()
    else:
        proc.stdin.close()
    with proc:  # stderr is a few bytes: reading it after stdout cannot block the fake
        out, err = proc.stdout.read(), proc.stderr.read() if proc.stderr else b""
        code = proc.wait(timeout=10)
    return out.splitlines(), err, code


def test_the_cli_itself_breaking_reaches_the_client_as_written_then_it_exits(
    tmp_path: Path,
) -> None:
    lines, _, code = _raw_turn(tmp_path / "m", scenarios.build("malformed_json", cli=True))
    assert lines[-1] == b'{"type": "content_block_delta", "delta": {"text": "trunc'
    assert code == 1
    lines, _, code = _raw_turn(tmp_path / "g", scenarios.build("garbage_bytes", cli=True))
    assert lines[-1] == b"<html><body>502 Bad Gateway</body></html>\xff\xfe\xc3"  # a half line
    assert code == 1


@pytest.mark.parametrize("name", ["stream_cut", "malformed_json", "garbage_bytes", "out_of_order"])
def test_the_cli_itself_breaking_exits_while_the_client_still_listens(
    tmp_path: Path, name: str
) -> None:
    """A client that skips a bad line (the Node SDKs) must still see the turn end: the fake
    exits 1 after breaking its stdout, with stdin still open."""
    _, _, code = _raw_turn(tmp_path, scenarios.build(name, cli=True), keep_stdin=True)
    assert code == 1


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (
            "stream_cut",
            "stream disconnected before completion: Transport error: network error: error "
            "decoding response body",
        ),
        (
            "malformed_json",
            "stream disconnected before completion: stream closed before response.completed",
        ),
        (
            "garbage_bytes",
            "stream disconnected before completion: UTF8 error: invalid utf-8 sequence of 1 "
            "bytes from index 0",
        ),
    ],
)
def test_a_broken_model_stream_is_retried_then_fails_as_the_doubles_500(
    tmp_path: Path, name: str, why: str
) -> None:
    """Observed (codex-cli 0.163, one stream retry): the text before the break stays, one
    "Reconnecting... 1/1" with the reason, and the retry meets the double's 500 (no turn
    left): "high demand", ``internalServerError``."""
    lines, _, _ = _raw_turn(tmp_path, scenarios.build(name))
    messages = [json.loads(line) for line in lines]
    notices = [m["params"] for m in messages if m.get("method") == "error"]
    assert [n["willRetry"] for n in notices] == [True, False]  # the retry, then the failure
    notice = notices[0]
    assert notice["error"]["message"].startswith("Reconnecting... 1/")
    assert notice["error"]["additionalDetails"] == why
    (done,) = [m["params"]["turn"] for m in messages if m.get("method") == "turn/completed"]
    assert done["status"] == "failed"
    assert done["error"]["codexErrorInfo"] == "internalServerError"
    assert done["error"]["message"].startswith("We\u2019re currently experiencing high demand")
    texts = [
        m["params"]["item"].get("text") for m in messages if m.get("method") == "item/completed"
    ]
    assert "Starting the answer" in texts or "partial0 partial1 partial2 partial3 partial4" in texts


def test_out_of_order_sends_an_orphan_delta_and_an_item_after_the_turn_ended(
    tmp_path: Path,
) -> None:
    """The CLI's own events out of order (``cli=True``); then it exits."""
    lines, _, code = _raw_turn(tmp_path, scenarios.build("out_of_order", cli=True))
    assert code == 1
    after = [json.loads(line) for line in lines]
    after = after[next(i for i, m in enumerate(after) if m.get("id") == "t") :]
    methods = [m["method"] for m in after[1:]]
    orphan = after[1 + methods.index("item/agentMessage/delta")]["params"]
    assert orphan["itemId"] == "msg_NEVERSTARTED"
    assert not [
        m
        for m in after
        if m.get("method") == "item/started" and m["params"]["item"]["id"] == "msg_NEVERSTARTED"
    ]
    assert methods[-2:] == ["turn/completed", "item/completed"]
    assert after[-1]["params"]["item"]["text"] == "a message after the turn ended"


def test_an_exit_step_ends_the_server_with_its_code_and_stderr(tmp_path: Path) -> None:
    lines, stderr, code = _raw_turn(
        tmp_path, Script.of([Text("x"), Exit(3, stderr="boom", cli=True)])
    )
    assert (code, stderr) == (3, b"boom\n")
    last = json.loads(lines[-1])
    assert last["method"] == "item/completed"  # no turn/completed: the process is gone
    assert not [line for line in lines if b'"turn/completed"' in line]


def test_turn_input_of_the_wrong_shape_names_what_was_found(tmp_path: Path) -> None:
    cli = install_cli("codex", Script.of([Text("played")]), bin_dir=tmp_path / "bin")
    start = {"id": "2", "method": "thread/start", "params": {}}
    out, _, _ = converse(cli, [INITIALIZE, start])
    mine = out[1]["result"]["thread"]["id"]

    def turn(request_id: str, items: Any) -> dict[str, Any]:
        return {
            "id": request_id,
            "method": "turn/start",
            "params": {"threadId": mine, "input": items},
        }

    resume = {"id": "r", "method": "thread/resume", "params": {"threadId": mine}}
    bad = [
        turn("a", True),
        turn("b", 1.5),
        turn("c", {"type": "text"}),
        turn("d", None),
        turn("e", [7]),
        turn("f", [{"text": "no type"}]),
        {"no": "id and no method"},
    ]
    out, stderr, code = converse(cli, [INITIALIZE, resume, *bad])
    assert code == 0
    errors = {m["id"]: m["error"]["message"] for m in out if "error" in m}
    found = "Invalid request: invalid type: "
    assert errors == {
        "a": found + "boolean `true`, expected a sequence",
        "b": found + "floating point `1.5`, expected a sequence",
        "c": found + "map, expected a sequence",
        "d": found + "null, expected a sequence",
        "e": found + "integer `7`, expected internally tagged enum UserInput",
        "f": "Invalid request: missing field `type`",
    }
    assert "data did not match any variant of untagged enum JSONRPCMessage" in stderr
    assert not [m for m in out if m.get("method") == "turn/started"]


def test_interrupt_and_steer_name_the_turn_they_expected(tmp_path: Path) -> None:
    cli = install_cli("codex", Script.of([Text("waiting"), Stall()]), bin_dir=tmp_path / "bin")
    session = _Session(cli.path)
    session.request("1", "initialize", INITIALIZE["params"])
    thread_id = session.request("2", "thread/start", {})["result"]["thread"]["id"]
    text = [{"type": "text", "text": "more"}]
    idle = {"threadId": thread_id, "turnId": "t-x", "expectedTurnId": "t-x", "input": text}
    assert session.request("i0", "turn/interrupt", idle)["error"]["message"] == (
        "no active turn to interrupt"
    )
    assert session.request("s0", "turn/steer", idle)["error"]["message"] == (
        "no active turn to steer"
    )
    started = session.request("t", "turn/start", {"threadId": thread_id, "input": text})
    turn_id = started["result"]["turn"]["id"]
    session.until(lambda m: m.get("method") == "item/agentMessage/delta")
    wrong = f"expected active turn id t-x but found {turn_id}"
    assert session.request("i1", "turn/interrupt", idle)["error"]["message"] == wrong
    assert session.request("s1", "turn/steer", idle)["error"]["message"] == wrong
    # the input's shape is checked first, even before the thread (observed)
    bad = {**idle, "threadId": "nope", "input": "x"}
    assert session.request("s2", "turn/steer", bad)["error"] == {
        "code": -32600,
        "message": 'Invalid request: invalid type: string "x", expected a sequence',
    }
    right = {"threadId": thread_id, "turnId": turn_id}
    assert session.request("i2", "turn/interrupt", right) == {"id": "i2", "result": {}}
    done = session.until(lambda m: m.get("method") == "turn/completed")
    assert done["params"]["turn"]["status"] == "interrupted"
    session.close()


def test_app_server_options_help_and_subcommands(tmp_path: Path) -> None:
    _, stderr, code = talk(tmp_path, [], None, "app-server", "--no-such-option")
    assert code == 2
    assert "--no-such-option" in stderr
    _, stderr, code = talk(tmp_path, [], None, "app-server", "generate-ts")
    assert code == 2
    assert stderr == "stuntset fake codex: `codex app-server generate-ts` is not simulated\n"
    done = subprocess.run(
        [
            str(install_cli("codex", Script.of([]), bin_dir=tmp_path / "b2").path),
            "app-server",
            "--help",
        ],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 0
    assert "--listen" in done.stdout


def test_turn_start_and_resume_settings_apply_to_the_thread(tmp_path: Path) -> None:
    script = Script.of(
        [ToolCall("bash", {"command": "ls"}), ApprovalRequest(), ToolResult("a"), Text("ok")]
    )
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin", time_scale=0)
    session = _Session(cli.path)
    session.request("1", "initialize", INITIALIZE["params"])
    thread_id = session.request("2", "thread/start", {})["result"]["thread"]["id"]
    params = {
        "threadId": thread_id,
        "input": [{"type": "text", "text": "go"}],
        "model": "o4-mini",
        "approvalPolicy": "never",  # set by the turn: declined without asking
    }
    session.request("t", "turn/start", params)
    session.until(lambda m: m.get("method") == "turn/completed")
    assert not [m for m in session.seen if "id" in m and "method" in m]
    assert _completed_tools(session.seen)["commandExecution"]["status"] == "declined"
    resumed = session.request("r", "thread/resume", {"threadId": thread_id})["result"]
    assert (resumed["model"], resumed["approvalPolicy"]) == ("o4-mini", "never")
    resumed = session.request("r2", "thread/resume", {"threadId": thread_id, "model": "o3"})
    assert resumed["result"]["model"] == "o3"
    session.close()


def test_an_interrupt_between_deltas_completes_the_message_so_far(tmp_path: Path) -> None:
    # the interval is real time the fake would wait before the next delta; the interrupt, read
    # during that wait, ends it at once (the message so far is completed: observed)
    script = Script.of([Text("one two three", chunks=3, interval=30.0)])
    cli = install_cli("codex", script, bin_dir=tmp_path / "bin")
    session = _Session(cli.path)
    session.request("1", "initialize", INITIALIZE["params"])
    thread_id = session.request("2", "thread/start", {})["result"]["thread"]["id"]
    text = [{"type": "text", "text": "go"}]
    started = session.request("t", "turn/start", {"threadId": thread_id, "input": text})
    turn_id = started["result"]["turn"]["id"]
    first = session.until(lambda m: m.get("method") == "item/agentMessage/delta")
    right = {"threadId": thread_id, "turnId": turn_id}
    assert session.request("i", "turn/interrupt", right) == {"id": "i", "result": {}}
    completed = session.until(
        lambda m: (
            m.get("method") == "item/completed" and m["params"]["item"]["type"] == "agentMessage"
        )
    )
    assert completed["params"]["item"]["text"] == first["params"]["delta"]
    done = session.until(lambda m: m.get("method") == "turn/completed")
    assert done["params"]["turn"]["status"] == "interrupted"
    session.close()
