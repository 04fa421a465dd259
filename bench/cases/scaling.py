"""Cases: cost per unit as inputs grow (issue 37, item 3). Each measures the same work at a
small and a large size, interleaved round by round, and reports the cost per unit (per delta,
per frame, per turn); the budget is that it stays flat: the large size's per-unit median at
most 1.5× the small one's (noise on a shared machine; a quadratic cost shows 10× or more)."""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.runner import Case, Result

FLAT = 1.5


def _per_unit(
    sizes: list[int], make: Callable[[int], Callable[[], object]], rounds: int
) -> dict[str, Result]:
    """Per-unit times (µs) of ``make(size)()`` for each size, the sizes taking turns."""
    calls = {size: make(size) for size in sizes}
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for index in range(rounds + 1):
        order = sizes[index % len(sizes) :] + sizes[: index % len(sizes)]
        for size in order:
            start = time.perf_counter()
            calls[size]()
            elapsed = time.perf_counter() - start
            if index:  # the first round warms up
                samples[size].append(elapsed / size * 1e6)
    return {f"{size:,}": Result(f"{size:,}", values) for size, values in samples.items()}


def _flat(unit: str) -> Callable[[dict[str, Result]], tuple[bool, str]]:
    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        medians = [r.median for r in results.values()]
        ratio = medians[-1] / medians[0]
        spread = ", ".join(f"{name}: {r.median:.2f} µs" for name, r in results.items())
        return ratio <= FLAT, f"{ratio:.2f}× per {unit} from smallest to largest ({spread})"

    return verdict


def project_scaling() -> Case:
    """``project()`` of one message of 16k, 64k and 128k deltas (was quadratic: 40 ms, 3.4 s,
    15.8 s), per delta."""
    from stuntset.events import Event, MessageDelta, RunStarted
    from stuntset.log.projections import project

    def make(size: int) -> Callable[[], object]:
        events: list[Event] = [RunStarted(run_id="r", ts=0.0, session_id="s", provider="p")]
        events += [
            MessageDelta(run_id="r", ts=0.0, item_id="m", text=f"tok{i} ") for i in range(size)
        ]
        return lambda: project(events)

    return Case(
        name="project_scaling",
        title="project() of one message of 16k / 64k / 128k deltas, per delta",
        variants=[],
        budget=f"flat: ≤ {FLAT}× per delta from 16k to 128k",
        verdict=_flat("delta"),
        unit="µs",
        custom=lambda: _per_unit([16_000, 64_000, 128_000], make, rounds=5),
    )


def _stream_cassette(frames: int) -> object:
    import json

    from stuntset.cassettes import (
        Cassette,
        Frame,
        Interaction,
        RecordedRequest,
        RecordedResponse,
    )

    chunk = {
        "id": "chatcmpl-abc123",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o",
    }
    data = [
        Frame(
            t=i * 0.01,
            data=json.dumps(
                {**chunk, "choices": [{"index": 0, "delta": {"content": f"word{i} "}}]}
            ),
        )
        for i in range(frames)
    ]
    data.append(Frame(t=frames * 0.01, data="[DONE]"))
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(
                    method="POST",
                    path="/v1/chat/completions",
                    body={"model": "m", "stream": True, "messages": [{"role": "user"}]},
                ),
                response=RecordedResponse(
                    status=200, headers={"content-type": "text/event-stream"}, frames=data
                ),
            )
        ]
    )


def cassette_scaling() -> Case:
    """Per frame, on one streamed interaction of 1k, 10k and 100k frames: ``write_cassette``
    (scrub, encode, scan, write), ``verify``, ``show --frames`` and ``to-script``."""
    import tempfile
    from pathlib import Path

    from stuntset.cassettes import Cassette, Scrubber, load_cassette, write_cassette
    from stuntset.cassettes.show import transcript
    from stuntset.cassettes.to_script import dumps_script_toml, script_from_cassette
    from stuntset.cassettes.verify import verify_tree

    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-cassettes-"))
    scrubber = Scrubber(env={})
    sizes = [1_000, 10_000, 100_000]
    cassettes: dict[int, Cassette] = {}
    for size in sizes:
        cassette = _stream_cassette(size)
        assert isinstance(cassette, Cassette)
        cassettes[size] = cassette
        write_cassette(directory / f"{size}.cassette", cassette, scrubber=scrubber)

    operations: dict[str, Callable[[int], Callable[[], object]]] = {
        "write": lambda n: (
            lambda: write_cassette(directory / f"w{n}.cassette", cassettes[n], scrubber=scrubber)
        ),
        "verify": lambda n: lambda: verify_tree(directory / f"{n}.cassette", scrubber=scrubber),
        "show": lambda n: (
            lambda: transcript(load_cassette(directory / f"{n}.cassette"), frames=True)
        ),
        "to-script": lambda n: (
            lambda: dumps_script_toml(
                script_from_cassette(load_cassette(directory / f"{n}.cassette"))
            )
        ),
    }

    def run() -> dict[str, Result]:
        out: dict[str, Result] = {}
        for name, make in operations.items():
            for size, result in _per_unit(sizes, make, rounds=2).items():
                out[f"{name} {size}"] = Result(f"{name} {size}", result.samples)
        return out

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        ok, parts = True, []
        for name in operations:
            small = results[f"{name} {sizes[0]:,}"].median
            large = results[f"{name} {sizes[-1]:,}"].median
            ok = ok and large / small <= FLAT
            parts.append(f"{name} {small:.1f}→{large:.1f} µs ({large / small:.2f}×)")
        write = results[f"write {sizes[-1]:,}"].median
        ok = ok and write <= 10
        return ok, "per frame, 1k→100k: " + ", ".join(parts) + " (write ≤ 10 µs a frame)"

    return Case(
        name="cassette_scaling",
        title="write / verify / show / to-script of a 1k, 10k, 100k-frame stream, per frame",
        variants=[],
        budget=f"flat (≤ {FLAT}×) from 1k to 100k frames; write ≤ 10 µs a frame",
        verdict=verdict,
        unit="µs",
        custom=run,
    )
