"""The Cassettes view: the cassettes in a folder, one cassette's transcript with a timing
bar per interaction (time to first frame, the gaps between frames), and a side-by-side diff
of two cassettes (``stuntset.cassettes.show`` and ``stuntset.cassettes.diff``)."""

from __future__ import annotations

import difflib
import itertools
import threading
from dataclasses import dataclass
from pathlib import Path

import msgspec

from stuntset.cassettes.diff import diff_cassettes
from stuntset.cassettes.format import Frame, Interaction, is_cassette, load_cassette
from stuntset.cassettes.show import transcript
from stuntset.errors import UsageError

from ._html import esc, hidden_token, href

__all__ = [
    "DIFF_LINES",
    "MAX_TICKS",
    "PAGE_INTERACTIONS",
    "PAGE_LINES",
    "find",
    "render_diff",
    "render_list",
    "render_one",
    "timing",
]


def find(folder: Path | None) -> list[str]:
    """The cassettes under ``folder`` (paths relative to it, sorted)."""
    if folder is None or not folder.is_dir():
        return []
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if not path.is_symlink() and is_cassette(path)
    )


def resolve(folder: Path | None, name: str) -> Path:
    """``name`` as one of the cassettes under ``folder``; ``UsageError`` otherwise (a name
    that is not listed, such as ``../secret``, is never opened)."""
    if folder is None or name not in find(folder):
        raise UsageError(f"no cassette {name!r} in the console's cassette folder")
    return folder / name


def render_list(base: str, folder: Path | None, *, token: str | None = None) -> str:
    """The body of the Cassettes page: each cassette, and a form to diff two."""
    if folder is None:
        return "<p>No cassette folder: start the console with <code>--cassettes DIR</code>.</p>"
    names = find(folder)
    if not names:
        return f'<p role="status">No cassettes in {esc(folder.name)}.</p>'
    items = "".join(
        f'<li><a href="{href(base, "/cassettes/show", [("name", n)], token=token)}">'
        f"{esc(n)}</a></li>"
        for n in names
    )
    options = "".join(f"<option>{esc(n)}</option>" for n in names)
    return (
        f'<ul class="cassettes" aria-label="Cassettes">{items}</ul>'
        f'<form action="{esc(base)}/cassettes/diff" aria-label="Compare two cassettes">'
        f'<label for="diff-a">Old</label> <select id="diff-a" name="a">{options}</select> '
        f'<label for="diff-b">New</label> <select id="diff-b" name="b">{options}</select> '
        f"{hidden_token(token)}<button>Compare</button></form>"
    )


def timing(interaction: Interaction) -> tuple[float | None, list[float]]:
    """Time to first frame and the gaps between frames (seconds) of a streamed response."""
    frames = interaction.response.frames or []
    if not frames:
        return None, []
    times = [frame.t for frame in frames]
    return times[0], [b - a for a, b in itertools.pairwise(times)]


#: A cassette page shows at most this many transcript lines (the rest on the next pages).
PAGE_LINES = 400
#: ... and at most this many interactions.
PAGE_INTERACTIONS = 40
#: A timing bar marks at most this many frames (evenly picked, the slowest gap's always).
MAX_TICKS = 100
#: The side-by-side diff compares at most this many lines of each cassette.
DIFF_LINES = 2000


