"""The README's "Checks for your own agent" example runs as written, and its checks catch an
app that breaks them."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"
QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if "assert_trajectory" in b]
    return block


def test_the_checks_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=example())
    pytester.runpytest(*QUIET).assert_outcomes(passed=2)


def test_the_checks_example_fails_on_an_app_that_breaks_them(pytester: pytest.Pytester) -> None:
    broken = (
        example()
        .replace(  # a system prompt that changes with every request
            "messages=messages,",
            'messages=[{**messages[0], "content": f"Now: {len(messages)}"}, *messages[1:]],',
        )
        .replace('report.md").write_text', 'notes.md").write_text')  # edits the wrong file
    )
    assert broken.count("len(messages)") == 1
    pytester.makepyfile(test_example=broken)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*PrefixUnstable: the prompt prefix is not stable*"])
    result.stdout.fnmatch_lines(["*unexpected: modified notes.md*"])


def installed_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if "installed_package" in b]
    return block


@pytest.mark.wheel
def test_the_installed_package_example_runs_on_a_sample_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stuntset.checks.installed import find_uv

    uv = find_uv() or next(
        (str(p) for p in [README.parent / ".tools" / "bin" / "uv"] if p.exists()), None
    )
    if uv is None:
        pytest.skip("no uv: set STUNTSET_UV, put uv on PATH, or run `make sync` for .tools/bin/uv")
    monkeypatch.setenv("STUNTSET_UV", uv)
    sample = README.parent / "tests" / "unit" / "checks" / "sample_plugin"
    source = (
        installed_example()
        .replace('Path(__file__).parent / "my-plugin"', f"Path({str(sample)!r})")
        .replace('pkg.run("my-plugin"', 'pkg.run("sample-hello"')
        .replace(
            '{"my_plugin": "my_plugin.pytest_plugin"}', '{"sample": "sample_plugin.pytest_plugin"}'
        )
        .replace('import_check("my_plugin")', 'import_check("sample_plugin")')
    )
    assert '"my_plugin' not in source
    assert "my-plugin" not in source
    pytester.makepyfile(test_example=source)
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)


def eval_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if "agent_eval" in b]
    return block


def test_the_eval_example_passes_and_fails_above_its_rate(pytester: pytest.Pytester) -> None:
    examples = Path(__file__).parents[2] / "examples" / "evals"
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "pdf_skill.toml").write_text(
        (examples / "pdf_skill.toml").read_text()
    )
    pytester.makepyfile(test_example=eval_example())
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)
    pytester.makepyfile(test_example=eval_example().replace("0.6)", "0.99)"))
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*below the minimum 99%*"])


def leaks_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if "check_no_leaks" in b]
    return block


# Tests real time: the leaking run waits out the check's settle period (1 s of real time).
@pytest.mark.slow
def test_the_leaks_example_passes_and_fails_on_code_that_leaks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=leaks_example())
    pytester.runpytest(*QUIET).assert_outcomes(passed=2)
    leaky = (
        leaks_example()
        .replace("with client.stream(", "if response := client.send(client.build_request(")
        .replace("json=CHAT) as response:", "json=CHAT), stream=True):")
        .replace(
            "next(response.iter_lines())", "LINES.append(response.iter_lines()); next(LINES[0])"
        )
        .replace(
            'subprocess.run([sys.executable, "-c", "print(\'done\')"], check=True)',
            'LINES.append(__import__("tempfile").mkdtemp(prefix="stuntset-readme-leak-"))',
        )
    )
    assert leaky.count("LINES.append") == 2
    assert leaky.count("stuntset-readme-leak-") == 1
    pytester.makepyfile(test_example=leaky + "\nLINES = []\n")
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*[[]streams[]] model double stream: POST /v1/chat/completions (in-process*(still open)*"]
    )
    result.stdout.fnmatch_lines(["*[[]temp_dirs[]] temporary directory */stuntset-readme-leak-*"])
    for left in Path(tempfile.gettempdir()).glob("stuntset-readme-leak-*"):
        left.rmdir()
