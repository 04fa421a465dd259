"""Hooks in the fake ``claude`` (``_process/hooks.py``): matchers, settings files, timeouts, the
``http``, ``prompt`` and ``agent`` types. Each rule is what Claude Code 2.1.332 was seen doing
(docs/protocol-reference.md, "Claude hooks"); tests/interop/test_claude_hooks_real.py plays the
same configurations through the real binary."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.doubles.cli.claude._process.hook_settings import transcript_path, valid_hooks
from stuntset.doubles.cli.claude._process.hooks import matches
from stuntset.script import Delay, Match, Script, Text, ToolCall, ToolResult, Turn, Usage

STREAM = ["--output-format", "stream-json", "--verbose"]
BASH = ToolCall("Bash", {"command": "echo hi"})
TOOL_TURN = Script.of([BASH, ToolResult("hi"), Text("after")])


# --- matchers -------------------------------------------------------------------------------

#: matcher → the tools it selected among Bash, Read and Write (observed, PreToolUse).
OBSERVED = {
    "Bash": {"Bash"},
    "Ba": set(),  # a name, not a prefix
    "bash": set(),  # names are case-sensitive
    "Bash|Write": {"Bash", "Write"},
    "Read, Bash": {"Read", "Bash"},  # tool events: commas and spaces separate names too
    "Bash |Write": {"Bash", "Write"},
    "Re-ad": set(),  # still a name (hyphens allowed)
    "B.*": {"Bash"},  # a regular expression
    "as.": {"Bash"},  # unanchored
    "^Bash$": {"Bash"},
    "^R": {"Read"},
    ".*": {"Bash", "Read", "Write"},
    "mcp__.*": set(),
    "Bash(": set(),  # invalid: matches nothing
    "*": {"Bash", "Read", "Write"},
    "": {"Bash", "Read", "Write"},
    "Task": set(),  # Task is the old name of Agent
}


@pytest.mark.parametrize("pattern", sorted(OBSERVED))
def test_matchers_select_the_tools_the_real_cli_selected(pattern: str) -> None:
    selected = {tool for tool in ("Bash", "Read", "Write") if matches("PreToolUse", pattern, tool)}
    assert selected == OBSERVED[pattern]


def test_a_missing_matcher_matches_and_events_without_a_match_value_ignore_it() -> None:
    assert matches("PreToolUse", None, "Bash")
    assert matches("UserPromptSubmit", "Bash", None)  # observed: fires with matcher "Bash"
    assert matches("Stop", "Bash", None)


def test_session_start_matches_its_source() -> None:
    assert matches("SessionStart", "startup", "startup")
    assert not matches("SessionStart", "resume", "startup")
    assert not matches("SessionStart", "Bash", "startup")


def test_old_tool_names_match_the_tool_they_became() -> None:
    assert matches("PreToolUse", "Task", "Agent")
    assert matches("PreToolUse", "^Task$", "Agent")  # a regex is tried on the old name too
    assert not matches("PreToolUse", "Task", "Bash")


def test_javascript_named_groups_and_lookbehind_work() -> None:
    assert matches("PreToolUse", "(?<name>Ba)sh", "Bash")
    assert matches("PreToolUse", "(?<=B)ash", "Bash")
    assert not matches("PreToolUse", "(?<!B)ash", "Bash")


def probe(tmp_path: Path, code: str) -> str:
    """Run ``code`` in a fake claude process's interpreter set-up (``-IS``, the launcher's
    package mapping, no coverage hook); its stdout."""
    cli = install_cli("claude", TOOL_TURN, bin_dir=tmp_path / "probe")
    lines = cli.path.read_text().splitlines()[1:-1]  # without shebang and main()
    script = tmp_path / "probe.py"
    script.write_text("\n".join(lines) + "\n" + code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUNTSET_COVERAGE_")}
    done = subprocess.run(
        [sys.executable, "-IS", str(script)], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout


def test_only_a_regular_expression_matcher_imports_re(tmp_path: Path) -> None:
    """The fake process imports built-ins only (``_runtime``): ``re`` costs start-up time, so
    it comes in when a matcher needs it, not for names, ``*`` or an empty matcher."""
    out = probe(
        tmp_path,
        "from stuntset.doubles.cli.claude._process.hooks import matches\n"
        "for p in ('Bash', 'Edit|Write', 'Read, Bash', '*', '', None):\n"
        "    matches('PreToolUse', p, 'Bash')\n"
        "print('re' in sys.modules)\n"
        "matches('PreToolUse', 'mcp__.*', 'Bash')\n"
        "print('re' in sys.modules)\n",
    )
    assert out.split() == ["False", "True"]


# --- settings files -------------------------------------------------------------------------


def log(label: str) -> dict[str, Any]:
    """A command hook that prints ``label`` (its ``hook_response`` stdout)."""
    return {"type": "command", "command": f"echo {label}"}


def group(matcher: str | None, *hooks: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"hooks": list(hooks)}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


@dataclass
class Done:
    returncode: int
    stderr: str
    messages: list[dict[str, Any]]

    def responses(self, event: str | None = None) -> list[str]:
        """The stdout of each ``hook_response`` (of ``event``), in order."""
        return [
            m["stdout"].strip()
            for m in self.messages
            if m.get("subtype") == "hook_response" and event in (None, m["hook_event"])
        ]

    def of(self, subtype: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("subtype", m["type"]) == subtype]


class Place:
    """A working directory and a home for the fake, with settings files in them."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.cwd = tmp_path / "project"
        self.home = tmp_path / "home"
        (self.cwd / ".claude").mkdir(parents=True)
        (self.home / ".claude").mkdir(parents=True)
        self.env = {"PATH": os.environ["PATH"], "HOME": str(self.home), "OUT": str(tmp_path)}
        # a measured run's fake processes measure themselves (tests/conftest.py)
        self.env.update((k, v) for k, v in os.environ.items() if k.startswith("STUNTSET_COVERAGE_"))

    def write(self, where: str, settings: Any) -> Path:
        path = {
            "user": self.home / ".claude" / "settings.json",
            "project": self.cwd / ".claude" / "settings.json",
            "local": self.cwd / ".claude" / "settings.local.json",
        }.get(where, self.root / where)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
        return path

    def run(
        self, script: Script, *args: str, cwd: Path | None = None, time_scale: float = 1.0
    ) -> Done:
        cli = install_cli("claude", script, bin_dir=self.root / "bin", time_scale=time_scale)
        return self.run_installed(cli, *args, cwd=cwd)

    def run_installed(self, cli: InstalledCli, *args: str, cwd: Path | None = None) -> Done:
        done = subprocess.run(
            [str(cli.path), *STREAM, "--include-hook-events", "--allowedTools", "Bash", *args],
            cwd=cwd or self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "Traceback" not in done.stderr
        messages = [json.loads(line) for line in done.stdout.splitlines()]
        return Done(done.returncode, done.stderr, messages)


@pytest.fixture
def place(tmp_path: Path) -> Place:
    return Place(tmp_path)


def test_user_project_local_and_flag_settings_all_run_in_that_order(place: Place) -> None:
    """Observed: the hooks of every source run (user, project, local, then ``--settings``,
    each in its order), and an identical command runs once, where it came first."""
    place.write(
        "user", {"hooks": {"PreToolUse": [group("*", log("USER")), group("Bash", log("DUP"))]}}
    )
    place.write(
        "project",
        {"hooks": {"PreToolUse": [group("Bash", log("DUP")), group("*", log("PROJECT"))]}},
    )
    place.write("local", {"hooks": {"PreToolUse": [group("", log("LOCAL"))]}})
    flag = json.dumps({"hooks": {"PreToolUse": [group("Bash", log("FLAG"))]}})
    done = place.run(TOOL_TURN, "-p", "go", "--settings", flag)
    assert done.responses("PreToolUse") == ["USER", "DUP", "PROJECT", "LOCAL", "FLAG"]


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ("--setting-sources=user,project", ["USER", "PROJECT", "FLAG"]),
        ("--setting-sources=local", ["LOCAL", "FLAG"]),
        ("--setting-sources=", ["FLAG"]),
    ],
)
def test_setting_sources_choose_the_files_but_not_the_flag(
    place: Place, sources: str, expected: list[str]
) -> None:
    for where in ("user", "project", "local"):
        place.write(where, {"hooks": {"PreToolUse": [group("*", log(where.upper()))]}})
    flag = json.dumps({"hooks": {"PreToolUse": [group("*", log("FLAG"))]}})
    done = place.run(TOOL_TURN, "-p", "go", "--settings", flag, sources)
    assert done.responses("PreToolUse") == expected


