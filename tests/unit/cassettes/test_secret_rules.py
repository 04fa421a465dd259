"""The vendored gitleaks rules: intact, all loaded, translated faithfully, searched in
windows that miss no keyword, and read in linear time."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stuntset.cassettes import Scrubber, scan_for_secrets
from stuntset.cassettes.secret_rules import (
    _BEFORE,
    RULES_FILE,
    _occurrences,
    _windows,
    find_rule_hits,
    load_rules,
    translate,
)
from stuntset.cassettes.secrets import find_secrets

ROOT = Path(__file__).resolve().parents[3]


def refresher() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "refresh_gitleaks", ROOT / "tools/refresh_gitleaks.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_vendored_file_is_the_one_source_names_and_every_rule_loads() -> None:
    assert refresher().main(["--check"]) == 0
    rules, _ = load_rules()
    text = RULES_FILE.read_text()
    with_regex = text.count("\nregex = ")
    path_only = {"freemius-secret-key", "hashicorp-tf-password", "kubernetes-secret-yaml",
                 "nuget-config-password"}  # fmt: skip
    assert len(rules) == with_regex - len(path_only)
    assert (RULES_FILE.parent / "LICENSE-gitleaks").read_text().startswith("MIT License")


def test_the_check_fails_on_a_changed_file_and_refresh_refuses_a_broken_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(RULES_FILE.parent, rules)
    module = refresher()
    monkeypatch.setattr(module, "SOURCE", rules / "SOURCE")
    monkeypatch.setattr(module, "TOML", rules / "gitleaks.toml")
    (rules / "gitleaks.toml").write_text(RULES_FILE.read_text() + "\n# edited\n")
    assert module.main(["--check"]) == 1
    broken = tmp_path / "broken.toml"
    broken.write_text('[[rules]]\nid = "x"\nregex = """(unclosed"""\nkeywords = ["x"]\n')
    assert module.main([str(broken), "--commit", "abc"]) == 2
    fine = tmp_path / "fine.toml"
    fine.write_text('[[rules]]\nid = "x"\nregex = """zz_[a-z]{8}"""\nkeywords = ["zz_"]\n')
    assert module.main([str(fine), "--commit", "abc"]) == 0
    assert module.main(["--check"]) == 0
    assert "commit: abc" in (rules / "SOURCE").read_text()


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"dp\.pt\.(?i)[a-z0-9]{43}", r"dp\.pt\.(?i:[a-z0-9]{43}))"[:-1]),
        (r"(?i)key=[a-z]+", r"(?i)key=[a-z]+"),
        (r"x(?:[\w]|\z)", r"x(?:[\w]|\Z)"),
        (r"[[a-z]]", r"[\[a-z]]"),
    ],
)
def test_go_syntax_is_translated(go: str, python: str) -> None:
    assert translate(go) == python
    re.compile(translate(go))


def test_a_scoped_flag_applies_to_the_rest_of_its_group_only() -> None:
    pattern = re.compile(translate(r"(a(?i)b)c"))
    assert pattern.fullmatch("aBc")
    assert not pattern.fullmatch("aBC")
    assert not pattern.fullmatch("Abc")


@given(
    st.text(alphabet="ab k", max_size=3000),
    st.sampled_from([3, 10, 50]),
)
def test_windows_cover_every_keyword_occurrence(text: str, after: int) -> None:
    keywords = ["ab", "b a", "k"]
    windows = _windows(text, keywords, after)
    for keyword in keywords:
        for at in _occurrences(text, keyword):
            low, high = max(0, at - _BEFORE), min(len(text), at + len(keyword) + after)
            assert any(a <= low and high <= b for a, b in windows), (keyword, at)


def test_a_rule_applies_only_where_its_keyword_is_and_its_entropy_is_reached() -> None:
    rng = random.Random(1)
    token = "ghp_" + "".join(rng.choice("abcdefXYZ0123456789") for _ in range(36))
    assert [kind for *_, kind in find_rule_hits(f"t {token} x")] == ["github-pat"]
    assert find_rule_hits("t ghp_" + "a" * 36 + " x") == []  # entropy 0: not a token
    assert find_rule_hits(f"t {token.replace('ghp_', 'gxp_')} x") == []


@pytest.mark.parametrize(
    "unit",
    ["key=", "token ", "api_key = \"", "aws_secret_access_key=", "ey", "auth:", "\\u0041",
     "%41", "QUJD", "-----BEGIN PRIVATE KEY-----", "\\\\n", "sk-"],
)  # fmt: skip
def test_text_crafted_against_the_rules_is_read_in_linear_time(unit: str) -> None:
    """A generous bound (CPU time, so a loaded machine's waits are not charged): 240 KB of a
    unit the rules' keywords or the decoded readings react to."""
    data = b'{"body":' + json.dumps(unit * (240_000 // len(unit))).encode() + b"}\n"
    start = time.process_time()
    scan_for_secrets(data, Scrubber(env={}))
    assert time.process_time() - start < 2.0


def test_no_false_positive_on_the_docs_the_readme_the_changelog_and_the_catalog() -> None:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "src" / "stuntset").rglob("*.py"))  # the catalog's scenarios, too
    found = [
        f"{path.relative_to(ROOT)}: {hit.kind} {path.read_text()[hit.start : hit.end][:12]}…"
        for path in files
        for hit in find_secrets(path.read_text())
    ]
    assert found == []
    assert len(files) > 100


def test_importing_the_cassettes_does_not_load_the_rules() -> None:
    """Loading the rules costs ~0.2 s: it happens on the first scan, not on import."""
    code = (
        "import stuntset.cassettes, stuntset.cassettes.secret_rules as r, sys;"
        "print(r.load_rules.cache_info().currsize)"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


@given(st.from_regex(r"[A-Za-z_.\-]{10,60}", fullmatch=True))
def test_a_name_under_a_credential_word_is_not_a_secret(name: str) -> None:
    """gitleaks' allowlists read the secret unless they say ``regexTarget = "match"``: an
    identifier such as claude's ``"apiKeySource":"ANTHROPIC_API_KEY"`` is let off."""
    for text in (f'"apiKeySource":"{name}"', f"api_key = {name}", f'{{"token": "{name}"}}'):
        assert [h.kind for h in find_secrets(text)] == [], text
