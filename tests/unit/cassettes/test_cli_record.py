"""Recording a CLI transcript: the wrapper tees a (here: fake) claude driven by the real,
unmodified claude-agent-sdk, and the cassette holds both directions with timing."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cassettes import load_cassette, verify_tree
from stuntset.cassettes.cli_record import install_cli_recorder, main
from stuntset.cli import main as command
from stuntset.doubles.cli import install_cli

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")


@pytest.mark.real_time
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_claude_session_is_recorded_through_the_tee(tmp_path: Path) -> None:
    real = install_cli(
        "claude", scenarios.build("tool_use"), bin_dir=tmp_path / "real", time_scale=0
    )
    cassette = tmp_path / "cassettes" / "claude.jsonl"
    wrapper = install_cli_recorder("claude", real.path, cassette, bin_dir=tmp_path / "bin")
    options = claude_agent_sdk.ClaudeAgentOptions(cli_path=str(wrapper))
    seen = [m async for m in claude_agent_sdk.query(prompt="read a.txt", options=options)]
    assert type(seen[-1]).__name__ == "ResultMessage"
    await anyio.lowlevel.checkpoint()

    recorded = load_cassette(cassette)
    (interaction,) = recorded.interactions
    assert (interaction.id, interaction.wire, interaction.response.status) == (
        "i-1",
        "claude-cli",
        0,
    )
    assert "--output-format" in interaction.request.body["argv"]
    stdin = [json.loads(line["data"]) for line in interaction.request.body["stdin"]]
    assert stdin[0]["type"] == "control_request"
    assert stdin[0]["request"]["subtype"] == "initialize"
    assert any(message["type"] == "user" for message in stdin)
    frames = interaction.response.frames
    assert frames is not None
    kinds = [json.loads(frame.data)["type"] for frame in frames]
    assert kinds[:2] == ["control_response", "system"]
    assert kinds.index("result") > kinds.index("assistant")
    assert [frame.t for frame in frames] == sorted(frame.t for frame in frames)
    assert verify_tree(cassette.parent) == (1, [])
    assert len(real.invocations) == 1


def test_the_tee_keeps_argv_cwd_stdin_and_its_close_stderr_a_cut_line_and_the_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder's own process, run in this one: a "real" program that shouts its input,
    warns on stderr, ends without a newline and exits 3."""
    real = tmp_path / "real"
    real.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "for line in sys.stdin:\n"
        "    sys.stdout.write(line.upper()); sys.stdout.flush()\n"
        "sys.stderr.write('careful\\n')\n"
        "sys.stdout.write('half')\n"
        "sys.exit(3)\n"
    )
    real.chmod(0o755)
    streams = {
        name: io.TextIOWrapper(io.BytesIO(data)) for name, data in
        (("stdin", b"one\ntwo\n"), ("stdout", b""), ("stderr", b""))
    }  # fmt: skip
    for name, stream in streams.items():
        monkeypatch.setattr(sys, name, stream)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    cassette = tmp_path / "run.jsonl"
    try:
        status = main("shout", str(real), str(cassette), ["--loud"])
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert status == 3
    assert streams["stdout"].buffer.getvalue() == b"ONE\nTWO\nhalf"  # passed through as is
    assert streams["stderr"].buffer.getvalue() == b"careful\n"
    (run,) = load_cassette(cassette).interactions
    body = run.request.body
    assert (run.wire, body["argv"], body["cwd"]) == ("shout-cli", ["--loud"], os.getcwd())
    assert [line["data"] for line in body["stdin"]] == ["one", "two"]
    assert body["stdin_closed"] >= body["stdin"][-1]["t"]
    frames = run.response.frames
    assert frames is not None
    assert [(f.data, f.event) for f in frames] == [
        ("ONE", None),
        ("TWO", None),
        ("half", "partial"),
    ]
    assert [line["data"] for line in run.response.body["stderr"]] == ["careful\n"]
    assert run.response.status == 3
    main("shout", str(real), str(cassette), [])  # a second run appends, numbered
    assert [i.id for i in load_cassette(cassette).interactions] == ["i-1", "i-2"]