def test_claude_config_dir_holds_the_user_settings(place: Place) -> None:
    place.write("user", {"hooks": {"PreToolUse": [group("*", log("HOME"))]}})
    config = place.write(
        "config/settings.json", {"hooks": {"PreToolUse": [group("*", log("CONFIG"))]}}
    )
    place.env["CLAUDE_CONFIG_DIR"] = str(config.parent)
    assert place.run(TOOL_TURN, "-p", "go").responses() == ["CONFIG"]


def test_project_settings_come_from_the_working_directory_only(place: Place) -> None:
    """Observed (no git repository): a parent directory's ``.claude`` is not read."""
    place.write("project", {"hooks": {"PreToolUse": [group("*", log("PARENT"))]}})
    (place.cwd / "sub").mkdir()
    assert place.run(TOOL_TURN, "-p", "go", cwd=place.cwd / "sub").responses() == []


@pytest.mark.parametrize(
    "broken",
    [
        "{not json",
        {"hooks": {"PreToolUse": "x"}},
        {"hooks": {"PreToolUse": [group("*", {"type": "bogus"})]}},
        {"hooks": {"PreToolUse": [group("*", {"type": "command"})]}},  # no command
        {"hooks": {"PreToolUse": [group("*", {**log("X"), "timeout": 0})]}},
        {"hooks": {"PreToolUse": [{"matcher": 5, "hooks": [log("X")]}]}},
        {"hooks": {"PreToolUse": ["not a group"]}},
        {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": ["not a hook"]}]}},
        {"hooks": {"PreToolUse": [group("*", {**log("X"), "headers": {"X-N": 1}})]}},
    ],
)
def test_a_settings_file_that_fails_the_schema_adds_no_hooks_silently(
    place: Place, broken: Any
) -> None:
    place.write("project", broken)
    place.write("user", {"hooks": {"PreToolUse": [group("*", log("USER"))]}})
    done = place.run(TOOL_TURN, "-p", "go")
    assert (done.returncode, done.stderr, done.responses()) == (0, "", ["USER"])


def test_what_the_schema_lets_through() -> None:
    """Unknown events and fields are ignored; a group may have no ``hooks``."""
    assert valid_hooks({"NoSuchEvent": "anything", "Stop": [{"matcher": "*"}]})
    assert valid_hooks({"Stop": [group(None, {**log("X"), "comment": "x", "timeout": 0.5})]})
    assert valid_hooks({"Stop": [{"matcher": "*", "hooks": [], "extra": 1}]})
    assert not valid_hooks({"Stop": [group(None, {"type": "http", "url": "ftp://x"})]})
    assert not valid_hooks({"Stop": [group(None, {**log("X"), "timeout": True})]})
    assert not valid_hooks(["not", "a", "table"])


def test_disable_all_hooks_anywhere_turns_off_every_settings_hook(place: Place) -> None:
    place.write("user", {"hooks": {"PreToolUse": [group("*", log("USER"))]}})
    place.write("local", {"disableAllHooks": True})
    flag = json.dumps({"hooks": {"SessionStart": [group(None, log("FLAG"))]}})
    assert place.run(TOOL_TURN, "-p", "go", "--settings", flag).responses() == []


@pytest.mark.parametrize(
    ("hook", "named"),
    [
        ({**log("X"), "async": True}, "its field 'async'"),
        ({**log("X"), "if": "Bash(git *)"}, "its field 'if'"),
        ({**log("X"), "once": True}, "its field 'once'"),
        ({**log("X"), "shell": "powershell"}, "its shell 'powershell'"),
        ({**log("X"), "onFailure": "block"}, "onFailure 'block'"),
        ({"type": "mcp_tool", "server": "s", "tool": "t"}, "its type 'mcp_tool'"),
    ],
)
def test_a_hook_the_fake_cannot_play_is_refused_at_start_up(
    place: Place, hook: dict[str, Any], named: str
) -> None:
    path = place.write("project", {"hooks": {"Stop": [group(None, log("FIRST"), hook)]}})
    done = place.run(TOOL_TURN, "-p", "go")
    assert (done.returncode, done.messages) == (1, [])
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"stuntset fake claude: {path}: hooks.Stop[0].hooks[1]: {named} ")
    assert "is not simulated" in line


