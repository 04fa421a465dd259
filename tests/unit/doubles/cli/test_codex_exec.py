"""``codex exec`` on the fake: JSONL shapes and ordering (protocols.md §6.2–6.3), resume,
prompts, exit codes and the CLI's error texts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.script import (
    ApprovalRequest,
    HttpError,
    InputRequest,
    Overloaded,
    Script,
    Stall,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

EXEC = ("exec", "--json", "--skip-git-repo-check")


def install(tmp_path: Path, script: Script | str, **options: Any) -> InstalledCli:
    built = scenarios.build(script) if isinstance(script, str) else script
    return install_cli("codex", built, bin_dir=tmp_path / "bin", **options)


def run(
    cli: InstalledCli,
    *args: str,
    stdin: str = "hi",
    cwd: Path | None = None,
    home: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the fake with ``home`` as its ``CODEX_HOME`` (default: an empty folder beside it,
    so no ``~/.codex/config.toml`` of the machine's counts)."""
    codex_home = home or cli.path.parent.parent / "codex-home"
    return subprocess.run(
        [str(cli.path), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=10,
        cwd=cwd,
        env={**os.environ, "CODEX_HOME": str(codex_home)},
    )


def events(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_item_kind_and_the_ordering_rules(tmp_path: Path) -> None:
    script = Script.of(
        [
            Text("Plan first."),
            ToolCall("update_plan", {"plan": ["test", "ship"]}),
            ToolResult(""),
            ToolCall("bash", {"command": "make test"}),
            ToolResult("3 failed", is_error=True),
            ToolCall("apply_patch", {"path": "a.py"}),
            ToolResult("patched"),
            ToolCall("web_search", {"query": "pytest"}),
            ToolResult("results"),
            ToolCall("mcp__stuntset__lookup", {"q": 1}),
            ToolResult({"answer": 42}),
            Text("Done."),
            Usage(input_tokens=7, output_tokens=3),
        ]
    )
    cli = install(tmp_path, script)
    done = run(cli, *EXEC)
    assert done.returncode == 0
    lines = events(done)
    assert [e["type"] for e in lines[:2]] == ["thread.started", "turn.started"]
    assert lines[-1] == {
        "type": "turn.completed",
        "usage": {
            "input_tokens": 7,
            "cached_input_tokens": 0,
            "cache_write_input_tokens": 0,
            "output_tokens": 3,
            "reasoning_output_tokens": 0,
        },
    }
    started = {e["item"]["id"] for e in lines if e["type"] == "item.started"}
    completed = [e["item"] for e in lines if e["type"] == "item.completed"]
    # agent messages only complete; everything else starts first, with the same id
    assert all(i["id"] in started for i in completed if i["type"] != "agent_message")
    assert [i["id"] for i in completed if i["type"] == "agent_message"] == ["item_0", "item_6"]
    by_type = {i["type"]: i for i in completed}
    assert by_type["command_execution"] == {
        "id": "item_2",
        "type": "command_execution",
        "command": "/bin/bash -lc 'make test'",
        "aggregated_output": "3 failed",
        "exit_code": 1,
        "status": "failed",
    }
    assert by_type["file_change"]["changes"] == [{"path": "a.py", "kind": "update"}]
    assert by_type["web_search"]["query"] == "pytest"
    assert by_type["mcp_tool_call"]["result"] == {
        "content": [{"type": "text", "text": '{"answer":42}'}],
        "structured_content": None,
    }
    # the todo list completes when the turn ends, just before turn.completed
    assert lines[-2]["type"] == "item.completed"
    assert lines[-2]["item"]["type"] == "todo_list"
    assert lines[-2]["item"]["items"] == [
        {"text": "test", "completed": False},
        {"text": "ship", "completed": False},
    ]
    (invocation,) = cli.invocations
    assert invocation.stdout == lines
    assert invocation.exit_code == 0


def test_resume_continues_the_thread(tmp_path: Path) -> None:
    cli = install(tmp_path, scenarios.build("multi_turn", turns=2))
    first = events(run(cli, *EXEC, "one"))
    thread_id = first[0]["thread_id"]
    second = events(run(cli, *EXEC, "resume", thread_id, "two"))
    assert second[0] == {"type": "thread.started", "thread_id": thread_id}
    assert second[2]["item"]["id"] == "item_0"
    assert second[-1]["usage"]["input_tokens"] == 30
    cli.assert_all_used()


def test_resume_last(tmp_path: Path) -> None:
    cli = install(tmp_path, scenarios.build("multi_turn", turns=2))
    thread_id = events(run(cli, *EXEC))[0]["thread_id"]
    assert events(run(cli, *EXEC, "resume", "--last"))[0]["thread_id"] == thread_id


def test_resume_an_unknown_session(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    done = run(cli, *EXEC, "resume", "0000")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.endswith(
        "Error: thread/resume: thread/resume failed: no rollout found for thread id 0000 "
        "(code -32600)\n"
    )
    assert cli.unused_turns()


def test_prompt_sources(tmp_path: Path) -> None:
    cli = install(tmp_path, Script.of(Text("ok")).then(Text("ok"), Text("ok")))
    run(cli, *EXEC, "from argv", stdin="")
    run(cli, *EXEC, "from argv", stdin="piped")
    done = run(cli, *EXEC, stdin="from stdin")
    assert "Reading prompt from stdin...\n" in done.stderr
    assert [i.argv[-1] for i in cli.invocations][:2] == ["from argv", "from argv"]
    cli.assert_all_used()


def test_outside_a_git_repository(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    outside = tmp_path / "plain"
    outside.mkdir()
    done = run(cli, "exec", "--json", cwd=outside)
    assert done.returncode == 1
    assert done.stderr.endswith(
        "Not inside a trusted directory and --skip-git-repo-check was not specified.\n"
    )
    (outside / ".git").mkdir()
    assert run(cli, "exec", "--json", cwd=outside).returncode == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--bogus",), "error: unexpected argument '--bogus' found"),
        (("-s", "bogus"), "error: invalid value 'bogus' for '--sandbox <SANDBOX_MODE>'"),
        (("-c",), "error: a value is required for '--config <key=value>' but none was supplied"),
        (("a", "b"), "error: unexpected argument 'b' found"),
    ],
)
def test_bad_flags_are_clap_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    cli = install(tmp_path, "happy_path")
    done = run(cli, "exec", *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(message)
    assert "Traceback" not in done.stderr


def test_version_help_and_human_output(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    assert run(cli, "exec", "--version").stdout == "codex-cli-exec 0.163.0\n"
    assert "Usage: codex exec" in run(cli, "exec", "--help").stdout
    last = tmp_path / "last.txt"
    done = run(cli, "exec", "--skip-git-repo-check", "-o", str(last), "hi")
    assert done.stdout == "Hello! How can I help you today?\n"
    assert last.read_text() == "Hello! How can I help you today?"


def test_config_overrides_before_the_subcommand(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    done = run(cli, "-c", 'model="o3"', *EXEC, "--config", 'approval_policy="never"', "hi")
    assert done.returncode == 0
    assert cli.invocations[0].argv[:2] == ["-c", 'model="o3"']


def test_a_failed_turn(tmp_path: Path) -> None:
    cli = install(tmp_path, "rate_limited")
    done = run(cli, *EXEC)
    assert done.returncode == 1
    error, failed = events(done)[-2:]
    message = error["message"]
    assert message.startswith("exceeded retry limit, last status: 429 Too Many Requests, ")
    assert error == {"type": "error", "message": message}
    assert failed == {"type": "turn.failed", "error": {"message": message}}
    assert run(cli, *EXEC).returncode == 0


def test_script_exhausted(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    run(cli, *EXEC)
    done = run(cli, *EXEC)
    assert done.returncode == 1
    assert events(done)[-1]["type"] == "turn.failed"
    assert "has no turn for request #2" in done.stderr


def stalled(cli: InstalledCli) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [str(cli.path), *EXEC],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"go")
    proc.stdin.close()
    for line in proc.stdout:
        if b"item.completed" in line:
            break
    return proc


def test_stall_then_sigint_exits_130(tmp_path: Path) -> None:
    cli = install(tmp_path, Script.of([Text("thinking"), Stall()]))
    with stalled(cli) as proc:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 130


def test_stall_ignoring_sigterm_for_a_while(tmp_path: Path) -> None:
    cli = install(tmp_path, Script.of([Text("thinking"), Stall()]), ignore_sigterm=0.1)
    with stalled(cli) as proc:
        proc.terminate()
        assert proc.wait(timeout=10) == 143
    (invocation,) = cli.invocations
    # ("stall" is journaled as the stall begins: the SIGTERM may come before or after it)
    events = [e["event"] for e in invocation.events if e["event"] != "stall"]
    assert events[-2:] == ["signal", "exit"]


def test_a_plan_updates_then_completes_with_the_turn(tmp_path: Path) -> None:
    script = Script.of(
        [
            ToolCall("update_plan", {"todos": [{"content": "a", "status": "pending"}]}),
            ToolResult(""),
            Text("working"),
            ToolCall("update_plan", {"todos": [{"content": "a", "status": "completed"}]}),
            ToolResult(""),
        ]
    )
    lines = events(run(install(tmp_path, script), *EXEC))
    plan = [
        (e["type"], e["item"]["items"]) for e in lines if e.get("item", {}).get("id") == "item_0"
    ]
    assert plan == [
        ("item.started", [{"text": "a", "completed": False}]),
        ("item.updated", [{"text": "a", "completed": True}]),
        ("item.completed", [{"text": "a", "completed": True}]),
    ]
    assert lines[-1]["type"] == "turn.completed"


def test_a_refused_turn(tmp_path: Path) -> None:
    """``codex exec`` runs its turn through the app-server: a refused ``turn/start`` leaves
    ``thread.started`` alone on stdout and the JSON-RPC error on stderr, exit 1 (observed
    with a 1,048,577-character prompt against the real 0.163.0 binary); a scripted refusal
    reads the same."""
    cli = install(tmp_path, Script.of([HttpError(400, "no", error_type="invalid_request")]))
    done = run(cli, *EXEC, "-", stdin="y" * 1048577)
    assert done.returncode == 1
    assert [e["type"] for e in events(done)] == ["thread.started"]
    assert done.stderr.endswith(
        "Error: turn/start: turn/start failed: Input exceeds the maximum length of 1048576 "
        'characters. (code -32602), data: {"input_error_code":"input_too_large",'
        '"max_chars":1048576,"actual_chars":1048577}\n'
    )
    assert cli.unused_turns()  # refused before the script was asked
    done = run(cli, *EXEC, "hi")
    assert done.returncode == 1
    assert [e["type"] for e in events(done)] == ["thread.started"]
    assert done.stderr.endswith("Error: turn/start: turn/start failed: no (code -32600)\n")
    cli.assert_all_used()


#: One silent request retry, one announced attempt (what ``stuntset drift`` gives the real
#: binary): a 503 then the answer is retried silently; two show "Reconnecting... 1/1".
ONE_AND_ONE = (
    "-c",
    'model_provider="stuntset"',
    "-c",
    "model_providers.stuntset.request_max_retries=1",
    "-c",
    "model_providers.stuntset.stream_max_retries=1",
)
SERVICE = "unexpected status 503 Service Unavailable: Overloaded, url: "
USAGE = {
    "input_tokens": 12,
    "cached_input_tokens": 0,
    "cache_write_input_tokens": 0,
    "output_tokens": 9,
    "reasoning_output_tokens": 0,
}


def overloaded(failures: int, answer: str = "Back in service.") -> Script:
    return Script.of(
        Turn(steps=(Overloaded(),), times=failures), [Text(answer), Usage(12, 9)], seed=3
    )


def without_ids(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines with the thread id and the request ids the error texts quote left out."""
    shown = []
    for line in lines:
        line = dict(line)
        if "thread_id" in line:
            line["thread_id"] = "…"
        if "message" in line:
            line["message"] = line["message"].split(", url: ")[0]
        shown.append(line)
    return shown


def test_a_503_is_retried_and_the_next_turn_answers(tmp_path: Path) -> None:
    """As the real codex exec does over the model double (docs/protocol-reference.md): the
    first 503 is retried silently, the next one with a "Reconnecting... 1/1 (<why>)" error
    line, and the turn completes with the answer of the next scripted turn, exit 0."""
    cli = install(tmp_path, overloaded(1))
    done = run(cli, *ONE_AND_ONE, *EXEC)
    assert done.returncode == 0
    assert without_ids(events(done)) == [
        {"type": "thread.started", "thread_id": "…"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "agent_message", "text": "Back in service."},
        },
        {"type": "turn.completed", "usage": USAGE},
    ]
    cli.assert_all_used()

    cli = install(tmp_path, overloaded(2))
    done = run(cli, *ONE_AND_ONE, *EXEC)
    assert done.returncode == 0
    lines = events(done)
    assert lines[2]["message"].startswith(f"Reconnecting... 1/1 ({SERVICE}")
    assert lines[2]["message"].endswith(")")
    assert without_ids(lines)[2:] == [
        {
            "type": "error",
            "message": "Reconnecting... 1/1 (unexpected status 503 Service Unavailable: Overloaded",
        },
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "agent_message", "text": "Back in service."},
        },
        {"type": "turn.completed", "usage": USAGE},
    ]
    cli.assert_all_used()


def test_when_the_retries_are_spent_the_turn_fails_with_the_last_error(tmp_path: Path) -> None:
    """Four 503s use up one silent retry, one announced attempt and its silent retry: the
    last one's error fails the turn, exit 1; the answer is never asked for."""
    cli = install(tmp_path, overloaded(4, "never"))
    done = run(cli, *ONE_AND_ONE, *EXEC)
    assert done.returncode == 1
    lines = events(done)
    assert [line["type"] for line in lines] == [
        "thread.started",
        "turn.started",
        "error",
        "error",
        "turn.failed",
    ]
    assert lines[2]["message"].startswith(f"Reconnecting... 1/1 ({SERVICE}")
    assert lines[3]["message"].startswith(SERVICE)
    assert lines[4] == {"type": "turn.failed", "error": {"message": lines[3]["message"]}}
    assert [index for index, _ in cli.unused_turns()] == [1]  # all four 503s were asked


def test_a_500_is_retried_as_high_demand(tmp_path: Path) -> None:
    """codex words a 500 "high demand", in the notice and in the final error alike."""
    demand = "We\u2019re currently experiencing high demand, which may cause temporary errors."
    script = Script.of(Turn(steps=(HttpError(500),), times=3), [Text("never")])
    cli = install(tmp_path, script)
    options = (
        "-c",
        'model_provider="p"',
        "-c",
        "model_providers.p={request_max_retries = 0, stream_max_retries = 2}",
    )
    done = run(cli, *options, *EXEC)
    assert done.returncode == 1
    assert events(done)[2:] == [
        {"type": "error", "message": f"Reconnecting... 1/2 ({demand})"},
        {"type": "error", "message": f"Reconnecting... 2/2 ({demand})"},
        {"type": "error", "message": demand},
        {"type": "turn.failed", "error": {"message": demand}},
    ]


def test_by_default_four_503s_are_retried_silently(tmp_path: Path) -> None:
    """codex's defaults: four silent request retries before the first announced attempt."""
    cli = install(tmp_path, overloaded(4))
    done = run(cli, *EXEC)
    assert done.returncode == 0
    assert [line["type"] for line in events(done)] == [
        "thread.started",
        "turn.started",
        "item.completed",
        "turn.completed",
    ]
    cli.assert_all_used()


def test_a_429_and_a_5xx_after_content_are_not_retried(tmp_path: Path) -> None:
    script = Script.of([Text("partial"), Overloaded()], [Text("never")])
    cli = install(tmp_path, script)
    done = run(cli, *EXEC)
    assert done.returncode == 1
    assert [line["type"] for line in events(done)][-2:] == ["error", "turn.failed"]
    assert [index for index, _ in cli.unused_turns()] == [1]


def config_toml(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return home


#: The ``config.toml`` ``stuntset drift`` writes for the real binary (its URL is not used).
DRIFT_CONFIG = """model = "gpt-5"
model_provider = "stuntset"
[model_providers.stuntset]
name = "stuntset"
base_url = "http://127.0.0.1:9/openai/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 1   # a comment
stream_max_retries = 1
"""


def test_the_retries_come_from_config_toml_under_the_options(tmp_path: Path) -> None:
    """As codex reads them: the provider in use (``model_provider``) in CODEX_HOME's
    config.toml, ``-c`` options over it; another provider's settings do not count."""
    home = config_toml(tmp_path / "home", DRIFT_CONFIG)
    cli = install(tmp_path, overloaded(2))
    done = run(cli, *EXEC, home=home)
    assert [line["type"] for line in events(done)][2:] == [
        "error",
        "item.completed",
        "turn.completed",
    ]
    assert events(done)[2]["message"].startswith("Reconnecting... 1/1 (")

    cli = install(tmp_path, overloaded(2))
    more = ("-c", "model_providers.stuntset.request_max_retries=2")
    done = run(cli, *more, *EXEC, home=home)  # two silent retries now
    assert [line["type"] for line in events(done)][2:] == ["item.completed", "turn.completed"]

    cli = install(tmp_path, overloaded(2))
    other = ("-c", "model_providers.other={request_max_retries = 0, stream_max_retries = 0}")
    done = run(cli, *other, *EXEC, home=home)  # not the provider in use: no change
    assert events(done)[2]["message"].startswith("Reconnecting... 1/1 (")

    cli = install(tmp_path, overloaded(2))
    done = run(cli, *EXEC, "--ignore-user-config", home=home)  # codex's defaults: 4 silent
    assert [line["type"] for line in events(done)][2:] == ["item.completed", "turn.completed"]


def test_a_profile_chooses_the_provider(tmp_path: Path) -> None:
    home = config_toml(
        tmp_path / "home",
        DRIFT_CONFIG.replace('model_provider = "stuntset"\n', 'profile = "work"\n')
        + '[profiles.work]\nmodel_provider = "stuntset"\n',
    )
    cli = install(tmp_path, overloaded(2))
    done = run(cli, *EXEC, home=home)
    assert events(done)[2]["message"].startswith("Reconnecting... 1/1 (")
    cli = install(tmp_path, overloaded(2))
    done = run(cli, *EXEC, "--profile", "none", home=home)  # no such profile: the default
    assert [line["type"] for line in events(done)][2:] == ["item.completed", "turn.completed"]


RESERVED = (
    "Error loading config.toml: model_providers contains reserved built-in provider IDs: "
    "`ollama`, `openai`. Built-in providers cannot be overridden. Rename your custom provider "
    "(for example, `openai-custom`).\nin `model_providers`\n\n"
)


def test_a_built_in_providers_table_is_refused(tmp_path: Path) -> None:
    """codex refuses a ``model_providers`` table for a built-in id, in config.toml or from
    ``-c``: nothing on stdout, its text on stderr (observed word for word), exit 1."""
    cli = install(tmp_path, "happy_path")
    home = config_toml(
        tmp_path / "home",
        '[model_providers.openai]\nrequest_max_retries = 1\n[model_providers.ollama]\nname = "x"\n',
    )
    done = run(cli, *EXEC, home=home)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == RESERVED
    options = ("-c", "model_providers.openai.request_max_retries=1")
    options += ("-c", "model_providers.ollama={}")
    done = run(cli, *options, *EXEC)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", RESERVED)
    assert cli.unused_turns()  # refused before the prompt was read


def test_a_config_toml_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    cli = install(tmp_path, "happy_path")
    home = config_toml(tmp_path / "home", 'model = "gpt-5"\noops = [\n')
    done = run(cli, *EXEC, home=home)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error loading config.toml:\n{home}/config.toml:2:9: unclosed array, expected `]`\n"
        "  |\n2 | oops = [\n  |         ^\n"
    )


def test_exec_shows_no_item_for_a_call_the_script_asks_about(tmp_path: Path) -> None:
    """Observed (codex-cli 0.163 exec over the model double): exec asks nobody, and a command
    codex's safety check would ask about (``rm -rf``) shows no item at all; the model's
    answer follows."""
    script = Script.of(
        [
            Text("Cleaning."),
            ToolCall("exec_command", {"cmd": "ls"}),
            ToolResult("a.txt"),
            ToolCall("exec_command", {"cmd": "rm -rf build/"}),
            ApprovalRequest(),
            ToolResult(""),
            Text("Done."),
        ]
    )
    done = run(install(tmp_path, script), *EXEC)
    assert done.returncode == 0, done.stderr
    items = [e["item"] for e in events(done) if e["type"] == "item.completed"]
    assert [(i["type"], i.get("command", i.get("text"))) for i in items] == [
        ("agent_message", "Cleaning."),
        ("command_execution", "/bin/bash -lc ls"),
        ("agent_message", "Done."),
    ]


@pytest.mark.parametrize("asked", ["input_request", "request_user_input call"])
def test_exec_asks_no_question_and_the_text_after_it_is_a_new_message(
    tmp_path: Path, asked: str
) -> None:
    """Observed on codex-cli 0.163: the model's request_user_input call is refused (codex's
    Default mode), nothing of it is shown, and the model's next response is a new message.
    A scripted question and a scripted call of codex's question tool are the same thing."""
    question = (
        [InputRequest("Which branch?")]
        if asked == "input_request"
        else [
            ToolCall("request_user_input", {"questions": [{"id": "q", "question": "Which?"}]}),
            ToolResult("whatever the script says: codex answers this call itself"),
        ]
    )
    script = Script.of([Text("One detail."), *question, Text(" Deploying.")])
    done = run(install(tmp_path, script), *EXEC)
    assert done.returncode == 0, done.stderr
    items = [e["item"] for e in events(done) if e["type"] == "item.completed"]
    assert [(i["type"], i.get("text")) for i in items] == [
        ("agent_message", "One detail."),
        ("agent_message", " Deploying."),
    ]


def test_a_tool_codex_lacks_shows_no_item(tmp_path: Path) -> None:
    """codex exec (observed, 0.163): a call of a tool codex does not have shows nothing; the
    text after it is a new message, and the turn completes."""
    script = Script.of(
        [
            Text("Let me look."),
            ToolCall("shell", {"command": "ls"}),  # codex 0.163 has no shell tool
            ToolResult("a.txt"),
            Text("That tool is not there."),
        ]
    )
    done = run(install(tmp_path, script), *EXEC)
    assert done.returncode == 0
    completed = [e["item"] for e in events(done) if e["type"] == "item.completed"]
    assert [(i["type"], i.get("text")) for i in completed] == [
        ("agent_message", "Let me look."),
        ("agent_message", "That tool is not there."),
    ]
    assert events(done)[-1]["type"] == "turn.completed"
