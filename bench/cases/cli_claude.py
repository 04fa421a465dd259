"""Case: the fake ``claude``, spawn to ``result`` of a 20-event turn, against a naive Python
script printing 20 JSON lines (the budget: no slower) and the physical floor (``python -I -S``
writing 20 pre-encoded lines)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.runner import Case, Result, Variant, ratio_line
from stuntset.doubles.cli import install_cli
from stuntset.script import Script, Text, Turn, Usage

#: ``--include-partial-messages`` output of this turn is exactly 20 lines: init, message_start,
#: content_block_start, 12 deltas, assistant, content_block_stop, message_delta, message_stop,
#: result.
TEXT = "".join(f"w{i} " for i in range(12)).rstrip()
ARGS = [
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--include-partial-messages",
]
PROMPT = b'{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null}\n'
INIT = b'{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}\n'

NAIVE = """import json
for i in range(19):
    print(json.dumps({"type": "stream_event", "i": i, "text": "hello world"}))
print(json.dumps({"type": "result", "subtype": "success"}))
"""


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


def claude_spawn() -> Case:
    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-claude-"))
    script = Script.of(Turn(steps=(Text(TEXT), Usage(10, 12)), times=10**9), name="bench")
    cli = install_cli("claude", script, bin_dir=directory / "bin")
    check = subprocess.run([str(cli.path), *ARGS], input=PROMPT, capture_output=True, check=True)
    assert len(check.stdout.splitlines()) == 20, check.stdout
    naive = directory / "naive.py"
    naive.write_text(NAIVE)
    floor_lines = (
        b"".join(json.dumps({"type": "stream_event", "i": i}).encode() + b"\n" for i in range(19))
        + b'{"type":"result"}\n'
    )
    floor = directory / "floor.py"
    floor.write_text(f"import sys\nsys.stdout.buffer.write({floor_lines!r})\n")
    python = sys.executable

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        ratios = ratio_line(results, "fake claude")
        return ratios["naive python"] <= 1.0, (
            f"{ratios['naive python']:.2f}× naive, {ratios['python -I -S floor']:.2f}× floor"
        )

    def close() -> None:
        cli.uninstall()
        for path in directory.rglob("*"):
            if path.is_file():
                path.unlink()

    return Case(
        name="claude_spawn",
        title="fake claude: spawn → result of a 20-event stream-json turn",
        variants=[
            Variant("fake claude", lambda: _spawn([str(cli.path), *ARGS], PROMPT, b'"result"')),
            Variant(
                "fake claude + initialize",
                lambda: _spawn([str(cli.path), *ARGS], INIT + PROMPT, b'"type":"result"'),
            ),
            Variant("naive python", lambda: _spawn([python, str(naive)], b"", b'"result"')),
            Variant(
                "python -I -S floor",
                lambda: _spawn([python, "-I", "-S", str(floor)], b"", b'"result"'),
            ),
        ],
        budget="≤ 1.0× the naive script; reported against the -I -S floor",
        verdict=verdict,
        calls_per_round=10,
        rounds=7,
        close=close,
    )
