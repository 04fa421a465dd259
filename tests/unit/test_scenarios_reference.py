"""The catalog reference: computed from the catalog, printed by ``scenarios --show``, and
committed as docs/catalog.md that cannot drift."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cli import main
from stuntset.errors import UnknownScenario
from stuntset.scenarios_reference import REGENERATE, catalog_markdown, drift, show

CATALOG = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"


@pytest.fixture(scope="module")
def generated() -> str:
    """The generator's text, made once: it plays every scenario on every double."""
    return catalog_markdown()


@pytest.mark.slow
def test_the_committed_catalog_is_what_the_generator_makes_now(generated: str) -> None:
    problem = drift(CATALOG, fresh=generated)
    assert problem is None, problem


@pytest.mark.slow
def test_drift_regenerates_when_not_given_the_text(tmp_path: Path, generated: str) -> None:
    same = tmp_path / "catalog.md"
    same.write_text(generated, encoding="utf-8")
    assert drift(same) is None


def test_drift_names_the_line_and_the_command_to_regenerate(tmp_path: Path, generated: str) -> None:
    stale = tmp_path / "catalog.md"
    stale.write_text(generated.replace("`list_files`", "`ls`", 1), encoding="utf-8")
    problem = drift(stale, fresh=generated)
    assert problem is not None
    assert f"{stale}:" in problem
    assert REGENERATE in problem
    assert "`ls`" in problem


def test_drift_of_a_missing_file_says_how_to_make_it(tmp_path: Path) -> None:
    problem = drift(tmp_path / "absent.md")
    assert problem is not None
    assert REGENERATE in problem


def test_every_scenario_has_a_section_in_catalog_order(generated: str) -> None:
    text = generated
    positions = [text.index(f"## `{name}`") for name in scenarios.names()]
    assert positions == sorted(positions)


def test_show_names_the_tools_texts_and_parameters_from_the_script() -> None:
    text = show("auth_expired_mid_run")
    assert "**Tools it calls:** `list_files`" in text
    assert '"Let me check the repository."' in text
    assert show("tool_use").count("`read_file`") >= 2
    assert "`failures: int = 1`" in show("rate_limited")


def test_show_renders_each_wire_status_and_error_type() -> None:
    text = show("overloaded")
    assert "HTTP 503 `server_error`" in text  # OpenAI
    assert "HTTP 529 `overloaded_error`" in text  # Anthropic
    assert "HTTP 429 `rate_limit_error`" in show("rate_limited")


def test_show_plays_the_clis() -> None:
    rows = {line.split(" | ")[0]: line for line in show("rate_limited").splitlines()}
    claude = next(line for key, line in rows.items() if "fake `claude`" in key)
    codex = next(line for key, line in rows.items() if "fake `codex`" in key)
    assert "api_retry, then completed" in claude  # the CLI retries the 429 by itself
    assert "turn.failed, then completed" in codex
    assert "not applicable" in show("spawn_missing")


def test_show_of_an_unknown_name_suggests_the_close_one() -> None:
    with pytest.raises(UnknownScenario, match="Did you mean 'stuck'"):
        show("stuk")


def test_the_command_prints_the_same_section() -> None:
    result = CliRunner().invoke(main, ["scenarios", "--show", "stream_cut"])
    assert result.exit_code == 0, result.output
    assert result.output == show("stream_cut")
