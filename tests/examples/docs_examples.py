"""The code blocks of the documentation site (docs/**/*.md), for tests/examples/test_docs.py.

Conventions, kept few:

* a ```python block holding a ``def test_`` is a test module: it runs under pytest (in a
  pytester directory) and must pass with no failure, error or skip;
* any other ```python block is a script: it runs with ``python`` in a fresh directory and must
  exit 0;
* a block whose fence has a title (```toml title="scenarios/hello.toml"```) is a file: it is
  written at that path beside every example of its page before they run;
* a block that cannot run (an excerpt, a live-only snippet) is preceded by the line
  ``<!-- not-run: why -->``; the reason is required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).parents[2] / "docs"

_FENCE = re.compile(
    r"^(?P<marker><!-- not-run: (?P<reason>.*?) -->\n)?"
    r"```(?P<lang>[\w-]*)(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$",
    flags=re.DOTALL | re.MULTILINE,
)
_TITLE = re.compile(r'title="([^"]+)"')
_TEST = re.compile(r"^(?:async )?def test_", flags=re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: Path
    line: int
    lang: str
    code: str
    title: str | None
    not_run: str | None

    @property
    def name(self) -> str:
        page = self.page.relative_to(DOCS) if self.page.is_relative_to(DOCS) else self.page.name
        return f"{page}:{self.line}"

    @property
    def is_test_module(self) -> bool:
        return bool(_TEST.search(self.code))

    @property
    def tests(self) -> int:
        """How many test functions the module defines."""
        return len(_TEST.findall(self.code))


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        title = _TITLE.search(match["info"])
        reason = match["reason"]
        if match["marker"] is not None and not reason.strip():
            raise ValueError(
                f"{page}:{text.count(chr(10), 0, match.start()) + 1}: "
                "a not-run marker needs a reason"
            )
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start("code")),
                lang=match["lang"],
                code=match["code"],
                title=title[1] if title else None,
                not_run=reason,
            )
        )
    return found


def pages(root: Path = DOCS) -> list[Path]:
    return sorted(root.rglob("*.md"))


def examples(root: Path = DOCS) -> list[Block]:
    """Every ```python block without a title: the examples that run."""
    return [
        block
        for page in pages(root)
        for block in blocks(page)
        if block.lang == "python" and block.title is None
    ]


def files(page: Path) -> dict[str, str]:
    """The titled blocks of a page: the files its examples find beside them."""
    return {block.title: block.code for block in blocks(page) if block.title is not None}
