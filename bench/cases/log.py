"""Cases: the event log. Batched append against a raw ``sqlite3`` ``executemany`` into the same
schema (budget: at least 50% of its speed, i.e. ratio ≤ 2.0×), and replay (``read`` of a whole
session) against a raw ``SELECT`` of the same rows (budget: ≥ 100k events/s)."""

from __future__ import annotations

import itertools
import shutil
import sqlite3
import tempfile
from pathlib import Path

from bench.runner import Case, Result, Variant, ratio_line
from stuntset.events import Event, MessageDelta, encode, type_of, with_seq
from stuntset.log import SqliteEventLog
from stuntset.log.sqlite import SCHEMA

BATCH = 1000
REPLAY = 20_000
_INSERT = "INSERT INTO events (session_id, seq, run_id, type, data) VALUES (?, ?, ?, ?, ?)"


def _events(count: int) -> list[Event]:
    return [
        MessageDelta(run_id="run-1", ts=1767225600.0, item_id="msg-1", text=f"token {i} ")
        for i in range(count)
    ]


def _raw(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    return conn


def log_append() -> Case:
    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-log-"))
    batch = _events(BATCH)
    encoded = [
        ("run-1", type_of(e), encode(with_seq(e, i))) for i, e in enumerate(batch, 1)
    ]  # the anchor gets its JSON for free
    log = SqliteEventLog(directory / "log.db")
    raw = _raw(directory / "raw.db")
    sessions = itertools.count()

    def ours() -> None:
        log.append("s1", batch)

    def anchor() -> None:
        session = f"s{next(sessions)}"
        raw.execute("BEGIN")
        raw.executemany(_INSERT, [(session, i, r, t, d) for i, (r, t, d) in enumerate(encoded, 1)])
        raw.execute("COMMIT")

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        ratio = ratio_line(results, "SqliteEventLog.append")["raw executemany"]
        return ratio <= 2.0, f"{1 / ratio:.0%} of raw executemany (budget ≥ 50%)"

    def close() -> None:
        log.close()
        raw.close()
        shutil.rmtree(directory, ignore_errors=True)

    return Case(
        name="log_append",
        title=f"event log: append a {BATCH}-event batch (BEGIN IMMEDIATE, seq assigned)",
        variants=[
            Variant("SqliteEventLog.append", ours),
            Variant("raw executemany", anchor),
        ],
        budget="≥ 50% of raw sqlite3 executemany into the same schema (ratio ≤ 2.0×)",
        verdict=verdict,
        calls_per_round=10,
        rounds=7,
        close=close,
    )


def log_replay() -> Case:
    directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-replay-"))
    log = SqliteEventLog(directory / "log.db")
    events = _events(REPLAY)
    for start in range(0, REPLAY, BATCH):
        log.append("s1", events[start : start + BATCH])
    raw = sqlite3.connect(directory / "log.db")

    def ours() -> None:
        assert len(log.read("s1")) == REPLAY

    def anchor() -> None:
        rows = raw.execute(
            "SELECT data FROM events WHERE session_id = ? AND seq > 0 ORDER BY seq", ("s1",)
        ).fetchall()
        assert len(rows) == REPLAY

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        per_second = REPLAY / (results["SqliteEventLog.read"].median / 1000)  # samples in ms
        return per_second >= 100_000, f"{per_second:,.0f} events/s (budget ≥ 100,000)"

    def close() -> None:
        raw.close()
        log.close()
        shutil.rmtree(directory, ignore_errors=True)

    return Case(
        name="log_replay",
        title=f"event log: replay a {REPLAY:,}-event session (read + decode)",
        variants=[
            Variant("SqliteEventLog.read", ours),
            Variant("raw SELECT (no decode)", anchor),
        ],
        budget="≥ 100k events/s",
        verdict=verdict,
        calls_per_round=3,
        rounds=5,
        close=close,
    )


def log_subscribe_latency() -> Case:
    """From ``append`` returning to a live subscriber holding the event (same process)."""

    def run() -> dict[str, Result]:
        import asyncio
        import time

        directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-sub-"))
        log = SqliteEventLog(directory / "events.db")
        event = _events(1)[0]

        async def main() -> list[float]:
            samples: list[float] = []
            subscription = log.subscribe("s-1")
            for round_index in range(520):
                start = time.perf_counter()
                log.append("s-1", [event])
                await anext(subscription)
                if round_index >= 20:  # warm-up
                    samples.append((time.perf_counter() - start) * 1000)
            await subscription.aclose()
            return samples

        try:
            samples = asyncio.run(main())
        finally:
            log.close()
            shutil.rmtree(directory, ignore_errors=True)
        return {"append → subscriber": Result("append → subscriber", samples)}

    return Case(
        name="log_subscribe_latency",
        title="SqliteEventLog: append of one event until a live subscriber has it",
        variants=[],
        budget="reported",
        custom=run,
    )


IDLE = 500


def log_idle_subscriptions() -> Case:
    """What 500 subscriptions waiting at the head of their sessions cost the process: the CPU
    time per second of wall time (% of one core), over several one-second windows. The
    anchor is what the same subscriptions cost when each re-read every 0.1 s (as before the
    log had one ``data_version`` watcher). Then one append per session must wake them all."""

    def run() -> dict[str, Result]:
        import asyncio
        import time

        from stuntset.log import LogSubscription

        directory = Path(tempfile.mkdtemp(prefix="stuntset-bench-idle-"))
        log = SqliteEventLog(directory / "events.db")
        sessions = [f"s{i}" for i in range(IDLE)]
        for session in sessions:
            log.append(session, _events(1))

        async def idle_cpu(subscriptions: list[LogSubscription], windows: int) -> list[float]:
            expected = [s.cursor + 1 for s in subscriptions]
            waiting = [asyncio.ensure_future(anext(s)) for s in subscriptions]
            await asyncio.sleep(0.5)  # every one has read its session and waits
            samples: list[float] = []
            for _ in range(windows):
                cpu, wall = time.process_time(), time.perf_counter()
                await asyncio.sleep(1.0)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                samples.append(100 * cpu / wall)
            for session in sessions:  # one append each: every subscriber must wake
                log.append(session, _events(1))
            delivered = await asyncio.wait_for(asyncio.gather(*waiting), timeout=60)
            seqs = [event.seq for event in delivered]
            assert seqs == expected, "a subscriber missed its append"
            for subscription in subscriptions:
                await subscription.aclose()
            return samples

        async def main() -> dict[str, Result]:
            subject = [log.subscribe(s, after=1) for s in sessions]
            ours = await idle_cpu(subject, windows=5)
            polling = [
                LogSubscription(log, log._notifier, s, after=2, epoch=0, poll_interval=0.1)
                for s in sessions
            ]
            anchor = await idle_cpu(polling, windows=3)  # after=2: they wait for seq 3
            return {
                f"{IDLE} idle subscriptions": Result(f"{IDLE} idle subscriptions", ours),
                "each polling every 0.1 s (before)": Result(
                    "each polling every 0.1 s (before)", anchor
                ),
            }

        try:
            return asyncio.run(main())
        finally:
            log.close()
            shutil.rmtree(directory, ignore_errors=True)

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        share = results[f"{IDLE} idle subscriptions"].median
        return share < 1.0, f"{share:.2f}% of a core (budget < 1%)"

    return Case(
        name="log_idle_subscriptions",
        title=f"SqliteEventLog: CPU of {IDLE} subscriptions waiting at the head (% of one core)",
        variants=[],
        budget="< 1% of a core",
        verdict=verdict,
        unit="%",
        custom=run,
    )
