"""The fake claude meets stdin lines the real CLI meets (issue 33): arrays nested thousands
deep, lone surrogate escapes (Python writes them for file names that are not UTF-8), JSON that
is not an object, numbers longer than int() takes. It answers as the real CLI does (a parse
error, exit 1; a skipped line; a normal turn) and never fails inside (exit 70)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import install_cli

ARGV = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]


def user(content: str) -> str:
    return '{"type":"user","message":{"role":"user","content":' + content + "}}"


def nested(depth: int, open_: str, close: str) -> str:
    return open_ * depth + close * depth


#: (name, stdin line, exit status, what stderr must say or "" for nothing)
CASES = [
    *(
        (f"{kind} nested {depth} deep", user(nested(depth, o, c)), 1, "Error parsing")
        for depth in (3_000, 100_000)
        for kind, o, c in (("arrays", "[", "]"), ("objects", '{"a":', "}"))
    ),
    *(
        (f"a lone surrogate {s!r} in the prompt", user(json.dumps(f"hi {s} there")), 0, "")
        for s in ("\ud800", "\udfff", "\udc80x")
    ),
    *(
        (f"JSON that is not an object: {v}", v, 0, "")
        for v in ("[1,2,3]", "42", '"text"', "null", "true")
    ),
    ("a 5,000-digit number", user('"x", "n": ' + "9" * 5000), 0, ""),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "line", "status", "said"), CASES, ids=[c[0] for c in CASES])
def test_odd_stdin_is_answered_as_the_real_cli_does(
    tmp_path: Path, name: str, line: str, status: int, said: str
) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    done = subprocess.run(
        [str(cli.path), *ARGV], input=(line + "\n").encode(), capture_output=True, timeout=60
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert "internal error" not in stderr, stderr
    assert done.returncode == status, stderr
    assert said in stderr
    # what it wrote is UTF-8 JSON, one object a line (a surrogate written as its escape)
    for out in done.stdout.splitlines():
        assert isinstance(json.loads(out.decode("utf-8")), dict)
    if "surrogate" in name:  # journaled as its escape, read back as the character
        (prompt,) = cli.invocations[0].user_messages
        assert json.loads(line)["message"]["content"] == prompt["message"]["content"]
