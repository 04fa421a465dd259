"""Case: the fake ``codex``, spawn to ``turn.completed`` of a 20-event ``exec --json`` turn,
against a naive Python script printing 20 JSON lines (the budget: no slower) and the
physical floor (``python -I -S`` writing 20 pre-encoded lines). The app-server handshake
(initialize, thread/start, turn/start → turn/completed) is reported beside them."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from bench.cases._spawn import anchors, cleanup, spawn, verdict
from bench.runner import Case, Variant
from stuntset.doubles.cli import install_cli
from stuntset.script import Script, Step, Text, ToolCall, ToolResult, Turn, Usage

#: ``exec --json`` output of this turn is exactly 20 lines: thread.started, turn.started,
#: 5 commands (started + completed), 7 agent messages, turn.completed.
STEPS: list[Step] = []
for _i in range(5):
    STEPS += [
        Text(f"step {_i}"),
        ToolCall("bash", {"command": f"echo {_i}"}),
        ToolResult(f"{_i}\n"),
    ]
STEPS += [Text("almost"), Text("done"), Usage(10, 12)]
ARGS = ["exec", "--json", "--skip-git-repo-check", "hi"]

APP_SERVER = [
    {
        "id": "1",
        "method": "initialize",
        "params": {"clientInfo": {"name": "bench", "title": "Bench", "version": "0"}},
    },
    {"method": "initialized"},
    {"id": "2", "method": "thread/start", "params": {}},
]


def _app_server(path: str) -> None:
    """initialize + thread/start, then turn/start once the thread id is known."""
    proc = subprocess.Popen(
        [path, "app-server", "--listen", "stdio://"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in APP_SERVER))
    proc.stdin.flush()
    for line in proc.stdout:
        message = json.loads(line)
        if message.get("id") == "2":
            turn = {
                "id": "3",
                "method": "turn/start",
                "params": {
                    "threadId": message["result"]["thread"]["id"],
                    "input": [{"type": "text", "text": "hi"}],
                },
            }
            proc.stdin.write(json.dumps(turn).encode() + b"\n")
            proc.stdin.close()
        elif message.get("method") == "turn/completed":
            break
    proc.stdout.close()
    proc.wait()


def codex_spawn() -> Case:
    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-codex-"))
    script = Script.of(Turn(steps=tuple(STEPS), times=10**9), name="bench")
    cli = install_cli("codex", script, bin_dir=directory / "bin")
    check = subprocess.run([str(cli.path), *ARGS], capture_output=True, check=True, cwd=directory)
    assert len(check.stdout.splitlines()) == 20, check.stdout
    path = str(cli.path)

    return Case(
        name="codex_spawn",
        title="fake codex: spawn → turn.completed of a 20-event exec --json turn",
        variants=[
            Variant("fake codex exec --json", lambda: spawn([path, *ARGS], b"", b"turn.completed")),
            Variant("fake codex app-server turn", lambda: _app_server(path)),
            *anchors(directory, "item.completed", "turn.completed", b"turn.completed"),
        ],
        budget="≤ 1.0× the naive script; reported against the -I -S floor",
        verdict=verdict("fake codex exec --json"),
        calls_per_round=10,
        rounds=7,
        close=cleanup(cli.uninstall, directory),
    )
