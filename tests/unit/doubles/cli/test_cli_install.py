"""Installing a fake CLI: the executable, its shebang, atomicity, bad scripts, the journal."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import stuntset
from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.doubles.cli._install import launcher
from stuntset.errors import ScriptError, ScriptExhausted, UnusedTurns, UsageError, WaitTimeout
from stuntset.script import Match, Script, SpawnFailure, Text, ToolCall, Turn
from stuntset.waiting import wait_for

STREAM = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
PROMPT = b'{"type":"user","message":{"role":"user","content":"hi"}}\n'


def run(cli: InstalledCli, stdin: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(cli.path), *(args or STREAM)], input=stdin, capture_output=True, timeout=30
    )


def test_install_cli_is_exposed_lazily_at_top_level() -> None:
    assert stuntset.install_cli is install_cli


def test_executable_has_an_absolute_interpreter_shebang_and_is_executable(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    first = cli.path.read_text().splitlines()[0]
    assert first == f"#!{sys.executable} -IS"
    assert os.path.isabs(sys.executable)
    assert cli.path.stat().st_mode & stat.S_IXUSR
    assert cli.path.name == "claude"
    # nothing half-written is left behind in bin_dir
    assert sorted(p.name for p in tmp_path.iterdir()) == [".claude.stuntset", "claude"]


def test_long_interpreter_paths_fall_back_to_sh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/x" * 80 + "/python")
    text = launcher(Path("/plan"), "mod", "claude")
    assert text.startswith("#!/bin/sh\n")
    assert '"exec" "' + sys.executable + '" "-IS" "$0" "$@"' in text


def test_env_puts_bin_dir_first_on_path(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    env = cli.env({"PATH": "/usr/bin", "HOME": "/h"})
    assert env["PATH"] == f"{tmp_path}{os.pathsep}/usr/bin"
    assert env["HOME"] == "/h"
    found = subprocess.run(
        ["sh", "-c", "command -v claude"], env=cli.env(), capture_output=True, text=True
    )
    assert found.stdout.strip() == str(cli.path)


def test_unknown_program_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no fake CLI named 'clod'; known: claude"):
        install_cli("clod", scenarios.build("happy_path"), bin_dir=tmp_path)


def test_scripts_with_callables_are_refused_at_install(tmp_path: Path) -> None:
    script = Script(turns=(Turn(steps=(Text("x"),), predicate=lambda r: True),))
    with pytest.raises(ScriptError, match="cannot hold Python callables"):
        install_cli("claude", script, bin_dir=tmp_path)


def test_tool_calls_without_results_are_refused_at_install(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"turn 0.*wire 'claude'.*every tool_call needs"):
        install_cli("claude", Script.of([ToolCall("ls")]), bin_dir=tmp_path)


def test_spawn_failure_after_the_first_turn_is_refused(tmp_path: Path) -> None:
    script = Script.of([Text("hi")], [SpawnFailure()])
    with pytest.raises(ScriptError, match=r"turn 1, step 0.*only be the script's first turn"):
        install_cli("claude", script, bin_dir=tmp_path)


def test_negative_knobs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="must not be negative"):
        install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path, time_scale=-1)


def test_spawn_missing_leaves_no_executable(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("spawn_missing"), bin_dir=tmp_path)
    assert not cli.path.exists()
    assert not cli.spawnable
    cli.assert_all_used()  # the spawn failure is "used" by being installed
    with pytest.raises(FileNotFoundError):
        subprocess.run([str(cli.path)], check=False)


def test_reinstall_replaces_the_executable_atomically(tmp_path: Path) -> None:
    first = install_cli("claude", Script.of([Text("one")]), bin_dir=tmp_path)
    inode = first.path.stat().st_ino
    second = install_cli("claude", Script.of([Text("two")]), bin_dir=tmp_path)
    assert second.path.stat().st_ino != inode  # a new file renamed over, never rewritten
    out = run(second, PROMPT)
    assert b'"result":"two"' in out.stdout


def test_invocations_journal_argv_env_stdin_stdout_and_exit(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    env = cli.env() | {"CLAUDE_CODE_ENTRYPOINT": "sdk-py", "SECRET_NOT_JOURNALED": "x"}
    subprocess.run([str(cli.path), *STREAM], input=PROMPT, env=env, capture_output=True, timeout=30)
    (invocation,) = cli.invocations
    assert invocation.argv == STREAM
    assert invocation.env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"
    assert "SECRET_NOT_JOURNALED" not in invocation.env
    assert invocation.user_messages == [
        {"type": "user", "message": {"role": "user", "content": "hi"}}
    ]
    assert [m["type"] for m in invocation.stdout] == ["system", "assistant", "result"]
    assert invocation.exit_code == 0
    assert invocation.stderr == ""


def test_uninstall_and_context_manager_remove_what_install_made(tmp_path: Path) -> None:
    with install_cli("claude", scenarios.build("happy_path")) as cli:
        made = cli.bin_dir
        assert cli.path.exists()
    assert not made.exists()
    kept = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    kept.uninstall()
    assert tmp_path.exists()
    assert not kept.path.exists()


def test_assert_all_used_reports_unused_and_exhausted_turns(tmp_path: Path) -> None:
    cli = install_cli("claude", Script.of([Text("one")], [Text("two")]), bin_dir=tmp_path)
    with pytest.raises(UnusedTurns, match=r"(?s)2 scripted turn\(s\).*allow_unused_turns=True"):
        cli.assert_all_used()
    run(cli, PROMPT * 3)
    with pytest.raises(ScriptExhausted, match=r"(?s)no turn for request #3.*all 2 turns were used"):
        cli.assert_all_used()


def test_match_data_chooses_turns_across_invocations(tmp_path: Path) -> None:
    script = Script.of(
        Turn(steps=(Text("weather"),), match=Match(contains="weather")),
        Turn(steps=(Text("other"),)),
    )
    cli = install_cli("claude", script, bin_dir=tmp_path)
    first = run(cli, b'{"type":"user","message":{"role":"user","content":"hello"}}\n')
    second = run(cli, b'{"type":"user","message":{"role":"user","content":"the weather?"}}\n')
    assert b'"result":"other"' in first.stdout
    assert b'"result":"weather"' in second.stdout
    cli.assert_all_used()


def test_reinstalling_while_another_thread_spawns_never_hits_etxtbsy(tmp_path: Path) -> None:
    """The executable is only ever renamed into place, closed: a thread that keeps spawning it
    never sees ETXTBSY ("text file busy"), whatever it catches mid-install."""
    import errno
    import threading

    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    stop = threading.Event()
    failures: list[OSError] = []
    spawned = 0

    def spawn() -> None:
        nonlocal spawned
        while not stop.is_set():
            try:
                subprocess.run([str(cli.path), "-v"], capture_output=True, timeout=30)
                spawned += 1
            except OSError as error:
                failures.append(error)

    thread = threading.Thread(target=spawn)
    thread.start()
    installs = 0
    try:
        while installs < 20 or spawned < 3:  # until both sides have really overlapped
            install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
            installs += 1
    finally:
        stop.set()
        thread.join(timeout=30)
    assert [e for e in failures if e.errno == errno.ETXTBSY] == []
    assert failures == []


def test_a_journal_cut_mid_line_still_reads(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    run(cli, PROMPT)
    (journal,) = (cli.state_dir / "invocations").iterdir()
    with journal.open("a") as file:
        file.write('{"event": "stdout", "mess')
    assert cli.invocations[0].exit_code == 0


def test_concurrent_invocations_share_the_turn_counts(tmp_path: Path) -> None:
    script = Script.of(Turn(steps=(Text("x"),), times=12))
    cli = install_cli("claude", script, bin_dir=tmp_path)
    procs = [
        subprocess.Popen(
            [str(cli.path), *STREAM],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(4)
    ]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(PROMPT * 3)
        proc.stdin.close()
    assert [proc.wait(timeout=30) for proc in procs] == [0, 0, 0, 0]
    cli.assert_all_used()  # 12 uses, none lost, none over


def test_a_program_object_installs_under_its_own_name(tmp_path: Path) -> None:
    from stuntset.doubles.cli.codex import CODEX

    cli = install_cli(CODEX, Script.of([Text("hi")]), bin_dir=tmp_path, time_scale=0)
    try:
        assert cli.path == tmp_path / "codex"
        done = subprocess.run(
            [str(cli.path), "exec", "--json", "-"], input=b"go", capture_output=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert b"hi" in done.stdout
        cli.assert_all_used()
    finally:
        cli.uninstall()


def test_wait_ended_waits_for_a_running_invocation_and_names_it(tmp_path: Path) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    argv = [str(cli.path), "-p", "--input-format", "stream-json", "--output-format",
            "stream-json", "--verbose"]  # fmt: skip
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: [i for i in cli.invocations if i.pid], timeout=30)  # waits for stdin
        with pytest.raises(
            WaitTimeout, match=rf"claude: invocations still running: pid {process.pid}: "
        ):
            cli.wait_ended(timeout=0.05)
        assert process.stdin is not None
        process.stdin.close()  # no prompt: the fake ends
        assert [i.exit_code for i in cli.wait_ended(timeout=30)] == [process.wait(30)]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        if process.stdin is not None:
            process.stdin.close()


def test_wait_ended_takes_a_process_killed_before_its_exit_record_as_ended(
    tmp_path: Path,
) -> None:
    cli = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path)
    argv = [str(cli.path), "-p", "--input-format", "stream-json", "--output-format",
            "stream-json", "--verbose"]  # fmt: skip
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for(lambda: [i for i in cli.invocations if i.pid], timeout=30)
    process.kill()
    process.wait(10)
    assert process.stdin is not None
    process.stdin.close()
    assert [i.exit_code for i in cli.wait_ended(timeout=5)] == [None]
