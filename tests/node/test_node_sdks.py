"""The Node tier: the real npm SDKs (openai-node, anthropic-sdk-typescript, the TypeScript
claude-agent-sdk and codex SDK) over every catalog scenario, driven through the control API of
a ``stuntset serve`` process and through fake CLIs made by ``stuntset cli install``.

Each ``*.test.mjs`` suite runs under ``node --test``; every scenario is bounded (a correct
client bounds its wait: ``stuck`` by 2.5 s, every other one by a 20 s hang guard), and what
each client saw is recorded. This test fails if a suite fails, a scenario is missing, or what
a client saw differs from ``expected.json`` — the Node columns of ``docs/catalog.md`` are
made from it (``STUNTSET_NODE_UPDATE=1`` rewrites it from the run).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from stuntset import scenarios

from ._node import HERE, NodeSetup, need_node, serving, stuntset_bin

pytestmark = pytest.mark.node

EXPECTED = HERE / "expected.json"
SUITES = {
    "openai-node": "openai.test.mjs",
    "anthropic-sdk-typescript": "anthropic.test.mjs",
    "claude-agent-sdk-ts": "claude-agent-sdk.test.mjs",
    "codex-sdk-ts": "codex-sdk.test.mjs",
}


@pytest.fixture(scope="module")
def node_setup() -> NodeSetup:
    return need_node()


@pytest.fixture(scope="module")
def server(node_setup: NodeSetup) -> Iterator[str]:
    with serving() as url:
        yield url


def run_suite(
    node_setup: NodeSetup, suite: str, url: str, results: Path
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "STUNTSET_URL": url,
        "STUNTSET_BIN": stuntset_bin(),
        "STUNTSET_NODE_RESULTS": str(results),
    }
    return subprocess.run(
        [node_setup.node, "--test", "--test-reporter=tap", suite],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )


def update_expected(client: str, outcomes: dict[str, list[str]]) -> None:
    """Write ``client``'s outcomes into ``expected.json`` (locked: the suites run in parallel
    workers, each rewriting its own client)."""
    with open(EXPECTED.with_suffix(".lock"), "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        expected = json.loads(EXPECTED.read_text()) if EXPECTED.exists() else {}
        expected[client] = outcomes
        ordered = {name: expected[name] for name in SUITES if name in expected}
        EXPECTED.write_text(json.dumps(ordered, indent=2, ensure_ascii=False) + "\n")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("client", list(SUITES))
def test_every_scenario_ends_as_expected(
    client: str, node_setup: NodeSetup, server: str, tmp_path: Path
) -> None:
    results = tmp_path / "results.jsonl"
    done = run_suite(node_setup, SUITES[client], server, results)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    seen = [json.loads(line) for line in results.read_text().splitlines()]
    got = {row["scenario"]: [row["outcome"], row["detail"]] for row in seen}
    assert sorted(got) == sorted(scenarios.names()), "one outcome per catalog scenario"
    assert len(seen) == len(got)
    if os.environ.get("STUNTSET_NODE_UPDATE") == "1":
        update_expected(client, {name: got[name] for name in scenarios.names()})
    expected = json.loads(EXPECTED.read_text())
    differ = {
        name: {"expected": expected.get(client, {}).get(name), "got": got[name]}
        for name in scenarios.names()
        if expected.get(client, {}).get(name) != got[name]
    }
    assert not differ, (
        f"{client}: what the client saw changed (update with STUNTSET_NODE_UPDATE=1 and "
        f"regenerate docs/catalog.md): {json.dumps(differ, indent=1)}"
    )
    # no scenario hung: only ``stuck`` may meet its bound
    assert all(outcome != "bounded" for name, (outcome, _) in got.items() if name != "stuck")


@pytest.mark.timeout(300)
def test_a_cli_that_breaks_itself_ends_every_node_sdk_turn(
    node_setup: NodeSetup, server: str, tmp_path: Path
) -> None:
    """``cli=True`` on the fake CLIs (their own output breaking, their process dying): the
    TypeScript claude-agent-sdk's and codex SDK's turns end by themselves, none hangs."""
    results = tmp_path / "results.jsonl"
    done = run_suite(node_setup, "cli-breaks.test.mjs", server, results)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    seen = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(seen) == 10, seen  # five breaks x two SDKs
    assert all(row["outcome"] != "bounded" for row in seen), seen
