"""Resilience verdicts: what a client *did* with the faults its doubles played, judged from
what the doubles recorded (the model double's journal, with each request's arrival on both
clocks and the reply it got; the fake CLIs' invocation journals; the MCP double's journal).

``resilience_verdicts(*doubles)`` lists every broken rule as a ``Verdict`` (its ``rule`` name
and a message with the evidence: request numbers, times, statuses); ``check_resilience``
raises ``ResilienceFailure`` listing them. The rules (``RULES``):

- ``retry_after_ignored``: a retry sent sooner than the ``retry-after-ms`` / ``Retry-After``
  the failed reply asked.
- ``no_backoff``: after failures that asked for no wait, a retry sooner than ``min_backoff``,
  or two or more retries whose delays never grow.
- ``retry_storm``: one request sent more than ``max_attempts`` times.
- ``non_retryable_retried``: the same request sent again after a 400, 401, 403 or 404 (or a
  reply marked ``x-should-retry: false``).
- ``changed_body_on_retry``: a retry after an error status whose body differs from the failed
  request's (a retry after a stream cut mid-way may change it: that is a resume).
- ``stalled_stream_held``: a stalled reply held open longer than ``stall_bound``, or until the
  double closed (no read timeout at all).
- ``cut_stream_swallowed``: a stream cut mid-way, not retried, while the app reported a
  complete answer (judged only when the test says what the app reported: ``outcome=``).
- ``stuck_cli_not_interrupted``: a fake CLI went quiet in a stall and the client neither
  interrupted it nor signalled it.
- ``sigkill_without_sigterm``: a fake CLI killed with no SIGTERM (or SIGINT) first.
- ``left_running``: a fake CLI process or an MCP stdio server still running.

Times: a gap between two requests is measured on the double's clock when that is a
``FakeClock`` that moved between their arrivals (a client waiting on the test's clock:
exact, so the verdicts are deterministic), else in real time (an SDK that sleeps for real,
or a client that did not wait at all).
"""

from __future__ import annotations

import email.utils
import itertools
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from stuntset.errors import ResilienceFailure, UsageError

__all__ = [
    "NON_RETRYABLE",
    "RULES",
    "ResilienceJudge",
    "Verdict",
    "check_resilience",
    "resilience_verdicts",
    "rules_exercised_by",
]

#: Every rule, with what it means (the names are what ``ignore=`` takes).
RULES: dict[str, str] = {
    "retry_after_ignored": "a retry sent sooner than the Retry-After / retry-after-ms asked",
    "no_backoff": "retries after failures that asked no wait, without a growing delay",
    "retry_storm": "one request sent more than max_attempts times",
    "non_retryable_retried": "the same request sent again after a 400, 401, 403 or 404",
    "changed_body_on_retry": "a retry after an error status with a different body",
    "stalled_stream_held": "a stalled reply held open past stall_bound (no read timeout)",
    "cut_stream_swallowed": "a cut stream not retried while the app reported completion",
    "stuck_cli_not_interrupted": "a stalled fake CLI never interrupted, signalled or killed",
    "sigkill_without_sigterm": "a fake CLI killed without a SIGTERM first",
    "left_running": "a fake CLI process or MCP stdio server still running",
}
#: Statuses a client must not retry unchanged (a reply's ``x-should-retry: true`` wins).
NON_RETRYABLE = frozenset({400, 401, 403, 404})
#: Statuses the official SDKs retry (``x-should-retry`` wins either way).
_RETRYABLE = frozenset({408, 409, 429})

Outcome = Literal["completed", "error"]


class Verdict(msgspec.Struct, frozen=True):
    """One broken rule: its ``rule`` name, the ``double`` that saw it (``model``, ``claude``,
    ``codex``, ``mcp``) and the ``message`` with the evidence."""

    rule: str
    double: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


# --- the model double ----------------------------------------------------------------------


