"""The plugin's checks for the user's own agent, through pytester: the prefix_stable marker
and the workspace_snapshot, tool_calls and temp_tracker fixtures, passing and failing."""

from __future__ import annotations

import pytest

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")

TESTS = """
import tempfile
import httpx2, pytest
from stuntset.checks import assert_tool
from stuntset.script import Script, Text, ToolCall

SYSTEM = {"role": "system", "content": "Be terse."}

def ask(stand_in, system, *messages):
    client = httpx2.Client(transport=stand_in.transport())
    body = {"model": "m", "messages": [system, *messages]}
    client.post("http://x/v1/chat/completions", json=body)

@pytest.mark.prefix_stable
@pytest.mark.stand_in(Script.of([Text("one")], [Text("two")]))
def test_stable(stand_in):
    ask(stand_in, SYSTEM, {"role": "user", "content": "hi"})
    ask(stand_in, SYSTEM, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "one"})

@pytest.mark.prefix_stable
@pytest.mark.stand_in(Script.of([Text("one")], [Text("two")]))
def test_unstable(stand_in):
    ask(stand_in, SYSTEM, {"role": "user", "content": "hi"})
    ask(stand_in, {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"})

@pytest.mark.prefix_stable(ignore=["system"])
@pytest.mark.stand_in(Script.of([Text("one")], [Text("two")]))
def test_unstable_but_ignored(stand_in):
    ask(stand_in, SYSTEM, {"role": "user", "content": "hi"})
    ask(stand_in, {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"})

@pytest.mark.prefix_stable
def test_marker_without_stand_in():
    pass

@pytest.mark.prefix_stable("oops")
def test_marker_misused(stand_in):
    pass

def test_workspace(tmp_path, workspace_snapshot):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    snapshot = workspace_snapshot(tmp_path)
    (tmp_path / "a.txt").write_text("A")
    (tmp_path / "b.txt").write_text("B")
    snapshot.assert_changes(modified=["a.txt"])

def test_tool_calls(tool_calls):
    def lookup(city: str) -> str:
        return city
    tool_calls.record(lookup)(city="Paris")
    assert_tool(tool_calls, ToolCall("lookup", {"city": "Paris"}))

def test_temp_clean(temp_tracker):
    with tempfile.TemporaryDirectory() as scratch:
        assert scratch.startswith(str(temp_tracker.root))
    own = temp_tracker.mkdtemp()
    (own / "kept-by-the-test").write_text("x")

def test_temp_leftover(temp_tracker):
    tempfile.mkdtemp(prefix="forgotten-")

def test_temp_leftover_of_a_failed_test(temp_tracker):
    left = tempfile.mkdtemp(prefix="also-forgotten-")
    assert left == "the test failed first", "its own failure is the one reported"
"""


def test_the_check_marker_and_fixtures_pass_and_fail_with_their_messages(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=5, failed=5, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*PrefixUnstable: the prompt prefix is not stable: request 1 (openai-chat) diverges "
            "from request 0 (openai-chat)*",
            "*messages?0?.content: 'Be terse.' -> 'Be brief.'*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*test_marker_without_stand_in*", "*the test does not use stand_in*"]
    )
    result.stdout.fnmatch_lines(["*prefix_stable takes only the keyword options*'oops'*"])
    result.stdout.fnmatch_lines(["*unexpected: modified b.txt (line 1: 'b' -> 'B')*"])
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_temp_leftover*",
            "*LeftoverPaths: 1 temporary path(s) were left in*",
            "*  forgotten-*/",
        ]
    )
    failed = {r.head_line for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed}  # type: ignore[attr-defined]
    assert failed == {
        "test_unstable",
        "test_marker_without_stand_in",
        "test_marker_misused",
        "test_workspace",
        "test_temp_leftover",
        "test_temp_leftover_of_a_failed_test",
    }
    # a test that failed anyway reports its own failure, not its leftovers (still removed)
    # (counted in the tracebacks: with CI set, pytest's short summary repeats each message)
    raised = [
        line for line in result.outlines if line.startswith("E ") and "LeftoverPaths: " in line
    ]
    assert len(raised) == 1
    result.stdout.fnmatch_lines(["*its own failure is the one reported*"])
