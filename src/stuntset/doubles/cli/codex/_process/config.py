"""What the fake ``codex`` reads of Codex's configuration: ``$CODEX_HOME/config.toml`` (else
``$HOME/.codex/config.toml``) under the ``-c key=value`` options, as codex-cli 0.163.0 layers
them — only what the fake acts on: the model provider in use and its
``request_max_retries`` / ``stream_max_retries``, and the refusal of a table for a built-in
provider id.

Runs in the fake process (built-ins only, see ``_runtime``). The standard library's
``tomllib`` is not a built-in: importing it costs a fake spawn more than the whole spawn costs
without it (measured 2026-12-01, ``python -IS``: about 13 ms against an 8 ms fake ``codex
exec``), so this module reads TOML itself — the whole syntax's structure (tables, arrays of
tables, dotted and quoted keys, the four string forms, arrays and inline tables over several
lines, comments), keeping scalars other than strings, booleans and integers as their text.
A file it cannot read is refused as the real CLI refuses a malformed one.
"""

from __future__ import annotations

from stuntset.doubles.cli.codex._process.common import (
    DEFAULT_REQUEST_RETRIES,
    DEFAULT_STREAM_RETRIES,
    config_path,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "RESERVED",
    "ConfigError",
    "Settings",
    "load",
    "parse",
]

#: codex caps both retry settings at 100.
_MAX_RETRIES = 100

#: Provider ids codex refuses a ``model_providers`` table for (observed: these four refused;
#: ``oss`` and ``azure`` accepted).
RESERVED = ("amazon-bedrock", "lmstudio", "ollama", "openai")


def reserved_text(ids: list[str]) -> str:
    """codex's words for ``model_providers`` tables of built-in ids (observed)."""
    named = ", ".join(f"`{i}`" for i in sorted(ids))
    return (
        f"model_providers contains reserved built-in provider IDs: {named}. Built-in providers "
        "cannot be overridden. Rename your custom provider (for example, `openai-custom`)."
    )


