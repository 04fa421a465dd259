"""``McpDouble`` without a client: its configs for agents, its teardown checks (each shown
failing on what it guards), and the SDK-less import."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from stuntset.doubles.mcp import McpDouble, McpServerSpec, McpTool, spec_of
from stuntset.doubles.mcp._pytest import mcp_double_from_marker
from stuntset.doubles.mcp.journal import JournalWriter, McpCall
from stuntset.errors import ScriptError, ScriptExhausted, UnusedTurns, UsageError
from stuntset.script import Script, Stall, ToolCall, ToolResult

SCRIPT = Script.of([ToolCall("read_file"), ToolResult("hi")], [ToolCall("read_file"), Stall()])


def record(double: McpDouble, *calls: McpCall) -> None:
    writer = JournalWriter(double.journal_dir)
    for call in calls:
        writer.write(call)
    writer.close()


def played(turn: int) -> McpCall:
    return McpCall(
        transport="stdio",
        session="s",
        method="tools/call",
        outcome="result",
        tool="read_file",
        turn=turn,
    )


def test_agent_configs_spawn_the_stdio_server(tmp_path: Path) -> None:
    with McpDouble(SCRIPT, root=tmp_path) as double:
        command = double.stdio_command()
        assert command[:3] == [sys.executable, "-m", "stuntset.doubles.mcp.stdio"]
        assert json.loads(double.spec_file.read_text())["turns"][0]["steps"][1] == {
            "kind": "tool_result",
            "output": "hi",
        }
        server = double.claude_config("files")["mcpServers"]["files"]
        assert [server["command"], *server["args"]] == command
        codex = tomllib.loads(double.codex_config("files"))["mcp_servers"]["files"]
        assert [codex["command"], *codex["args"]] == command
        assert (codex["required"], codex["default_tools_approval_mode"]) == (True, "approve")
        assert "default_tools_approval_mode" not in double.codex_config(approve=False)
    assert tmp_path.exists()  # a root given is the caller's


def test_a_temp_root_is_removed_on_close() -> None:
    double = McpDouble(SCRIPT)
    root = double.root
    double.close()
    assert not root.exists()


def test_check_passes_when_every_turn_was_played(tmp_path: Path) -> None:
    double = McpDouble(SCRIPT, root=tmp_path)
    record(double, played(0), played(1))
    double.check()
    assert [c.turn for c in double.tool_calls("read_file")] == [0, 1]
    assert double.methods() == ["tools/call", "tools/call"]


def test_check_fails_on_an_unused_turn_naming_it(tmp_path: Path) -> None:
    double = McpDouble(SCRIPT, root=tmp_path)
    record(double, played(0))
    with pytest.raises(UnusedTurns) as failed:
        double.check()
    assert str(failed.value).splitlines()[:2] == [
        "MCP double 'stuntset': 1 scripted turn(s) were never called by the client:",
        "  turn 1: [tool_call, stall]",
    ]
    double.check(allow_unused_turns=True)


def test_check_fails_on_a_call_no_turn_answered(tmp_path: Path) -> None:
    double = McpDouble(SCRIPT, root=tmp_path)
    exhausted = McpCall(
        transport="http",
        session="s",
        method="tools/call",
        outcome="exhausted",
        result=[-32603, "stuntset: no turn for request #3"],
    )
    record(double, played(0), played(1), exhausted)
    with pytest.raises(ScriptExhausted, match=r"1 MCP tool call\(s\) found no scripted turn; "):
        double.check(allow_unused_turns=True)


def test_play_replaces_the_spec_until_a_client_connects(tmp_path: Path) -> None:
    double = McpDouble(root=tmp_path)
    double.play(SCRIPT, tools=[McpTool(name="extra")])
    assert [t.name for t in double.spec.listed_tools()] == ["extra", "read_file"]
    spec = McpServerSpec(name="other")
    assert double.play(spec).spec is spec
    assert double.spec_file.exists()
    record(double, played(0))
    with pytest.raises(UsageError, match=r"play\(\) after a client connected"):
        double.play(SCRIPT)


def test_the_package_imports_without_the_sdk_and_serving_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from stuntset.doubles.mcp import McpDouble\n"
        "from stuntset.errors import MissingExtra\n"
        "double = McpDouble()\n"
        "try:\n"
        "    double.serve_http()\n"
        "except MissingExtra as error:\n"
        "    print(error)\n"
        "double.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "install the extra, pip install 'stuntset[mcp]'" in done.stdout


# --- the fixture's marker --------------------------------------------------------------------


def from_marker(tmp_path: Path, *args: object, **kwargs: object) -> McpDouble:
    double, _ = mcp_double_from_marker(args, kwargs, "test_x", tmp_path / "mcp", tmp_path)
    return double


def test_the_marker_takes_a_script_a_scenario_a_spec_file_or_a_spec(tmp_path: Path) -> None:
    assert from_marker(tmp_path, SCRIPT, tools=["ls"]).spec.tools == (McpTool(name="ls"),)
    scenario = from_marker(tmp_path, "stuck", preamble="Wait", time_scale=0.5)
    assert scenario.time_scale == 0.5
    assert scenario.spec.script.name == "stuck"
    (tmp_path / "s.json").write_text(json.dumps({"name": "from-file", "turns": []}))
    assert from_marker(tmp_path, "s.json").spec.name == "from-file"
    spec = spec_of(SCRIPT)
    assert from_marker(tmp_path, spec).spec is spec
    assert from_marker(tmp_path).spec.script.turns == ()
    _, allow = mcp_double_from_marker((), {"allow_unused_turns": True}, "w", tmp_path / "m", None)
    assert allow is True


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {"allow_unused_turns": "yes"}, "allow_unused_turns must be True or False"),
        ((), {"colour": "red"}, r"unknown mcp_double options \['colour'\]"),
        ((spec_of(SCRIPT),), {"tools": ["x"]}, r"\['tools'\] given with a whole MCP spec"),
    ],
)
def test_marker_mistakes_are_usage_errors(
    tmp_path: Path, args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        mcp_double_from_marker(args, kwargs, "test_x", tmp_path, None)


def test_a_marker_spec_path_that_is_missing_names_it(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"missing\.toml"):
        from_marker(tmp_path, "missing.toml")
