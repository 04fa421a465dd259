"""docs/reference/daemon-protocol.md: its Node client runs as written against a real daemon
and prints what the page shows; the page names every request and reply of the protocol."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from docs_examples import DOCS, blocks

from stuntset.runtime import protocol
from stuntset.runtime.daemon import DaemonHandle

PAGE = DOCS / "reference" / "daemon-protocol.md"


def node_command() -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node on PATH")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    major = int(version.stdout.strip().lstrip("v").split(".")[0])
    return [node, "--experimental-websocket"] if major < 22 else [node]


@pytest.mark.node
def test_the_node_client_of_the_page_runs_as_written(daemon: DaemonHandle, tmp_path: Path) -> None:
    found = {block.title: block.code for block in blocks(PAGE) if block.title}
    script = tmp_path / "daemon-client.mjs"
    script.write_text(found["daemon-client.mjs"])
    [console] = [block.code for block in blocks(PAGE) if block.lang == "console"]
    shown = [line for line in console.splitlines() if not line.startswith("$ ")]

    done = subprocess.run(
        [*node_command(), str(script), str(tmp_path / "stuntset-daemon.json")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == shown


def test_the_page_names_every_request_and_field() -> None:
    text = PAGE.read_text()
    for request in protocol.Request.__args__:  # type: ignore[attr-defined]
        op = request.__struct_config__.tag
        assert re.search(rf"^\| `{op}` \|", text, flags=re.MULTILINE), op
        row = re.search(rf"^\| `{op}` \|(.*)$", text, flags=re.MULTILINE)
        assert row is not None
        for field in request.__struct_fields__:
            if field != "id":
                assert f"`{field}`" in row[1], (op, field)
    for reply in ("ok", "error", "event", "stale"):
        assert f"| `{reply}` |" in text, reply


def test_the_pages_error_replies_are_what_the_daemon_answers(daemon: DaemonHandle) -> None:
    [wire] = [block.code for block in blocks(PAGE) if block.lang == "json"]
    lines = [json.loads(line) for line in wire.splitlines()]
    with daemon.client("memory") as client:
        for request, shown in zip(lines[::2], lines[1::2], strict=True):
            client.send_raw(json.dumps(request))
            assert client.reply(request["id"]) == shown