class ConfigError(Exception):
    """TOML the fake cannot read, at ``line``:``column`` (1-based)."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


# --- TOML ----------------------------------------------------------------------------------

#: Arrays and inline tables nest at most this deep (the reader recurses; a file nested deeper
#: is refused rather than crashing the fake).
_MAX_DEPTH = 100
_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPES = {
    "b": "\b",
    "t": "\t",
    "n": "\n",
    "f": "\f",
    "r": "\r",
    '"': '"',
    "\\": "\\",
    "e": "\x1b",
}


class _Reader:
    """One TOML text: ``parse`` builds its tables; ``where`` remembers where each key path was
    first written (line, column and length of its first key), as codex points at them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.root: dict[str, Any] = {}
        self.where: dict[tuple[str, ...], tuple[int, int, int]] = {}
        #: The key path of the table the pairs being read go into.
        self.path: tuple[str, ...] = ()
        #: Arrays and inline tables open around the value being read.
        self.depth = 0

    def error(self, message: str, at: int | None = None) -> ConfigError:
        at = self.at if at is None else at
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return ConfigError(message, line, column)

    def position(self, at: int, size: int) -> tuple[int, int, int]:
        problem = self.error("", at)
        return problem.line, problem.column, size

    def peek(self, size: int = 1) -> str:
        return self.text[self.at : self.at + size]

    def blank(self, newlines: bool) -> None:
        """Skip spaces and tabs (and comments and newlines, with ``newlines``)."""
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char in " \t" or (newlines and char in "\r\n"):
                self.at += 1
            elif char == "#":
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end
            else:
                return

    def parse(self) -> dict[str, Any]:
        table = self.root
        path: tuple[str, ...] = ()
        while True:
            self.blank(newlines=True)
            if self.at >= len(self.text):
                return self.root
            if self.peek() == "[":
                table, path = self.header()
            else:
                self.pair(table, path)
            self.blank(newlines=False)
            if self.at < len(self.text) and self.peek() not in "\r\n":
                raise self.error("expected newline, `#`")

    def header(self) -> tuple[dict[str, Any], tuple[str, ...]]:
        many = self.peek(2) == "[["
        self.at += 2 if many else 1
        self.blank(newlines=False)
        keys, start = self.key()
        self.blank(newlines=False)
        close = "]]" if many else "]"
        if self.peek(len(close)) != close:
            raise self.error(f"invalid table header, expected `{close}`")
        self.at += len(close)
        table = self.root
        for depth, key in enumerate(keys):
            path = tuple(keys[: depth + 1])
            self.where.setdefault(path, self.position(start[0], start[1]))
            last = depth == len(keys) - 1
            found = table.get(key)
            if last and many:
                if not isinstance(found, list):
                    found = table[key] = []
                found.append({})
                return found[-1], tuple(keys)
            if isinstance(found, list) and found:
                found = found[-1]
            if not isinstance(found, dict):
                found = table[key] = {}
            table = found
        return table, tuple(keys)

    def pair(self, table: dict[str, Any], prefix: tuple[str, ...]) -> None:
        keys, start = self.key()
        self.blank(newlines=False)
        if self.peek() != "=":
            raise self.error("expected `.`, `=`")
        self.at += 1
        self.blank(newlines=False)
        outer, self.path = self.path, prefix + tuple(keys)
        try:
            value = self.value()
        finally:
            self.path = outer
        for depth, key in enumerate(keys[:-1]):
            self.where.setdefault(prefix + tuple(keys[: depth + 1]), self.position(*start))
            found = table.get(key)
            if not isinstance(found, dict):
                found = table[key] = {}
            table = found
        self.where.setdefault(prefix + tuple(keys), self.position(*start))
        table[keys[-1]] = value

    def key(self) -> tuple[list[str], tuple[int, int]]:
        """A dotted key, and where its first part is (index, length)."""
        keys: list[str] = []
        start = (self.at, 0)
        while True:
            self.blank(newlines=False)
            begin = self.at
            char = self.peek()
            if char == '"':
                keys.append(self.basic_string())
            elif char == "'":
                keys.append(self.literal_string())
            else:
                while self.at < len(self.text) and self.text[self.at] in _BARE:
                    self.at += 1
                if self.at == begin:
                    raise self.error("invalid key")
                keys.append(self.text[begin : self.at])
            if len(keys) == 1:
                start = (begin, self.at - begin)
            self.blank(newlines=False)
            if self.peek() != ".":
                return keys, start
            self.at += 1

    def value(self) -> Any:
        char = self.peek()
        if self.peek(3) == '"""':
            return self.multiline('"""')
        if self.peek(3) == "'''":
            return self.multiline("'''")
        if char == '"':
            return self.basic_string()
        if char == "'":
            return self.literal_string()
        if char in "[{":
            if self.depth >= _MAX_DEPTH:
                raise self.error(f"nested more than {_MAX_DEPTH} deep")
            self.depth += 1
            try:
                return self.array() if char == "[" else self.inline_table()
            finally:
                self.depth -= 1
        return self.scalar()

    def basic_string(self) -> str:
        text = self.text
        self.at += 1
        out: list[str] = []
        while True:
            if self.at >= len(text) or text[self.at] in "\r\n":
                raise self.error('invalid basic string, expected `"`')
            char = text[self.at]
            if char == '"':
                self.at += 1
                return "".join(out)
            if char == "\\":
                out.append(self.escape())
            else:
                out.append(char)
                self.at += 1

    def escape(self) -> str:
        text = self.text
        code = text[self.at + 1 : self.at + 2]
        if code in _ESCAPES:
            self.at += 2
            return _ESCAPES[code]
        if code in ("u", "U"):
            size = 4 if code == "u" else 8
            digits = text[self.at + 2 : self.at + 2 + size]
            try:
                value = chr(int(digits, 16))
            except ValueError:
                raise self.error("invalid unicode escape") from None
            self.at += 2 + size
            return value
        raise self.error("invalid escape sequence")

    def literal_string(self) -> str:
        end = self.text.find("'", self.at + 1)
        newline = self.text.find("\n", self.at + 1)
        if end < 0 or 0 <= newline < end:
            self.at = len(self.text) if newline < 0 else newline
            raise self.error("invalid literal string, expected `'`")
        value = self.text[self.at + 1 : end]
        self.at = end + 1
        return value

    def multiline(self, quotes: str) -> str:
        text = self.text
        begin = self.at + 3
        end = text.find(quotes, begin)
        while end >= 0 and quotes == '"""' and _escaped(text, end):
            end = text.find(quotes, end + 1)
        if end < 0:
            self.at = len(text)
            raise self.error(f"invalid multiline string, expected `{quotes}`")
        while text[end + 3 : end + 4] == quotes[0]:  # up to two quotes may end the content
            end += 1
        self.at = end + 3
        body = text[begin:end]
        if body.startswith("\n"):
            body = body[1:]
        elif body.startswith("\r\n"):
            body = body[2:]
        return body  # escapes are kept as written: the fake reads no multi-line value

    def array(self) -> list[Any]:
        self.at += 1
        opened = self.at  # codex points just after the `[` of an array never closed
        items: list[Any] = []
        while True:
            self.blank(newlines=True)
            if self.peek() == "]":
                self.at += 1
                return items
            if self.at >= len(self.text):
                raise self.error("unclosed array, expected `]`", opened)
            items.append(self.value())
            self.blank(newlines=True)
            if self.peek() == ",":
                self.at += 1
            elif self.peek() != "]":
                raise self.error("unclosed array, expected `]`", opened)

    def inline_table(self) -> dict[str, Any]:
        self.at += 1
        table: dict[str, Any] = {}
        self.blank(newlines=False)
        if self.peek() == "}":
            self.at += 1
            return table
        while True:
            self.blank(newlines=False)
            self.pair(table, self.path)
            self.blank(newlines=False)
            char = self.peek()
            self.at += 1
            if char == "}":
                return table
            if char != ",":
                self.at -= 1
                raise self.error("unclosed inline table, expected `}`")

    def scalar(self) -> Any:
        begin = self.at
        text = self.text
        while self.at < len(text) and text[self.at] not in ",]}#\r\n":
            self.at += 1
        raw = text[begin : self.at].rstrip(" \t")
        self.at = begin + len(raw)
        if not raw:
            raise self.error("expected a value", begin)
        space = raw.find(" ")
        if space >= 0 and not (len(raw) > 10 and raw[4] == "-" and space == 10):
            raise self.error("expected newline, `#`", begin + space)  # a date may have one
        if raw in ("true", "false"):
            return raw == "true"
        digits = raw.replace("_", "")
        try:
            if digits[:2] in ("0x", "0o", "0b"):
                return int(digits[2:], {"x": 16, "o": 8, "b": 2}[digits[1]])
            return int(digits, 10)
        except ValueError:
            return raw  # a float, a date: the fake reads none


