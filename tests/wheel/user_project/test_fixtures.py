"""A user's test suite, as someone who ran `pip install stuntset` would write it: every public
fixture of the pytest plugin, each once, through the installed package (the wheel smoke runs
it from a temporary copy, outside the repository). Async tests run on asyncio only, anyio's
default for a project that does not parametrize ``anyio_backend``."""

from __future__ import annotations

import os
import subprocess

import httpx2
import pytest

from stuntset import drive, events, scenarios
from stuntset.clock import FakeClock
from stuntset.log import project
from stuntset.providers import ScriptedProvider
from stuntset.script import Script, Text

CLAUDE_ARGS = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
PROMPT = b'{"type":"user","message":{"role":"user","content":"hi"}}\n'


@pytest.fixture
def stuntset_script() -> Script:
    return Script.of([Text("Overridden by the module.")])


@pytest.mark.anyio
async def test_scripted_provider_plays_the_overriding_script(scripted_provider):
    seen = await drive(scripted_provider.start("hi"))
    assert [e.text for e in seen if isinstance(e, events.MessageCompleted)] == [
        "Overridden by the module."
    ]


@pytest.mark.anyio
async def test_stuck_provider_ends_only_when_interrupted(stuck_provider):
    seen = await drive(stuck_provider.start("hi"), interrupt_when=lambda e: e.type == "run.started")
    assert seen[-1].type == "run.killed"


def test_seams_are_deterministic(stuntset_clock, stuntset_ids):
    assert isinstance(stuntset_clock, FakeClock)
    assert stuntset_clock.now() == 1767225600.0  # 2026-01-01T00:00:00Z
    assert stuntset_ids.new("run") == "run-1"


@pytest.mark.stand_in("happy_path")
def test_stand_in_answers_an_http_client(stand_in):
    with httpx2.Client(transport=stand_in.transport()) as client:
        reply = client.post(
            "http://stand-in/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"]
    assert [r.status for r in stand_in.requests] == [200]


@pytest.mark.fake_claude("happy_path", time_scale=0)
def test_fake_claude_runs_as_an_executable(fake_claude):
    out = subprocess.run(
        [str(fake_claude.path), *CLAUDE_ARGS], input=PROMPT, capture_output=True, check=True
    )
    assert b'"type":"result"' in out.stdout
    assert fake_claude.invocations[0].exit_code == 0


@pytest.mark.fake_gemini("happy_path", time_scale=0)
def test_fake_gemini_answers_a_headless_prompt(fake_gemini):
    out = subprocess.run(  # headless, trusting the folder, with a key: as the real CLI needs
        [str(fake_gemini.path), "-p", "hello", "--output-format", "json", "--skip-trust"],
        env=fake_gemini.env() | {"GEMINI_API_KEY": "test-key"},
        capture_output=True,
        check=True,
    )
    assert '"response"' in out.stdout.decode()
    assert fake_gemini.invocations[0].exit_code == 0


@pytest.mark.stand_in("rate_limited")
def test_resilience_judges_a_client_that_retries_after_a_429(stand_in, resilience, stuntset_clock):
    with httpx2.Client(base_url=stand_in.url("openai")) as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        first = client.post("/chat/completions", json=body)
        wait = float(first.headers.get("retry-after-ms", "0")) / 1000 or float(
            first.headers.get("retry-after", "1")
        )
        stuntset_clock.advance(wait)  # wait as the server asks, on the test's clock
        statuses = [first.status_code, client.post("/chat/completions", json=body).status_code]
    assert statuses == [429, 200]
    resilience.outcome = "completed"


@pytest.mark.fake_claude("happy_path", time_scale=0, allow_unused_turns=True)
def test_claude_bin_is_the_double_outside_live(claude_bin, fake_claude):
    assert claude_bin == fake_claude.path


@pytest.mark.fake_codex("happy_path", time_scale=0, allow_unused_turns=True)
def test_codex_bin_is_the_double_outside_live(codex_bin, fake_codex):
    assert codex_bin == fake_codex.path


def test_fake_codex_runs_exec_json(fake_codex):
    codex = fake_codex(Script.of([Text("called")]), time_scale=0)
    done = subprocess.run(
        [str(codex.path), "exec", "--json", "--skip-git-repo-check", "-"],
        input="hi",
        capture_output=True,
        text=True,
        check=True,
    )
    assert '"text":"called"' in done.stdout


