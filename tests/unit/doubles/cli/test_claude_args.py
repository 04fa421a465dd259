"""The fake claude's command line: what claude-agent-sdk passes is accepted, the rest is refused
with the real CLI's text (observed with the bundled Claude Code 2.1.332)."""

from __future__ import annotations

import pytest

from stuntset.doubles.cli.claude._process.args import (
    ArgumentError,
    check_root,
    js_string,
    parse,
    split_list,
)

BASE = ["--output-format", "stream-json", "--verbose"]


def test_the_sdk_command_lines_parse() -> None:
    argv = [
        *BASE,
        "--system-prompt",
        "",
        "--tools",
        "",
        "--allowedTools",
        "Read,Bash",
        "--max-turns",
        "3",
        "--disallowedTools",
        "Write",
        "--model",
        "claude-sonnet-4-5",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        "acceptEdits",
        "--continue",
        "--resume=abc",
        "--settings",
        '{"a": 1}',
        "--add-dir",
        "/a",
        "--add-dir",
        "/b",
        "--mcp-config",
        '{"mcpServers": {}}',
        "--include-partial-messages",
        "--include-hook-events",
        "--fork-session",
        "--setting-sources=user,project",
        "--thinking",
        "adaptive",
        "--max-thinking-tokens",
        "100",
        "--effort",
        "high",
        "--json-schema",
        "{}",
        "--session-mirror",
        "--input-format",
        "stream-json",
    ]
    options = parse(argv)
    assert options["model"] == "claude-sonnet-4-5"
    assert options["resume"] == "abc"
    assert options["add_dir"] == ["/a", "/b"]
    assert split_list(options["allowed_tools"]) == ["Read", "Bash"]
    assert options["tools"] == [""]
    assert options["input_format"] == "stream-json"
    assert options["include_partial_messages"] is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bogus"], "error: unknown option '--bogus'"),
        (["--verbos"], "error: unknown option '--verbos'\n(Did you mean --verbose?)"),
        (["--verbose=3"], "error: unknown option '--verbose=3'\n(Did you mean --verbose?)"),
        (["-x"], "error: unknown option '-x'"),
        ([*BASE, "--model"], "error: option '--model <model>' argument missing"),
        (
            ["--output-format", "nope"],
            "error: option '--output-format <format>' argument 'nope' is invalid. "
            "Allowed choices are text, json, stream-json.",
        ),
        (
            [*BASE, "--permission-mode", "bogus"],
            "error: option '--permission-mode <mode>' argument 'bogus' is invalid. Allowed "
            "choices are acceptEdits, auto, bypassPermissions, manual, dontAsk, plan.",
        ),
        (
            [*BASE, "--max-turns", "abc"],
            "error: option '--max-turns <turns>' argument 'abc' is invalid. must be a number",
        ),
        (
            ["--output-format", "stream-json"],
            "Error: When using --print, --output-format=stream-json requires --verbose",
        ),
        (
            ["--output-format", "text", "--verbose", "--input-format", "stream-json"],
            "Error: --input-format=stream-json requires output-format=stream-json.",
        ),
        (
            [*BASE, "--setting-sources", "bogus"],
            "Error processing --setting-sources: Invalid setting source: bogus. Valid options "
            "are: user, project, local",
        ),
    ],
)
def test_refused_command_lines_get_the_real_text(argv: list[str], message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        parse(argv)
    assert str(caught.value) == message


def test_version_wins_wherever_it_is() -> None:
    assert parse(["-v"])["version"] is True
    assert parse(["--version", "--bogus"])["version"] is True


def test_positional_prompt_and_optional_values() -> None:
    options = parse(["-p", "say", "hi", "--resume"])
    assert options["prompt"] == "say hi"
    assert options["resume"] is True
    assert parse(["-p", "--", "-not-a-flag"])["prompt"] == "-not-a-flag"


ROOT_REFUSAL = (
    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["--permission-mode", "bypassPermissions"],
        ["--dangerously-skip-permissions"],
        ["--allow-dangerously-skip-permissions"],
    ],
)
@pytest.mark.parametrize(
    "env", [{}, {"IS_SANDBOX": "true"}, {"CLAUDE_CODE_BUBBLEWRAP": "0"}, {"IS_SANDBOX": "0"}]
)
def test_root_may_not_skip_permissions(argv: list[str], env: dict[str, str]) -> None:
    """Observed with the bundled 2.1.332 as uid 0: each of these flags, with each of these
    environments, is refused with this line on stderr, nothing on stdout, exit 1."""
    with pytest.raises(ArgumentError) as caught:
        check_root(parse([*BASE, *argv]), env, 0)
    assert str(caught.value) == ROOT_REFUSAL


def test_root_may_skip_permissions_in_a_declared_sandbox() -> None:
    """Observed: ``IS_SANDBOX=1`` exactly, or a truthy ``CLAUDE_CODE_BUBBLEWRAP`` (``1``,
    ``true``, ``TRUE``, ``yes``, ``on``; not ``0``, ``false``, ``2``), lets root through; a
    settings ``defaultMode`` of ``bypassPermissions`` is refused like the flag."""
    options = parse([*BASE, "--dangerously-skip-permissions"])
    for env in ({"IS_SANDBOX": "1"}, *({"CLAUDE_CODE_BUBBLEWRAP": v} for v in ("1", "TRUE", "on"))):
        check_root(options, env, 0)
    check_root(options, {}, 1000)
    check_root(parse([*BASE, "--permission-mode", "plan"]), {}, 0)
    with pytest.raises(ArgumentError):
        check_root(parse(BASE), {}, 0, default_mode="bypassPermissions")


@pytest.mark.parametrize("value", ["0", "-1", "abc", " "])
def test_a_budget_must_be_positive(value: str) -> None:
    """Observed: commander's text with the CLI's own reason, exit 1."""
    with pytest.raises(ArgumentError) as caught:
        parse([*BASE, "--max-budget-usd", value])
    assert str(caught.value) == (
        f"error: option '--max-budget-usd <amount>' argument '{value}' is invalid. "
        "--max-budget-usd must be a number greater than 0"
    )
    assert parse([*BASE, "--max-budget-usd", "1e-3"])["max_budget_usd"] == "1e-3"


def test_numbers_read_as_javascript_prints_them() -> None:
    """The budget in "Reached maximum budget ($1e-7)" is JavaScript's ``String(n)``."""
    cases = {1e-7: "1e-7", 0.01: "0.01", 1.0: "1", 1e-5: "0.00001", 2e16: "20000000000000000"}
    assert {n: js_string(n) for n in cases} == cases
    assert js_string(1e21) == "1e+21"
