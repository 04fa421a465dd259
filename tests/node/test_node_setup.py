"""The Node tier's gate: where node or the npm packages are missing, a skip that names what is
missing — a failure under CI, where the tier must run (no node is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._node import need_node


def test_no_node_is_a_skip_outside_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="node is not on PATH"):
        need_node()


def test_no_node_is_a_failure_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run under CI: node is not on PATH"):
        need_node()


def test_missing_packages_name_make_node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "node").write_text("#!/bin/sh\n")
    (tmp_path / "node").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"openai, .*\(run `make node`\)"):
        need_node(tmp_path / "node_modules")
