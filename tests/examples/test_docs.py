"""Every code example of the documentation site runs as written (conventions in
docs_examples.py), and the runner fails an example that breaks."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_examples import DOCS, Block, blocks, examples, files

import stuntset

# the first import of every stuntset module and of the client libraries (a module fixture,
# then per example): 5-30 s each on a loaded machine
pytestmark = [pytest.mark.timeout(300), pytest.mark.docs]

QUIET = (
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:cacheprovider",
)
#: A user's project runs async tests on asyncio, anyio's default (this suite adds trio)
CONFTEST = """
import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""
EXAMPLES = examples()
#: the not-run examples stay rare: each is an excerpt or needs what a test cannot have
MAX_NOT_RUN = 4


# A pytester run in this process drops, when it ends, the modules imported since the
# pytester fixture was set up; a module some longer-lived one still holds then disagrees with
# its fresh copy in the next run (a ``Script`` that is not a ``Script`` for the scenarios the
# ``stuntset`` package keeps; openai catching httpx2's exceptions while a fresh httpcore2
# raises its own). So every stuntset module is imported before any pytester is set up, and
# the modules an example imports before its own pytester is.


@pytest.fixture(scope="module", autouse=True)
def _stuntset_loaded() -> None:
    for module in pkgutil.walk_packages(stuntset.__path__, "stuntset."):
        importlib.import_module(module.name)
    for name in ("httpx", "httpx2"):
        importlib.import_module(name)


def preload(code: str) -> None:
    """Imports what ``code`` imports (top level)."""
    names = set()
    for node in ast.parse(code).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    with pytest.MonkeyPatch.context() as env:
        # litellm downloads its model price list at import unless told not to
        env.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        for name in sorted(names):
            if importlib.util.find_spec(name.split(".")[0]) is not None:
                importlib.import_module(name)


def run_test_module(block: Block, pytester: pytest.Pytester) -> pytest.RunResult:
    for path, code in files(block.page).items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_example=block.code)
    return pytester.runpytest(*QUIET)


def check_test_module(block: Block, result: pytest.RunResult) -> None:
    __tracebackhide__ = True
    outcomes = result.parseoutcomes()
    bad = {k: v for k, v in outcomes.items() if k not in ("passed", "warnings", "deselected") and v}
    assert not bad, f"{block.name}: {bad}\n" + "\n".join(result.outlines[-60:])
    assert outcomes.get("passed", 0) >= block.tests, f"{block.name}: {outcomes}"


def run_script(block: Block, where: Path) -> subprocess.CompletedProcess[str]:
    for path, code in files(block.page).items():
        target = where / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    (where / "example.py").write_text(block.code)
    return subprocess.run(
        [sys.executable, "example.py"], cwd=where, capture_output=True, text=True, timeout=60
    )


def marked(block: Block) -> object:
    # litellm leaves an event loop of its own (and its sockets) for the garbage collector,
    # which the in-process run's end reports as unraisable; nothing of the example's doing
    litellm = "import litellm" in block.code
    marks = [pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]
    return pytest.param(block, id=block.name, marks=marks if litellm else [])


# pydantic warns (an error under this suite's filterwarnings, which the in-process runs
# inherit) when a module litellm imports lazily is imported afresh, as it is in the second
# in-process run that calls litellm; a user's run imports it once
@pytest.mark.filterwarnings("ignore:Items .*ReadOnly:UserWarning")
@pytest.mark.parametrize("block", [marked(b) for b in EXAMPLES])
def test_the_example_runs(block: Block, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if block.not_run is not None:
        pytest.skip(f"not run: {block.not_run}")
    if block.is_test_module:
        preload(block.code)  # before the pytester fixture is set up: see above
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        check_test_module(block, run_test_module(block, pytester))
    else:
        done = run_script(block, tmp_path)
        assert done.returncode == 0, f"{block.name}:\n{done.stdout}\n{done.stderr}"


#: Guides whose examples are in another language, run by tests/examples/test_other_languages.py
OTHER_LANGUAGES = {"howto/typescript.md", "howto/curl.md"}


def test_every_page_has_its_examples_found() -> None:
    pages_with_code = {b.page.relative_to(DOCS).as_posix() for b in EXAMPLES}
    guides = {p.relative_to(DOCS).as_posix() for p in (DOCS / "howto").glob("*.md")}
    guides -= OTHER_LANGUAGES
    assert len(guides) >= 9
    assert {"tutorial.md", "testing.md", *guides} <= pages_with_code
    assert sum(b.not_run is not None for b in EXAMPLES) <= MAX_NOT_RUN


def test_a_failing_example_fails_its_check(pytester: pytest.Pytester, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```toml title=\"hello.toml\"\nname = 'x'\n```\n\n"
        "```python\nfrom pathlib import Path\n\n\ndef test_one():\n"
        "    assert Path('hello.toml').read_text() == 'other'\n```\n"
    )
    [_, block] = blocks(page)
    result = run_test_module(block, pytester)
    with pytest.raises(AssertionError, match=r"page.md:5: \{'failed': 1\}"):
        check_test_module(block, result)


def test_a_not_run_marker_needs_a_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- not-run:  -->\n```python\nprint()\n```\n")
    with pytest.raises(ValueError, match="a not-run marker needs a reason"):
        blocks(page)


def test_a_script_example_runs_beside_its_pages_files(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        '```text title="data/in.txt"\nhello\n```\n\n'
        "```python\nfrom pathlib import Path\n\n"
        "raise SystemExit(Path('data/in.txt').read_text() == 'hello\\n' and 3)\n```\n"
    )
    [_, block] = blocks(page)
    assert not block.is_test_module
    where = tmp_path / "run"
    where.mkdir()
    assert run_script(block, where).returncode == 3  # found its file, and its failure shows


@pytest.mark.node
@pytest.mark.parametrize(("language", "program"), [("sh", "bash"), ("js", "node")])
def test_the_other_language_examples_of_the_serve_page_run(
    language: str, program: str, tmp_path: Path
) -> None:
    """The any-language page's curl command and Node script, as written (the port swapped for
    a free one), against a real ``stuntset serve``: each prints the catalog's answer."""
    if shutil.which(program) is None:
        pytest.skip(f"needs {program} on PATH")
    page = (DOCS / "howto" / "serve.md").read_text()
    found = re.findall(rf"```{language}\n(.*?)```", page, flags=re.DOTALL)
    [code] = [c for c in found if "chat/completions" in c]
    stuntset_bin = Path(sys.executable).with_name("stuntset")
    with subprocess.Popen(
        [str(stuntset_bin), "serve", "--port", "0"], stdout=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stdout is not None
            base = server.stdout.readline().split(" on ")[1].strip()
            script = tmp_path / f"example.{'mjs' if program == 'node' else 'sh'}"
            script.write_text(code.replace("http://127.0.0.1:8765", base))
            done = subprocess.run(
                [program, str(script)],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
                cwd=tmp_path,
            )
        finally:
            server.terminate()
    said = done.stdout.strip()
    if language == "sh":
        said = json.loads(said)["choices"][0]["message"]["content"]
    assert said == "Hello! How can I help you today?"
