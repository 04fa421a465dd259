"""A red test explains itself (issue 28): the ``stuntset`` report section on a failed test that
used a double (one per double kind, and the events of the runs it drove), the trace files kept
for it, and the deadline that ends a hung test naming what is pending.
Inner runs are real pytest runs of failing tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

QUIET = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-n", "0")
# a timeline row starts with its time from the test's start; other lines that start with "+"
# (pytest's assertion detail, which CI=true prints in full in the short summary) are not rows
ROW = re.compile(r"^\s*\+\d+\.\d+s ")

MODEL_TEST = """
import pytest
from openai import OpenAI, RateLimitError

@pytest.mark.stand_in("rate_limited", failures=2, allow_unused_turns=True)
def test_gives_up(stand_in):
    client = OpenAI(api_key="sk-test", base_url=stand_in.url("openai"), max_retries=1)
    reply = None
    try:
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    except RateLimitError:
        pass
    client.close()
    assert reply is not None
"""


def _section(result: pytest.RunResult) -> str:
    text = result.stdout.str()
    assert "- stuntset -" in text, text
    return text.split("- stuntset -", 1)[1]


def test_a_failed_model_test_shows_every_request_in_order(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_explained_model=MODEL_TEST)
    result = pytester.runpytest(*QUIET, "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    section = _section(result)
    requests = [line for line in section.splitlines() if "POST /v1/chat/completions" in line]
    # the client's first try and its one retry, both answered 429, in order, with times
    assert len(requests) == 2, section
    assert all(" 429," in line and line.strip().startswith("+") for line in requests), section
    assert "#0 " in requests[0], section
    assert "#1 " in requests[1], section
    assert "retry 1" in requests[1], section
    assert "model=gpt-4o" in requests[0], section


def test_a_passing_test_gets_no_section_and_no_trace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from openai import OpenAI

        @pytest.mark.stand_in("happy_path")
        def test_fine(stand_in):
            client = OpenAI(api_key="sk-test", http_client=None, base_url=stand_in.url("openai"))
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            client.close()
        """
    )
    result = pytester.runpytest(*QUIET, "-rA")
    result.assert_outcomes(passed=1)
    assert "stuntset -" not in result.stdout.str()
    assert not (pytester.path / "stuntset-traces").exists()


def test_a_failing_test_without_doubles_gets_no_section(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert 1 == 2\n")
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    assert "- stuntset -" not in result.stdout.str()
    assert not (pytester.path / "stuntset-traces").exists()


def test_the_section_is_bounded_and_vv_shows_every_row(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from openai import OpenAI

        from stuntset.script import Script, Text, Turn

        def test_many(stand_in):
            stand_in.play(Script.of(Turn(steps=(Text("ok"),), times=40)))
            client = OpenAI(api_key="sk-test", base_url=stand_in.url("openai"), max_retries=0)
            for n in range(40):
                try:
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": str(n)}]
                    )
                except Exception:
                    pass
            client.close()
            assert False
        """
    )
    short = _section(pytester.runpytest(*QUIET))
    assert "30 of 40 rows" in short, short
    assert "left out (-vv shows every row)" in short
    everything = _section(pytester.runpytest(*QUIET, "-vv"))
    numbered = {f"#{n} " for n in range(40)}
    assert all(any(mark in line for line in everything.splitlines()) for mark in numbered)


def test_unused_turns_are_listed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.stand_in("multi_turn")
        def test_never_asks(stand_in):
            assert stand_in.requests
        """
    )
    result = pytester.runpytest(*QUIET)
    section = _section(result)
    assert "never used: turn 0" in section, section


@pytest.mark.parametrize("program", ["claude", "codex"])
def test_a_failed_fake_cli_test_shows_its_invocations(
    pytester: pytest.Pytester, program: str
) -> None:
    argv = (
        '["-p", "hello", "--output-format", "stream-json", "--verbose"]'
        if program == "claude"
        else '["exec", "--json", "--skip-git-repo-check", "hello"]'
    )
    pytester.makepyfile(
        f"""
        import subprocess
        import pytest

        @pytest.mark.fake_{program}("crash_mid_turn", cli=True)
        def test_crashes(fake_{program}):
            done = subprocess.run(
                [str(fake_{program}.path), *{argv}], capture_output=True, text=True, timeout=30
            )
            assert done.returncode == 0
        """
    )
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    section = _section(result)
    rows = [line for line in section.splitlines() if ROW.match(line)]
    assert len(rows) == 1, section
    assert f" {program} " in rows[0], section
    assert "pid " in rows[0], section
    assert "-> exit " in rows[0], section
    assert "-> exit 0" not in rows[0], section