@dataclass
class _Attempt:
    index: int
    real: float  # seconds (monotonic) at arrival
    clock: float | None  # the double's FakeClock at arrival
    method: str
    path: str
    body: Any
    reply: Any
    status: int | None = None
    failure: str | None = None  # "status", "no response", "cut", "stall", or None (fine)
    asked: float | None = None  # seconds the failed reply asked the client to wait
    asked_how: str = ""
    should_retry: bool | None = None
    frames: int = 0
    held: float = 0.0  # seconds the client held a stalled reply before giving up on it
    held_fake: bool = False  # ... on the double's FakeClock (its read timeout), not real time


def _headers(reply: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in getattr(reply, "headers", ()) or ()}


def _asked(headers: dict[str, str], arrived_wall: float) -> tuple[float | None, str]:
    """Seconds the reply asked the client to wait, and how (for the message)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000.0, f"retry-after-ms asked {float(ms):g} ms"
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None, ""
    try:
        return float(value), f"Retry-After asked {float(value):.2f} s"
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None, ""
    wait = max(0.0, when - arrived_wall)
    return wait, f"Retry-After asked {wait:.2f} s (an HTTP date)"


def _classify(attempt: _Attempt, arrived_wall: float) -> None:
    from stuntset.wires import Abort, Stall

    reply = attempt.reply
    if reply is None:
        return
    actions = list(getattr(reply, "actions", ()))
    attempt.status = reply.status
    sent = b"".join(a for a in actions if isinstance(a, bytes))
    # SSE events sent (the in-process transport coalesces writes: count events, not writes)
    attempt.frames = sent.count(b"data:") or sum(1 for a in actions if isinstance(a, bytes))
    headers = _headers(reply)
    flag = headers.get("x-should-retry")
    attempt.should_retry = None if flag is None else flag.strip().lower() == "true"
    if reply.status is None:
        attempt.failure = "no response"
    elif reply.status >= 400:
        attempt.failure = "status"
        attempt.asked, attempt.asked_how = _asked(headers, arrived_wall)
    elif any(isinstance(a, Stall) for a in actions):
        attempt.failure = "stall"
    elif any(isinstance(a, Abort) for a in actions) or (
        reply.content_length is not None and reply.content_length > reply.body_length()
    ):
        attempt.failure = "cut"


def _model_double(source: Any) -> Any:
    from stuntset.doubles.model import ModelDouble

    seen: set[int] = set()
    while not isinstance(source, ModelDouble):
        inner = getattr(source, "double", None)
        if inner is None or id(inner) in seen:
            return None
        seen.add(id(source))
        source = inner
    return source


def _attempts(double: Any) -> list[_Attempt]:
    stamped = double.journal.stamped()
    clocks = double.journal.clock_stamps()
    now_real, now_wall = time.monotonic_ns(), time.time()
    out: list[_Attempt] = []
    for n, (ns, entry, reply) in enumerate(stamped):
        if entry.wire is None:  # not a model request (/v1/models, an unknown route)
            continue
        attempt = _Attempt(
            index=entry.index,
            real=ns / 1e9,
            clock=None if clocks is None or n >= len(clocks) else clocks[n],
            method=entry.method,
            path=entry.path,
            body=entry.body,
            reply=reply,
        )
        _classify(attempt, now_wall - (now_real - ns) / 1e9)
        out.append(attempt)
    return out


def _gap(a: _Attempt, b: _Attempt) -> float:
    """Seconds between two arrivals: on the double's ``FakeClock`` when it moved (the client
    waited on it: exact), else in real time (the client slept for real, or not at all)."""
    if a.clock is not None and b.clock is not None and b.clock > a.clock:
        return b.clock - a.clock
    return max(b.real - a.real, 0.0)


def _after(a: _Attempt, b: _Attempt) -> float:
    """Seconds from the moment the client knew ``a`` failed to ``b``'s arrival: a stalled
    reply fails when the client gives up on it, not when it arrived. A hold on the
    ``FakeClock`` (the double moved it to the read timeout) is taken off the fake gap, which
    then shows only the client's own wait; else off the real one."""
    real = b.real - a.real
    fake = 0.0
    if a.clock is not None and b.clock is not None:
        fake = b.clock - a.clock
    if a.held_fake:
        fake -= a.held
    else:
        real -= a.held
    return max(fake if fake > 0 else real, 0.0)


