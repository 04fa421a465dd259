"""Every code example of the documentation site runs as written (conventions in
docs_examples.py), and the runner fails an example that breaks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from docs_examples import DOCS, Block, blocks, examples, files

# Loaded here, once: an in-process pytester run drops the modules it imported when it ends,
# and a module kept by a longer-lived one (the scenarios keep their Script class) would then
# disagree with a fresh copy on the next run's class identity.
import stuntset.doubles.cli._pytest  # noqa: F401
import stuntset.doubles.model._pytest  # noqa: F401
import stuntset.scenarios  # noqa: F401
import stuntset.script  # noqa: F401

QUIET = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
EXAMPLES = examples()
#: the not-run examples stay rare: each is an excerpt or needs what a test cannot have
MAX_NOT_RUN = 4


def run_test_module(block: Block, pytester: pytest.Pytester) -> pytest.RunResult:
    for path, code in files(block.page).items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    pytester.makepyfile(test_example=block.code)
    return pytester.runpytest(*QUIET)


def check_test_module(block: Block, result: pytest.RunResult) -> None:
    __tracebackhide__ = True
    outcomes = result.parseoutcomes()
    bad = {k: v for k, v in outcomes.items() if k not in ("passed", "warnings") and v}
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


@pytest.mark.parametrize("block", EXAMPLES, ids=[b.name for b in EXAMPLES])
def test_the_example_runs(block: Block, pytester: pytest.Pytester, tmp_path: Path) -> None:
    if block.not_run is not None:
        pytest.skip(f"not run: {block.not_run}")
    if block.is_test_module:
        check_test_module(block, run_test_module(block, pytester))
    else:
        done = run_script(block, tmp_path)
        assert done.returncode == 0, f"{block.name}:\n{done.stdout}\n{done.stderr}"


def test_every_page_has_its_examples_found() -> None:
    pages_with_code = {b.page.relative_to(DOCS).as_posix() for b in EXAMPLES}
    assert {"tutorial.md", "howto/openai.md", "testing.md"} <= pages_with_code
    assert sum(b.not_run is not None for b in EXAMPLES) <= MAX_NOT_RUN


def test_a_failing_example_fails_its_check(pytester: pytest.Pytester, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```toml title=\"hello.toml\"\nname = 'x'\n```\n\n"
        "```python\ndef test_one():\n    assert open('hello.toml').read() == 'other'\n```\n"
    )
    [_, block] = blocks(page)
    result = run_test_module(block, pytester)
    with pytest.raises(AssertionError, match=r"page.md:6: \{'failed': 1\}"):
        check_test_module(block.__class__(**{**block.__dict__, "page": page}), result)


def test_a_not_run_marker_needs_a_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- not-run:  -->\n```python\nprint()\n```\n")
    with pytest.raises(ValueError, match="a not-run marker needs a reason"):
        blocks(page)