def _escaped(text: str, at: int) -> bool:
    slashes = 0
    while at - slashes - 1 >= 0 and text[at - slashes - 1] == "\\":
        slashes += 1
    return slashes % 2 == 1


def parse(text: str) -> tuple[dict[str, Any], dict[tuple[str, ...], tuple[int, int, int]]]:
    """A TOML text as nested dicts, and where each key path was first written (line, column,
    length of its first key). ``ConfigError`` where it cannot be read."""
    reader = _Reader(text)
    return reader.parse(), reader.where


def _override(config: dict[str, Any], option: str) -> None:
    """One ``-c key=value``: the value is TOML (a string when it is not, as codex takes it),
    set at the dotted key's place."""
    key, _, raw = option.partition("=")
    raw = raw.strip()
    try:
        reader = _Reader(raw)
        value = reader.value()
        reader.blank(newlines=False)
        if reader.at != len(raw):
            value = raw
    except ConfigError:
        value = raw
    table = config
    parts = [part.strip() for part in key.strip().split(".")]
    for part in parts[:-1]:
        found = table.get(part)
        if not isinstance(found, dict):
            found = table[part] = {}
        table = found
    table[parts[-1]] = value


# --- what the fake acts on -----------------------------------------------------------------


class Settings:
    """Codex's configuration as far as the fake acts on it: the retries of the model provider
    in use, and what codex refuses in it."""

    def __init__(self, path: str) -> None:
        self.retries = (DEFAULT_REQUEST_RETRIES, DEFAULT_STREAM_RETRIES)
        #: The ``config.toml`` read (or looked for).
        self.path = path
        #: What is wrong with that file: (message, line, column, length of what it points
        #: at). ``exec`` refuses to run (``exec_refusal``); ``app-server`` says so and goes
        #: on without the file.
        self.file_problem: tuple[str, int, int, int] | None = None
        #: The file's problem as ``exec`` words it on stderr.
        self.exec_refusal: str | None = None
        #: A built-in provider's table set by ``-c`` options: both modes refuse to run.
        self.option_problem: str | None = None


