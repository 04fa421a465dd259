"""Every command meets the committed hostile inputs (tests/corpus/hostile/) with one line
naming the place, exit 2, and no traceback."""

from __future__ import annotations

import os
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stuntset.cli import main

CORPUS = Path(__file__).parents[1] / "corpus" / "hostile"


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    argv: list[str]
    mentions: list[str]
    exit: int = 2
    stdin: str | None = None
    prepare: list[dict[str, Any]] = field(default_factory=list)


def _cases() -> list[Case]:
    cases = []
    for manifest in sorted(CORPUS.glob("*/cases.toml")):
        with manifest.open("rb") as file:
            data = tomllib.load(file)
        for raw in data.get("case", []):
            cases.append(Case(group=manifest.parent.name, **raw))
    return cases


def _fill(text: str, here: Path, tmp: Path) -> str:
    text = text.replace("{here}", str(here)).replace("{tmp}", str(tmp))
    return text.replace("{port}", _BUSY.get(tmp, "{port}"))


#: tmp folder → the port a ``busy_port`` step holds for its case (as text).
_BUSY: dict[Path, str] = {}


def _prepare(step: dict[str, Any], here: Path, tmp: Path, held: list[socket.socket]) -> None:
    kind = step["kind"]
    if kind == "busy_port":  # a port something already listens on: {port}
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.append(sock)
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        _BUSY[tmp] = str(sock.getsockname()[1])
        return
    path = Path(_fill(step["path"], here, tmp))
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling_symlink":
        path.symlink_to(_fill(step.get("target", "{tmp}/nowhere"), here, tmp))
    elif kind == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads a mode-000 file anyway")
        path.write_text(step.get("text", "{}\n"))
        path.chmod(0)
    elif kind == "repeat":
        body = step["text"] * step["times"]
        path.write_text(step.get("prefix", "") + body + step.get("suffix", ""))
    elif kind == "bytes":
        path.write_bytes(bytes.fromhex(step["hex"]))
    else:
        raise AssertionError(f"unknown prepare kind {kind!r} in the corpus")


ALL = _cases()


def test_the_corpus_covers_every_command_group() -> None:
    # derived from the command itself: a new command without hostile cases fails here
    groups = {case.group for case in ALL}
    assert set(main.commands) <= groups, f"no hostile cases for {set(main.commands) - groups}"


@pytest.mark.slow
@pytest.mark.parametrize("case", ALL, ids=[f"{c.group}: {c.name}" for c in ALL])
def test_hostile_input_is_one_line_exit_2_no_traceback(case: Case, tmp_path: Path) -> None:
    here = CORPUS / case.group
    held: list[socket.socket] = []
    try:
        for step in case.prepare:
            _prepare(step, here, tmp_path, held)
        argv = [_fill(arg, here, tmp_path) for arg in case.argv]
        stdin = None if case.stdin is None else _fill(case.stdin, here, tmp_path)
        result = CliRunner().invoke(main, argv, input=stdin)
        mentions = [_fill(mention, here, tmp_path) for mention in case.mentions]
    finally:
        for sock in held:
            sock.close()
        _BUSY.pop(tmp_path, None)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{case.name}: raised {result.exception!r}"
    )
    assert "Traceback" not in result.output
    assert result.exit_code == case.exit, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"{case.name}: expected one line on stderr, got {lines!r}"
    for mention in mentions:
        assert mention in lines[0], (lines[0], mention)
    assert "Usage:" not in result.output