def _ticks(frames: list[Frame], gaps: list[float], biggest: float, total: float) -> str:
    step = max(1, -(-len(frames) // MAX_TICKS))
    slowest = next((i + 1 for i, gap in enumerate(gaps) if gap == biggest), -1) if biggest else -1
    shown = sorted({*range(0, len(frames), step), *([slowest] if slowest > 0 else [])})
    return "".join(
        f'<span class="tick{" slowest" if i == slowest else ""}" '
        f'style="left:{100 * frames[i].t / total:.2f}%"></span>'
        for i in shown
    )


def _bar(interaction: Interaction) -> str:
    first, gaps = timing(interaction)
    if first is None:
        return ""
    frames = interaction.response.frames or []
    total = max(frames[-1].t, 1e-9)
    biggest = max(gaps, default=0.0)
    label = (
        f"time to first frame {first * 1000:.1f} ms, {len(frames)} frames over "
        f"{total * 1000:.1f} ms, largest gap {biggest * 1000:.1f} ms"
    )
    return (
        f'<figure class="timing"><div class="bar" role="img" aria-label="{esc(label)}">'
        f'<span class="ttft" style="width:{100 * first / total:.2f}%"></span>'
        f"{_ticks(frames, gaps, biggest, total)}</div>"
        f"<figcaption>{esc(label)}</figcaption></figure>"
    )


@dataclass(frozen=True, slots=True)
class _Shown:
    """One interaction as the page shows it: its heading, its timing bar, its lines."""

    heading: str
    bar: str
    lines: list[str]


def _shown(path: Path, name: str) -> list[_Shown]:
    cassette = load_cassette(path)
    found: list[_Shown] = []
    for index, interaction in enumerate(cassette.interactions):
        one = msgspec.structs.replace(cassette, interactions=[interaction], source=name)
        heading = f"{index + 1}. {interaction.request.method} {interaction.request.path}"
        found.append(_Shown(heading, _bar(interaction), transcript(one)[2:]))
    return found


_CACHE_LOCK = threading.Lock()
_CACHE: dict[tuple[str, int, int, int], list[_Shown]] = {}


def _cached(path: Path, name: str) -> list[_Shown]:
    """The interactions of the cassette at ``path`` as shown, read once per version of the
    file (its size and modification time): paging through a big cassette reads it once."""
    status = path.stat()
    key = (str(path), status.st_ino, status.st_size, status.st_mtime_ns)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    found = _shown(path, name)
    with _CACHE_LOCK:
        _CACHE.clear()  # one cassette at a time: a big one is big
        _CACHE[key] = found
    return found


def render_one(
    base: str, folder: Path | None, name: str, *, page: int = 1, token: str | None = None
) -> str:
    """One cassette, a page of it: per interaction its transcript lines and its timing bar,
    at most ``PAGE_LINES`` lines and ``PAGE_INTERACTIONS`` interactions a page, with links to the other pages (``page`` from 1; a
    page past the last shows the last)."""
    shown = _cached(resolve(folder, name), name)
    # the pages: each a list of (interaction, first line, last line), PAGE_LINES lines each
    pages: list[list[tuple[int, int, int]]] = [[]]
    room = PAGE_LINES
    for index, one in enumerate(shown):
        start, size = 0, len(one.lines)
        if len(pages[-1]) >= PAGE_INTERACTIONS:
            room = 0
        while True:
            if room <= 0:
                pages.append([])
                room = PAGE_LINES
            end = min(size, start + room)
            pages[-1].append((index, start, end))
            room -= max(end - start, 1)  # an interaction without lines takes one
            start = end
            if start >= size:
                break
    number = min(max(page, 1), len(pages))
    parts = [f'<p><a href="{href(base, "/cassettes", token=token)}">all cassettes</a></p>']
    parts.append(_pager(base, name, number, len(pages), token))
    for index, start, end in pages[number - 1]:
        one = shown[index]
        more = " (continued)" if start else ""
        parts.append(
            f'<section aria-label="Interaction {index + 1}"><h2>{esc(one.heading)}{more}</h2>'
            f"{'' if start else one.bar}<pre>{esc(chr(10).join(one.lines[start:end]))}</pre>"
            "</section>"
        )
    if len(pages) > 1:
        parts.append(_pager(base, name, number, len(pages), token))
    return "".join(parts)


def _pager(base: str, name: str, number: int, count: int, token: str | None) -> str:
    """Links to the first, previous, next and last pages of a cassette (none for one page)."""
    if count == 1:
        return ""

    def link(label: str, to: int) -> str:
        target = href(base, "/cassettes/show", [("name", name), ("page", str(to))], token=token)
        return f'<a href="{target}">{label}</a>'

    links = []
    if number > 1:
        links += [link("first", 1), link("previous", number - 1)]
    links.append(f'<span aria-current="page">page {number} of {count}</span>')
    if number < count:
        links += [link("next", number + 1), link("last", count)]
    return f'<nav class="pages" aria-label="Pages">{" · ".join(links)}</nav>'


def render_diff(base: str, folder: Path | None, a: str, b: str, *, token: str | None = None) -> str:
    """Two cassettes' transcripts side by side, changed lines marked, and the semantic diff
    (the side by side compares the first ``DIFF_LINES`` lines of each)."""
    old, new = load_cassette(resolve(folder, a)), load_cassette(resolve(folder, b))
    left, right = transcript(old)[1:], transcript(new)[1:]
    cut = len(left) > DIFF_LINES or len(right) > DIFF_LINES
    left, right = left[:DIFF_LINES], right[:DIFF_LINES]
    rows: list[str] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            x = left[i1 + k] if i1 + k < i2 else ""
            y = right[j1 + k] if j1 + k < j2 else ""
            mark = "" if tag == "equal" else f' class="{tag}"'
            rows.append(f"<tr{mark}><td><pre>{esc(x)}</pre></td><td><pre>{esc(y)}</pre></td></tr>")
    changes = diff_cassettes(old, new)
    summary = (
        f"<pre>{esc(chr(10).join(changes))}</pre>"
        if changes
        else '<p role="status">The two cassettes say the same.</p>'
    )
    note = (
        f'<p role="status">Side by side: the first {DIFF_LINES} lines of each.</p>' if cut else ""
    )
    return (
        f'<p><a href="{href(base, "/cassettes", token=token)}">all cassettes</a></p>'
        f"<h2>What changed</h2>{summary}{note}"
        f'<table class="diff" aria-label="Side by side"><thead><tr><th>{esc(a)}</th>'
        f"<th>{esc(b)}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