def test_a_prompt_hook_on_session_start_is_refused(place: Place) -> None:
    place.write(
        "project", {"hooks": {"SessionStart": [group(None, {"type": "prompt", "prompt": "p"})]}}
    )
    done = place.run(TOOL_TURN, "-p", "go")
    assert done.returncode == 1
    assert "a prompt hook on SessionStart is not simulated" in done.stderr


# --- hook input -----------------------------------------------------------------------------


def test_hook_inputs_have_the_real_fields_in_the_real_order(place: Place) -> None:
    capture = {"type": "command", "command": 'cat >> "$OUT/inputs.jsonl"'}
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
    place.write("project", {"hooks": {e: [group(None, capture)] for e in events}})
    done = place.run(TOOL_TURN, "-p", "go")
    inputs = [json.loads(line) for line in (place.root / "inputs.jsonl").read_text().splitlines()]
    session = done.messages[-1]["session_id"]
    head = ["session_id", "transcript_path", "cwd"]
    assert [list(i) for i in inputs] == [
        [*head, "hook_event_name", "source"],
        [*head, "prompt_id", "permission_mode", "hook_event_name", "prompt"],
        [*head, "prompt_id", "permission_mode", "hook_event_name", "tool_name", "tool_input", "tool_use_id"],
        [*head, "prompt_id", "permission_mode", "hook_event_name", "tool_name", "tool_input", "tool_response", "tool_use_id", "duration_ms"],
        [*head, "prompt_id", "permission_mode", "hook_event_name", "stop_hook_active", "last_assistant_message", "background_tasks", "session_crons"],
        [*head, "prompt_id", "hook_event_name", "reason"],
    ]  # fmt: skip
    assert {i["session_id"] for i in inputs} == {session}
    assert len({i.get("prompt_id") for i in inputs[1:]}) == 1
    assert inputs[0]["transcript_path"] == transcript_path(
        {"HOME": str(place.home)}, str(place.cwd), session
    )
    assert inputs[4]["last_assistant_message"] == "after"
    assert (inputs[0]["source"], inputs[5]["reason"]) == ("startup", "other")
    # SessionEnd runs at exit; its hook messages are not written (observed)
    assert "SessionEnd" not in {m.get("hook_event") for m in done.messages}