def _read(path: str) -> str | None:
    import posix

    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError:
        return None
    try:
        data = b""
        while chunk := posix.read(fd, 65536):
            data += chunk
    finally:
        posix.close(fd)
    return data.decode("utf-8", "replace")


def _reserved(config: dict[str, Any]) -> list[str]:
    providers = config.get("model_providers")
    return [i for i in providers if i in RESERVED] if isinstance(providers, dict) else []


def load(
    env: dict[str, str],
    options: list[str],
    *,
    profile: str | None = None,
    user_config: bool = True,
) -> Settings:
    """Codex's configuration: ``config.toml`` in ``$CODEX_HOME`` (else ``~/.codex``; not with
    ``user_config=False``, ``exec --ignore-user-config``) under the ``-c`` ``options``. The
    provider in use is ``model_provider`` (a profile's, if one is chosen: ``--profile`` or
    ``profile``; ``openai`` by default); only its table's retry settings count (capped at
    100)."""
    settings = Settings(config_path(env))
    config: dict[str, Any] = {}
    text = _read(settings.path) if user_config else None
    if text is not None:
        try:
            config, where = parse(text)
        except ConfigError as error:
            settings.file_problem = (error.message, error.line, error.column, 1)
            settings.exec_refusal = _syntax_text(settings.path, text, error)
            config = {}
        else:
            reserved = _reserved(config)
            if reserved:
                # codex points at the `model_providers` key (observed: a table header's)
                place = where.get(("model_providers",), (1, 1, 1))
                settings.file_problem = (reserved_text(reserved), *place)
                settings.exec_refusal = f"Error loading config.toml: {_reserved_refusal(reserved)}"
                config = {}
    for option in options:
        _override(config, str(option))
    reserved = _reserved(config)
    if reserved:
        settings.option_problem = _reserved_refusal(reserved)
    chosen = profile or config.get("profile")
    provider = config.get("model_provider")
    profiles = config.get("profiles")
    if isinstance(chosen, str) and isinstance(profiles, dict):
        picked = profiles.get(chosen)
        if isinstance(picked, dict) and isinstance(picked.get("model_provider"), str):
            provider = picked["model_provider"]
    providers = config.get("model_providers")
    table = providers.get(provider) if isinstance(providers, dict) else None
    if isinstance(table, dict):
        found: list[int] = []
        for name, default in (
            ("request_max_retries", DEFAULT_REQUEST_RETRIES),
            ("stream_max_retries", DEFAULT_STREAM_RETRIES),
        ):
            value = table.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found.append(min(value, _MAX_RETRIES))
            else:
                found.append(default)
        settings.retries = (found[0], found[1])
    return settings


def _reserved_refusal(ids: list[str]) -> str:
    return f"{reserved_text(ids)}\nin `model_providers`\n\n"


def _syntax_text(path: str, text: str, error: ConfigError) -> str:
    """How ``codex exec`` refuses a config.toml it cannot parse (observed: the place, the
    message, the line with a caret under the column)."""
    line = text.split("\n")[error.line - 1].rstrip("\r")
    number = str(error.line)
    gutter = " " * len(number)
    caret = " " * (error.column - 1) + "^"
    return (
        f"Error loading config.toml:\n{path}:{error.line}:{error.column}: {error.message}\n"
        f"{gutter} |\n{number} | {line}\n{gutter} | {caret}\n"
    )