def _what(a: _Attempt) -> str:
    if a.failure == "status":
        return f"a {a.status}"
    if a.failure == "no response":
        return "no response"
    if a.failure == "stall":
        return "a stalled stream"
    return f"a stream cut after {a.frames} event(s)"


def _retryable(a: _Attempt) -> bool:
    if a.should_retry is not None:
        return a.should_retry
    if a.failure == "status":
        assert a.status is not None
        return a.status in _RETRYABLE or a.status >= 500
    return a.failure is not None


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _list_diff(key: str, a: list[Any], b: list[Any]) -> str:
    """Where two lists first differ: ``messages[2]: {...} -> (missing)``."""
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    before = _short(a[n]) if n < len(a) else "(missing)"
    after = _short(b[n]) if n < len(b) else "(missing)"
    return f"{key}[{n}]: {before} -> {after} ({len(a)} -> {len(b)} items)"


def _body_diff(a: Any, b: Any) -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted({*a, *b}, key=str)
        changed = [k for k in keys if a.get(k) != b.get(k)]

        def one(k: str) -> str:
            x, y = a.get(k), b.get(k)
            if isinstance(x, list) and isinstance(y, list):
                return _list_diff(k, x, y)
            return f"{k}: {_short(x)} -> {_short(y)}"

        parts = [one(k) for k in changed[:3]]
        more = f" (and {len(changed) - 3} more)" if len(changed) > 3 else ""
        return "; ".join(parts) + more
    return "the body differs"


@dataclass(frozen=True)
class _Options:
    max_attempts: int
    min_backoff: float
    stall_bound: float
    slack: float
    outcome: Outcome | None


def _model_verdicts(double: Any, o: _Options) -> list[Verdict]:
    attempts = _attempts(double)
    holds = {h.index: h for h in list(double.journal.holds)}
    for a in attempts:
        hold = holds.get(a.index)
        if hold is not None and hold.seconds is not None:
            a.held, a.held_fake = hold.seconds, hold.fake
    verdicts: list[Verdict] = []

    def add(rule: str, message: str) -> None:
        verdicts.append(Verdict(rule, "model", message))

    # retries: the next request on the same path after a failed one
    retry_of: dict[int, _Attempt] = {}
    for i, a in enumerate(attempts):
        if a.failure is None or (a.failure == "stall" and _held_by_close(double, a)):
            continue
        b = next((x for x in attempts[i + 1 :] if (x.method, x.path) == (a.method, a.path)), None)
        if b is None:
            continue
        gap = _after(a, b)
        if not _retryable(a):
            if b.body == a.body:
                why = (
                    "x-should-retry: false"
                    if a.should_retry is False
                    else "a client error that repeats"
                )
                add(
                    "non_retryable_retried",
                    f"request #{b.index} sent #{a.index} again {gap:.2f} s after {_what(a)} "
                    f"({why}); fix the request instead of retrying it",
                )
            continue
        retry_of[b.index] = a
        if a.failure == "status" and b.body != a.body:
            add(
                "changed_body_on_retry",
                f"request #{b.index} retried #{a.index} (after {_what(a)}) with a different "
                f"body: {_body_diff(a.body, b.body)}",
            )
        if a.asked is not None and gap + 0.0005 < a.asked * (1 - o.slack):
            add(
                "retry_after_ignored",
                f"retried {gap:.2f} s after {_what(a)}, {a.asked_how} "
                f"(request #{a.index}, retried as #{b.index})",
            )
    # chains of attempts: storm and backoff
    by_index = {a.index: a for a in attempts}
    heads = [a for a in attempts if a.index not in retry_of]
    for head in heads:
        chain = [head]
        nxt: dict[int, int] = {v.index: k for k, v in retry_of.items()}
        while chain[-1].index in nxt:
            chain.append(by_index[nxt[chain[-1].index]])
        if len(chain) > o.max_attempts:
            span = _gap(chain[0], chain[-1])
            add(
                "retry_storm",
                f"request #{head.index} was sent {len(chain)} times "
                f"(#{chain[0].index}..#{chain[-1].index}) in {span:.2f} s; at most "
                f"{o.max_attempts} attempts expected (max_attempts=)",
            )
        untimed = [
            (prev, cur, _after(prev, cur))
            for prev, cur in itertools.pairwise(chain)
            if prev.asked is None and prev.failure in ("status", "no response", "stall")
        ]
        if untimed:
            prev, cur, first = untimed[0]
            gaps = [g for *_, g in untimed]
            if first + 0.0005 < o.min_backoff:
                add(
                    "no_backoff",
                    f"retried {first:.2f} s after {_what(prev)} with no Retry-After "
                    f"(request #{prev.index}, retried as #{cur.index}); at least "
                    f"{o.min_backoff:.2f} s expected (min_backoff=)",
                )
            elif len(gaps) >= 2 and all(b <= a * 1.1 for a, b in itertools.pairwise(gaps)):
                shown = ", ".join(f"{g:.2f} s" for g in gaps)
                add(
                    "no_backoff",
                    f"request #{head.index}'s {len(gaps)} retries waited {shown}: the delay "
                    f"never grew",
                )
        last = chain[-1]
        if last.failure == "cut" and o.outcome == "completed":
            add(
                "cut_stream_swallowed",
                f"request #{last.index}'s stream was cut after {last.frames} event(s), it was "
                f"not retried, and the app reported a complete answer",
            )
    verdicts.extend(_stall_verdicts(double, attempts, o))
    return verdicts


