"""Cases: cassettes. Replay matching per request with many sessions asked out of order and with
a 300-turn conversation, against a single short session (budget: within 1.2×); and the secret
scan of a crafted 240 KB ``eyJ…`` response (budget: under 50 ms, the issue's bound), against
merely decoding the same bytes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from bench.runner import Case, Result
from stuntset.cassettes import Cassette, Frame, Interaction, RecordedRequest, RecordedResponse
from stuntset.cassettes.replay import Replayer, _differences

_PATH = "/v1/chat/completions"


def _request(session: int, turn: int) -> dict[str, Any]:
    """A request of constant size (the conversation continues by reference, as with the
    Responses API's ``previous_response_id``)."""
    return {
        "model": "gpt-x",
        "stream": True,
        "previous_response_id": f"resp-{session}-{turn - 1}" if turn else None,
        "messages": [{"role": "user", "content": f"session {session}, turn {turn}: go on"}],
        "metadata": {"run": "changes every time"},
    }


def _cassette(sessions: int, turns: int) -> Cassette:
    return Cassette(
        interactions=[
            Interaction(
                id=f"i-{s}-{t}",
                wire="openai-chat",
                session=f"s-{s}",
                request=RecordedRequest(method="POST", path=_PATH, body=_request(s, t)),
                response=RecordedResponse(status=200, frames=[Frame(t=0.0, data="{}")]),
            )
            for s in range(sessions)
            for t in range(turns)
        ]
    )


def _out_of_order(sessions: int, turns: int) -> list[bytes]:
    """Turn by turn, the sessions in reverse recording order (the last one first): the order
    that made the linear scan look at every session for every request."""
    return [
        json.dumps(_request(s, t)).encode() for t in range(turns) for s in reversed(range(sessions))
    ]


def _linear_match(replayer: Replayer, body: Any) -> None:
    """The matcher before the index: each session's next interaction compared field by field."""
    sessions, cursor = replayer._sessions, replayer._cursor
    for index, session in enumerate(sessions):
        position = cursor[index]
        if position < len(session) and not _differences(session[position], "POST", _PATH, body):
            cursor[index] += 1
            return
    raise AssertionError("no match")


def _per_request(
    cassette: Cassette, requests: list[bytes], match: Callable[[Replayer, Any], object]
) -> list[float]:
    """Microseconds of each match of ``requests`` in a fresh replayer. Each body is parsed
    just before its match, untimed, as ``Replayer.respond`` does (the match meets a body fresh
    in the cache, whether the cassette holds ten interactions or ten thousand); each request
    is its own sample, so the median shrugs off a time slice lost to another process."""
    replayer = Replayer(cassette)
    samples: list[float] = []
    for raw in requests:
        body = json.loads(raw)
        start = time.perf_counter()
        match(replayer, body)
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


class _Player:
    """Plays ``requests`` against a cassette one at a time, in a fresh replayer each time
    through; ``next()`` is the microseconds of one match (the body parsed first, untimed)."""

    def __init__(self, cassette: Cassette, requests: list[bytes]) -> None:
        self.cassette = cassette
        self.requests = requests
        self.position = len(requests)
        self.replayer = Replayer(cassette)

    def next(self) -> float:
        if self.position == len(self.requests):
            self.replayer, self.position = Replayer(self.cassette), 0
        body = json.loads(self.requests[self.position])
        self.position += 1
        start = time.perf_counter()
        self.replayer.match("POST", _PATH, body)
        return (time.perf_counter() - start) * 1e6


def _indexed(replayer: Replayer, body: Any) -> None:
    replayer.match("POST", _PATH, body)


def replay_match() -> Case:
    short, many, long = _cassette(1, 10), _cassette(1000, 10), _cassette(1, 300)
    short_requests = _out_of_order(1, 10)
    many_requests = _out_of_order(1000, 10)
    long_requests = _out_of_order(1, 300)
    rounds = 5

    def run() -> dict[str, Result]:
        plan = [
            ("1 session × 10 turns", short, short_requests),
            ("1,000 sessions × 10 turns, out of order", many, many_requests),
            ("300-turn conversation", long, long_requests),
        ]
        samples: dict[str, list[float]] = {name: [] for name, _, _ in plan}
        # request by request, the three take turns (a short cassette starts again, in a fresh
        # replayer, when it is used up): each sample meets the machine as the others do
        for round_index in range(rounds + 1):
            players = [_Player(cassette, requests) for _, cassette, requests in plan]
            for _ in range(len(many_requests)):
                for (name, _, _), player in zip(plan, players, strict=True):
                    elapsed = player.next()
                    if round_index:  # the first round warms up
                        samples[name].append(elapsed)
        # the linear scan takes ~10 ms a request here: a sample of first turns (every fifth
        # session, last first: on average half the sessions scanned, as over the whole run)
        sample = [json.dumps(_request(s, 0)).encode() for s in reversed(range(0, 1000, 5))]
        before = _per_request(many, sample, _linear_match)
        before_long = _per_request(long, long_requests, _linear_match)
        results = {name: Result(name, values) for name, values in samples.items()}
        results["before: linear scan, 1,000 sessions"] = Result(
            "before: linear scan, 1,000 sessions", before
        )
        results["before: linear scan, 300 turns"] = Result(
            "before: linear scan, 300 turns", before_long
        )
        return results

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        base = results["1 session × 10 turns"].median
        many_ratio = results["1,000 sessions × 10 turns, out of order"].median / base
        long_ratio = results["300-turn conversation"].median / base
        before = results["before: linear scan, 1,000 sessions"].median / base
        return (
            many_ratio <= 1.2 and long_ratio <= 1.2,
            f"1,000 sessions {many_ratio:.2f}×, 300 turns {long_ratio:.2f}× a short session "
            f"(the linear scan: {before:.0f}×)",
        )

    return Case(
        name="replay_match",
        title="Replayer.match per request: many sessions out of order, a long conversation",
        variants=[],
        budget="≤ 1.2× a single short session, per request",
        verdict=verdict,
        unit="µs",
        custom=run,
    )


def _crafted(size: int) -> bytes:
    from stuntset.cassettes import dumps_cassette

    text = ("eyJ" * (size // 3 + 1))[:size]
    cassette = Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(method="POST", path=_PATH, body={"model": "m"}),
                response=RecordedResponse(status=200, body={"output_text": text}),
            )
        ]
    )
    return dumps_cassette(cassette)


