"""Every third-party import of every module in the built wheel is declared in its METADATA:
base modules against the base requirements, an extra's modules against the base and that
extra's (see ``_declared``). The wheel is built by the project's own build backend, in
process, as ``uv build`` would build it."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from _declared import imports_of, requirements, undeclared, wheel_metadata, wheel_modules

ROOT = Path(__file__).parents[2]

#: Scopes that run only with an extra's SDK: the adapters, and the matrix's column for each
#: (the matrix checks ``find_spec`` first and shows "not installed" without it).
EXTRA_OF = {
    "stuntset.providers.claude_code": "claude",
    "stuntset.providers.codex": "codex",
    "stuntset.providers.pydantic_ai": "pydantic-ai",
    "stuntset.checks.matrix._claude_code": "claude",
    "stuntset.checks.matrix._pydantic_ai": "pydantic-ai",
    # an eval on the real claude drives it through claude-agent-sdk (the codex target goes
    # through stuntset.providers.codex)
    "stuntset.evals.targets.CliTarget._claude_provider": "claude",
    # drift's claude side (drift checks find_spec first: "not installed" without it)
    "stuntset.drift.runners._claude": "claude",
    # drift's claude-session column (reached only after the same find_spec check)
    "stuntset.drift.claude_session": "claude",
    # check_event_log's state machine (the fixed scenario needs none of it)
    "stuntset.checks._log_machine": "hypothesis",
    # the fuzzer's strategies (issue 29): imported by name only, never by stuntset itself
    "stuntset.strategies": "hypothesis",
    # the MCP double serves through the SDK (specs and journals need none of it)
    "stuntset.doubles.mcp._sdk": "mcp",
    "stuntset.doubles.mcp.stdio": "mcp",
    # the MCP double's Streamable HTTP app is the SDK's
    "stuntset.doubles.mcp.http.build_http_app": "mcp",
    # the browser tier: reached only through its fixtures, which skip without Playwright
    "stuntset.browser._pytest.open_browser": "browser",
}

#: What the process that runs a scope already has, so declaring it would be wrong.
PROVIDED_BY_HOST = {
    # pytest loads the plugin (its pytest11 entry point): the user brings pytest
    "stuntset.pytest_plugin": {"pytest"},
    # what the plugin's hooks and fixtures delegate to (imported only from them)
    "stuntset.checks._pytest": {"pytest"},
    # expands into pytest tests, so it is called from a test module
    "stuntset.checks.provider_conformance.conformance_test": {"pytest"},
    # the plugin's report sections and deadline, wired from its hooks only
    "stuntset.explain._pytest": {"pytest"},
    # run only on a running trio loop (sniffio said so)
    "stuntset.log.subscription._trio_waker": {"trio"},
    "stuntset.log.subscription._trio_var": {"trio"},
    # an optional probe: uv's Python package if the user happens to have it (find_uv looks in
    # other places without it); a dependency on uv would be wrong
    "stuntset.checks.installed._uv_package_binary": {"uv"},
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hatchling.builders.wheel import WheelBuilder

    out = tmp_path_factory.mktemp("dist")
    [built] = WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"])
    return Path(built)


@pytest.fixture(scope="module")
def distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def check(modules: dict[str, str], metadata: str, distributions: dict[str, list[str]]) -> list[str]:
    return undeclared(
        modules,
        metadata,
        distributions=distributions,
        extra_of=EXTRA_OF,
        provided_by_host=PROVIDED_BY_HOST,
    )


@pytest.mark.slow
def test_every_import_of_the_built_wheel_is_declared(
    wheel: Path, distributions: dict[str, list[str]]
) -> None:
    modules = dict(wheel_modules(wheel))
    assert "stuntset.checks.matrix" in modules  # the wheel's own files, by dotted name
    assert check(modules, wheel_metadata(wheel), distributions) == []


@pytest.mark.slow
def test_the_extra_and_host_tables_name_real_scopes(wheel: Path) -> None:
    """A renamed function must not leave a stale entry that excuses nothing (or the wrong
    thing): every listed scope encloses at least one third-party import."""
    scopes = {
        item.scope for module, source in wheel_modules(wheel) for item in imports_of(module, source)
    }
    for listed in [*EXTRA_OF, *PROVIDED_BY_HOST]:
        assert any(s == listed or s.startswith(listed + ".") for s in scopes), listed


def test_the_wheel_declares_each_extra(wheel: Path) -> None:
    declared = requirements(wheel_metadata(wheel))
    assert set(declared) == {None, "claude", "codex", "pydantic-ai", "mcp", "browser", "hypothesis"}
    assert {"sniffio", "httpx2"} <= declared[None]
    assert "hypothesis" not in declared[None]  # its pytest plugin would load into every run
    assert "hypothesis" in declared["hypothesis"]
    assert "claude-agent-sdk" in declared["claude"] - declared[None]
    assert "mcp" in declared["mcp"] - declared[None]
    assert "playwright" in declared["browser"] - declared[None]


# --- the check fails on what it guards (synthetic modules and METADATA) ---

METADATA = """\
Metadata-Version: 2.4
Name: stuntset
Version: 0.1.0
Requires-Dist: anyio>=4.4
Requires-Dist: httptools>=0.6; platform_python_implementation == 'CPython'
Provides-Extra: claude
Requires-Dist: claude-agent-sdk>=0.2; extra == 'claude'
"""

DISTS = {"anyio": ["anyio"], "httptools": ["httptools"], "claude_agent_sdk": ["claude-agent-sdk"]}
DISTS |= {"yaml": ["PyYAML"], "pytest": ["pytest"], "sniffio": ["sniffio"]}


def test_an_undeclared_lazy_import_inside_a_function_fails() -> None:
    source = "import anyio\n\ndef helper():\n    import yaml\n    return yaml\n"
    problems = check({"stuntset.newthing": source}, METADATA, DISTS)
    assert problems == [
        "stuntset/newthing.py:4 (stuntset.newthing.helper): imports yaml (pyyaml), "
        "not declared in the base install"
    ]


def test_a_requirement_missing_from_the_metadata_fails() -> None:
    source = "import sniffio\nimport httptools\n"
    [problem] = check({"stuntset.log.subscription": source}, METADATA, DISTS)
    assert "imports sniffio" in problem


def test_an_extras_sdk_in_a_base_module_fails() -> None:
    source = "from claude_agent_sdk import query\n"
    assert check({"stuntset.providers.claude_code": source}, METADATA, DISTS) == []
    [problem] = check({"stuntset.driver": source}, METADATA, DISTS)
    assert "claude_agent_sdk (claude-agent-sdk), not declared in the base install" in problem


def test_what_the_host_provides_is_allowed_only_where_the_host_runs() -> None:
    assert check({"stuntset.pytest_plugin": "import pytest\n"}, METADATA, DISTS) == []
    [problem] = check({"stuntset.driver": "import pytest\n"}, METADATA, DISTS)
    assert "imports pytest" in problem


def test_type_checking_imports_and_the_standard_library_are_not_requirements() -> None:
    source = (
        "from typing import TYPE_CHECKING\nimport json\nif TYPE_CHECKING:\n    import yaml\n"
        "else:\n    import anyio\n"
    )
    assert [i.name for i in imports_of("stuntset.x", source)] == ["typing", "json", "anyio"]
    assert check({"stuntset.x": source}, METADATA, DISTS) == []


def test_an_import_no_distribution_provides_fails() -> None:
    [problem] = check({"stuntset.x": "import nowhere_to_be_found\n"}, METADATA, DISTS)
    assert "which no distribution provides" in problem
