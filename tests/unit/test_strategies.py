"""stuntset.strategies: drawn scripts render on their wire and stay within their bounds, the
TOML written back is what `stuntset script check` reads, `judge` fails with the script and
how to replay and pin it, and without hypothesis the module names its extra."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from stuntset.cli import main
from stuntset.doubles.model import ModelDouble, ModelTransport
from stuntset.errors import MissingExtra, UsageError
from stuntset.script import Script, StreamCut, Text, ToolCall, Turn, loads_script
from stuntset.strategies import (
    CI,
    FuzzFailure,
    dumps_script_toml,
    framings,
    judge,
    reset,
    scripts,
)

BASE = Script.of([ToolCall("lookup", {"city": "Paris"})], [Text("It is sunny in Paris.")])


@settings(CI, max_examples=25)
@given(script=scripts(BASE, max_faults=2, max_retries=3))
def test_drawn_scripts_render_and_stay_in_bounds(script: Script) -> None:
    from stuntset.wires import check_script

    check_script(script)
    faulted = [t for t in script.turns if t not in BASE.turns]
    assert len(faulted) <= 2
    assert all(1 <= t.times <= 3 for t in faulted)
    assert loads_script(dumps_script_toml(script), format="toml").turns == script.turns


def test_the_toml_is_what_script_check_reads(tmp_path: Path) -> None:
    script = Script.of(
        Turn(steps=(ToolCall("lookup", {"city": 'Pa"ris'}), StreamCut(after_events=2)), times=2),
        [Text("line\nbreak")],
        name="fuzzed",
    )
    path = tmp_path / "fuzzed.toml"
    path.write_text(dumps_script_toml(script))
    result = CliRunner().invoke(main, ["script", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert loads_script(path.read_text(), format="toml").turns == script.turns


def test_judge_fails_with_the_script_and_how_to_replay_and_pin_it(tmp_path: Path) -> None:
    double = ModelDouble(BASE)
    script = Script.of([Text("half an answer"), StreamCut(after_events=2)])
    reset(double, script)

    def swallow_the_cut() -> str:
        import httpx2

        with httpx2.Client(transport=ModelTransport(double)) as http:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
            with contextlib.suppress(httpx2.RemoteProtocolError):
                http.post("http://x/v1/chat/completions", json=body)
        return "completed"

    with pytest.raises(FuzzFailure) as caught:
        judge(
            swallow_the_cut,
            double,
            script,
            outcomes={"completed", "error"},
            outcome_of=str,
            save_to=tmp_path,
            replay="stuntset serve --script {path}",
        )
    message = str(caught.value)
    assert "no_partial_as_complete: request #0's stream was cut after 2 event(s)" in message
    assert '{ kind = "stream_cut", after_events = 2 }' in message
    (saved,) = tmp_path.glob("fuzzed-*.toml")
    assert f"replay: stuntset serve --script {saved}" in message
    assert f"pin it: @example(script=load_script({str(saved)!r}))" in message
    reset(double, Script.of([Text("fine")]))
    with pytest.raises(FuzzFailure, match="declared_outcome: the app ended in 'lost'"):
        judge(lambda: "lost", double, script, outcomes={"completed"}, outcome_of=str)


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(UsageError, match="wire='telex'"):
        scripts(BASE, wire="telex")
    with pytest.raises(UsageError, match="at least one turn"):
        scripts(Script.of())


def test_without_hypothesis_the_module_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "stuntset.strategies")
    with pytest.raises(MissingExtra, match=r"pip install 'stuntset\[hypothesis\]'"):
        import stuntset.strategies  # noqa: F401


def test_one_double_reused_across_examples_is_fresh_each_time(stuntset_clock: Any) -> None:
    double = ModelDouble(BASE)
    for text in ("one", "two"):
        reset(double, Script.of([Text(text)]))
        with __import__("httpx2").Client(transport=ModelTransport(double)) as http:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            reply = http.post("http://x/v1/chat/completions", json=body).json()
        assert reply["choices"][0]["message"]["content"] == text
        assert [e.index for e in double.requests] == [0]


def test_an_app_that_hangs_breaks_never_hangs() -> None:
    import threading

    double = ModelDouble(BASE)
    reset(double, BASE)
    with pytest.raises(FuzzFailure, match=r"never_hangs: the app did not end within 0\.05 s"):
        judge(lambda: threading.Event().wait(), double, BASE, outcomes={"True"}, timeout=0.05)


@pytest.mark.slow  # a leak is reported after the leak check's settling second
def test_an_app_that_leaves_a_stream_open_breaks_no_leak() -> None:
    import httpx2

    double = ModelDouble(BASE)
    script = Script.of([Text("an answer nobody reads")])
    reset(double, script)
    kept: list[Any] = []

    def leave_it_open() -> str:
        http = httpx2.Client(transport=ModelTransport(double))
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        request = http.build_request("POST", "http://x/v1/chat/completions", json=body)
        kept.append(http.send(request, stream=True))  # never read, never closed
        return "completed"

    with pytest.raises(FuzzFailure, match="no_leak: "):
        judge(leave_it_open, double, script, outcomes={"completed"}, outcome_of=str)
    kept[0].close()


@pytest.mark.slow  # each example spawns the fake codex
def test_fuzzing_a_fake_cli_finds_a_timeout_that_kills_without_sigterm(
    fake_codex: Any, tmp_path: Path
) -> None:
    import subprocess

    happy = Script.of([Text("done")])
    found: list[str] = []

    @settings(CI, max_examples=30)
    @given(script=scripts(happy, wire="codex", max_faults=1, max_retries=1))
    def survives(script: Script) -> None:
        cli = reset(fake_codex, script)

        def run_codex() -> str:
            env = {"PATH": "/usr/bin:/bin", "CODEX_HOME": str(tmp_path / "home")}
            try:  # subprocess.run's timeout kills the child with SIGKILL: the bug to find
                done = subprocess.run(
                    [str(cli.path), "exec", "--json", "--skip-git-repo-check", "go"],
                    capture_output=True,
                    timeout=0.5,
                    env=env,
                )
            except subprocess.TimeoutExpired:
                return "error"
            return "completed" if done.returncode == 0 else "error"

        try:
            judge(run_codex, cli, script, outcomes={"completed", "error"}, outcome_of=str)
        except FuzzFailure as failure:
            found.append(str(failure))
            raise

    with pytest.raises(FuzzFailure, match="sigkill_without_sigterm: invocation 0"):
        survives()
    assert '{ kind = "stall" }' in found[-1]


@settings(CI, max_examples=10)
@given(framing=framings())
def test_a_drawn_framing_applies_to_the_reused_double(framing: Any) -> None:
    import httpx2

    double = ModelDouble(BASE)
    reset(double, Script.of([Text("framed")]), framing=framing)
    with httpx2.Client(transport=ModelTransport(double)) as http:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        sent = http.post("http://x/v1/chat/completions", json=body).content
    assert (b": keep-alive" in sent) == framing.keepalive
    assert (b"\r" in sent) == (framing.line_ending != "\n")


def test_the_cli_wires_are_found_by_name() -> None:
    from stuntset.doubles.cli.claude import CLAUDE_WIRE
    from stuntset.doubles.cli.codex import CODEX_WIRE
    from stuntset.strategies import _wire_of

    assert _wire_of("claude") is CLAUDE_WIRE
    assert _wire_of("codex") is CODEX_WIRE
    assert _wire_of(CODEX_WIRE) is CODEX_WIRE


@pytest.mark.parametrize("wire", ["openai-chat", "anthropic-messages"])
def test_scripts_for_a_named_model_wire_draw_what_that_wire_plays(wire: str) -> None:
    # every drawn script loads back from its TOML, turn for turn (drawn, not searched for:
    # hypothesis' find() shrank its first hit for seconds)
    @settings(CI, max_examples=10)
    @given(scripts(BASE, wire=wire))
    def loads_back(drawn: Script) -> None:
        again = loads_script(dumps_script_toml(drawn), format="toml")
        assert [len(t.steps) for t in again.turns] == [len(t.steps) for t in drawn.turns]
        assert again.turns

    loads_back()


def test_a_position_it_does_not_know_is_named() -> None:
    from stuntset.strategies import faults

    with pytest.raises(UsageError, match="position='sideways'"):
        faults("sideways")
