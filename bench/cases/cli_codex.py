"""Case: the fake ``codex``, spawn to ``turn.completed`` of a 20-event ``exec --json`` turn,
against a naive Python script printing 20 JSON lines (the budget: no slower) and the
physical floor (``python -I -S`` writing 20 pre-encoded lines). The app-server handshake
(initialize, thread/start, turn/start → turn/completed) is reported beside them."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.runner import Case, Result, Variant, ratio_line
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

NAIVE = """import json
for i in range(19):
    print(json.dumps({"type": "item.completed", "i": i, "text": "hello world"}))
print(json.dumps({"type": "turn.completed", "usage": {}}))
"""

APP_SERVER = [
    {
        "id": "1",
        "method": "initialize",
        "params": {"clientInfo": {"name": "bench", "title": "Bench", "version": "0"}},
    },
    {"method": "initialized"},
    {"id": "2", "method": "thread/start", "params": {}},
]


def _spawn(argv: list[str], stdin: bytes, last: bytes) -> None:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    lines = 0
    for line in proc.stdout:
        lines += 1
        if last in line:
            break
    proc.stdout.close()
    proc.wait()
    assert lines >= 20, lines


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
    naive = directory / "naive.py"
    naive.write_text(NAIVE)
    floor_lines = (
        b"".join(json.dumps({"type": "item.completed", "i": i}).encode() + b"\n" for i in range(19))
        + b'{"type":"turn.completed"}\n'
    )
    floor = directory / "floor.py"
    floor.write_text(f"import sys\nsys.stdout.buffer.write({floor_lines!r})\n")
    python = sys.executable
    path = str(cli.path)

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        ratios = ratio_line(results, "fake codex exec --json")
        return ratios["naive python"] <= 1.0, (
            f"{ratios['naive python']:.2f}× naive, {ratios['python -I -S floor']:.2f}× floor"
        )

    def close() -> None:
        cli.uninstall()
        for item in directory.rglob("*"):
            if item.is_file():
                item.unlink()

    return Case(
        name="codex_spawn",
        title="fake codex: spawn → turn.completed of a 20-event exec --json turn",
        variants=[
            Variant(
                "fake codex exec --json", lambda: _spawn([path, *ARGS], b"", b"turn.completed")
            ),
            Variant("fake codex app-server turn", lambda: _app_server(path)),
            Variant("naive python", lambda: _spawn([python, str(naive)], b"", b"turn.completed")),
            Variant(
                "python -I -S floor",
                lambda: _spawn([python, "-I", "-S", str(floor)], b"", b"turn.completed"),
            ),
        ],
        budget="≤ 1.0× the naive script; reported against the -I -S floor",
        verdict=verdict,
        calls_per_round=10,
        rounds=7,
        close=close,
    )
