"""Run by tests/unit/test_fuzz_cli.py in a process of its own: every ``stuntset`` command,
every path argument and numeric option, fed hostile values drawn by Hypothesis (FIFOs,
folders, missing and unreadable files, non-UTF-8 bytes, JSON nested deep, numbers out of
range, nan, inf). Each run is bounded by SIGALRM (a hang is a finding, reported, and ends
this process). Prints one JSON line per finding; exits 0."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stuntset.cli import main

BOUND = 10  # seconds a command may take on a hostile value
#: Commands whose valid inputs run programs or serve: only their hostile values are drawn,
#: and an argument list that might be valid is never built for them.
_NUMERIC = (click.INT, click.FLOAT)
HOSTILE_NUMBERS = ["70000", "-1", "-99999999999999999999", "nan", "inf", "-inf", "1e308", "x", ""]
FILE_KINDS = ["missing", "dir", "fifo", "non_utf8", "deep", "empty", "unreadable", "nul"]


class Hang(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang


def leaves(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    out = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            out.extend(leaves(command, (*prefix, name)))
        else:
            out.append(((*prefix, name), command))
    return out


def make_file(kind: str, folder: Path) -> str:
    path = folder / f"input-{len(list(folder.iterdir()))}-{kind}.toml"
    if kind == "dir":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "non_utf8":
        path.write_bytes(b"\xff\xfe\x80 not utf-8 \xc3\x28\n")
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "unreadable":
        path.write_text("{}\n")
        path.chmod(0)
    elif kind == "nul":
        path.write_bytes(b"\x00" * 64)
    return str(path)


def _path_like(param: click.Parameter) -> bool:
    return isinstance(param.type, click.Path | click.File) or (
        isinstance(param, click.Argument) and param.type == click.STRING
    )


#: ``cli`` forwards its arguments to the fake CLIs (their own fuzz is their stdin's); these
#: serve or run real programs when an option's value happens to be valid, so only their
#: path arguments are drawn (never their options).
SKIP_GROUPS = {"cli"}
LONG_RUNNING = {
    ("serve",), ("daemon",), ("console",), ("mcp", "serve"), ("cassettes", "serve"),
    ("record",), ("drift",), ("matrix",), ("demo",), ("eval",),
}  # fmt: skip
COMMANDS = [(w, c) for w, c in leaves(main) if w[0] not in SKIP_GROUPS]


def argv_for(
    words: tuple[str, ...], command: click.Command, folder: Path, data: Any
) -> list[str] | None:
    argv = list(words)
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    options = [
        p for p in command.params if isinstance(p, click.Option) and not p.is_flag and p.opts
    ]
    for argument in arguments:  # every argument hostile: nothing valid ever runs
        if _path_like(argument):
            argv.append(make_file(data.draw(st.sampled_from(FILE_KINDS)), folder))
        else:
            argv.append(data.draw(st.sampled_from(HOSTILE_NUMBERS)))
    candidates = [o for o in options if o.type in _NUMERIC or isinstance(o.type, click.Path)]
    if words in LONG_RUNNING:
        candidates = []
    if not arguments and not candidates:
        return None
    if candidates:
        option = data.draw(st.sampled_from(candidates))
        if option.type in _NUMERIC:
            value = data.draw(st.sampled_from(HOSTILE_NUMBERS))
        else:
            value = make_file(data.draw(st.sampled_from(FILE_KINDS)), folder)
        argv += [option.opts[-1], value]
    elif not arguments:
        return None
    return argv


findings: list[dict[str, Any]] = []
ran: list[int] = [0]


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")),
    suppress_health_check=list(HealthCheck),
    deadline=None,
    derandomize=True,
    database=None,
)
@given(data=st.data())
def run_one(data: Any) -> None:
    words, command = data.draw(st.sampled_from(COMMANDS))
    with tempfile.TemporaryDirectory() as tmp:
        argv = argv_for(words, command, Path(tmp), data)
        if argv is None:
            return
        ran[0] += 1
        signal.alarm(BOUND)
        try:
            result = CliRunner().invoke(main, argv)
        except Hang:
            findings.append({"argv": argv, "problem": f"no answer within {BOUND} s"})
            print(json.dumps(findings[-1]), flush=True)
            os._exit(0)  # threads a hung command started may linger: end here
        finally:
            signal.alarm(0)
            for path in Path(tmp).iterdir():
                if not path.is_symlink() and not path.is_dir():
                    path.chmod(0o600)
        problem = None
        fifo = any("-fifo." in a for a in argv)
        if isinstance(result.exception, Hang):  # caught by the runner: valid input serves
            problem = f"no answer within {BOUND} s on a FIFO" if fifo else None
        elif result.exception is not None and not isinstance(result.exception, SystemExit):
            problem = f"raised {type(result.exception).__name__}: {result.exception}"[:300]
        elif "Traceback" in result.output:
            problem = "printed a traceback"
        elif result.exit_code not in (0, 1, 2):
            problem = f"exit {result.exit_code}"
        elif result.exit_code == 2 and len(result.stderr.splitlines()) != 1:
            problem = f"exit 2 with {len(result.stderr.splitlines())} stderr lines"
        if problem is not None:
            argv = [a.replace(tmp, "{tmp}") for a in argv]
            finding = {"argv": argv, "problem": problem}
            if finding not in findings:
                findings.append(finding)
                print(json.dumps(finding), flush=True)


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, _on_alarm)
    run_one()
    print(json.dumps({"ran": ran[0], "commands": len(COMMANDS)}), flush=True)
    sys.exit(0)
