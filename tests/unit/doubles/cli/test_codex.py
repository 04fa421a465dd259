"""The Codex program: tool classification, the plan compiler, install, the top-level command
line, and the ``fake_codex`` fixture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stuntset import scenarios
from stuntset.doubles.cli import PROGRAMS, install_cli
from stuntset.doubles.cli._neutral import NEUTRAL_TOOLS
from stuntset.doubles.cli.codex import CODEX, UNSHOWN, classify_tool, rate_limit_snapshot
from stuntset.errors import ScriptError
from stuntset.script import (
    ApprovalRequest,
    HttpError,
    Overloaded,
    RateLimit,
    RateLimitCredits,
    RateLimits,
    RateLimitWindow,
    Script,
    Text,
    ToolCall,
    ToolResult,
    Turn,
)


@pytest.mark.parametrize(
    ("name", "tool_input", "kind", "details"),
    [
        ("exec_command", {"cmd": "ls -la"}, "command", {"command": "/bin/bash -lc 'ls -la'"}),
        ("exec_command", {"cmd": ["git", "status"]}, "command", {"command": "git status"}),
        ("shell_command", {"command": "make"}, "command", {"command": "/bin/bash -lc make"}),
        (
            "apply_patch",
            {"changes": [{"path": "b.py", "kind": "delete"}]},
            "file_change",
            {"changes": [{"path": "b.py", "kind": "delete", "diff": ""}]},
        ),
        (
            "apply_patch",
            {"path": "a.md"},
            "file_change",
            {"changes": [{"path": "a.md", "kind": "update", "diff": ""}]},
        ),
        ("web_search", {"query": "codex"}, "web_search", {"query": "codex"}),
        (
            "update_plan",
            {"plan": [{"step": "a", "status": "completed"}, "b"]},
            "todo",
            {"items": [{"text": "a", "completed": True}, {"text": "b", "completed": False}]},
        ),
        ("mcp__docs__lookup", {}, "mcp", {"server": "docs", "tool": "lookup"}),
        ("mcp__docs/lookup", {}, "mcp", {"server": "docs", "tool": "lookup"}),
        # tools codex-cli 0.163 lacks (observed: "unsupported call", nothing shown)
        ("bash", {"command": "ls -la"}, "unsupported", {}),
        ("shell", {"command": ["git", "status"]}, "unsupported", {}),
        ("write_file", {"path": "a.md"}, "unsupported", {}),
        ("read_file", {"path": "a.txt"}, "unsupported", {}),
    ],
)
def test_classify_tool(
    name: str, tool_input: dict[str, Any], kind: str, details: dict[str, Any]
) -> None:
    assert classify_tool(name, tool_input) == (kind, details)


_CODEX_TOOLS = {"exec_command", "shell_command", "apply_patch", "web_search", "update_plan"}


@given(
    name=st.text(st.characters(codec="ascii", categories=("L", "N", "P")), min_size=1),
    command=st.one_of(st.none(), st.text(max_size=8)),
)
@settings(max_examples=200, deadline=None)
def test_a_name_codex_lacks_is_unsupported_whatever_its_input(
    name: str, command: str | None
) -> None:
    """Any name that is neither codex's own tool nor an MCP tool's is "unsupported", even
    with the input a shell tool takes (the fake used to guess a command from it)."""
    assume(name not in _CODEX_TOOLS and not name.startswith("mcp__") and "/" not in name)
    tool_input = {} if command is None else {"command": command, "cmd": command}
    assert classify_tool(name, tool_input) == ("unsupported", {})


def test_every_scenario_compiles() -> None:
    for entry in scenarios.all():
        plan = CODEX.compile(CODEX.wire.check(entry.build()))
        assert plan["version"] == "0.163.0"
        assert len(plan["turns"]) == len(entry.build().turns)


def test_api_errors_are_worded_as_codex_words_them() -> None:
    script = Script.of(
        [RateLimit()], [Overloaded()], [HttpError(500)], [HttpError(400, message="bad")]
    )
    ops = [turn["ops"][0] for turn in CODEX.compile(script)["turns"]]
    assert ops[0][1].startswith(
        "exceeded retry limit, last status: 429 Too Many Requests, request id: req-"
    )
    assert ops[0][2] == {"responseTooManyFailedAttempts": {"httpStatusCode": 429}}
    assert ops[1][1].startswith(
        "unexpected status 503 Service Unavailable: Overloaded, "
        "url: https://api.openai.com/v1/responses, request id: req-"
    )
    assert ops[1][2] == {"httpConnectionFailed": {"httpStatusCode": 503}}
    # a 500 is "high demand" whatever its body (observed, codex-cli 0.163.0)
    assert ops[2][1:3] == (
        "We\u2019re currently experiencing high demand, which may cause temporary errors.",
        "internalServerError",
    )
    assert ops[3][1].startswith("unexpected status 400 Bad Request: bad, url: ")
    assert len({op[1] for op in ops}) == 4
    assert CODEX.compile(script) == CODEX.compile(script)  # request ids are seeded


def test_a_5xx_first_in_its_response_is_retried_as_codex_retries_it() -> None:
    """Codex retries 5xx statuses (not a 429 or a 4xx); the "Reconnecting..." notice says
    ``responseStreamDisconnected`` with the status (null for a 500, whose details are the
    "high demand" text). A 5xx after content is an in-band failure: not retried here."""
    script = Script.of(
        [Overloaded()],
        [HttpError(500)],
        [HttpError(502)],
        [RateLimit()],
        [HttpError(404)],
        [Text("partial"), Overloaded()],
        [ToolCall("bash", {"command": "ls"}), ToolResult("a"), HttpError(504)],
    )
    retry = [turn["retry"] for turn in CODEX.compile(script)["turns"]]
    assert retry[0] == {
        "info": {"responseStreamDisconnected": {"httpStatusCode": 503}},
        "details": None,
        "streams": False,
    }
    assert retry[1] == {
        "info": {"responseStreamDisconnected": {"httpStatusCode": None}},
        "details": "We\u2019re currently experiencing high demand, which may cause temporary errors.",
        "streams": False,
    }
    assert retry[2]["info"] == {"responseStreamDisconnected": {"httpStatusCode": 502}}
    assert retry[3:6] == [None, None, None]
    assert retry[6]["info"] == {"responseStreamDisconnected": {"httpStatusCode": 504}}


def test_rate_limits_become_what_codex_shows_for_their_headers() -> None:
    """Observed, codex-cli 0.163.0 over the Responses double: percentages rounded half away
    from zero (42.5 → 43, 42.4 → 42), a window with 0 % and nothing else dropped, credits
    as given; a turn's own rate limits win over the script's; none: every field null."""
    script = Script.of(
        Turn(
            steps=(Text("a"),),
            rate_limits=RateLimits(
                primary=RateLimitWindow(used_percent=42.5, window_minutes=300, resets_at=17),
                secondary=RateLimitWindow(used_percent=0),
                credits=RateLimitCredits(has_credits=True, unlimited=False, balance="1.5"),
            ),
        ),
        [Text("b")],
        rate_limits=RateLimits(primary=RateLimitWindow(used_percent=42.4)),
    )
    shown = [turn["rate_limits"] for turn in CODEX.compile(script)["turns"]]
    assert shown[0]["primary"] == {"usedPercent": 43, "windowDurationMins": 300, "resetsAt": 17}
    assert shown[0]["secondary"] is None
    assert shown[0]["credits"] == {"hasCredits": True, "unlimited": False, "balance": "1.5"}
    assert shown[1]["primary"] == {"usedPercent": 42, "windowDurationMins": None, "resetsAt": None}
    assert list(shown[1]) == [
        "limitId", "limitName", "normalModelSlug", "primary", "secondary", "credits",
        "individualLimit", "spendControlReached", "planType", "rateLimitReachedType",
    ]  # fmt: skip
    assert rate_limit_snapshot(None)["primary"] is None
    assert (
        rate_limit_snapshot(RateLimits(primary=RateLimitWindow(used_percent=99.5)))["primary"][
            "usedPercent"
        ]
        == 100
    )


def test_registered_with_install_cli(tmp_path: Path) -> None:
    assert "codex" in PROGRAMS
    cli = install_cli("codex", scenarios.build("happy_path"), bin_dir=tmp_path)
    assert cli.path == tmp_path / "codex"
    first = cli.path.read_text().splitlines()[0]
    assert first.startswith("#!/")
    assert first.endswith(" -IS")


def test_a_tool_call_without_result_is_refused_at_install(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="every tool_call needs a tool_result"):
        install_cli("codex", Script.of([ToolCall("bash", {"command": "ls"})]), bin_dir=tmp_path)


def test_python_callables_are_refused_at_install(tmp_path: Path) -> None:
    script = Script(turns=(Turn(steps=(Text("x"),), predicate=lambda request: True),))
    with pytest.raises(ScriptError, match="cannot hold Python callables"):
        install_cli("codex", script, bin_dir=tmp_path)


def run(cli: Any, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cli.path), *args], input=stdin, capture_output=True, text=True, timeout=10
    )


def test_top_level_command_line(tmp_path: Path) -> None:
    cli = install_cli("codex", scenarios.build("happy_path"), bin_dir=tmp_path)
    assert run(cli, "--version").stdout == "codex-cli 0.163.0\n"
    assert "Usage: codex [OPTIONS]" in run(cli, "--help").stdout
    bad = run(cli, "--nope")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: unexpected argument '--nope' found")
    assert "For more information, try '--help'." in bad.stderr
    interactive = run(cli, "hello")
    assert (interactive.returncode, interactive.stderr) == (1, "Error: stdin is not a terminal\n")
    other = run(cli, "login")
    assert other.returncode == 2
    assert "`codex login` is not simulated" in other.stderr
    assert "Traceback" not in bad.stderr + interactive.stderr + other.stderr


@pytest.mark.fake_codex("needs_approval")
def test_fake_codex_fixture_from_the_marker(fake_codex: Any) -> None:
    done = run(fake_codex, "exec", "--json", "--skip-git-repo-check", "clean up")
    assert done.returncode == 0
    assert fake_codex.invocations[0].argv[:2] == ["exec", "--json"]


def test_fake_codex_fixture_called(fake_codex: Any) -> None:
    cli = fake_codex(Script.of([Text("called")]), time_scale=0)
    empty = run(cli, "exec", "--json", "--skip-git-repo-check", "-")
    assert (empty.returncode, empty.stdout) == (1, "")
    assert empty.stderr == "Reading prompt from stdin...\nNo prompt provided via stdin.\n"
    done = run(cli, "exec", "--json", "--skip-git-repo-check", "-", stdin="hi")
    assert done.returncode == 0
    assert '"text":"called"' in done.stdout


def test_approval_alone_names_its_tool(tmp_path: Path) -> None:
    script = Script.of(
        [ApprovalRequest(tool="bash", input={"command": "ls"}), ToolResult("x", tool_call_id="a")]
    )
    (turn,) = CODEX.compile(script)["turns"]
    assert turn["ops"][0][4] == ("command", {"command": "/bin/bash -lc ls"})


def test_stuntset_cli_codex(tmp_path: Path) -> None:
    script = tmp_path / "s.toml"
    script.write_text('[[turns]]\nsteps = [{kind = "text", text = "from a file"}]\n')
    command = [sys.executable, "-m", "stuntset.cli", "cli", "codex", "--script", str(script)]
    done = subprocess.run(
        [*command, "--", "exec", "--json", "--skip-git-repo-check", "hi"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert '"text":"from a file"' in done.stdout


def test_a_refusal_must_open_its_turn() -> None:
    """The server refuses the request that would start a turn, before anything of it: a
    refusing ``http_error`` after other steps is refused when the script is compiled."""
    late = Script.of([Text("hi"), HttpError(400, error_type="invalid_params")])
    with pytest.raises(ScriptError, match="must be the turn's first step") as caught:
        CODEX.compile(late)
    assert caught.value.step == 1
    (turn,) = CODEX.compile(Script.of([HttpError(503, error_type="server_overloaded")]))["turns"]
    assert turn["ops"] == [("refuse", -32001, "Server overloaded; retry later.", None)]


@given(
    name=st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12),
    asked=st.booleans(),
)
@settings(max_examples=50, deadline=None)
def test_a_call_of_a_tool_codex_lacks_compiles_to_nothing_shown(name: str, asked: bool) -> None:
    """Whatever the name codex lacks: no item op, no approval, and its scripted result only
    ends the model response (so the text after it is a new message)."""
    assume(name not in _CODEX_TOOLS and name not in NEUTRAL_TOOLS and name != "request_user_input")
    steps = [ToolCall(name, {"command": "ls"}), *([ApprovalRequest()] if asked else [])]
    script = Script.of([*steps, ToolResult("x"), Text("after")])
    (turn,) = CODEX.compile(script)["turns"]
    assert [op[0] for op in turn["ops"]] == ["result", "text"]
    assert turn["ops"][0] == ("result", None, True, UNSHOWN)


def test_the_catalog_tools_compile_to_exec_command() -> None:
    """``read_file`` / ``list_files`` / ``bash`` are codex's ``exec_command`` (``cat``, ``ls
    -p``, the command); a listing ends with the newline ``ls`` prints."""
    script = Script.of(
        [
            ToolCall("read_file", {"path": "a.txt"}),
            ToolResult("alpha"),
            ToolCall("list_files", {"path": "src"}),
            ToolResult("a.py"),
            ToolCall("bash", {"command": "make"}),
            ToolResult("ok"),
        ]
    )
    (turn,) = CODEX.compile(script)["turns"]
    tools = [op for op in turn["ops"] if op[0] == "tool"]
    assert [(op[2], op[3], op[5]["command"]) for op in tools] == [
        ("command", "exec_command", "/bin/bash -lc 'cat a.txt'"),
        ("command", "exec_command", "/bin/bash -lc 'ls -p src'"),
        ("command", "exec_command", "/bin/bash -lc make"),
    ]
    assert [op[1] for op in turn["ops"] if op[0] == "result"] == ["alpha", "a.py\n", "ok"]
