"""Faults of the fake ``claude``: what the CLI shows for each catalog failure.

Loaded only when a fault plays (runs in the fake process: built-ins only, see ``_runtime``).

* API errors the real CLI retries (a 408, 409, 429, 529 or other 5xx status, first in a
  model response): a ``system/api_retry`` message, a wait of the script's retry-after, and
  the retried request takes the next scripted turn (``retry``). With the retries spent
  (``CLAUDE_CODE_MAX_RETRIES``, default 10, at most 15) the last error ends the turn; with
  no turn left the retried request meets what the model double answers then (a 500 the
  real CLI does not retry), and the script is exhausted as on the double.
* API errors (given up on): a synthetic ``assistant`` (model ``<synthetic>``, ``error``
  set) and an ``is_error`` result with ``api_error_status`` and ``terminal_reason:
  "api_error"``; the process goes on, and exits 1 at EOF. The text is the real CLI's (429:
  "Request rejected (429) · …"; 5xx: "… This is a server-side issue …").
* ``stream_fault``: the model API's stream broke (``stream_fault``: resumed after content,
  else retried).
* The CLI itself breaks (a stream fault with ``cli=True``), then exits 1, so that a client
  that skips a bad line still sees the turn end: ``cut``: half of the line that would come
  next (exit 0 when clean); ``malformed`` / ``garbage``: the line or bytes as given;
  ``out_of_order``: a tool result for a call never made, the result, then more content.
* ``stall``: nothing until an interrupt (or for ever after stdin EOF).
* ``exit``: stderr, then exit with the code, mid-turn.
"""

from __future__ import annotations

from stuntset.doubles.cli._runtime import dumps
from stuntset.doubles.cli.claude._process.common import usage
from stuntset.doubles.cli.claude._process.endings import durations, finish, stamp
from stuntset.doubles.cli.claude._process.tools import tool_message

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.claude._process.faces import TurnState

__all__ = ["max_retries", "render_fault"]

#: The real CLI's retry budget (2.1.332): 10, or ``CLAUDE_CODE_MAX_RETRIES`` clamped to 15.
DEFAULT_MAX_RETRIES = 10
MAX_RETRIES_CAP = 15


def render_fault(run: TurnState, op: tuple[Any, ...]) -> bool | dict[str, Any]:
    """Render a fault op (it ends the turn); True: the turn is over; a turn: the retried
    request's, to play on."""
    s = run.s
    rt = s.rt
    kind = op[0]
    if kind == "api_error":
        _, status, error_type, text, assistant_error, retry_after, after_result = op
        if retry_after is not None:
            return retry(run, status, error_type, text, assistant_error, retry_after, after_result)
        api_error(run, status, error_type, text, assistant_error)
        return True
    if kind == "stream_fault":
        return stream_fault(run, op[1], op[2])
    rt.exit_code = 1
    if kind == "cut":
        line = dumps(_result_preview(run)) + "\n"
        rt.journal.write("cut", partial=line[: len(line) // 2])
        rt.write_bytes(line[: len(line) // 2].encode())
        rt.exit(0 if op[1] else 1)
    elif kind == "malformed":
        # the CLI itself breaks: a client that skips the bad line still sees the turn end
        rt.journal.write("malformed", text=op[1])
        rt.write_bytes((op[1] + "\n").encode())
        rt.exit(1)
    elif kind == "garbage":
        rt.journal.write("garbage", data=op[1].decode("utf-8", "replace"))
        rt.write_bytes(op[1])
        rt.exit(1)
    elif kind == "out_of_order":
        tool_message(run, "toolu_01NEVERSTARTED", "a result for a call never made", False, None)
        finish(run)
        rt.exit_code = 1
        run.open_message()
        run.emit(
            {
                "type": "assistant",
                "message": {
                    "id": run.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": s.model,
                    "content": [{"type": "text", "text": "a block after the turn ended"}],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage(0, 0),
                },
            }
        )
        run.message_id = None
        rt.exit(1)
    elif kind == "stall":
        rt.journal.write("stall")
        s.wait(None)
    elif kind == "exit":
        _, code, stderr = op
        if stderr:
            rt.stderr(stderr if stderr.endswith("\n") else stderr + "\n")
        rt.exit(code)
    return True


#: What the real CLI (2.1.332) asks the model when a model stream broke after some content
#: (observed: a cut, a malformed frame, garbage bytes), as a synthetic user message.
RESUME = (
    "Your response above was cut off mid-stream. Resume directly from where it stops \u2014 "
    "no apology, no recap. If none of it survived, answer the request from the start."
)


def stream_fault(run: TurnState, how: str, after_result: bool) -> dict[str, Any] | bool:
    """The model API's stream broke (cut, malformed frame, garbage, out of order), as the
    real CLI meets it over the model double (observed, 2.1.332): after content of the
    response it keeps that content and asks again with ``RESUME`` (``resume``); before any,
    it retries the request, announced as ``system/api_retry`` with no status (``retry``) or,
    for events out of order, silently (``silent``). The next scripted turn answers the new
    request; with none left the model double's 500 ends the turn (``retry``). Each counts
    against the retry budget."""
    if how == "retry":
        return retry(run, None, "", "", "", 0.0, after_result)
    s = run.s
    if run.retry_of != -2:  # the first broken stream of this turn: count from here
        run.retry_of = -2
        run.retries = 0
    if run.retries >= max_retries(s.rt.env):
        return _no_turn(run, "the model stream broke on every retry")
    run.retries += 1
    if how == "resume":
        run.emit(
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "text", "text": RESUME}]},
                "timestamp": stamp(run),
                "isSynthetic": True,
            }
        )
    index, turn, error = run.next_turn(False)
    if turn is None:
        return _no_turn(run, str(error))
    run.index = index
    return turn