def _held_by_close(double: Any, a: _Attempt) -> bool:
    return any(h.index == a.index and h.ended == "double closed" for h in double.journal.holds)


def _stall_verdicts(double: Any, attempts: Sequence[_Attempt], o: _Options) -> list[Verdict]:
    from stuntset.wires import Stall

    holds = {h.index: h for h in list(double.journal.holds)}
    now = time.monotonic()
    out: list[Verdict] = []
    for a in attempts:
        if a.reply is None or not any(isinstance(x, Stall) for x in a.reply.actions):
            continue
        hold = holds.get(a.index)
        if hold is None:
            held = now - a.real
            if held > o.stall_bound:
                out.append(
                    Verdict(
                        "stalled_stream_held",
                        "model",
                        f"request #{a.index}'s stalled reply is still held after {held:.2f} s "
                        f"(bound {o.stall_bound:.2f} s): set a read timeout",
                    )
                )
        elif hold.seconds is None:
            out.append(
                Verdict(
                    "stalled_stream_held",
                    "model",
                    f"request #{a.index}'s stalled reply was held until the double closed: "
                    f"the client has no read timeout (bound {o.stall_bound:.2f} s)",
                )
            )
        elif hold.seconds > o.stall_bound:
            out.append(
                Verdict(
                    "stalled_stream_held",
                    "model",
                    f"request #{a.index}'s stalled reply was held {hold.seconds:.2f} s "
                    f"({hold.ended}), bound {o.stall_bound:.2f} s (stall_bound=)",
                )
            )
    return out


# --- fake CLIs and the MCP double -----------------------------------------------------------


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it has ended, unreaped)."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _is_interrupt(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    request = message.get("request")
    subtype = request.get("subtype") if isinstance(request, dict) else None
    method = message.get("method")
    return subtype == "interrupt" or (isinstance(method, str) and "interrupt" in method)


def _installed_clis(source: Any) -> list[Any] | None:
    installed = getattr(source, "_installed", None)  # the fake_claude / fake_codex fixture
    if isinstance(installed, list):
        return [item for item, _ in installed]
    if hasattr(source, "invocations") and hasattr(source, "state_dir"):
        return [source]
    return None


