"""The how-tos for other languages run as written against a real ``stuntset serve`` (the port
of the page, 8765, swapped for a free one): the TypeScript page's titled ``js`` blocks are
written as files and run with ``node --test`` (its untitled ``sh`` block), with tests/node's
locked npm packages; the curl page's ``sh`` block runs with ``bash``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_examples import DOCS, blocks

from node._node import MODULES, need_node, serving

PAGE_PORT = "http://127.0.0.1:8765"


def _env() -> dict[str, str]:
    """This environment with its ``stuntset`` first on PATH (the pages call it by name)."""
    here = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": here + os.pathsep + os.environ.get("PATH", "")}


@pytest.mark.node
@pytest.mark.timeout(300)
def test_the_typescript_howto_runs(tmp_path: Path) -> None:
    setup = need_node()
    page = DOCS / "howto" / "typescript.md"
    found = blocks(page)
    files = {b.title: b.code for b in found if b.lang == "js" and b.title}
    [command] = [b.code.strip() for b in found if b.lang == "sh" and not b.title]
    assert command == "node --test"
    assert {"stuntset.mjs", "retries.test.mjs", "agent.test.mjs"} <= set(files)
    (tmp_path / "node_modules").symlink_to(MODULES)
    with serving() as base:
        for name, code in files.items():
            (tmp_path / name).write_text(code.replace(PAGE_PORT, base))
        done = subprocess.run(
            [setup.node, "--test"],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"^# pass 4$", done.stdout, flags=re.MULTILINE), done.stdout[-2000:]


@pytest.mark.slow  # a stuntset serve process and a dozen curls: ≈ 1.5 s
def test_the_curl_howto_runs(tmp_path: Path) -> None:
    if shutil.which("curl") is None or shutil.which("bash") is None:
        pytest.skip("needs curl and bash on PATH")
    [script] = [b.code for b in blocks(DOCS / "howto" / "curl.md") if b.lang == "sh"]
    with serving() as base:
        (tmp_path / "howto.sh").write_text(script.replace(PAGE_PORT, base))
        done = subprocess.run(
            ["bash", "howto.sh"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "all as scripted"


def test_a_broken_step_fails_the_curl_howto(tmp_path: Path) -> None:
    """The script's checks are real: a wrong expectation makes bash exit non-zero."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    [script] = [b.code for b in blocks(DOCS / "howto" / "curl.md") if b.lang == "sh"]
    broken = script.replace(PAGE_PORT, "http://127.0.0.1:9").replace("curl -s", "curl -s -m 2")
    (tmp_path / "howto.sh").write_text(broken)
    done = subprocess.run(["bash", "howto.sh"], cwd=tmp_path, capture_output=True, timeout=60)
    assert done.returncode != 0