def _no_turn(run: TurnState, error: str) -> bool:
    """The model double's answer to a request no scripted turn answers: a 500 with
    ``x-should-retry: false``, which the real CLI reports without retrying."""
    run.s.rt.stderr(f"stuntset: {error}\n")
    message = f"stuntset: no scripted turn answers this request. {error}"
    api_error(run, 500, "api_error", message, "server_error")
    return True


def max_retries(env: dict[str, str]) -> int:
    """The retry budget: ``CLAUDE_CODE_MAX_RETRIES`` (a whole number ≥ 0, at most 15), else
    10 (observed: 0 gives up at once, 20 reports ``max_retries: 15``)."""
    wanted = env.get("CLAUDE_CODE_MAX_RETRIES", "").strip()
    if wanted.isdigit():
        return min(int(wanted), MAX_RETRIES_CAP)
    return DEFAULT_MAX_RETRIES


def _category(status: int | None, error_type: str) -> str:
    """The ``error`` of an ``api_retry`` message, as the real CLI names the failure (a broken
    model stream has no status: ``unknown``)."""
    if status is None:
        return "unknown"
    if status == 529 or error_type == "overloaded_error":
        return "overloaded"
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "authentication_failed"
    return "server_error" if status >= 408 else "unknown"


def retry(
    run: TurnState,
    status: int | None,
    error_type: str,
    text: str,
    assistant_error: str,
    retry_after: float,
    after_result: bool,
) -> dict[str, Any] | bool:
    """The real CLI's own retry of a failed model request: ``system/api_retry``, the wait,
    then the turn that answers the retried request (``True`` when the turn ended instead:
    retries spent, or no scripted turn answers it)."""
    s = run.s
    if run.retry_of != run.api_messages:  # a new request failed (one that got an answer
        # opened a message): its attempts count from 1, and it carries tool results if it
        # followed them (a retried request is the same request)
        run.retry_of = run.api_messages
        run.retries = 0
        run.retry_results = after_result or (run.api_messages == 0 and run.has_results)
    budget = max_retries(s.rt.env)
    if run.retries >= budget:
        if status is None:  # a broken model stream every time
            return _no_turn(run, "the model stream broke on every retry")
        api_error(run, status, error_type, text, assistant_error)
        return True
    run.retries += 1
    run.emit(
        {
            "type": "system",
            "subtype": "api_retry",
            "attempt": run.retries,
            "max_retries": budget,
            "retry_delay_ms": round(retry_after * 1000),
            "error_status": status,
            "error": _category(status, error_type),
        }
    )
    run.pause(retry_after)
    index, turn, error = run.next_turn(run.retry_results)
    if turn is None:
        return _no_turn(run, str(error))
    run.index = index
    return turn


def api_error(
    run: TurnState, status: int, error_type: str, text: str, assistant_error: str
) -> None:
    """The API error the real CLI gives up on: a synthetic ``assistant`` and an ``is_error``
    result, then ``idle``; the process exits 1 at EOF."""
    s = run.s
    prose = _prose(s.rt.env, status, error_type, text)
    run.emit(
        {
            "type": "assistant",
            "message": {
                "id": run.ids.uuid(),
                "type": "message",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": prose}],
                "stop_reason": "stop_sequence",
                "stop_sequence": "",
                "usage": usage(0, 0),
            },
            "error": assistant_error,
            "is_api_error_message": True,
            "api_error_status": status,
            "api_error_type": error_type,
        }
    )
    duration, api = durations(run)
    run.emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "api_error_status": status,
            "api_error_type": error_type,
            "duration_ms": duration,
            "duration_api_ms": api,
            "num_turns": max(1, run.api_messages),
            "result": prose,
            "stop_reason": "stop_sequence",
            "total_cost_usd": s.spent,
            "usage": usage(run.input_tokens, run.output_tokens),
            "modelUsage": {},
            "permission_denials": run.denials,
            "terminal_reason": "api_error",
        },
        final=True,
    )
    s.rt.exit_code = 1
    s.state_changed("idle", run.ids)


def _prose(env: dict[str, str], status: int, error_type: str, text: str) -> str:
    """The ``API Error: …`` text of a synthetic message, worded as CLI 2.1.332 words it for a
    429 and a 5xx (observed); other statuses show the error body."""
    if status == 429:
        return f"API Error: Request rejected (429) \u00b7 {text}"
    if status == 401:  # observed with AuthExpired's message, once the retries are spent
        return f"Failed to authenticate. API Error: 401 {text}"
    if status >= 500:
        base = env.get("ANTHROPIC_BASE_URL") or ""
        host = base.partition("://")[2].partition("/")[0] if "://" in base else base
        if host and host != "api.anthropic.com":
            where = f"your inference gateway ({host})"
        else:
            where = "https://status.claude.com"
        said = text.rstrip(".!?\u2026")
        return (
            f"API Error: {status} {said}. This is a server-side issue, usually temporary "
            f"\u2014 try again in a moment. If it persists, check {where}."
        )
    body = dumps({"type": "error", "error": {"type": error_type, "message": text}})
    return f"API Error: {status} {body}"


def _result_preview(run: TurnState) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": run.final_text,
        "session_id": run.s.session_id,
    }