def _cli_verdicts(installed: Any) -> list[Verdict]:
    name = str(getattr(installed, "name", "cli"))
    out: list[Verdict] = []
    for n, inv in enumerate(installed.invocations):
        events = inv.events
        signals = [e.get("signal") for e in events if e.get("event") == "signal"]
        running = inv.exit_code is None and _running(inv.pid)
        who = f"invocation {n} (pid {inv.pid}, `{name} {' '.join(inv.argv)[:60]}`)"
        stall = next((i for i, e in enumerate(events) if e.get("event") == "stall"), None)
        if stall is not None and not signals and inv.exit_code is None:
            after = events[stall + 1 :]
            interrupted = any(
                e.get("event") == "stdin" and _is_interrupt(e.get("message")) for e in after
            )
            if not interrupted and running:
                out.append(
                    Verdict(
                        "stuck_cli_not_interrupted",
                        name,
                        f"{who} went quiet in a stall and was never interrupted, signalled "
                        f"or killed",
                    )
                )
        if inv.exit_code is None and not running and not signals:
            out.append(
                Verdict(
                    "sigkill_without_sigterm",
                    name,
                    f"{who} was killed with no SIGTERM first: give it a chance to exit "
                    f"(terminate, wait, then kill)",
                )
            )
        if running:
            out.append(Verdict("left_running", name, f"{who} is still running"))
    return out


def _mcp_verdicts(double: Any) -> list[Verdict]:
    out: list[Verdict] = []
    folder = Path(double.journal_dir)
    pids = sorted({int(p.name.split("-", 1)[0]) for p in folder.glob("*-*.jsonl")})
    for pid in pids:
        if _running(pid):
            out.append(
                Verdict(
                    "left_running",
                    "mcp",
                    f"the MCP stdio server with pid {pid} is still running: close the "
                    f"client's session (it ends the server)",
                )
            )
    return out


# --- the public face -------------------------------------------------------------------------


def resilience_verdicts(
    *doubles: Any,
    max_attempts: int = 5,
    min_backoff: float = 0.1,
    stall_bound: float = 600.0,
    slack: float = 0.05,
    outcome: Outcome | None = None,
    ignore: Iterable[str] = (),
) -> list[Verdict]:
    """Every resilience rule the clients of ``doubles`` broke (``RULES``), as ``Verdict``s.

    ``doubles``: model doubles (a ``stand_in``, a ``StandIn``, ``ModelDouble`` or its
    transport), fake CLIs (the ``fake_claude`` / ``fake_codex`` fixture, an ``InstalledCli``)
    and MCP doubles, in any mix. ``max_attempts`` bounds the attempts of one request;
    ``min_backoff`` is the shortest first retry after a failure that asked no wait;
    ``stall_bound`` the longest a client may hold a stalled reply (the official SDKs' default
    read timeout is 600 s: tighten it for your app); ``slack`` the share of an asked wait a
    retry may cut short. ``outcome`` is what the app reported (``"completed"`` or
    ``"error"``), when the test can tell: without it a swallowed cut stream is not judged.
    ``ignore`` names rules not to judge.
    """
    skip = set(ignore)
    unknown = sorted(skip - set(RULES))
    if unknown:
        raise UsageError(
            f"ignore={sorted(skip)}: unknown rule(s) {unknown}; the rules: {list(RULES)}"
        )
    if max_attempts < 1:
        raise UsageError(f"max_attempts={max_attempts!r}: must be at least 1")
    for name, value in (("min_backoff", min_backoff), ("stall_bound", stall_bound)):
        if not value >= 0:
            raise UsageError(f"{name}={value!r}: must be 0 or more seconds")
    if not 0 <= slack < 1:
        raise UsageError(f"slack={slack!r}: must be at least 0 and below 1")
    if outcome not in (None, "completed", "error"):
        raise UsageError(f"outcome={outcome!r}: must be 'completed', 'error' or None")
    options = _Options(max_attempts, min_backoff, stall_bound, slack, outcome)
    verdicts: list[Verdict] = []
    for source in doubles:
        model = _model_double(source)
        if model is not None:
            verdicts.extend(_model_verdicts(model, options))
            continue
        clis = _installed_clis(source)
        if clis is not None:
            for installed in clis:
                verdicts.extend(_cli_verdicts(installed))
            continue
        if hasattr(source, "journal_dir") and hasattr(source, "calls"):
            verdicts.extend(_mcp_verdicts(source))
            continue
        raise UsageError(
            f"check_resilience: {source!r} is not a double stuntset can judge; pass a model "
            f"double (stand_in), a fake CLI (fake_claude / fake_codex) or an MCP double"
        )
    return [v for v in verdicts if v.rule not in skip]


