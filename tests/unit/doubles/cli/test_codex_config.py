"""What the fake ``codex`` reads of Codex's configuration (``_process/config.py``): its own
TOML reader (the fake process may not import ``tomllib``), checked against ``tomllib``, and
the settings it acts on."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from stuntset.doubles.cli.codex._process.common import config_matters
from stuntset.doubles.cli.codex._process.config import ConfigError, load, parse

DOCUMENT = '''# a comment
model = "gpt-5"          # a comment after a value
model_provider = "stuntset"
notes = """
request_max_retries = 0
still a string, "quoted" and \\"escaped\\" """
literal = \'\'\'C:\\path \'quoted\' \'\'\'
path = 'C:\\Users'
escapes = "tab\\tnewline\\nquote\\" \\u00e9 \\U0001F600"
numbers = [1, 0x10, 0o7, 0b11, 1_000, -2, +3]
others = [3.5, 1979-05-27T07:32:00Z, 1979-05-27 07:32:00, true, false]
nested = [
  [1, 2],   # a comment inside
  { a = "b", c = { d = 1 } },
]
"quoted key" = 1
site."google.com".x = true
empty = {}

[model_providers.stuntset]
name = "stuntset"
base_url = "http://127.0.0.1:9/openai/v1"
request_max_retries = 1
stream_max_retries = 1

[model_providers.other]
inline = { request_max_retries = 7, list = [ 1,
  2 ] }

[[mcp_servers.x.tools]]
name = "a"

[[mcp_servers.x.tools]]
name = "b"

[profiles.work]
model_provider = "other"
'''


def test_it_reads_what_tomllib_reads() -> None:
    parsed, _ = parse(DOCUMENT)
    expected = tomllib.loads(DOCUMENT)
    # scalars other than strings, booleans and integers stay as their text
    expected["others"] = ["3.5", "1979-05-27T07:32:00Z", "1979-05-27 07:32:00", True, False]
    # a multi-line basic string's escapes are kept as written (the fake reads none)
    expected["notes"] = 'request_max_retries = 0\nstill a string, "quoted" and \\"escaped\\" '
    assert parsed == expected


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ('x = "unterminated\n', 'invalid basic string, expected `"`', 1, 18),
        ('model = "gpt-5"\noops = [\n', "unclosed array, expected `]`", 2, 9),
        ("a = {b = 1\n", "unclosed inline table, expected `}`", 1, 11),
        ("= 1\n", "invalid key", 1, 1),
        ("a = 1 b\n", "expected newline, `#`", 1, 6),
        ("a = 1\n[b\n", "invalid table header, expected `]`", 2, 3),
        ("a =\n", "expected a value", 1, 4),
        ("a = 'x\n", "invalid literal string, expected `'`", 1, 7),
        ('a = """x\n', 'invalid multiline string, expected `"""`', 2, 1),
        ('a = "\\q"\n', "invalid escape sequence", 1, 6),
        ("a = " + "[" * 10_000 + "\n", "nested more than 100 deep", 1, 105),
        ("a = " + "{b = " * 10_000 + "\n", "nested more than 100 deep", 1, 505),
    ],
)
def test_what_it_cannot_read_is_named_by_place(
    text: str, message: str, line: int, column: int
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(text)
    assert (raised.value.message, raised.value.line, raised.value.column) == (
        message,
        line,
        column,
    )
    with pytest.raises((tomllib.TOMLDecodeError, RecursionError)):
        tomllib.loads(text)  # not TOML for tomllib either (which recurses without a limit)


def home_with(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "config.toml").write_text(text)
    return {"CODEX_HOME": str(tmp_path)}


def test_the_retries_of_the_provider_in_use(tmp_path: Path) -> None:
    env = home_with(tmp_path, DOCUMENT)
    assert load(env, []).retries == (1, 1)
    # -c over the file; the last option wins
    options = [
        "model_providers.stuntset.stream_max_retries=3",
        "model_providers.stuntset.stream_max_retries=2",
    ]
    assert load(env, options).retries == (1, 2)
    # an inline table replaces the provider's table: what it does not set is codex's default
    assert load(env, ["model_providers.stuntset={request_max_retries=0}"]).retries == (0, 5)
    # another provider, chosen by -c or a profile
    assert load(env, ['model_provider="nobody"']).retries == (4, 5)
    assert load(
        env, ["model_providers.other.request_max_retries=9", 'model_provider="other"']
    ).retries == (9, 5)
    assert load(env, ["model_providers.other.request_max_retries=9"], profile="work").retries == (
        9,
        5,
    )
    # capped at 100; a value that is not a count is ignored
    assert load(env, ["model_providers.stuntset.request_max_retries=500"]).retries == (100, 1)
    assert load(env, ["model_providers.stuntset.request_max_retries=true"]).retries == (4, 1)
    assert load(env, ["model_providers.stuntset.request_max_retries=x y"]).retries == (4, 1)
    # without the file: -c only, and openai (settings refused) by default
    assert load(env, [], user_config=False).retries == (4, 5)
    assert load({"CODEX_HOME": str(tmp_path / "none")}, []).retries == (4, 5)


def test_home_defaults_to_dot_codex(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(DOCUMENT)
    settings = load({"HOME": str(tmp_path)}, [])
    assert (settings.path, settings.retries) == (f"{tmp_path}/.codex/config.toml", (1, 1))


def test_built_in_provider_ids_are_refused(tmp_path: Path) -> None:
    env = home_with(tmp_path, "a = 1\n[model_providers.openai]\nrequest_max_retries = 1\n")
    settings = load(env, ['model_provider="openai"'])
    assert settings.file_problem is not None
    message, line, column, size = settings.file_problem
    assert (line, column, size) == (2, 2, 15)  # the `model_providers` key of the header
    assert message.startswith("model_providers contains reserved built-in provider IDs: `openai`.")
    assert (
        settings.exec_refusal == f"Error loading config.toml: {message}\nin `model_providers`\n\n"
    )
    assert settings.option_problem is None  # the file is left out; the options are fine
    assert settings.retries == (4, 5)

    settings = load({}, ["model_providers.lmstudio.name=x", "model_providers.amazon-bedrock={}"])
    assert settings.option_problem is not None
    assert "IDs: `amazon-bedrock`, `lmstudio`." in settings.option_problem
    for fine in ("oss", "azure", "openai-custom"):
        assert load({}, [f"model_providers.{fine}.name=x"]).option_problem is None


def test_the_configuration_is_loaded_only_where_it_can_matter(tmp_path: Path) -> None:
    """Without a config.toml and without ``-c`` options about providers or profiles codex's
    defaults hold: the fake does not even import its TOML reader."""
    env = {"CODEX_HOME": str(tmp_path)}
    assert not config_matters(env, ['model="o3"', 'approval_policy="never"'])
    assert config_matters(env, ["model_providers.x.request_max_retries=0"])
    assert config_matters(env, ['model_provider="x"'])
    assert config_matters(env, ['profile="work"'])
    (tmp_path / "config.toml").write_text("")
    assert config_matters(env, [])
    assert not config_matters(env, [], user_config=False)  # exec --ignore-user-config
