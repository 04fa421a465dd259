"""The MCP servers of the fake ``claude`` (``_process/mcp.py``): what ``system/init`` reports
for ``--mcp-config`` (``mcp_servers`` with their status and source, the connected servers'
``mcp__<server>__<tool>`` names in ``tools``), a failed server's tool, and the configurations
the real CLI refuses — as Claude Code 2.1.332 does (docs/protocol-reference.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.doubles.cli.claude import DEFAULT_TOOLS
from stuntset.script import Script, Text, ToolCall, ToolResult, Turn

STREAM = ["-p", "go", "--output-format", "stream-json", "--verbose"]
SCRIPT = Script.of(
    [
        ToolCall("mcp__web__search", {"q": "x"}),
        ToolResult("3 hits"),
        ToolCall("mcp__web__fetch", {}),
        ToolResult("page"),
        ToolCall("mcp__gone__ping", {}),
        ToolResult("pong"),
        Text("done"),
    ]
)
ALLOWED = ["--allowedTools", "mcp__web__search,mcp__web__fetch,mcp__gone__ping"]


@pytest.fixture
def cli(tmp_path: Path) -> InstalledCli:
    return install_cli("claude", SCRIPT, bin_dir=tmp_path / "bin")


def run(cli: InstalledCli, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cli.path), *STREAM, *args], capture_output=True, text=True, timeout=30, cwd=cwd
    )


def messages(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def init(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return next(m for m in messages(done) if m.get("subtype") == "init")


def config(**servers: Any) -> str:
    return json.dumps({"mcpServers": servers})


def test_without_mcp_config_there_is_no_mcp_tool(cli: InstalledCli) -> None:
    """No server given, the real CLI has no ``mcp__`` tool: none is listed, and each scripted
    call of one is answered "No such tool available"."""
    done = run(cli, *ALLOWED)
    first = init(done)
    assert first["mcp_servers"] == []
    assert first["tools"] == list(DEFAULT_TOOLS)
    results = [m["message"]["content"][0] for m in messages(done) if m["type"] == "user"]
    assert [(r["content"], r["is_error"]) for r in results] == [
        (f"<tool_use_error>Error: No such tool available: {name}</tool_use_error>", True)
        for name in ("mcp__web__search", "mcp__web__fetch", "mcp__gone__ping")
    ]


def test_servers_are_reported_in_order_with_the_sdk_ones_last(cli: InstalledCli) -> None:
    servers = config(
        calc={"type": "sdk", "name": "calc"},
        web={"type": "http", "url": "http://127.0.0.1:9/mcp"},
        local={"command": sys.executable, "args": ["-c", "pass"]},
        events={"type": "sse", "url": "http://127.0.0.1:9/sse"},
    )
    first = init(run(cli, "--mcp-config", servers, *ALLOWED))
    assert first["mcp_servers"] == [
        {"name": "web", "status": "connected", "source": "dynamic"},
        {"name": "local", "status": "connected", "source": "dynamic"},
        {"name": "events", "status": "connected", "source": "dynamic"},
        {"name": "calc", "status": "connected", "source": "sdk"},
    ]


def test_a_stdio_server_whose_command_is_missing_failed(cli: InstalledCli) -> None:
    servers = config(
        gone={"type": "stdio", "command": "/nonexistent/bin/mcp"},
        unknown={"command": "stuntset-no-such-command"},
        web={"type": "http", "url": "http://127.0.0.1:9/mcp"},
    )
    first = init(run(cli, "--mcp-config", servers, *ALLOWED))
    assert [(s["name"], s["status"]) for s in first["mcp_servers"]] == [
        ("gone", "failed"),
        ("unknown", "failed"),
        ("web", "connected"),
    ]


def test_connected_servers_tools_follow_the_builtins_sorted(cli: InstalledCli) -> None:
    servers = config(
        web={"type": "http", "url": "http://127.0.0.1:9/mcp"},
        gone={"command": "/nonexistent/bin/mcp"},
    )
    first = init(run(cli, "--mcp-config", servers, *ALLOWED))
    assert first["tools"] == [*DEFAULT_TOOLS, "mcp__web__fetch", "mcp__web__search"]


def test_a_failed_servers_tool_is_no_such_tool_and_its_result_is_skipped(
    cli: InstalledCli,
) -> None:
    servers = config(
        web={"type": "http", "url": "http://127.0.0.1:9/mcp"},
        gone={"command": "/nonexistent/bin/mcp"},
    )
    done = run(cli, "--mcp-config", servers, *ALLOWED)
    results = [
        m["message"]["content"][0] | {"extra": m["tool_use_result"]}
        for m in messages(done)
        if m["type"] == "user"
    ]
    assert [(r["content"], r["is_error"]) for r in results] == [
        ("3 hits", False),
        ("page", False),
        ("<tool_use_error>Error: No such tool available: mcp__gone__ping</tool_use_error>", True),
    ]
    assert results[2]["extra"] == "Error: No such tool available: mcp__gone__ping"
    assert done.returncode == 0


def test_configs_merge_in_order_from_json_and_files(cli: InstalledCli, tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text(config(a={"url": "http://x/", "type": "http"}))
    servers = config(b={"type": "http", "url": "http://x/"}, a={"command": "/nonexistent"})
    first = init(run(cli, "--mcp-config", "mcp.json", servers, cwd=tmp_path))
    assert [(s["name"], s["status"]) for s in first["mcp_servers"]] == [
        ("a", "failed"),
        ("b", "connected"),
    ]


def test_entries_the_real_cli_cannot_use_are_dropped(cli: InstalledCli) -> None:
    servers = config(empty={}, odd={"type": "weird"}, nourl={"type": "http"}, ok={"command": "sh"})
    assert init(run(cli, "--mcp-config", servers))["mcp_servers"] == [
        {"name": "ok", "status": "connected", "source": "dynamic"}
    ]


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ("{bad", "MCP config file not found: {cwd}/{{bad"),
        ("missing.json", "MCP config file not found: {cwd}/missing.json"),
        ("{}", "mcpServers: Invalid input: expected record, received undefined"),
        ('{"mcpServers": []}', "mcpServers: Invalid input: expected record, received array"),
        ('{"mcpServers": null}', "mcpServers: Invalid input: expected record, received null"),
    ],
)
def test_a_config_the_real_cli_refuses_exits_1(
    cli: InstalledCli, tmp_path: Path, value: str, detail: str
) -> None:
    done = run(cli, "--mcp-config", value, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    expected = detail.format(cwd=tmp_path)
    assert done.stderr == f"Error: Invalid MCP configuration:\n{expected}\n"


def test_a_config_file_that_is_not_json_exits_1(cli: InstalledCli, tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text("{nope")
    done = run(cli, "--mcp-config", "mcp.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: Invalid MCP configuration:\n")


def imported(cli: InstalledCli, *args: str) -> bool:
    """Whether the fake process imported ``_process.mcp`` (``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-IS", "-X", "importtime", str(cli.path), *STREAM, *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return "claude._process.mcp" in done.stderr


def test_the_mcp_module_loads_only_with_mcp_config(tmp_path: Path) -> None:
    """Start-up is a budget: a run without MCP servers does not pay for reading them."""
    cli = install_cli(
        "claude", Script(turns=(Turn(steps=(Text("hi"),), times=2),)), bin_dir=tmp_path
    )
    assert not imported(cli)
    assert imported(cli, "--mcp-config", config(web={"type": "http", "url": "http://x/"}))


def test_mcp_status_describes_the_servers_as_after_connecting(cli: InstalledCli) -> None:
    servers = config(
        calc={"type": "sdk", "name": "calc"},
        web={"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
        gone={"command": "/nonexistent/bin/mcp"},
    )
    request = {"type": "control_request", "request_id": "r1", "request": {"subtype": "mcp_status"}}
    done = subprocess.run(
        [str(cli.path), *STREAM[2:], "--input-format", "stream-json", "--mcp-config", servers],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    answer = messages(done)[0]["response"]
    assert answer["request_id"] == "r1"
    assert answer["response"]["mcpServers"] == [
        {
            "name": "web",
            "status": "connected",
            "config": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
            "transport": "http",
            "scope": "dynamic",
            "source": "dynamic",
            "tools": [{"name": "fetch", "annotations": {}}, {"name": "search", "annotations": {}}],
        },
        {
            "name": "gone",
            "status": "failed",
            "error": "ENOENT: no such file or directory, posix_spawn 'stdio'",
            "config": {"type": "stdio", "command": "/nonexistent/bin/mcp", "args": []},
            "transport": "stdio",
            "scope": "dynamic",
            "source": "dynamic",
        },
        {
            "name": "calc",
            "status": "connected",
            "transport": "sdk",
            "scope": "dynamic",
            "source": "sdk",
            "tools": [],
        },
    ]


def test_mcp_status_without_servers_is_empty(cli: InstalledCli) -> None:
    request = {"type": "control_request", "request_id": "r1", "request": {"subtype": "mcp_status"}}
    done = subprocess.run(
        [str(cli.path), *STREAM[2:], "--input-format", "stream-json"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert messages(done)[0]["response"]["response"] == {"mcpServers": []}