def secret_scan() -> Case:
    from bench.runner import Variant
    from stuntset.cassettes import Scrubber, scan_for_secrets

    data = _crafted(240_000)
    scrubber = Scrubber(env={})

    def ours() -> None:
        scan_for_secrets(data, scrubber)

    def floor() -> None:
        for line in data.decode().split("\n"):
            if line:
                json.loads(line)

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        median = results["scan_for_secrets"].median
        ratio = median / results["decode only"].median
        return median < 50, f"{median:.1f} ms (budget < 50 ms), {ratio:.1f}× decoding alone"

    return Case(
        name="secret_scan",
        title="scan_for_secrets of a cassette with a crafted 240 KB eyJ… response",
        variants=[Variant("scan_for_secrets", ours), Variant("decode only", floor)],
        budget="< 50 ms (was 30 s: quadratic)",
        verdict=verdict,
        calls_per_round=5,
        rounds=7,
    )


def cassette_write() -> Case:
    """What scrubbing and scanning cost on a long recording: a 2,000-frame chat stream (and a
    5 KB prompt), scrubbed, encoded and scanned as ``write_cassette`` does, against encoding
    alone."""
    from bench.runner import Variant
    from stuntset.cassettes import Scrubber, dumps_cassette, scan_for_secrets
    from stuntset.cassettes.format import scrub_cassette

    frames = [
        Frame(
            t=i * 0.01,
            data=json.dumps(
                {
                    "id": "chatcmpl-abc123",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": "gpt-4o",
                    "choices": [
                        {"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}
                    ],
                }
            ),
        )
        for i in range(2000)
    ]
    cassette = Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(
                    method="POST",
                    path=_PATH,
                    body={"model": "m", "messages": [{"role": "user", "content": "x" * 5000}]},
                ),
                response=RecordedResponse(status=200, frames=frames),
            )
        ]
    )
    scrubber = Scrubber(env={})

    def ours() -> None:
        scan_for_secrets(dumps_cassette(scrub_cassette(cassette, scrubber)), scrubber)

    def encode_only() -> None:
        dumps_cassette(cassette)

    return Case(
        name="cassette_write",
        title="scrub, encode and scan a 2,000-frame stream (what write_cassette does)",
        variants=[Variant("scrub + encode + scan", ours), Variant("encode only", encode_only)],
        budget="reported",
        calls_per_round=3,
        rounds=5,
    )
