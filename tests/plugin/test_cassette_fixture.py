"""The cassette fixture through pytester: record once against a stand-in upstream, then
replay forever; CI refuses to record; a failed test writes nothing."""

from __future__ import annotations

import sys

import pytest

import stuntset
from stuntset.cassettes import is_cassette
from stuntset.script import Script, Text, Turn

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")

CHAT = """
import os
import openai
import sys

import pytest

@pytest.mark.cassette(upstream=os.environ.get("STUNTSET_TEST_UPSTREAM"))
def test_chat(cassette):
    client = openai.OpenAI(api_key="sk-test", max_retries=0, **cassette.client_options())
    # the fixture closes the http client it made
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "Hello! How can I help you today?"
    if os.environ.get("FAIL_AFTER"):
        raise AssertionError("deliberate")
"""


@pytest.mark.slow
@pytest.mark.real_time
def test_record_then_replay(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("STUNTSET_MODE", raising=False)
    pytester.makepyfile(test_x=CHAT)
    path = pytester.path / "cassettes" / "test_x" / "test_chat.jsonl"
    answer = Turn(steps=(Text("Hello! How can I help you today?"),), times=2)
    with stuntset.serve(Script.of(answer)) as upstream:
        monkeypatch.setenv("STUNTSET_TEST_UPSTREAM", upstream.url("openai"))
        monkeypatch.setenv("FAIL_AFTER", "1")
        pytester.runpytest(*QUIET, "--stuntset-mode=record").assert_outcomes(failed=1)
        assert not path.exists()
        monkeypatch.delenv("FAIL_AFTER")
        pytester.runpytest(*QUIET, "--stuntset-mode=record").assert_outcomes(passed=1)
    assert path.exists()
    assert is_cassette(path)
    monkeypatch.delenv("STUNTSET_TEST_UPSTREAM")
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)


@pytest.mark.slow
def test_replay_needs_the_cassette_and_ci_refuses_to_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STUNTSET_MODE", raising=False)
    pytester.makepyfile(test_x=CHAT)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*no cassette at *test_chat.jsonl: record it once with --stuntset-mode=record*"]
    )
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest(*QUIET, "--stuntset-mode=record")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*stuntset mode 'record' is refused because CI is set*"])


def test_unused_interactions_fail_at_teardown(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stuntset.cassettes import (
        Cassette,
        Interaction,
        RecordedRequest,
        RecordedResponse,
        write_cassette,
    )

    monkeypatch.delenv("STUNTSET_MODE", raising=False)
    interaction = Interaction(
        id="i-1",
        wire="openai-chat",
        request=RecordedRequest(method="POST", path="/v1/chat/completions", body={}),
        response=RecordedResponse(status=200, body={}),
    )
    write_cassette(
        pytester.path / "cassettes" / "test_y" / "test_nothing.jsonl",
        Cassette(interactions=[interaction]),
    )
    pytester.makepyfile(test_y="def test_nothing(cassette):\n    pass\n")
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*1 recorded interaction(s) were never requested: i-1*"])


SHOUT = """
import os
import subprocess

def test_shout(cassette):
    program = cassette.cli("shout", real=os.environ.get("SHOUT_REAL"))
    done = subprocess.run([program], input=b"hi\\n", capture_output=True, check=True)
    assert done.stdout == b"HI\\n"
"""


def test_a_cli_transcript_is_recorded_then_replayed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("STUNTSET_MODE", raising=False)
    real = pytester.path / "real-shout"
    real.write_text(
        f"#!{sys.executable}\nimport sys\nfor line in sys.stdin:\n    print(line.upper(), end='')\n"
    )
    real.chmod(0o755)
    pytester.makepyfile(test_z=SHOUT)
    transcript = pytester.path / "cassettes" / "test_z" / "test_shout.shout.jsonl"
    pytester.runpytest(*QUIET).assert_outcomes(errors=1)  # nothing recorded yet
    monkeypatch.setenv("SHOUT_REAL", str(real))
    pytester.runpytest(*QUIET, "--stuntset-mode=record").assert_outcomes(passed=1)
    assert is_cassette(transcript)
    real.unlink()  # replay never needs the real program
    monkeypatch.setenv("CI", "true")
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)
