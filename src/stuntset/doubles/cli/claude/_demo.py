"""The demo section of the Claude Code double: every catalog scenario through the fake
``claude``, driven by a minimal stream-json client (no SDK needed), each outcome checked
against what the scenario must look like on this wire."""

from __future__ import annotations

import tempfile

from stuntset import scenarios
from stuntset._demo_rows import DemoRow
from stuntset.doubles.cli import install_cli
from stuntset.doubles.cli.claude import retried
from stuntset.doubles.cli.claude._client import StreamJsonClient
from stuntset.script import ApprovalRequest, InputRequest, Script, Stall, Turn

__all__ = ["claude_rows"]

#: The outcome each scenario must have on the claude wire.
EXPECTED = {
    "spawn_missing": "not found",
    # the CLI retries the 401, and the retry meets the model double's 500 (no turn left)
    "auth_expired_mid_run": "api_retry, then error result (api_error)",
    "rate_limited": "api_retry, then completed",
    "overloaded": "api_retry, then completed",
    # the model stream breaks: the CLI asks again (to resume, or silently) and meets the 500
    "stream_cut": "error result (api_error)",
    "malformed_json": "error result (api_error)",
    "garbage_bytes": "error result (api_error)",
    "out_of_order": "error result (api_error)",
    "crash_mid_turn": "api_retry, then error result (api_error)",
    "stuck": "interrupted",
}


def _play(name: str, script: Script, directory: str) -> DemoRow:
    cli = install_cli("claude", script, bin_dir=directory, time_scale=0.0)
    if not cli.spawnable:
        return _row(name, 0, 0, "not found")
    client = StreamJsonClient(str(cli.path))
    client.send(
        {"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}
    )
    client.read()
    parts: list[str] = []
    runs = results = 0
    # one prompt per scripted turn, but a turn that fails a request the CLI retries by itself
    # hands that prompt on to the next turn (the retried request takes it)
    prompts: list[list[tuple[int, Turn]]] = []
    for index, turn in enumerate(script.turns):
        for _ in range(turn.times):
            if prompts and retried(prompts[-1][-1][1]):
                prompts[-1].append((index, turn))
            else:
                prompts.append([(index, turn)])
    retries_seen = 0
    for number, group in enumerate(prompts):
        steps = [step for _, turn in group for step in turn.steps]
        stall = any(isinstance(s, Stall) for s in steps)
        asks = stall or any(isinstance(s, ApprovalRequest | InputRequest) for s in steps)
        runs += 1
        last = number == len(prompts) - 1 and not asks
        result = client.turn(f"prompt {group[0][0]}", stall=stall, last=last)
        retries = sum(m.get("subtype") == "api_retry" for m in client.messages)
        parts.extend(["api_retry"] * (retries - retries_seen))
        retries_seen = retries
        if result is None:
            break
        results += 1
        if not result["is_error"]:
            parts.append("completed")
        elif result.get("terminal_reason") == "aborted_streaming":
            parts.append("interrupted")
        else:
            parts.append(f"error result ({result.get('terminal_reason')})")
    code = client.close()
    kinds = [m["type"] for m in client.messages]
    last_result = max((i for i, kind in enumerate(kinds) if kind == "result"), default=-1)
    if results and "assistant" in kinds[last_result + 1 :]:
        parts[-1] += ", then content after the result"
    outcome = ", then ".join(parts)
    if not parts:
        outcome = f"{client.bad[0]}, exit {code}" if client.bad else f"exit {code}"
        if client.bad == ["cut line"]:
            outcome = f"exit {code}, cut line"
    return _row(name, runs, len(client.messages), outcome)


def _row(name: str, runs: int, events: int, outcome: str) -> DemoRow:
    expected = EXPECTED.get(
        name, "completed" if name != "multi_turn" else "completed, then completed, then completed"
    )
    ok = outcome == expected
    return DemoRow(
        "claude cli", name, runs, events, outcome, ok, "" if ok else f"expected {expected!r}"
    )


def claude_rows() -> list[DemoRow]:
    """One row per catalog scenario, through the fake ``claude``."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="stuntset-demo-claude-") as directory:
        for entry in scenarios.all():
            rows.append(_play(entry.name, entry.build(), directory))
    return rows