def test_the_transcript_path_is_the_real_one() -> None:
    """Observed: every character of the working directory but ASCII letters and digits
    becomes ``-``; ``CLAUDE_CONFIG_DIR`` wins over ``$HOME/.claude``."""
    assert transcript_path({"HOME": "/h"}, "/tmp/x_y.z ä/cwd", "S") == (
        "/h/.claude/projects/-tmp-x-y-z---cwd/S.jsonl"
    )
    assert transcript_path({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}, "/w", "S") == (
        "/c/projects/-w/S.jsonl"
    )


# --- command hooks and their timeout --------------------------------------------------------


def test_a_command_hook_past_its_timeout_is_killed_and_the_tool_runs(place: Place) -> None:
    """Observed: ``outcome: "cancelled"``, ``exit_code: 1``, the output so far; then a
    ``hook_no_verdict`` warning (PreToolUse only) and the tool runs. Real time: the hook's
    timeout is 0.2 s (seconds, fractions allowed); the hook's own children are killed too, or
    the run would wait for them (they hold its stdout)."""
    slow = {"type": "command", "command": "sleep 30 & wait", "timeout": 0.2}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", slow)]}})
    began = time.monotonic()
    done = place.run(TOOL_TURN, "-p", "go")
    assert time.monotonic() - began < 10
    (response,) = done.of("hook_response")
    assert (response["exit_code"], response["outcome"], response["output"]) == (1, "cancelled", "")
    (warning,) = done.of("informational")
    assert warning["content"] == "A hook didn't answer in time, so it didn't check this action."
    assert warning["hook_no_verdict"]["timed_out"] is True
    assert warning["tag"] == "hook_no_verdict"
    (result,) = [m for m in done.messages if m["type"] == "user"]
    assert result["message"]["content"][0]["content"] == "hi"


def test_a_timeout_on_another_event_is_only_cancelled(place: Place) -> None:
    """Observed: a timed-out UserPromptSubmit, PostToolUse or Stop hook blocks nothing and
    writes no warning. Real time: each hook's timeout is 0.1 s."""
    slow = {"type": "command", "command": "sleep 30", "timeout": 0.1}
    events = ("UserPromptSubmit", "PostToolUse", "Stop")
    place.write("project", {"hooks": {e: [group(None, slow)] for e in events}})
    done = place.run(TOOL_TURN, "-p", "go")
    assert [m["outcome"] for m in done.of("hook_response")] == ["cancelled"] * 3
    assert done.of("informational") == []
    assert done.messages[-1]["result"] == "after"


def test_a_command_exiting_1_is_no_missing_verdict(place: Place) -> None:
    place.write(
        "project",
        {"hooks": {"PreToolUse": [group(None, {"type": "command", "command": "exit 1"})]}},
    )
    done = place.run(TOOL_TURN, "-p", "go")
    assert done.of("hook_response")[0]["outcome"] == "error"
    assert done.of("informational") == []