def test_a_failed_mcp_test_shows_its_calls(pytester: pytest.Pytester) -> None:
    pytest.importorskip("mcp")
    pytester.makepyfile(
        """
        import httpx2
        import pytest
        from stuntset.script import HttpError, Script, ToolCall, ToolResult

        @pytest.mark.real_time
        def test_calls(mcp_double):
            mcp_double.play(Script.of(
                [ToolCall("search"), HttpError(418)], [ToolCall("fetch"), ToolResult("page")]
            ))
            url = mcp_double.serve_http().url
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "search", "arguments": {"q": "cats"}}}
            headers = {"accept": "application/json, text/event-stream"}
            with httpx2.Client() as client:
                status = client.post(url, json=call, headers=headers).status_code
            assert status == 200
        """
    )
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1, errors=1)  # the assertion, then the unused turn
    section = _section(result)
    rows = [line for line in section.splitlines() if ROW.match(line)]
    assert any(" mcp " in r and 'tools/call search({"q": "cats"})' in r for r in rows), section
    assert any("fault:" in r or "418" in r for r in rows), section
    assert "mcp    never used: turn 1: " in section, section


def test_retain_on_failure_keeps_a_trace_that_loads(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_explained_model=MODEL_TEST)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    traces = pytester.path / "stuntset-traces"
    jsonl = traces / "test_explained_model.py_test_gives_up.jsonl"
    page = traces / "test_explained_model.py_test_gives_up.html"
    assert str(page) in result.stdout.str()
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert records[0]["test"] == "test_explained_model.py::test_gives_up"
    assert records[0]["outcome"] == "failed"
    statuses = [r["detail"]["status"] for r in records[1:] if "status" in r["detail"]]
    assert statuses == [429, 429]
    from stuntset.explain.trace import load_trace

    assert load_trace(page) == load_trace(jsonl)


@pytest.mark.parametrize(("mode", "kept"), [("on", True), ("off", False)])
def test_trace_modes_for_a_passing_test(pytester: pytest.Pytester, mode: str, kept: bool) -> None:
    pytester.makepyfile("import pytest\n\ndef test_ok(stand_in):\n    assert stand_in\n")
    out = pytester.path / "out" / "traces"
    result = pytester.runpytest(*QUIET, f"--stuntset-trace={mode}", f"--stuntset-trace-dir={out}")
    result.assert_outcomes(passed=1)
    assert (out / "test_explain_trace_modes.py_test_ok.html").exists() is kept or (
        any(out.glob("*.html")) is kept
    )


