"""``codex app-server`` shapes the SDK's typed models would hide (a missing field reads as its
default): ``turn/completed``'s item list and the ``agentMessage`` item's fields, raw, from the
real binary over the Responses model double and from the fake, the same script
(docs/protocol-reference.md, "``turn/completed``'s items and the ``agentMessage`` item")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import stuntset
from stuntset.doubles.cli import install_cli
from stuntset.drift.runners import codex_home, real_binary
from stuntset.script import RateLimit, Reasoning, Script, Stall, Text, ToolCall, ToolResult, Usage

from ._codex_rpc import INITIALIZE, RawSession

REAL_CODEX = real_binary("codex")

#: One turn each: the last message in the last response; the last message in an earlier
#: response (the last one only reasons); no message; interrupted while streaming; failed.
SCRIPT = Script.of(
    [Text("First."), ToolCall("lookup", {"q": "a"}), ToolResult("x"), Text("Second."), Usage(3, 1)],
    [Text("Early."), ToolCall("lookup", {"q": "b"}), ToolResult("y"), Reasoning("No more.")],
    [ToolCall("lookup", {"q": "c"}), ToolResult("z"), Reasoning("Nothing to say.")],
    [Text("Waiting"), Stall()],
    [RateLimit()],
)
TURNS = 5
INTERRUPTED = 3


def play(session: RawSession, cwd: Path) -> list[dict[str, Any]]:
    """Every turn of ``SCRIPT`` on one thread; what each ``turn/completed`` said (ids left
    out), then every ``agentMessage`` item's fields (id and text left out)."""
    session.request("initialize", INITIALIZE)
    session.send({"method": "initialized"})
    thread = session.request("thread/start", {"cwd": str(cwd)})["result"]["thread"]["id"]
    for number in range(TURNS):
        text = [{"type": "text", "text": f"turn {number}"}]
        started = session.request("turn/start", {"threadId": thread, "input": text})
        if number == INTERRUPTED:
            session.until(lambda m: m.get("method") == "item/agentMessage/delta")
            turn_id = started["result"]["turn"]["id"]
            session.send(
                {
                    "id": "interrupt",
                    "method": "turn/interrupt",
                    "params": {"threadId": thread, "turnId": turn_id},
                }
            )
        session.until(lambda m: m.get("method") == "turn/completed")
    session.close()
    ended = [
        {
            "status": m["params"]["turn"]["status"],
            "itemsView": m["params"]["turn"]["itemsView"],
            "items": [
                {k: v for k, v in item.items() if k != "id"}
                for item in m["params"]["turn"]["items"]
            ],
        }
        for m in session.seen
        if m.get("method") == "turn/completed"
    ]
    fields = {
        (
            m["method"],
            tuple(sorted((k, str(v)) for k, v in item.items() if k not in ("id", "text"))),
        )
        for m in session.seen
        if m.get("method") in ("item/started", "item/completed")
        and (item := m["params"]["item"])["type"] == "agentMessage"
    }
    return [*ended, sorted(fields)]


def on_fake(where: Path) -> list[dict[str, Any]]:
    cli = install_cli("codex", SCRIPT, bin_dir=where / "bin", time_scale=0)
    env = {**os.environ, "CODEX_HOME": str(where / "home")}
    shown = play(RawSession(cli.path, cwd=where, env=env), where)
    cli.assert_all_used()
    return shown


def message(text: str) -> dict[str, Any]:
    return {
        "type": "agentMessage",
        "text": text,
        "phase": None,
        "memoryCitation": None,
        "delivery": None,
        "questions": None,
    }


def test_the_fake_lists_the_last_message_of_a_completed_turn_only(tmp_path: Path) -> None:
    shown = on_fake(tmp_path)
    assert shown[:TURNS] == [
        {"status": "completed", "itemsView": "summary", "items": [message("Second.")]},
        {"status": "completed", "itemsView": "summary", "items": [message("Early.")]},
        {"status": "completed", "itemsView": "notLoaded", "items": []},
        {"status": "interrupted", "itemsView": "notLoaded", "items": []},
        {"status": "failed", "itemsView": "notLoaded", "items": []},
    ]
    nulls = (
        ("delivery", "None"),
        ("memoryCitation", "None"),
        ("phase", "None"),
        ("questions", "None"),
        ("type", "agentMessage"),
    )
    assert shown[TURNS] == [("item/completed", nulls), ("item/started", nulls)]


# real time: the real binary starts and talks to the double over loopback (a few seconds)
@pytest.mark.real_cli
@pytest.mark.skipif(REAL_CODEX is None, reason="no real codex binary here")
@pytest.mark.real_time
@pytest.mark.timeout(180)
def test_the_same_shapes_as_the_real_binary(tmp_path: Path) -> None:
    assert REAL_CODEX is not None
    cwd = tmp_path / "real"
    cwd.mkdir()
    with stuntset.serve(SCRIPT) as stand_in:
        env = {**os.environ, **codex_home(tmp_path / "home", stand_in.url("openai"))}
        real = play(RawSession(REAL_CODEX, cwd=cwd, env=env), cwd)
    stand_in.verify()
    assert on_fake(tmp_path / "fake") == real
