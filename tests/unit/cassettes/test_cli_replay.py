"""Replaying a CLI transcript: the fake executable plays recorded runs back to the client,
re-addressing the ids the client chose, localising the working directory, binding each
process to its own recording by what it sends, and failing loudly (and at ``verify()``) on
anything the recording does not have. Driven here as a plain subprocess, line by line; the
real SDKs are in ``test_cli_replay_sdks``."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stuntset.cassettes import (
    Cassette,
    CassetteError,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    write_cassette,
)
from stuntset.cassettes.cli_replay import ReplayedCli, _scale, install_cli_replay, timeline
from stuntset.cassettes.replay import CassetteMismatch, UnusedInteractions
from stuntset.errors import UsageError


def run_of(
    steps: list[tuple[str, float, Any]],
    *,
    ident: str = "i-1",
    argv: tuple[str, ...] = ("--json",),
    status: int = 0,
    cwd: str = "/recorded/project",
    stdin_closed: float | None = None,
) -> Interaction:
    """A recorded run of ``tool``: ``("in" | "out" | "err", t, message-or-text)`` steps."""

    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)

    body: dict[str, Any] = {
        "argv": list(argv),
        "cwd": cwd,
        "stdin": [{"t": t, "data": text(v)} for kind, t, v in steps if kind == "in"],
    }
    if stdin_closed is not None:
        body["stdin_closed"] = stdin_closed
    frames = [
        Frame(t=t, data=text(v).removesuffix("<cut>"), event="partial" if "<cut>" in v else None)
        if isinstance(v, str)
        else Frame(t=t, data=text(v))
        for kind, t, v in steps
        if kind == "out"
    ]
    stderr = [{"t": t, "data": v} for kind, t, v in steps if kind == "err"]
    return Interaction(
        id=ident,
        wire="tool-cli",
        request=RecordedRequest(method="EXEC", path="tool", body=body),
        response=RecordedResponse(
            status=status, frames=frames, body={"stderr": stderr} if stderr else None
        ),
    )


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Any]:
    installed: list[ReplayedCli] = []

    def make(*runs: Interaction, **options: Any) -> ReplayedCli:
        path = tmp_path / "tool.jsonl"
        write_cassette(path, Cassette(interactions=list(runs)))
        options.setdefault("stdin_timeout", 5.0)
        replayed = install_cli_replay("tool", path, bin_dir=tmp_path / "bin", **options)
        installed.append(replayed)
        return replayed

    yield make
    for replayed in installed:
        replayed.uninstall()


class Process:
    """The replaying executable, driven a line at a time."""

    def __init__(self, cli: ReplayedCli, *argv: str, cwd: Path) -> None:
        self.popen = subprocess.Popen(
            [str(cli.path), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )

    def send(self, message: Any) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write((json.dumps(message) + "\n").encode())
        self.popen.stdin.flush()

    def receive(self) -> Any:
        assert self.popen.stdout is not None
        return json.loads(self.popen.stdout.readline())

    def finish(self) -> tuple[bytes, str, int]:
        out, err = self.popen.communicate()
        return out, err.decode(), self.popen.returncode


INIT = {"type": "control_request", "request_id": "req_1_aaaa", "request": {"subtype": "initialize"}}
INIT_OK = {
    "type": "control_response",
    "response": {"subtype": "success", "request_id": "req_1_aaaa", "response": {}},
}


def test_a_run_is_played_back_with_the_clients_own_request_ids(
    install: Any, tmp_path: Path
) -> None:
    cli = install(
        run_of(
            [
                ("in", 0.01, INIT),
                ("out", 0.02, INIT_OK),
                ("in", 0.03, {"jsonrpc": "2.0", "id": 7, "method": "thread/start", "params": {}}),
                ("out", 0.04, {"jsonrpc": "2.0", "method": "thread/started", "params": {}}),
                ("out", 0.05, {"jsonrpc": "2.0", "id": 7, "result": {"thread": "t-1"}}),
                ("out", 0.06, {"id": 99, "method": "approve", "params": {}}),
                ("in", 0.07, {"id": 99, "result": {"decision": "accept"}}),
                ("out", 0.08, {"type": "result"}),
            ],
            stdin_closed=0.09,
        )
    )
    process = Process(cli, "--json", cwd=tmp_path)
    process.send({**INIT, "request_id": "req_1_bbbb"})
    answer = process.receive()
    assert answer["response"]["request_id"] == "req_1_bbbb"
    process.send({"jsonrpc": "2.0", "id": "x-1", "method": "thread/start", "params": {}})
    assert process.receive()["method"] == "thread/started"
    assert process.receive() == {"jsonrpc": "2.0", "id": "x-1", "result": {"thread": "t-1"}}
    # an id the process chose is replayed as recorded, and the client answers it as such
    assert process.receive() == {"id": 99, "method": "approve", "params": {}}
    process.send({"id": 99, "result": {"decision": "accept"}})
    assert process.receive() == {"type": "result"}
    assert process.finish() == (b"", "", 0)
    cli.verify()
    (invocation,) = cli.invocations
    assert [m.get("type") or m.get("method") for m in invocation.stdout][:2] == [
        "control_response",
        "thread/started",
    ]
    assert invocation.exit_code == 0


def test_a_different_line_from_the_client_is_a_mismatch_naming_the_field(
    install: Any, tmp_path: Path
) -> None:
    user = {"type": "user", "message": {"role": "user", "content": "read a.txt"}}
    cli = install(run_of([("in", 0.0, user), ("out", 0.1, {"type": "result"})]))
    process = Process(cli, "--json", cwd=tmp_path)
    process.send({"type": "user", "message": {"role": "user", "content": "read b.txt"}})
    out, err, status = process.finish()
    assert (out, status) == (b"", 1)
    assert err.startswith("stuntset replay: ")
    with pytest.raises(CassetteMismatch) as raised:
        cli.verify()
    assert str(raised.value) == (
        f"fake tool replaying {tmp_path / 'tool.jsonl'} i-1: stdin line 1 differs from the "
        f'recording:\n  message.content: recorded "read a.txt", got "read b.txt"'
    )


def test_arguments_no_recording_has_fail_with_the_nearest_one(install: Any, tmp_path: Path) -> None:
    cli = install(run_of([("out", 0.0, {"type": "result"})], argv=("--json", "--model", "a")))
    out, err, status = Process(cli, "--json", "--model", "b", cwd=tmp_path).finish()
    assert (out, status) == (b"", 1)
    assert err.startswith("stuntset replay: ")
    with pytest.raises(CassetteMismatch, match="no recorded tool invocation") as raised:
        cli.verify()
    message = str(raised.value)
    assert "nearest i-1: ['--json', '--model', 'a']" in message
    assert "not recorded: ['b']; recorded but missing: ['a']" in message


def test_ignored_flags_may_take_other_values(install: Any, tmp_path: Path) -> None:
    cli = install(
        run_of([("out", 0.0, {"ok": True})], argv=("--json", "--config=/tmp/a", "--cd", "/x")),
        ignore_args=["--config", "--cd"],
    )
    out, _, status = Process(cli, "--json", "--config=/tmp/b", "--cd", "/y", cwd=tmp_path).finish()
    assert (json.loads(out), status) == ({"ok": True}, 0)
    cli.verify()


def test_unused_recordings_fail_verify_unless_allowed_by_id(install: Any, tmp_path: Path) -> None:
    cli = install(
        run_of([("out", 0.0, {"n": 1})], ident="i-1"),
        run_of([("out", 0.0, {"n": 2})], ident="i-2"),
    )
    out, _, _ = Process(cli, "--json", cwd=tmp_path).finish()
    assert json.loads(out) == {"n": 1}
    with pytest.raises(UnusedInteractions, match=r"1 recorded tool invocation\(s\) were never"):
        cli.verify()
    cli.verify(allow_unused=["i-2"])
    cli.verify(allow_unused=True)


def test_processes_bind_to_their_own_recording_by_what_they_send(
    install: Any, tmp_path: Path
) -> None:
    """Two sessions that start alike (same argv, same first answer) are told apart by the
    prompt, whichever was spawned first: the second process, asking what was recorded
    first, gets that recording."""

    def session(ident: str, prompt: str) -> Interaction:
        return run_of(
            [
                ("in", 0.0, INIT),
                ("out", 0.1, INIT_OK),
                ("in", 0.2, {"type": "user", "content": prompt}),
                ("out", 0.3, {"type": "result", "answer": prompt.upper()}),
            ],
            ident=ident,
        )

    cli = install(session("i-1", "alpha"), session("i-2", "beta"))
    first = Process(cli, "--json", cwd=tmp_path)
    second = Process(cli, "--json", cwd=tmp_path)
    for process in (first, second):
        process.send(INIT)
        assert process.receive()["type"] == "control_response"
    second.send({"type": "user", "content": "alpha"})
    first.send({"type": "user", "content": "beta"})
    assert first.receive()["answer"] == "BETA"
    assert second.receive()["answer"] == "ALPHA"
    assert first.finish()[2] == second.finish()[2] == 0
    cli.verify()
    replaying = [[e for e in i.events if e["event"] == "replaying"] for i in cli.invocations]
    assert sorted(e[0]["interaction"] for e in replaying) == ["i-1", "i-2"]


def test_alike_sessions_are_taken_in_turn_and_a_third_finds_none(
    install: Any, tmp_path: Path
) -> None:
    cli = install(
        run_of([("out", 0.0, {"n": 1})], ident="i-1"),
        run_of([("out", 0.0, {"n": 1})], ident="i-2"),
    )
    outs = [Process(cli, "--json", cwd=tmp_path).finish() for _ in range(3)]
    assert [status for _, _, status in outs] == [0, 0, 1]
    assert "all 2 recorded invocation(s) were already replayed" in outs[2][1]
    with pytest.raises(CassetteMismatch):
        cli.verify()


def test_a_cut_line_stderr_and_the_exit_status_come_back_as_recorded(
    install: Any, tmp_path: Path
) -> None:
    cli = install(
        run_of(
            [
                ("out", 0.0, {"type": "assistant"}),
                ("err", 0.01, "warning: something\n"),
                ("out", 0.02, '{"type":"assist<cut>'),
            ],
            status=3,
        )
    )
    out, err, status = Process(cli, "--json", cwd=tmp_path).finish()
    assert out == b'{"type": "assistant"}\n{"type":"assist'
    assert (err, status) == ("warning: something\n", 3)
    cli.verify()


def test_a_run_the_client_killed_waits_to_be_killed_again(install: Any, tmp_path: Path) -> None:
    cli = install(run_of([("out", 0.0, {"type": "system"})], status=-signal.SIGTERM))
    process = Process(cli, "--json", cwd=tmp_path)
    assert process.receive() == {"type": "system"}
    assert process.popen.poll() is None  # still running: the recorded one was ended for it
    process.popen.terminate()
    assert process.finish()[2] == -signal.SIGTERM
    cli.verify()


def test_a_killed_run_whose_client_closes_stdin_instead_dies_by_that_signal_itself(
    install: Any, tmp_path: Path
) -> None:
    cli = install(run_of([("out", 0.0, {"type": "system"})], status=-signal.SIGTERM))
    process = Process(cli, "--json", cwd=tmp_path)
    assert process.receive() == {"type": "system"}
    process.send({"type": "user"})  # read and passed over while it waits for the signal
    out, _, status = process.finish()  # closes stdin: no signal is coming
    assert (out, status) == (b"", -signal.SIGTERM)
    (invocation,) = cli.invocations
    assert invocation.events[-1]["event"] == "exit"
    assert invocation.events[-1]["code"] == -signal.SIGTERM
    cli.verify()


def test_recordings_that_part_on_reading_or_writing_bind_to_the_first(
    install: Any, tmp_path: Path
) -> None:
    cli = install(
        run_of([("out", 0.0, {"a": 1}), ("out", 0.01, {"b": 1})], ident="i-1"),
        run_of([("out", 0.0, {"a": 1}), ("in", 0.01, {"n": 1})], ident="i-2"),
    )
    out, _, status = Process(cli, "--json", cwd=tmp_path).finish()
    assert ([json.loads(line) for line in out.splitlines()], status) == ([{"a": 1}, {"b": 1}], 0)
    cli.verify(allow_unused=["i-2"])


def test_a_run_whose_every_match_was_taken_meanwhile_is_a_mismatch(
    install: Any, tmp_path: Path
) -> None:
    alike = [("out", 0.0, {"hello": 1}), ("in", 0.01, {"n": 1}), ("out", 0.02, {"ok": 1})]
    cli = install(run_of(alike, ident="i-1"), run_of(alike, ident="i-2"))
    waiting = Process(cli, "--json", cwd=tmp_path)
    assert waiting.receive() == {"hello": 1}  # it started with both as candidates
    for _ in range(2):  # two others take both recordings
        other = Process(cli, "--json", cwd=tmp_path)
        assert other.receive() == {"hello": 1}
        other.send({"n": 1})
        assert other.receive() == {"ok": 1}
        assert other.finish()[2] == 0
    waiting.send({"n": 1})
    _, err, status = waiting.finish()
    assert status == 1
    assert "(i-1, i-2) was already replayed by another process" in err
    with pytest.raises(CassetteMismatch, match="already replayed by another process"):
        cli.verify()


def test_the_recorded_working_directory_becomes_this_runs(install: Any, tmp_path: Path) -> None:
    recorded = "/recorded/project"
    cli = install(
        run_of(
            [
                ("in", 0.0, {"method": "thread/start", "id": 1, "params": {"cwd": recorded}}),
                ("out", 0.1, {"id": 1, "result": {"cwd": recorded, "file": recorded + "/a.py"}}),
            ],
            argv=("--cd", recorded),
        )
    )
    here = str(tmp_path)
    process = Process(cli, "--cd", here, cwd=tmp_path)
    process.send({"method": "thread/start", "id": 1, "params": {"cwd": here}})
    assert process.receive() == {"id": 1, "result": {"cwd": here, "file": here + "/a.py"}}
    assert process.finish()[2] == 0
    cli.verify()


def test_closing_stdin_early_or_late_is_a_mismatch(install: Any, tmp_path: Path) -> None:
    early = install(run_of([("in", 0.0, {"n": 1}), ("out", 0.1, {"ok": 1})]))
    out, err, status = Process(early, "--json", cwd=tmp_path).finish()  # closes at once
    assert (out, status) == (b"", 1)
    assert 'stdin line 1: the client closed stdin; the recording has {"n": 1} next' in err

    late = install(run_of([("out", 0.0, {"ok": 1})], stdin_closed=0.05))
    process = Process(late, "--json", cwd=tmp_path)
    assert process.receive() == {"ok": 1}
    process.send({"n": 2})
    _, err, status = process.finish()
    assert status == 1
    assert 'the recording\'s client closed stdin here; this one sent {"n": 2}' in err


def test_a_client_that_keeps_stdin_open_is_a_mismatch_after_the_timeout(
    install: Any, tmp_path: Path
) -> None:
    # tests real time: the replay's own stdin timeout (0.05 s)
    cli = install(run_of([("out", 0.0, {"ok": 1})], stdin_closed=0.05), stdin_timeout=0.05)
    process = Process(cli, "--json", cwd=tmp_path)
    assert process.receive() == {"ok": 1}
    assert process.popen.wait() == 1
    process.finish()
    with pytest.raises(CassetteMismatch, match=r"closed stdin here; this one kept it open 0.05 s"):
        cli.verify()


def test_a_client_that_stays_silent_is_a_mismatch_after_the_timeout(
    install: Any, tmp_path: Path
) -> None:
    cli = install(run_of([("in", 0.0, {"n": 1})]), stdin_timeout=0.05)
    process = Process(cli, "--json", cwd=tmp_path)
    assert process.popen.wait() == 1
    process.finish()
    with pytest.raises(CassetteMismatch, match=r"waited 0.05 s for the client to send"):
        cli.verify()


def test_pace_is_the_factor_on_recorded_gaps() -> None:
    assert [_scale("none", 5.0), _scale("recorded", 5.0), _scale("scaled", 0.5)] == [0, 1, 0.5]
    with pytest.raises(UsageError, match="scale must not be negative"):
        _scale("scaled", -1.0)


@pytest.mark.real_time
def test_recorded_pace_plays_the_same_lines(install: Any, tmp_path: Path) -> None:
    steps = [("out", 0.01 * n, {"n": n}) for n in range(3)]
    cli = install(run_of(steps), pace="scaled", scale=0.5)
    out, _, status = Process(cli, "--json", cwd=tmp_path).finish()
    assert [json.loads(line)["n"] for line in out.splitlines()] == [0, 1, 2]
    assert status == 0


def test_the_timeline_orders_input_before_output_at_the_same_instant() -> None:
    run = run_of([("out", 0.5, {"b": 1}), ("in", 0.5, {"a": 1})], stdin_closed=0.7)
    assert [step[0] for step in timeline(run)] == ["in", "out", "eof"]


def test_bad_cassettes_and_options_are_refused_naming_the_place(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    http = Interaction(
        id="i-1",
        wire="openai-chat",
        request=RecordedRequest(method="POST", path="/v1/chat/completions", body={}),
        response=RecordedResponse(status=200, body={}),
    )
    write_cassette(path, Cassette(interactions=[http]))
    with pytest.raises(CassetteError, match=r"http.jsonl: no tool-cli interactions to replay"):
        install_cli_replay("tool", path, bin_dir=tmp_path)
    broken = Interaction(
        id="i-4",
        wire="tool-cli",
        request=RecordedRequest(method="EXEC", path="tool", body={"argv": [], "stdin": [{}]}),
        response=RecordedResponse(status=0, frames=[]),
    )
    with pytest.raises(CassetteError, match=r"i-4: field 'request.body.stdin'\[0\]"):
        install_cli_replay("tool", Cassette(interactions=[broken]), bin_dir=tmp_path)
    fine = run_of([("out", 0.0, {"ok": 1})])
    with pytest.raises(UsageError, match="pace 'fast'"):
        install_cli_replay("tool", Cassette(interactions=[fine]), pace="fast")  # type: ignore[arg-type]


def test_a_scrubbed_credential_option_matches_whatever_value_the_client_passes(
    install: Any, tmp_path: Path
) -> None:
    """The recorder replaced the values of --token and --api-key=; the client passes its own
    real ones again at replay."""
    cli = install(
        run_of(
            [("out", 0.0, {"ok": True})],
            argv=("--json", "--token", "<scrubbed:cli-option>", "--api-key=<scrubbed:cli-option>"),
        )
    )
    out, _, status = Process(
        cli, "--json", "--token", "real-1", "--api-key=real-2", cwd=tmp_path
    ).finish()
    assert (json.loads(out), status) == ({"ok": True}, 0)
    cli.verify()