def test_a_bad_trace_mode_in_ini_is_one_clear_line(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nstuntset_trace = sometimes\n")
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest(*QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "stuntset_trace = 'sometimes'" in result.stderr.str()


# Each hung test below warms its client up in a fixture (setup is outside the deadline, which
# bounds the call): the call only sends the request that stalls, so that request has reached
# the double long before the deadline, however loaded the machine.
GENAI_STALL = """
import pytest
from google import genai
from google.genai import types
from stuntset.script import Script, Stall, Text

@pytest.fixture
def client(stand_in):
    stand_in.play(Script.of([Text("warm")], [Text("Half an answer"), Stall()]))
    # no read timeout: without the deadline the stalled stream waits forever
    client = genai.Client(
        api_key="AIza-test", http_options=types.HttpOptions(base_url=stand_in.url("gemini"))
    )
    assert client.models.generate_content(model="gemini-2.5-flash", contents="hi").text
    yield client
    client.close()

@pytest.mark.stuntset_deadline(1.0)
def test_hangs(client):
    for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"):
        pass
"""


def test_a_stalled_genai_stream_over_loopback_ends_at_the_deadline(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("google.genai")
    pytester.makepyfile(test_stall=GENAI_STALL)
    # a subprocess: its tests run in their main thread whatever runs this one
    result = pytester.runpytest_subprocess(*QUIET)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "DeadlineExceeded: test_stall.py::test_hangs: still running at its deadline" in text
    assert "of 1s" in text
    assert "pending:" in text, text
    assert "#1 POST /v1beta/models/gemini-2.5-flash:streamGenerateContent" in text, text
    assert "then stalls" in text, text
    assert "it last sent:" in text, text
    assert "Half an answer" in text, text
    assert "since +" in text


def test_the_deadline_also_ends_a_test_off_the_main_thread(pytester: pytest.Pytester) -> None:
    # in-process: when this suite runs under xdist, or under pytest-timeout's signal, the
    # watchdog unblocks the inner test (the double's stalled stream ends) instead of a signal
    pytester.makepyfile(
        """
        import pytest
        from openai import OpenAI
        from stuntset.script import Script, Stall, Text

        BODY = {"model": "m", "messages": [{"role": "user", "content": "x"}]}

        @pytest.fixture
        def client(stand_in):
            stand_in.play(Script.of([Text("warm")], [Text("Half an answer"), Stall()]))
            client = OpenAI(api_key="sk-t", base_url=stand_in.url("openai"), timeout=None)
            assert client.chat.completions.create(**BODY).choices
            yield client
            client.close()

        @pytest.mark.stuntset_deadline(1.0)
        def test_hangs(client):
            for _ in client.chat.completions.create(**BODY, stream=True):
                pass
        """
    )
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "still running at its deadline of 1s" in text
    assert "#1 POST /v1/chat/completions" in text
    assert "then stalls" in text


def test_a_stalled_fake_cli_ends_at_the_deadline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import subprocess
        import pytest
        from stuntset.script import Script, Stall, Text

        @pytest.fixture
        def claude(fake_claude):
            fake_claude(Script.of([Text("warm")], [Text("Half an answer"), Stall()]))
            argv = [str(fake_claude.path), "-p", "hi", "--output-format", "stream-json",
                    "--verbose"]
            subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, check=True)
            return argv

        @pytest.mark.stuntset_deadline(1.5)
        def test_hangs(claude):
            with subprocess.Popen(
                claude, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
            ) as process:
                try:
                    process.stdout.read()
                finally:
                    process.kill()
        """
    )
    result = pytester.runpytest_subprocess(*QUIET)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "still running at its deadline of 1.5s" in text
    assert "claude since +" in text, text
    assert "still running" in text, text
    assert "it last sent:" in text


def test_a_bad_deadline_marker_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.stuntset_deadline("soon")
        def test_x(stand_in):
            pass
        """
    )
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    assert "stuntset_deadline: expected a number of seconds (0 for none), got 'soon'" in (
        result.stdout.str()
    )


def test_the_section_names_the_trace_file(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_explained_model=MODEL_TEST)
    result = pytester.runpytest(*QUIET, "--stuntset-trace=off")
    section = _section(result)
    assert "trace:" not in section
    assert not (pytester.path / "stuntset-traces").exists()


def test_a_failed_test_shows_the_events_of_the_run_it_drove(pytester: pytest.Pytester) -> None:
    pytest.importorskip("claude_agent_sdk")
    pytester.makepyfile(
        """
        import anyio
        import pytest
        from claude_agent_sdk import ClaudeAgentOptions
        from stuntset.driver import drive
        from stuntset.events import RunCompleted
        from stuntset.providers.claude_code import ClaudeCodeProvider

        @pytest.mark.fake_claude("crash_mid_turn", cli=True)
        def test_crashes(fake_claude):
            provider = ClaudeCodeProvider(ClaudeAgentOptions(cli_path=fake_claude.path))

            async def main():
                try:
                    return await drive(provider.start("hello"), timeout=30)
                finally:
                    await provider.aclose()

            events = anyio.run(main)
            assert isinstance(events[-1], RunCompleted)
        """
    )
    result = pytester.runpytest(*QUIET, "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    section = _section(result)
    rows = [line for line in section.splitlines() if ROW.match(line)]
    events = [line for line in rows if " event  " in line]
    assert events, section
    assert "run.started " in events[0], section
    assert "run.crashed kind='exited'" in events[-1], section
    assert "retryable=False" in events[-1], section
    assert any(" claude " in line and "pid " in line for line in rows), section
    (deltas,) = [line for line in events if "message.delta" in line]  # one message: one row
    assert "message.delta x" in deltas, section
    assert "text='Working on it'" in deltas, section
    assert any("tool.started " in line and "name='Bash'" in line for line in events), section