@pytest.mark.parametrize(
    ("event", "answer", "expected"),
    [
        ("UserPromptSubmit", {"decision": "block", "reason": "r1"}, "UserPromptSubmit operation blocked by hook:\nr1\n\nOriginal prompt: go"),
        ("PreToolUse", {"decision": "block", "reason": "old block"}, "PreToolUse:Bash hook error: old block"),
        ("Stop", {"decision": "block", "reason": "keep going"}, "Stop hook feedback:\nkeep going"),
    ],
)  # fmt: skip
def test_a_json_decision_block_quotes_the_reason_alone(
    place: Place, event: str, answer: dict[str, Any], expected: str
) -> None:
    once = f'[ -f "$OUT/once" ] && exit 0; touch "$OUT/once"; echo \'{json.dumps(answer)}\''
    place.write("project", {"hooks": {event: [group(None, {"type": "command", "command": once})]}})
    script = Script.of([BASH, ToolResult("hi"), Text("after")], [Text("second")])
    done = place.run(script, "-p", "go")
    texts = json.dumps(done.messages)
    assert json.dumps(expected)[1:-1] in texts


def test_continue_false_ends_the_turn_after_the_tool(place: Place) -> None:
    """Observed (PreToolUse and PostToolUse): the tool runs, then a ``success`` result with
    no text, ``stop_reason: "tool_use"``, ``terminal_reason: "hook_stopped"``."""
    stop = {"type": "command", "command": "echo '{\"continue\": false}'"}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", stop)]}})
    done = place.run(TOOL_TURN, "-p", "go")
    result = done.messages[-1]
    assert [m["type"] for m in done.messages if m["type"] != "system"] == [
        "assistant",
        "user",
        "result",
    ]
    assert (result["result"], result["stop_reason"], result["terminal_reason"]) == (
        "",
        "tool_use",
        "hook_stopped",
    )
    assert result["num_turns"] == 2


# --- prompt and agent hooks: the script answers ---------------------------------------------


def prompt_hook(**extra: Any) -> dict[str, Any]:
    return {"type": "prompt", "prompt": "Safe? $ARGUMENTS", **extra}


def test_a_prompt_hook_is_answered_by_the_next_turn_and_its_usage_counts(place: Place) -> None:
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", prompt_hook())]}})
    script = Script.of(
        [BASH, ToolResult("hi"), Text("after"), Usage(10, 5)],
        [Text('{"ok": true, "reason": "fine"}'), Usage(3, 2)],
    )
    cli = install_cli("claude", script, bin_dir=place.root / "bin")
    done = place.run_installed(cli, "-p", "go")
    result = done.messages[-1]
    assert (result["result"], result["usage"]["input_tokens"]) == ("after", 13)
    assert done.of("hook_response") == []  # prompt hooks write no hook messages (observed)
    cli.assert_all_used()


def test_a_prompt_hook_turn_is_found_by_its_prompt_and_model(place: Place) -> None:
    """The hook's user message is its prompt with ``$ARGUMENTS`` replaced by the input (or
    appended after ``ARGUMENTS:``), asked of its ``model``: a turn can match either."""
    hook = {"type": "prompt", "prompt": "No placeholder", "model": "claude-haiku-4-5"}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    answer = Match(contains='No placeholder\n\nARGUMENTS: {"session_id"', model="claude-haiku-4-5")
    script = Script.of(
        Turn(steps=(Text('{"ok": false, "reason": "matched"}'),), match=answer),
        [BASH, ToolResult("hi"), Text("after")],
    )
    done = place.run(script, "-p", "go")
    assert done.messages[-1]["terminal_reason"] == "hook_stopped"


def test_a_user_prompt_submit_prompt_hook_asks_before_the_prompt_takes_a_turn(
    place: Place,
) -> None:
    """Observed: the hook's request comes first, so its answer is the first turn."""
    place.write("project", {"hooks": {"UserPromptSubmit": [group(None, prompt_hook())]}})
    script = Script.of([Text('{"ok": true, "reason": "fine"}')], [Text("the answer")])
    assert place.run(script, "-p", "go").messages[-1]["result"] == "the answer"


def test_a_prompt_answer_that_is_not_a_verdict_leaves_the_action_unchecked(place: Place) -> None:
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", prompt_hook())]}})
    script = Script.of([BASH, ToolResult("hi"), Text("ran")], [Text('{"reason": "no ok"}')])
    done = place.run(script, "-p", "go")
    (warning,) = done.of("informational")
    assert warning["content"] == "A hook gave no usable answer, so it didn't check this action."
    assert done.messages[-1]["result"] == "ran"


def test_a_prompt_answer_slower_than_the_timeout_times_out(place: Place) -> None:
    """A scripted ``Delay`` at least the hook's ``timeout`` long: the hook waits the timeout
    (scaled by the double's ``time_scale``, here to 20 ms) and has no verdict."""
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", prompt_hook(timeout=2))]}})
    script = Script.of(
        [BASH, ToolResult("hi"), Text("ran")], [Delay(5), Text('{"ok": false, "reason": "late"}')]
    )
    done = place.run(script, "-p", "go", time_scale=0.01)
    (warning,) = done.of("informational")
    assert warning["hook_no_verdict"]["timed_out"] is True
    assert done.messages[-1]["result"] == "ran"


