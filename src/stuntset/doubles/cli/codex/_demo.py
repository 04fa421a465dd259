"""The demo section of the Codex double: every catalog scenario through the fake ``codex``
in ``exec --json`` mode, read as ``@openai/codex-sdk`` reads it (every line JSON, the thread
resumed turn after turn, ``turn.failed`` and a non-zero exit are failures), each outcome
checked against what the scenario must look like on this wire."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

from stuntset import scenarios
from stuntset._demo_rows import DemoRow
from stuntset.doubles.cli import install_cli
from stuntset.script import Script, Stall

__all__ = ["codex_rows"]

#: The outcome each scenario must have on the codex exec wire.
EXPECTED = {
    "spawn_missing": "not found",
    "auth_expired_mid_run": "turn.failed",
    "rate_limited": "turn.failed, then completed",
    # the model stream breaks: codex retries, and the retry meets the double's 500
    "stream_cut": "turn.failed",
    "malformed_json": "turn.failed",
    "garbage_bytes": "turn.failed",
    # the model's out-of-order content is ignored
    "out_of_order": "completed",
    "crash_mid_turn": "turn.failed",
    "stuck": "killed by the client",
    "multi_turn": "completed, then completed, then completed",
}


def _turn(path: str, thread_id: str | None, stall: bool, directory: str) -> tuple[str, int, str]:
    """One ``exec`` turn: (outcome, events, thread id)."""
    argv = [path, "exec", "--experimental-json", "--skip-git-repo-check"]
    if thread_id:
        argv += ["resume", thread_id]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=directory,
        # a CODEX_HOME of its own: no config.toml of the machine's changes the fake
        env={**os.environ, "CODEX_HOME": f"{directory}/codex-home"},
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"demo prompt")
    proc.stdin.close()
    events: list[str] = []
    outcome = ""
    for raw in proc.stdout:
        try:
            event = json.loads(raw)
        except ValueError:
            outcome = "unparseable line"
            break
        events.append(event["type"])
        if event["type"] == "thread.started":
            thread_id = event["thread_id"]
        if stall and event["type"] == "item.completed":
            proc.kill()
            outcome = "killed by the client"
            break
    proc.stdout.close()
    code = proc.wait(timeout=30)
    if outcome == "unparseable line":
        outcome += f", exit {code}"
    elif not outcome:
        if "turn.failed" in events:
            outcome = "turn.failed"
        elif code != 0:
            outcome = f"exit {code}"
        else:
            outcome = "completed"
            if events[-1] != "turn.completed":
                outcome += ", then an item after turn.completed"
    return outcome, len(events), thread_id or ""


def _play(name: str, script: Script, directory: str) -> DemoRow:
    cli = install_cli("codex", script, bin_dir=directory, time_scale=0.0)
    if not cli.spawnable:
        return _row(name, 0, 0, "not found")
    parts: list[str] = []
    total = 0
    thread_id: str | None = None
    # one exec per scripted turn, unless one exec used more (codex retries a 5xx: the retry
    # takes the next turn)
    for turn in script.turns:
        stall = any(isinstance(step, Stall) for step in turn.steps)
        for _ in range(turn.times):
            if not cli.unused_turns():
                break
            outcome, count, thread_id = _turn(str(cli.path), thread_id, stall, directory)
            parts.append(outcome)
            total += count
    return _row(name, len(parts), total, ", then ".join(parts))


def _row(name: str, runs: int, events: int, outcome: str) -> DemoRow:
    expected = EXPECTED.get(name, "completed")
    ok = outcome == expected
    return DemoRow(
        "codex exec", name, runs, events, outcome, ok, "" if ok else f"expected {expected!r}"
    )


def codex_rows() -> list[DemoRow]:
    """One row per catalog scenario, through the fake ``codex``."""
    with tempfile.TemporaryDirectory(prefix="stuntset-demo-codex-") as directory:
        return [_play(entry.name, entry.build(), directory) for entry in scenarios.all()]
