"""The wheel smoke's user project (user_project/) uses every public fixture of the plugin, so
a new fixture is smoke-tested as installed too."""

from __future__ import annotations

import ast
from pathlib import Path

import stuntset.pytest_plugin

PROJECT = Path(__file__).parent / "user_project"


def fixtures_defined(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if ast.unparse(target) == "pytest.fixture":
                    names.add(node.name)
    return names


def fixtures_used(source: str) -> set[str]:
    tree = ast.parse(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    used = {arg.arg for f in functions if f.name.startswith("test_") for arg in f.args.args}
    return used | fixtures_defined(source)  # an override (stuntset_script) counts as a use


def used_by_project() -> set[str]:
    return set().union(*(fixtures_used(f.read_text()) for f in PROJECT.glob("test_*.py")))


def test_the_user_project_uses_every_public_fixture() -> None:
    plugin = Path(stuntset.pytest_plugin.__file__).read_text()
    public = fixtures_defined(plugin)
    assert {"event_log", "daemon", "cassette", "stand_in"} <= public
    assert public - used_by_project() == set()


def test_a_fixture_the_project_forgets_is_named() -> None:
    plugin = "import pytest\n@pytest.fixture\ndef brand_new(): ...\n@pytest.fixture\ndef _private(): ...\n"
    assert fixtures_defined(plugin) - used_by_project() == {"brand_new"}