@pytest.mark.parametrize(
    ("hook", "answer", "named"),
    [
        (prompt_hook(), [BASH, ToolResult("x")], "with a 'tool_use' step"),
        ({"type": "agent", "prompt": "Check"}, [Text('{"ok": true, "reason": "r"}')], "without a StructuredOutput tool call"),
        ({"type": "agent", "prompt": "Check"}, [ToolCall("Read", {"file_path": "/x"}), ToolResult("x")], "with a 'tool_use' step"),
    ],
)  # fmt: skip
def test_a_hook_turn_the_fake_cannot_play_ends_the_turn_naming_it(
    place: Place, hook: dict[str, Any], answer: list[Any], named: str
) -> None:
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    done = place.run(Script.of([BASH, ToolResult("hi"), Text("after")], answer), "-p", "go")
    result = done.messages[-1]
    assert (done.returncode, result["subtype"]) == (1, "error_during_execution")
    assert named in result["errors"][0]
    assert named in done.stderr


def test_a_prompt_hook_with_no_turn_left_is_the_script_running_out(place: Place) -> None:
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", prompt_hook())]}})
    done = place.run(TOOL_TURN, "-p", "go")
    assert done.messages[-1]["subtype"] == "error_during_execution"
    assert "has no turn for request #2" in done.stderr


# --- http hooks -----------------------------------------------------------------------------


class HookServer(BaseHTTPRequestHandler):
    """Answers POSTs as ``replies[path]`` says: (status, body); ``/hold`` waits for the test's
    ``release`` event (a hook that never answers in time)."""

    replies: ClassVar[dict[str, tuple[int, bytes]]] = {}
    received: ClassVar[list[tuple[str, dict[str, str], Any]]] = []
    release: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.received.append((self.path, dict(self.headers), body))
        if self.path == "/hold":
            self.release.wait(30)
        status, data = self.replies.get(self.path, (200, b""))
        self.send_response(status)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[tuple[str, type[HookServer]]]:
    handler = type(
        "Handler", (HookServer,), {"replies": {}, "received": [], "release": threading.Event()}
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    handler.release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.mark.slow
def test_an_http_hook_posts_the_input_and_its_json_answer_decides(
    place: Place, server: tuple[str, type[HookServer]]
) -> None:
    url, handler = server
    deny = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}
    handler.replies["/deny"] = (200, json.dumps(deny).encode())
    hook = {
        "type": "http",
        "url": url + "/deny",
        "headers": {"Authorization": "Bearer $TOKEN", "X-Other": "${OTHER}", "X-Plain": "v"},
        "allowedEnvVars": ["TOKEN"],
    }
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    place.env.update(TOKEN="tok", OTHER="other")
    done = place.run(TOOL_TURN, "-p", "go")
    ((path, headers, body),) = handler.received
    assert (path, body["hook_event_name"], body["tool_input"]) == (
        "/deny",
        "PreToolUse",
        {"command": "echo hi"},
    )
    assert headers["Content-Type"] == "application/json"
    assert (headers["Authorization"], headers["X-Other"], headers["X-Plain"]) == (
        "Bearer tok",
        "",
        "v",
    )
    (response,) = done.of("hook_response")
    assert (response["exit_code"], response["outcome"], json.loads(response["stdout"])) == (
        200,
        "success",
        deny,
    )
    (result,) = [m for m in done.messages if m["type"] == "user"]
    assert result["message"]["content"][0]["content"] == "PreToolUse:Bash hook error: no"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "reply", "fields", "timed_out"),
    [
        ("/fail", (500, b"boom"), {"exit_code": 500, "outcome": "error", "stdout": "", "stderr": "HTTP 500 from {url}/fail"}, False),
        ("/text", (200, b"not json"), {"exit_code": 200, "outcome": "error", "stdout": "not json", "stderr": "HTTP hook must return JSON, but got non-JSON response body: not json"}, False),
        ("/bad", (200, b"{not json"), {"exit_code": 200, "outcome": "error", "stdout": "{{not json", "stderr": "HTTP hook must return valid JSON, but parsing failed"}, False),
        ("/hold", None, {"outcome": "cancelled", "output": "Hook cancelled"}, True),
    ],
)  # fmt: skip
def test_an_http_hook_without_a_usable_answer_leaves_the_tool_unchecked(
    place: Place,
    server: tuple[str, type[HookServer]],
    path: str,
    reply: tuple[int, bytes] | None,
    fields: dict[str, Any],
    timed_out: bool,
) -> None:
    """Observed shapes; the ``/hold`` case is real time: the server holds the request past
    the hook's 0.2 s timeout."""
    url, handler = server
    if reply is not None:
        handler.replies[path] = reply
    hook = {"type": "http", "url": url + path, "timeout": 0.2}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    done = place.run(TOOL_TURN, "-p", "go")
    (response,) = done.of("hook_response")
    for key, value in fields.items():
        assert response[key] == (value.format(url=url) if isinstance(value, str) else value), key
    assert ("exit_code" in response) is not timed_out
    (warning,) = done.of("informational")
    assert warning["hook_no_verdict"]["timed_out"] is timed_out
    assert done.messages[-1]["result"] == "after"


