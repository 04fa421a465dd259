"""The fake ``gemini`` against the real CLI's observed transcripts (``_gemini_cli.CASES``): the
same script, command line and settings give the same stdout, the same stderr lines that say
something and the same exit status; then the fake's own start-up refusals, flags and the
``cli=True`` faults."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from stuntset.doubles.cli import install_cli
from stuntset.errors import ScriptExhausted
from stuntset.script import Exit, Garbage, MalformedJson, OutOfOrder, Script, Stall, StreamCut, Text

from ._gemini_cli import CASES, HELLO, MEASURING, Case, lay_out, run


@pytest.mark.parametrize("name", list(CASES))
def test_the_fake_shows_what_the_real_cli_showed(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    cli = install_cli("gemini", case.script, bin_dir=tmp_path / "bin", time_scale=0)
    cwd, env = lay_out(tmp_path, case)
    stdout, stderr, code = run(str(cli.path), case, cwd, env)
    assert (stdout, stderr, code) == (case.stdout, case.stderr, case.code)
    if case.requests:
        cli.assert_all_used()


def _run(
    tmp_path: Path, script: Script, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    cli = install_cli("gemini", script, bin_dir=tmp_path / "bin", time_scale=0)
    cwd, base = lay_out(tmp_path, Case(script, args, None, (), 0))
    return subprocess.run(
        [str(cli.path), *args],
        cwd=cwd,
        env={**base, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_an_untrusted_folder_is_refused_with_exit_55(tmp_path: Path) -> None:
    done = _run(tmp_path, HELLO, "-p", "hi", GEMINI_CLI_TRUST_WORKSPACE="")
    assert done.returncode == 55
    assert "not running in a trusted directory" in done.stderr
    assert done.stdout == ""


def test_a_base_url_without_an_auth_setting_is_the_gateway_method_this_version_refuses(
    tmp_path: Path,
) -> None:
    cli = install_cli("gemini", HELLO, bin_dir=tmp_path / "bin", time_scale=0)
    home = tmp_path / "empty-home"
    home.mkdir()
    env = {
        **MEASURING,
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "GEMINI_API_KEY": "fake",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9/gemini",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    done = subprocess.run(
        [str(cli.path), "-p", "hi", "--output-format", "json"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 41
    assert json.loads(done.stderr)["error"] == {
        "type": "Error",
        "message": "Invalid auth method selected.",
        "code": 41,
    }
    del env["GOOGLE_GEMINI_BASE_URL"]  # the key alone selects the API-key method
    done = subprocess.run(
        [str(cli.path), "-p", "hi"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "Hello there.\n")


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (("-p", "x", "--nope"), "Unknown argument: nope"),
        (("-p", "x", "--output-format", "xml"), "Invalid values:"),
        (("-y", "--approval-mode", "yolo", "-p", "x"), "Cannot use both --yolo (-y)"),
    ],
)
def test_bad_flags_are_yargs_errors_and_exit_1(
    tmp_path: Path, args: tuple[str, ...], first_line: str
) -> None:
    done = _run(tmp_path, HELLO, *args)
    assert done.returncode == 1
    assert done.stderr.startswith(first_line)
    assert done.stdout == ""


def test_stdin_comes_before_the_prompt(tmp_path: Path) -> None:
    cli = install_cli("gemini", HELLO, bin_dir=tmp_path / "bin", time_scale=0)
    cwd, env = lay_out(tmp_path, Case(HELLO, (), None, (), 0))
    done = subprocess.run(
        [str(cli.path), "-p", "from p", "--output-format", "stream-json"],
        cwd=cwd,
        env=env,
        input="from stdin",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    user = json.loads(done.stdout.splitlines()[1])
    assert user["content"] == "from stdin\n\nfrom p"


def test_no_turn_left_is_the_doubles_500_and_the_miss_on_stderr(tmp_path: Path) -> None:
    cli = install_cli("gemini", HELLO, bin_dir=tmp_path / "bin", time_scale=0)
    cwd, env = lay_out(tmp_path, Case(HELLO, (), None, (), 0))
    args = [str(cli.path), "-p", "hi", "--output-format", "stream-json"]
    first = subprocess.run(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    again = subprocess.run(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert first.returncode == 0
    assert again.returncode == 500 & 0xFF
    assert "has no turn for request #2" in again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["status"] == "error"
    with pytest.raises(ScriptExhausted):
        cli.assert_all_used()


@pytest.mark.parametrize(
    ("step", "code", "last"),
    [
        (StreamCut(cli=True), 1, None),
        (StreamCut(clean=True, cli=True), 0, None),
        (MalformedJson("{not json", cli=True), 1, "{not json"),
        (OutOfOrder(cli=True), 1, "after"),
        (Exit(3, "boom", cli=True), 3, None),
    ],
)
def test_the_cli_itself_breaking(tmp_path: Path, step: object, code: int, last: str | None) -> None:
    script = Script.of([Text("Hello."), step])  # type: ignore[list-item]
    done = _run(tmp_path, script, "-p", "hi", "--output-format", "stream-json")
    assert done.returncode == code
    lines = done.stdout.splitlines()
    if isinstance(step, StreamCut):
        with pytest.raises(json.JSONDecodeError):
            json.loads(lines[-1])
    elif last is not None:
        assert last in lines[-1]
    if isinstance(step, Exit):
        assert done.stderr.endswith("boom\n")


def test_garbage_from_the_cli_is_the_bytes_as_given(tmp_path: Path) -> None:
    cli = install_cli(
        "gemini", Script.of([Garbage(cli=True)]), bin_dir=tmp_path / "bin", time_scale=0
    )
    cwd, env = lay_out(tmp_path, Case(HELLO, (), None, (), 0))
    done = subprocess.run(
        [str(cli.path), "-p", "hi", "-o", "stream-json"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout.endswith(Garbage().payload())


def test_a_stalled_stream_ends_on_sigterm_with_status_0(tmp_path: Path) -> None:
    cli = install_cli(
        "gemini", Script.of([Text("thinking"), Stall()]), bin_dir=tmp_path / "bin", time_scale=0
    )
    cwd, env = lay_out(tmp_path, Case(HELLO, (), None, (), 0))
    process = subprocess.Popen(
        [str(cli.path), "-p", "hi", "-o", "stream-json"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    lines = [process.stdout.readline() for _ in range(3)]  # init, user, the delta
    assert json.loads(lines[2])["content"] == "thinking"
    process.terminate()
    out, _ = process.communicate(timeout=30)
    assert (process.returncode, out) == (0, b"")
    assert cli.invocations[0].exit_code == 0


#: What each catalog scenario ends as on the fake gemini (stream-json, default settings): the
#: exit status and the result's status (None: no result line).
CATALOG = {
    "happy_path": (0, "success"),
    "tool_use": (0, "success"),
    "needs_approval": (0, "success"),  # headless asks nobody: the tool is not registered…
    "input_request": (0, "success"),  # …and ask_user never is
    "interleaved_streaming": (0, "success"),
    "long_stream": (0, "success"),
    "multi_turn": (0, "success"),
    "auth_expired_mid_run": (144, "error"),  # the Developer API's 400 API_KEY_INVALID
    "rate_limited": (0, "success"),  # retried; the next turn answers
    "overloaded": (0, "success"),
    "stream_cut": (1, "error"),
    "malformed_json": (1, "error"),
    # retried silently; no turn answers the retry: the double's 500, which the CLI gives up on
    "garbage_bytes": (244, "error"),
    "out_of_order": (0, "success"),
    "crash_mid_turn": (1, "error"),  # the model connection drops: as stream_cut
    "slow": (0, "success"),
}


def test_the_catalog_table_covers_every_scenario_but_the_stalling_and_missing_ones() -> None:
    from stuntset import scenarios

    assert set(CATALOG) | {"stuck", "spawn_missing"} == set(scenarios.names())


def test_spawn_missing_installs_no_executable(tmp_path: Path) -> None:
    from stuntset import scenarios

    cli = install_cli("gemini", scenarios.build("spawn_missing"), bin_dir=tmp_path)
    assert not cli.spawnable
    assert not cli.path.exists()


@pytest.mark.parametrize("name", list(CATALOG))
def test_every_catalog_scenario_plays_on_the_fake(tmp_path: Path, name: str) -> None:
    from stuntset import scenarios

    script = scenarios.build(name)
    done = _run(tmp_path, script, "-p", "go", "--output-format", "stream-json")
    code, status = CATALOG[name]
    last = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == code, done.stderr
    assert (last.get("status") if last["type"] == "result" else None) == status


@pytest.mark.parametrize("output", ["stream-json", "json"])
def test_a_gemini_run_is_recorded_in_a_cli_cassette_and_replayed(
    tmp_path: Path, output: str
) -> None:
    from stuntset.cassettes import load_cassette
    from stuntset.cassettes.cli_record import install_cli_recorder
    from stuntset.cassettes.cli_replay import install_cli_replay

    case = CASES["rate_limited_then_ok" if output == "stream-json" else "read_yolo_text"]
    real = install_cli("gemini", case.script, bin_dir=tmp_path / "real", time_scale=0)
    cwd, env = lay_out(tmp_path, case)
    cassette = tmp_path / "gemini.jsonl"
    args = ["-p", "hi", "--output-format", output, "--yolo"]

    def played(path: Path) -> tuple[str, str, int]:
        done = subprocess.run(
            [str(path), *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.stdout, done.stderr, done.returncode

    recorded = played(install_cli_recorder("gemini", real.path, cassette, bin_dir=tmp_path / "rec"))
    replay = install_cli_replay("gemini", cassette, bin_dir=tmp_path / "replay")
    assert played(replay.path) == recorded
    assert load_cassette(cassette).wires == ["gemini-cli"]
    assert recorded[2] == 0
    assert recorded[0]
    replay.verify()


@pytest.mark.parametrize("output", ["json", "stream-json", "text"])
def test_the_journal_keeps_what_each_run_wrote(tmp_path: Path, output: str) -> None:
    cli = install_cli("gemini", HELLO, bin_dir=tmp_path / "bin", time_scale=0)
    cwd, env = lay_out(tmp_path, Case(HELLO, (), None, (), 0))
    subprocess.run(
        [str(cli.path), "-p", "hi", "-o", output],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=True,
    )
    (invocation,) = cli.invocations
    assert invocation.exit_code == 0
    assert invocation.argv == ["-p", "hi", "-o", output]
    if output == "json":
        assert [m["response"] for m in invocation.stdout] == ["Hello there."]
    elif output == "stream-json":
        assert [m["type"] for m in invocation.stdout] == [
            "init",
            "message",
            "message",
            "message",
            "result",
        ]
    else:
        texts = [e["text"] for e in invocation.events if e["event"] == "output"]
        assert "".join(texts) == "Hello there.\n"