def check_resilience(
    *doubles: Any,
    max_attempts: int = 5,
    min_backoff: float = 0.1,
    stall_bound: float = 600.0,
    slack: float = 0.05,
    outcome: Outcome | None = None,
    ignore: Iterable[str] = (),
) -> None:
    """Raise ``ResilienceFailure`` listing every rule the clients of ``doubles`` broke
    (``resilience_verdicts`` takes the same arguments)."""
    __tracebackhide__ = True
    ignore = tuple(ignore)
    verdicts = resilience_verdicts(
        *doubles,
        max_attempts=max_attempts,
        min_backoff=min_backoff,
        stall_bound=stall_bound,
        slack=slack,
        outcome=outcome,
        ignore=ignore,
    )
    if verdicts:
        lines = "\n".join(f"  {v}" for v in verdicts)
        rules = sorted({v.rule for v in verdicts})
        raise ResilienceFailure(
            f"the client broke {len(verdicts)} resilience rule(s):\n{lines}\n"
            f"(to accept one, pass ignore={rules!r}; docs/howto/judge-your-agent.md)",
            verdicts=verdicts,
        )


class ResilienceJudge:
    """What the ``resilience`` fixture gives a test: the doubles it used (read when judged),
    and ``outcome``, what the app reported, for the rules that need it (set it in the test:
    ``resilience.outcome = "completed"``). ``verdicts()`` and ``check()`` judge now; the
    plugin calls ``check()`` after the test body."""

    def __init__(self, doubles: Any, **options: Any) -> None:
        self._doubles = doubles  # a callable giving the doubles, or a sequence of them
        self.options = options
        self.outcome: Outcome | None = options.pop("outcome", None)

    @property
    def doubles(self) -> list[Any]:
        return list(self._doubles() if callable(self._doubles) else self._doubles)

    def verdicts(self) -> list[Verdict]:
        return resilience_verdicts(*self.doubles, outcome=self.outcome, **self.options)

    def check(self) -> None:
        __tracebackhide__ = True
        check_resilience(*self.doubles, outcome=self.outcome, **self.options)


def rules_exercised_by(script: Any) -> list[str]:
    """The rules (``RULES``) a client of a double playing ``script`` can break: what the
    catalog reference lists per scenario. Every script exercises ``left_running`` on a fake
    CLI; a stall, the stuck-CLI and kill rules there."""
    from stuntset.script import (
        AuthExpired,
        Exit,
        Garbage,
        HttpError,
        MalformedJson,
        OutOfOrder,
        Overloaded,
        RateLimit,
        Stall,
        StreamCut,
    )

    found: set[str] = set()
    for turn in script.turns:
        for step in turn.steps:
            retried = {"retry_storm", "changed_body_on_retry"} if turn.times > 1 else set()
            if isinstance(step, RateLimit | Overloaded):
                found |= {"retry_after_ignored", "changed_body_on_retry", "retry_storm"}
            elif isinstance(step, AuthExpired):
                found |= {"non_retryable_retried"}
            elif isinstance(step, HttpError):
                if step.status in NON_RETRYABLE:
                    found.add("non_retryable_retried")
                else:
                    timed = step.retry_after is not None or step.retry_after_ms is not None
                    found |= {"changed_body_on_retry", "retry_storm"}
                    found.add("retry_after_ignored" if timed else "no_backoff")
            elif isinstance(step, StreamCut | MalformedJson | Garbage | OutOfOrder):
                found.add("cut_stream_swallowed")
                found |= retried
            elif isinstance(step, Stall):
                found |= {"stalled_stream_held", "stuck_cli_not_interrupted"}
                found |= {"sigkill_without_sigterm"}
            elif isinstance(step, Exit):
                found |= {"no_backoff"} if step.reset else set()
    found.add("left_running")
    return [rule for rule in RULES if rule in found]
