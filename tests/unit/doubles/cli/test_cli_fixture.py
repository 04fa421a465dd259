"""The ``fake_claude`` fixture and marker, through pytester; and ``stuntset cli claude``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

# Imported before pytester snapshots sys.modules, so the in-process runs reuse these modules.
import stuntset.commands.fake_cli
import stuntset.doubles.cli._pytest
import stuntset.doubles.cli.claude
import stuntset.scenarios
from stuntset.cli import main


def test_marker_installs_and_teardown_checks_turns(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import subprocess
        import pytest

        ARGS = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
        PROMPT = b'{"type":"user","message":{"role":"user","content":"hi"}}\\n'

        @pytest.mark.fake_claude("multi_turn", turns=1)
        def test_used(fake_claude):
            out = subprocess.run([str(fake_claude.path), *ARGS], input=PROMPT,
                                 capture_output=True, check=True)
            assert b'"result":"Answer number 1."' in out.stdout
            assert fake_claude.invocations[0].exit_code == 0

        @pytest.mark.fake_claude("multi_turn", turns=2)
        def test_unused(fake_claude):
            pass

        @pytest.mark.fake_claude("multi_turn", turns=2, allow_unused_turns=True)
        def test_unused_allowed(fake_claude):
            pass

        def test_by_call(fake_claude):
            claude = fake_claude("happy_path", time_scale=0)
            assert fake_claude.path == claude.path
            subprocess.run([str(claude.path), *ARGS], input=PROMPT, check=True,
                           capture_output=True)

        def test_no_script(fake_claude):
            fake_claude.path
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4, errors=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UnusedTurns: fake claude (script 'multi_turn'): 2 scripted turn(s) were never*",
            "*fake_claude has no script yet*",
        ]
    )


def test_the_developers_own_claude_settings_do_not_reach_the_fake(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake reads user-level hooks as the real CLI does; the fixture points
    CLAUDE_CONFIG_DIR at an empty folder, so only a test that sets it again gets them."""
    home = pytester.path / "home"
    (home / ".claude").mkdir(parents=True)
    fired = pytester.path / "fired"
    hook = {"type": "command", "command": f"echo x >> {fired}"}
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    pytester.makepyfile(
        f"""
        import os, subprocess
        import pytest

        ARGS = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
        PROMPT = b'{{"type":"user","message":{{"role":"user","content":"hi"}}}}\\n'

        @pytest.mark.fake_claude("happy_path")
        def test_isolated(fake_claude):
            subprocess.run([str(fake_claude.path), *ARGS], input=PROMPT, check=True,
                           capture_output=True)

        @pytest.mark.fake_claude("happy_path")
        def test_opted_in(fake_claude, monkeypatch):
            monkeypatch.setenv("CLAUDE_CONFIG_DIR", {str(home / ".claude")!r})
            subprocess.run([str(fake_claude.path), *ARGS], input=PROMPT, check=True,
                           capture_output=True)
        """
    )
    pytester.runpytest("-p", "no:randomly", "-k", "isolated").assert_outcomes(passed=1)
    assert not fired.exists()
    pytester.runpytest("-p", "no:randomly", "-k", "opted_in").assert_outcomes(passed=1)
    assert fired.read_text() == "x\n"


def test_the_developers_own_codex_config_does_not_reach_the_fake(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake reads ``~/.codex/config.toml`` as the real CLI does (here one it refuses: a
    table for the built-in ``openai`` provider); the fixture points CODEX_HOME at an empty
    folder, so only a test that sets it again gets it."""
    home = pytester.path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text("[model_providers.openai]\nname = 'x'\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    pytester.makepyfile(
        f"""
        import subprocess
        import pytest

        ARGS = ["exec", "--json", "--skip-git-repo-check", "hi"]

        @pytest.mark.fake_codex("happy_path")
        def test_isolated(fake_codex):
            subprocess.run([str(fake_codex.path), *ARGS], check=True, capture_output=True)

        @pytest.mark.fake_codex("happy_path", allow_unused_turns=True)
        def test_opted_in(fake_codex, monkeypatch):
            monkeypatch.setenv("CODEX_HOME", {str(home / ".codex")!r})
            done = subprocess.run([str(fake_codex.path), *ARGS], capture_output=True, text=True)
            assert done.returncode == 1
            assert "reserved built-in provider IDs: `openai`" in done.stderr
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_a_marker_with_options_but_no_script_is_refused_naming_the_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fake_claude(turns=1)
        def test_options_only(fake_claude):
            pass

        def test_private_names_are_not_forwarded(fake_claude):
            fake_claude("happy_path", allow_unused_turns=True)
            assert not hasattr(fake_claude, "_not_there")
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_options_only: @pytest.mark.fake_claude needs the script first (a Script, a "
            "scenario name or a path), got only ?'turns'?"  # ? for [ and ]: fnmatch classes
        ]
    )


def test_stuntset_cli_claude_runs_the_fake() -> None:
    runner = CliRunner()
    version = runner.invoke(main, ["cli", "claude", "--", "-v"])
    assert version.exit_code == 0
    bogus = runner.invoke(main, ["cli", "claude", "--", "--bogus"])
    assert bogus.exit_code == 1


def test_demo_section_checks_every_scenario_on_the_claude_wire() -> None:
    from stuntset.doubles.cli.claude._demo import claude_rows

    rows = claude_rows()
    assert [row.scenario for row in rows] == stuntset.scenarios.names()
    assert [row for row in rows if not row.ok] == []


def test_the_developers_own_gemini_settings_do_not_reach_the_fake(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake reads ``~/.gemini/settings.json`` as the real CLI does (here one that selects
    Vertex AI, which it refuses without a project); the fixture points GEMINI_CLI_HOME at an
    empty folder, so only a test that sets it again gets it, and the marker plays the script."""
    home = pytester.path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        '{"security": {"auth": {"selectedType": "vertex-ai"}}}'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    pytester.makepyfile(
        f"""
        import json
        import subprocess
        import pytest

        ARGS = ["-p", "hi", "--output-format", "json", "--skip-trust"]
        KEY = {{"GEMINI_API_KEY": "test"}}

        @pytest.mark.fake_gemini("happy_path")
        def test_isolated(fake_gemini):
            done = subprocess.run(
                [str(fake_gemini.path), *ARGS], env=fake_gemini.env() | KEY,
                stdin=subprocess.DEVNULL, check=True, capture_output=True, text=True,
            )
            assert json.loads(done.stdout)["response"] == "Hello! How can I help you today?"
            assert fake_gemini.invocations[0].exit_code == 0

        @pytest.mark.fake_gemini("happy_path", allow_unused_turns=True)
        def test_opted_in(fake_gemini, monkeypatch):
            monkeypatch.setenv("GEMINI_CLI_HOME", {str(home)!r})
            done = subprocess.run(
                [str(fake_gemini.path), *ARGS], env=fake_gemini.env() | KEY,
                stdin=subprocess.DEVNULL, capture_output=True, text=True,
            )
            assert done.returncode == 41
            assert "When using Vertex AI" in done.stderr
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)