def test_the_tee_command_writes_a_recorder_for_a_real_program(tmp_path: Path) -> None:
    real = tmp_path / "echo-back"
    real.write_text(f"#!{sys.executable}\nimport sys\nprint(sys.stdin.read().upper(), end='')\n")
    real.chmod(0o755)
    cassette = tmp_path / "runs.jsonl"
    arguments = ["cassettes", "tee", "echo-back", "-o", str(cassette), "--real", str(real)]
    result = CliRunner().invoke(command, [*arguments, "--bin-dir", str(tmp_path / "bin")])
    assert result.exit_code == 0, result.output
    tee = Path(result.output.strip())
    assert tee == tmp_path / "bin" / "echo-back"
    done = subprocess.run([str(tee), "-x"], input=b"hi\n", capture_output=True, check=True)
    assert done.stdout == b"HI\n"
    (run,) = load_cassette(cassette).interactions
    assert run.request.body["argv"] == ["-x"]
    missing = CliRunner().invoke(command, ["cassettes", "tee", "no-such-cli-here", "-o", "x"])
    assert missing.exit_code == 2
    assert "no 'no-such-cli-here' on PATH: pass --real" in missing.output


def test_the_tee_writes_no_secret_from_any_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted as an attacker would: a --token argument, a secret environment value (no
    shape) printed on stderr, a key sent on stdin with a JSON escape, and a key the program
    streams split across two stdout lines. None of them reaches the cassette."""
    key = "sk-" + "proj-" + "Zq8" * 12
    token = "deploy-" + "t0k3n" * 4
    monkeypatch.setenv("ACME_DEPLOY_TOKEN", token)
    real = tmp_path / "real"
    real.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "for line in sys.stdin:\n"
        "    sys.stdout.write(line)\n"
        "key = json.loads(line)['message']['content']\n"
        "for part in (key[:9], key[9:]):\n"
        "    print(json.dumps({'type': 'stream_event', 'delta': {'text': part}}))\n"
        "sys.stderr.write('using ' + os.environ['ACME_DEPLOY_TOKEN'] + '\\n')\n"
    )
    real.chmod(0o755)
    escaped = "\\u0073" + key[1:]
    stdin = ('{"type":"user","message":{"content":"' + escaped + '"}}\n').encode()
    streams = {
        name: io.TextIOWrapper(io.BytesIO(data))
        for name, data in (("stdin", stdin), ("stdout", b""), ("stderr", b""))
    }
    for name, stream in streams.items():
        monkeypatch.setattr(sys, name, stream)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    cassette = tmp_path / "run.jsonl"
    try:
        status = main("tool", str(real), str(cassette), ["--token", "hunter2hunter2", "-p", key])
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert status == 0
    seen = streams["stdout"].buffer.getvalue()  # the client saw it all
    assert key[:9].encode() in seen
    assert key[9:].encode() in seen
    written = cassette.read_text()
    for secret in (key, key[9:], token, "hunter2hunter2", "Zq8Zq8Zq8"):
        assert secret not in written
    (run,) = load_cassette(cassette).interactions
    assert run.request.body["argv"] == [
        "--token", "<scrubbed:cli-option>", "-p", "<scrubbed:openai-key>",
    ]  # fmt: skip
    assert [line["data"] for line in run.response.body["stderr"]] == [
        "using <scrubbed:env-value>\n"
    ]
    frames = run.response.frames
    assert frames is not None
    parts = [json.loads(f.data)["delta"]["text"] for f in frames[1:]]
    assert parts == ["<scrubbed:openai-key>", ""]
    assert verify_tree(cassette) == (1, [])


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM"])
def test_the_real_program_ends_when_the_recorder_dies(tmp_path: Path, signame: str) -> None:
    """The recorder killed outright (SIGKILL: no handler runs) or terminated: the real
    program it runs does not live on."""
    from stuntset.waiting import wait_for

    pid_file = tmp_path / "pid"
    real = tmp_path / "real"
    real.write_text(
        f"#!{sys.executable}\n"
        "import os, signal\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "signal.pause()  # busy with something else than its stdin: outlives a dead parent\n"
    )
    real.chmod(0o755)
    wrapper = install_cli_recorder("tool", real, tmp_path / "c.jsonl", bin_dir=tmp_path / "bin")
    with subprocess.Popen(
        [str(wrapper)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as recorder:
        try:
            child = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), timeout=30))
            assert _alive(child)
            recorder.send_signal(getattr(signal, signame))
            recorder.wait(timeout=30)
            wait_for(lambda: not _alive(child), timeout=30, message=f"pid {child} still runs")
        finally:
            if recorder.poll() is None:
                recorder.kill()
            if pid_file.exists() and pid_file.read_text() and _alive(int(pid_file.read_text())):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
