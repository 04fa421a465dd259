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
) -> float:
    """Microseconds per request to match ``requests`` in a fresh replayer. Each body is parsed
    just before its match, untimed, as ``Replayer.respond`` does: the match meets a body fresh
    in the cache, whether the cassette holds ten interactions or ten thousand."""
    replayer = Replayer(cassette)
    elapsed = 0.0
    for raw in requests:
        body = json.loads(raw)
        start = time.perf_counter()
        match(replayer, body)
        elapsed += time.perf_counter() - start
    return elapsed / len(requests) * 1e6


def _indexed(replayer: Replayer, body: Any) -> None:
    replayer.match("POST", _PATH, body)


def replay_match() -> Case:
    short, many, long = _cassette(1, 10), _cassette(1000, 10), _cassette(1, 300)
    short_requests = _out_of_order(1, 10)
    many_requests = _out_of_order(1000, 10)
    long_requests = _out_of_order(1, 300)
    rounds = 9

    def run() -> dict[str, Result]:
        samples: dict[str, list[float]] = {
            "1 session × 10 turns": [],
            "1,000 sessions × 10 turns, out of order": [],
            "300-turn conversation": [],
        }
        plan = [
            ("1 session × 10 turns", short, short_requests),
            ("1,000 sessions × 10 turns, out of order", many, many_requests),
            ("300-turn conversation", long, long_requests),
        ]
        for round_index in range(rounds + 1):
            shift = round_index % len(plan)
            for name, cassette, requests in plan[shift:] + plan[:shift]:
                # the short session is tiny: repeat it so each sample is of similar length
                repeat = max(1, 2000 // len(requests))
                value = (
                    sum(_per_request(cassette, requests, _indexed) for _ in range(repeat)) / repeat
                )
                if round_index:  # the first round warms up
                    samples[name].append(value)
        # the linear scan takes ~10 ms a request here: a sample of first turns (every fifth
        # session, last first: on average half the sessions scanned, as over the whole run)
        sample = [json.dumps(_request(s, 0)).encode() for s in reversed(range(0, 1000, 5))]
        before = [_per_request(many, sample, _linear_match)]
        before_long = [_per_request(long, long_requests, _linear_match)]
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
