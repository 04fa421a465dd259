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
    """Per-unit times (µs) of ``make(size)()`` for each size, the sizes taking turns, after
    one warm-up call at the smallest size."""
    calls = {size: make(size) for size in sizes}
    calls[sizes[0]]()
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for index in range(rounds):
        order = sizes[index % len(sizes) :] + sizes[: index % len(sizes)]
        for size in order:
            start = time.perf_counter()
            calls[size]()
            elapsed = time.perf_counter() - start
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


def spawn_scaling() -> Case:
    """The fake ``claude``'s spawn to ``result`` of a 20-event turn, in a script of 10, 1,000
    and 10,000 turns (was 8, 25, 164 ms: every spawn unmarshalled the whole plan and wrote
    every turn's count back). Reported per spawn, as the child's CPU time (wall time on a
    loaded machine is mostly waiting for a core) and as wall time."""
    import resource
    import tempfile
    from pathlib import Path

    from bench.cases._spawn import spawn
    from bench.cases.cli_claude import ARGS, PROMPT, TEXT
    from stuntset.doubles.cli import install_cli
    from stuntset.script import Script, Text, Turn, Usage

    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-spawn-"))
    sizes = [10, 1_000, 10_000]
    paths = {}
    for size in sizes:
        turns = [Turn(steps=(Text(TEXT), Usage(10, 12)), times=10**9) for _ in range(size)]
        script = Script.of(*turns, name="bench")
        paths[size] = str(install_cli("claude", script, bin_dir=directory / str(size)).path)

    def children() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def run() -> dict[str, Result]:
        cpu: dict[int, list[float]] = {size: [] for size in sizes}
        wall: dict[int, list[float]] = {size: [] for size in sizes}
        spawn([paths[sizes[0]], *ARGS], PROMPT, b'"result"')
        for index in range(15):
            order = sizes[index % len(sizes) :] + sizes[: index % len(sizes)]
            for size in order:
                before, start = children(), time.perf_counter()
                spawn([paths[size], *ARGS], PROMPT, b'"result"')
                wall[size].append((time.perf_counter() - start) * 1000)
                cpu[size].append((children() - before) * 1000)
        out = {f"cpu {s:,} turns": Result(f"cpu {s:,} turns", cpu[s]) for s in sizes}
        out |= {f"wall {s:,} turns": Result(f"wall {s:,} turns", wall[s]) for s in sizes}
        return out

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        small = results[f"cpu {sizes[0]:,} turns"].median
        large = results[f"cpu {sizes[-1]:,} turns"].median
        walls = [results[f"wall {s:,} turns"].median for s in sizes]
        return large / small <= 1.1, (
            f"CPU {large / small:.2f}× from 10 to 10,000 turns ({small:.1f} → {large:.1f} ms); "
            f"wall {walls[-1] / walls[0]:.2f}×"
        )

    return Case(
        name="spawn_scaling",
        title="fake claude spawn → result in a script of 10 / 1,000 / 10,000 turns",
        variants=[],
        budget="≤ 1.1× from 10 to 10,000 turns",
        verdict=verdict,
        unit="ms",
        custom=run,
    )


def server_teardown() -> Case:
    """How long a stop takes (issue 37, item 5): the model double's loopback server, a
    cassette server (``serving``: the recorder's and the replay server's) and the daemon,
    each having served one request; only the stop is timed (was 0.16 s, 0.15 s, 0.21 s: they
    waited on uvicorn's 0.1 s tick)."""
    import tempfile
    from contextlib import ExitStack
    from pathlib import Path

    import httpx2

    from stuntset.cassettes._loopback import serving
    from stuntset.doubles.model._loopback_server import LoopbackServer
    from stuntset.runtime._pytest import scenario_registry
    from stuntset.runtime.daemon import start_daemon

    async def hello(scope: dict[str, object], receive: object, send: object) -> None:
        assert callable(send)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    def loopback() -> float:
        server = LoopbackServer()
        httpx2.get(server.base_url + "/health")
        start = time.perf_counter()
        server.close()
        return time.perf_counter() - start

    def cassette_server() -> float:
        with ExitStack() as stack:
            url = stack.enter_context(serving(hello, name="bench"))
            httpx2.get(url)
            start = time.perf_counter()
        return time.perf_counter() - start

    def daemon() -> float:
        directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-daemon-"))
        handle = start_daemon(
            db=directory / "host.db",
            providers=scenario_registry(),
            token_file=directory / "daemon.json",
        )
        httpx2.get(handle.info.url + "/health")
        start = time.perf_counter()
        handle.stop()
        return time.perf_counter() - start

    stops = {"loopback stand-in": loopback, "cassette server": cassette_server, "daemon": daemon}

    def run() -> dict[str, Result]:
        samples: dict[str, list[float]] = {name: [] for name in stops}
        for _ in range(10):
            for name, stop in stops.items():
                samples[name].append(stop() * 1000)
        return {name: Result(name, values) for name, values in samples.items()}

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        worst = max(r.median for r in results.values())
        shown = ", ".join(f"{name} {r.median:.1f} ms" for name, r in results.items())
        return worst <= 20, f"{shown} (≤ 20 ms each)"

    return Case(
        name="server_teardown",
        title="a server's stop: loopback stand-in, cassette server, daemon",
        variants=[],
        budget="≤ 20 ms each",
        verdict=verdict,
        unit="ms",
        custom=run,
    )


def leak_check() -> Case:
    """What the leak check adds to every test (issue 37, item 2): a snapshot taken and
    checked with nothing left open, against one read of what it compares (the process's
    children and descriptors from ``/proc``): it reads them twice, once per end."""
    from bench.runner import Variant
    from stuntset._leak_check import LeakSnapshot
    from stuntset._resources import child_processes, open_fds

    def ours() -> None:
        LeakSnapshot.take().check()

    def one_read() -> None:
        child_processes()
        open_fds()

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        ratio = results["take + check"].median / results["one /proc read"].median
        return ratio <= 2.5, f"{ratio:.2f}× one read of /proc (two are needed)"

    return Case(
        name="leak_check",
        title="LeakSnapshot.take().check() with nothing left open",
        variants=[Variant("take + check", ours), Variant("one /proc read", one_read)],
        budget="≤ 2.5× one /proc read (it read it three times and resolved the temp dir)",
        verdict=verdict,
        unit="ms",
        calls_per_round=200,
    )