def test_provider_conformance_of_the_scripted_provider(provider_conformance):
    report = provider_conformance(ScriptedProvider, scenarios=["happy_path", "tool_use"])
    assert set(report.outcomes()) == {"happy_path", "tool_use"}


def test_event_log_and_log_seam(event_log, log_seam):
    seeded = log_seam.seed()
    log_seam.publish(seeded, "message.delta", "tool.started", "tool.completed")
    log_seam.finish(seeded)
    assert project(event_log.read(seeded.session_id)).status == "completed"


@pytest.mark.anyio
async def test_fake_runner_hands_out_catalog_providers(fake_runner):
    seen = await drive(fake_runner["tool_use"]().start("go"))
    assert seen[-1].type == "run.completed"
    assert fake_runner.events() == [("tool_use", "created"), ("tool_use", "started")]


@pytest.mark.anyio
async def test_session_service_runs_a_turn(session_service, tmp_path):
    async with session_service as host:
        session = host.create_session(host.create_task(tmp_path).task_id, "happy_path")
        await host.start_turn(session.session_id, "hi")
        await host.wait_idle(session.session_id)
        assert project(host.log.read(session.session_id)).status == "completed"


def test_daemon_serves_a_session(daemon, tmp_path):
    with daemon.client() as client:
        task = client.call("create_task", workdir=str(tmp_path))
        session = client.call("create_session", task_id=task["task_id"], provider="happy_path")
        assert session["session_id"]


@pytest.mark.cassette(upstream=os.environ.get("USER_PROJECT_UPSTREAM", "https://api.openai.com/v1"))
def test_cassette_replays_the_recorded_answer(cassette):
    client = cassette.http_client()
    reply = client.post(
        f"{cassette.base_url}/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": "Bearer sk-test"},
    )
    assert reply.json()["choices"][0]["message"]["content"] == "Recorded once."


@pytest.mark.anyio
async def test_event_snapshot_of_a_run(event_snapshot):
    event_snapshot(await drive(ScriptedProvider(scenarios.build("tool_use")).start("go")))


def test_workspace_snapshot_sees_exactly_the_change(workspace_snapshot, tmp_path):
    (tmp_path / "kept.txt").write_text("same")
    snapshot = workspace_snapshot(tmp_path)
    (tmp_path / "new.txt").write_text("added by the agent")
    snapshot.assert_changes(added=["new.txt"])


def test_tool_calls_records_what_the_collaborator_received(tool_calls):
    from stuntset.checks import assert_tool

    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    tool_calls.record(get_weather)(city="Paris")
    assert_tool(tool_calls, "get_weather", arguments={"city": "Paris"})


def test_temp_tracker_cleans_what_the_code_left(temp_tracker):
    import tempfile

    handed = tempfile.mkdtemp()  # under the tracker's directory
    temp_tracker.release(handed)


def test_stuntset_leaks_lets_a_process_outlive_the_test_on_purpose(stuntset_leaks):
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    KEPT.append(child)  # a later test stops it
    stuntset_leaks.keep(child)
    stuntset_leaks.keep(child.stdin)


def test_a_kept_process_is_stopped_later():
    for child in KEPT:
        child.stdin.close()
        assert child.wait(10) == 0


KEPT: list[subprocess.Popen[bytes]] = []


def test_installed_package_runs_my_console_script_from_its_venv(installed_package, tmp_path):
    # uv comes from $STUNTSET_UV (the wheel smoke passes its own)
    (tmp_path / "hello_tool").mkdir()
    (tmp_path / "hello_tool" / "__init__.py").write_text("def main():\n    print('hello')\n")
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "hello-tool"\nversion = "1.0"\n'
        '[project.scripts]\nhello-tool = "hello_tool:main"\n'
    )
    package = installed_package(tmp_path)
    assert package.run("hello-tool").stdout == "hello\n"
    assert package.entry_points("console_scripts") == {"hello-tool": "hello_tool:main"}
    assert package.import_check("hello_tool").is_relative_to(package.venv)


def test_agent_eval_plays_a_file_next_to_the_test(agent_eval):
    result = agent_eval("evals/ls.toml")
    assert (result.passed, len(result.runs)) == (3, 3)


@pytest.mark.mcp_double(tools=["search"])
def test_mcp_double_describes_its_server(mcp_double):
    # a spec and a journal need no MCP SDK; serving it needs the `mcp` extra
    assert [tool.name for tool in mcp_double.spec.listed_tools()] == ["search"]
    assert mcp_double.stdio_command()[1:3] == ["-m", "stuntset.doubles.mcp.stdio"]
    assert mcp_double.calls == []