def test_an_http_hook_nobody_listens_to(place: Place) -> None:
    """Observed: Node's error text, no ``exit_code``."""
    hook = {"type": "http", "url": "http://127.0.0.1:9/hook"}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    done = place.run(TOOL_TURN, "-p", "go")
    (response,) = done.of("hook_response")
    assert (response["stderr"], response["outcome"]) == (
        "connect ECONNREFUSED 127.0.0.1:9",
        "error",
    )
    assert "exit_code" not in response


# --- edges: settings, answers and http requests the cases above leave out -------------------


def test_settings_may_name_a_file_relative_to_the_working_directory(place: Place) -> None:
    place.write("project/mine.json", {"hooks": {"PreToolUse": [group("*", log("FILE"))]}})
    assert place.run(TOOL_TURN, "-p", "go", "--settings", "mine.json").responses() == ["FILE"]


def test_a_settings_file_that_is_not_there_is_refused(place: Place) -> None:
    done = place.run(TOOL_TURN, "-p", "go", "--settings", "missing.json")
    assert (done.returncode, done.messages) == (1, [])
    assert done.stderr == f"Error: Settings file not found: {place.cwd}/missing.json\n"


def test_an_unknown_event_beside_known_ones_is_ignored(place: Place) -> None:
    place.write(
        "project",
        {
            "hooks": {
                "NoSuchEvent": [group(None, log("NO"))],
                "PreToolUse": [group("*", log("YES"))],
            }
        },
    )
    done = place.run(TOOL_TURN, "-p", "go")
    assert (done.returncode, done.responses()) == (0, ["YES"])


def test_command_output_that_only_looks_like_json_decides_nothing(place: Place) -> None:
    """A command hook that exits 0 with ``{`` but no JSON: the fake takes it as plain output
    (no decision, no ``hook_no_verdict`` warning) and the tool runs."""
    hook = {"type": "command", "command": 'echo \'{"decision": "block"\''}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    done = place.run(TOOL_TURN, "-p", "go")
    (response,) = done.of("hook_response")
    assert (response["exit_code"], response["outcome"]) == (0, "success")
    assert done.of("informational") == []
    (result,) = [m for m in done.messages if m["type"] == "user"]
    assert result["message"]["content"][0]["content"] == "hi"


def test_a_prompt_answer_within_the_timeout_decides_after_its_delay(place: Place) -> None:
    """A ``Delay`` shorter than the hook's ``timeout``: the hook waits it (scaled to 10 ms),
    then its verdict stands: ``ok: false`` denies the tool and stops the turn."""
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", prompt_hook(timeout=2))]}})
    script = Script.of(
        [BASH, ToolResult("hi"), Text("ran")], [Delay(1), Text('{"ok": false, "reason": "no"}')]
    )
    done = place.run(script, "-p", "go", time_scale=0.01)
    assert done.of("informational") == []
    (result,) = [m for m in done.messages if m["type"] == "user"]
    assert result["message"]["content"][0]["content"] == (
        "PreToolUse:Bash hook error: [Safe? $ARGUMENTS]: no"
    )
    assert done.messages[-1]["terminal_reason"] == "hook_stopped"


@pytest.mark.slow
def test_an_empty_2xx_body_is_an_answer_that_decides_nothing(
    place: Place, server: tuple[str, type[HookServer]]
) -> None:
    url, _ = server
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", {"type": "http", "url": url})]}})
    done = place.run(TOOL_TURN, "-p", "go")
    (response,) = done.of("hook_response")
    assert (response["exit_code"], response["outcome"], response["stdout"]) == (200, "success", "")
    assert done.of("informational") == []
    assert done.messages[-1]["result"] == "after"


@pytest.mark.slow
def test_an_http_url_without_a_path_posts_to_the_root_with_its_query(
    place: Place, server: tuple[str, type[HookServer]]
) -> None:
    url, handler = server
    hook = {"type": "http", "url": url + "?who=me#frag"}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    place.run(TOOL_TURN, "-p", "go")
    assert [path for path, _, _ in handler.received] == ["/?who=me"]


