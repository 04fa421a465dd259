"""The Cassettes view: the cassettes in a folder, one cassette's transcript with a timing
bar per interaction (time to first frame, the gaps between frames), and a side-by-side diff
of two cassettes (``stuntset.cassettes.show`` and ``stuntset.cassettes.diff``)."""

from __future__ import annotations

import difflib
import itertools
from pathlib import Path
from urllib.parse import urlencode

import msgspec

from stuntset.cassettes.diff import diff_cassettes
from stuntset.cassettes.format import Interaction, is_cassette, load_cassette
from stuntset.cassettes.show import transcript
from stuntset.errors import UsageError

from ._html import esc

__all__ = ["find", "render_diff", "render_list", "render_one", "timing"]


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


def render_list(base: str, folder: Path | None) -> str:
    """The body of the Cassettes page: each cassette, and a form to diff two."""
    if folder is None:
        return "<p>No cassette folder: start the console with <code>--cassettes DIR</code>.</p>"
    names = find(folder)
    if not names:
        return f'<p role="status">No cassettes in {esc(folder.name)}.</p>'
    items = "".join(
        f'<li><a href="{esc(base)}/cassettes/show?{esc(urlencode({"name": n}))}">{esc(n)}</a></li>'
        for n in names
    )
    options = "".join(f"<option>{esc(n)}</option>" for n in names)
    return (
        f'<ul class="cassettes" aria-label="Cassettes">{items}</ul>'
        f'<form action="{esc(base)}/cassettes/diff" aria-label="Compare two cassettes">'
        f'<label for="diff-a">Old</label> <select id="diff-a" name="a">{options}</select> '
        f'<label for="diff-b">New</label> <select id="diff-b" name="b">{options}</select> '
        "<button>Compare</button></form>"
    )


def timing(interaction: Interaction) -> tuple[float | None, list[float]]:
    """Time to first frame and the gaps between frames (seconds) of a streamed response."""
    frames = interaction.response.frames or []
    if not frames:
        return None, []
    times = [frame.t for frame in frames]
    return times[0], [b - a for a, b in itertools.pairwise(times)]


def _bar(interaction: Interaction) -> str:
    first, gaps = timing(interaction)
    if first is None:
        return ""
    frames = interaction.response.frames or []
    total = max(frames[-1].t, 1e-9)
    biggest = max(gaps, default=0.0)
    ticks = "".join(
        f'<span class="tick{" slowest" if i and gaps[i - 1] == biggest and biggest else ""}" '
        f'style="left:{100 * frame.t / total:.2f}%"></span>'
        for i, frame in enumerate(frames)
    )
    label = (
        f"time to first frame {first * 1000:.1f} ms, {len(frames)} frames over "
        f"{total * 1000:.1f} ms, largest gap {biggest * 1000:.1f} ms"
    )
    return (
        f'<figure class="timing"><div class="bar" role="img" aria-label="{esc(label)}">'
        f'<span class="ttft" style="width:{100 * first / total:.2f}%"></span>{ticks}</div>'
        f"<figcaption>{esc(label)}</figcaption></figure>"
    )


def render_one(base: str, folder: Path | None, name: str) -> str:
    """One cassette: per interaction its transcript lines and its timing bar."""
    cassette = load_cassette(resolve(folder, name))
    parts = [f'<p><a href="{esc(base)}/cassettes">all cassettes</a></p>']
    for index, interaction in enumerate(cassette.interactions):
        one = msgspec.structs.replace(cassette, interactions=[interaction], source=name)
        lines = transcript(one)[2:]
        parts.append(
            f'<section aria-label="Interaction {index + 1}"><h2>{index + 1}. '
            f"{esc(interaction.request.method)} {esc(interaction.request.path)}</h2>"
            f"{_bar(interaction)}<pre>{esc(chr(10).join(lines))}</pre></section>"
        )
    return "".join(parts)


def render_diff(base: str, folder: Path | None, a: str, b: str) -> str:
    """Two cassettes' transcripts side by side, changed lines marked, and the semantic diff."""
    old, new = load_cassette(resolve(folder, a)), load_cassette(resolve(folder, b))
    left, right = transcript(old)[1:], transcript(new)[1:]
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
    return (
        f'<p><a href="{esc(base)}/cassettes">all cassettes</a></p><h2>What changed</h2>{summary}'
        f'<table class="diff" aria-label="Side by side"><thead><tr><th>{esc(a)}</th>'
        f"<th>{esc(b)}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