def test_an_http_url_without_a_port_uses_the_scheme_default(place: Place) -> None:
    """Port 80 for ``http``: the refused connection's error names it (where something does
    listen on port 80 of this machine, there is nothing to prove)."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 80)) == 0:
            pytest.skip("something listens on 127.0.0.1:80 here")
    hook = {"type": "http", "url": "http://user@127.0.0.1/hook"}
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    done = place.run(TOOL_TURN, "-p", "go")
    (response,) = done.of("hook_response")
    assert (response["stderr"], response["outcome"]) == (
        "connect ECONNREFUSED 127.0.0.1:80",
        "error",
    )


@pytest.mark.slow
def test_a_header_dollar_that_names_no_variable_stays(
    place: Place, server: tuple[str, type[HookServer]]
) -> None:
    url, handler = server
    hook = {"type": "http", "url": url, "headers": {"X-Price": "$ 5 ${OPEN $"}}
    hook["allowedEnvVars"] = ["OPEN"]
    place.env["OPEN"] = "secret"
    place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
    place.run(TOOL_TURN, "-p", "go")
    ((_, headers, _),) = handler.received
    assert headers["X-Price"] == "$ 5 ${OPEN $"


class Dropper(BaseHTTPRequestHandler):
    """Reads a POST and closes the connection without answering."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.mark.slow
def test_an_http_hook_whose_server_hangs_up_has_no_usable_answer(place: Place) -> None:
    """The fake's stderr is Python's error text (the real CLI's Node text is not simulated);
    the outcome, the missing ``exit_code`` and the warning are as for a refused connection."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Dropper)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        hook = {"type": "http", "url": f"http://127.0.0.1:{httpd.server_address[1]}/h"}
        place.write("project", {"hooks": {"PreToolUse": [group("Bash", hook)]}})
        done = place.run(TOOL_TURN, "-p", "go")
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    (response,) = done.of("hook_response")
    assert response["outcome"] == "error"
    assert response["stderr"] == "Remote end closed connection without response"
    assert "exit_code" not in response
    (warning,) = done.of("informational")
    assert warning["hook_no_verdict"]["timed_out"] is False
    assert done.messages[-1]["result"] == "after"


# --- the SDK's hooks (``initialize``) -------------------------------------------------------


def sdk_session(
    tmp_path: Path, hooks: dict[str, Any], replies: dict[str, dict[str, Any]]
) -> tuple[list[str], list[dict[str, Any]]]:
    """A stream-json session whose SDK registered ``hooks``: each ``hook_callback`` is
    answered with ``replies[callback_id]`` (a control ``response``); (callback ids asked, all
    messages)."""
    cli = install_cli("claude", TOOL_TURN, bin_dir=tmp_path / "bin")
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(tmp_path)
    proc = subprocess.Popen(
        [str(cli.path), *STREAM, "--input-format", "stream-json", "--allowedTools", "Bash"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    init = {"subtype": "initialize", "hooks": hooks}
    send({"type": "control_request", "request_id": "init", "request": init})
    send({"type": "user", "message": {"role": "user", "content": "go"}})
    asked, seen = [], []
    while not seen or seen[-1]["type"] != "result":
        seen.append(json.loads(proc.stdout.readline()))
        request = seen[-1].get("request") or {}
        if seen[-1]["type"] == "control_request" and request["subtype"] == "hook_callback":
            asked.append(request["callback_id"])
            reply = {**replies[request["callback_id"]], "request_id": seen[-1]["request_id"]}
            send({"type": "control_response", "response": reply})
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()
    return asked, seen


def test_sdk_hooks_run_where_their_matcher_selects_and_a_block_denies(tmp_path: Path) -> None:
    """A group whose matcher does not select the tool is not asked; an error answer decides
    nothing (the fake's reading: the real CLI's handling of an SDK callback error was not
    observed); ``{"decision": "block"}`` denies the tool."""
    hooks = {
        "PreToolUse": [
            {"matcher": "Read", "hookCallbackIds": ["read"]},
            {"matcher": "Bash", "hookCallbackIds": ["failing", "blocking"]},
        ]
    }
    replies = {
        "failing": {"subtype": "error", "error": "callback raised"},
        "blocking": {"subtype": "success", "response": {"decision": "block"}},
    }
    asked, seen = sdk_session(tmp_path, hooks, replies)
    assert asked == ["failing", "blocking"]
    (result,) = [m for m in seen if m["type"] == "user"]
    assert result["message"]["content"][0]["is_error"] is True
