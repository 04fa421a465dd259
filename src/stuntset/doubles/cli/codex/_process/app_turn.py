"""One turn of the fake ``codex app-server``: the plan's ops rendered as notifications.

Runs in the fake process (built-ins only, see ``_runtime``), driven by ``_process.app_server``'s
``Server`` (its JSON-RPC loop, clock, ids, threads and server → client requests). Order and
shapes as codex-cli 0.163.0 writes them: ``thread/status/changed`` (active), ``turn/started``,
the user message item, each scripted item (``item/started``, its deltas, ``item/completed``),
after each model response ``thread/tokenUsage/updated`` and ``account/rateLimits/updated``,
then ``thread/readState/changed``, ``thread/status/changed`` (idle; ``systemError`` after a
failure), ``turn/completed``.

A scripted turn is one or more model responses (cut at its tool results, as the model double
cuts it). Besides its own, an app-server turn may play more scripted turns, each as one more
model request of the same turn: the retries of a 5xx (``request_max_retries`` silently, then
``stream_max_retries`` announced by "Reconnecting... n/m"), and the follow-up request after
``turn/steer``. Tool calls, their results and approvals, and questions are ``app_tools``
(loaded when the turn's first tool op plays).
"""

from __future__ import annotations

from stuntset.doubles.cli.codex._process.common import HIGH_DEMAND, Retries, choose_turn
from stuntset.doubles.cli.codex._process.requests import input_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.codex._process.app_state import Queued
    from stuntset.doubles.cli.codex._process.app_state import ServerState as Server

__all__ = ["Interrupted", "Turn", "agent_message", "turn_object"]

#: The ops ``app_tools`` plays (loaded when the first of them plays).
_TOOL_OPS = frozenset({"tool", "result", "approval", "ask"})

_CONTEXT_WINDOW = 258400

#: What ``account/rateLimits/updated`` carries after each model response when the provider
#: sends no rate-limit headers (observed from codex-cli 0.163.0 against a Responses server).
_RATE_LIMITS = {
    "limitId": "codex",
    "limitName": None,
    "normalModelSlug": None,
    "primary": None,
    "secondary": None,
    "credits": None,
    "individualLimit": None,
    "spendControlReached": None,
    "planType": None,
    "rateLimitReachedType": None,
}


class Interrupted(Exception):
    """The active turn was interrupted (``turn/interrupt``, or an approval ``cancel``)."""


class _Ended(Exception):
    """The turn has ended without its terminal notification (a fault)."""


class _Steered(Exception):
    """Input was steered into the turn: the model response in progress is dropped (or, its
    tools done, has ended) and the next scripted turn answers the follow-up request."""


class _Retry(Exception):
    """A 5xx the real codex retries: the next scripted turn answers the retried request."""


def turn_object(
    turn_id: str,
    items: list[Any],
    status: str,
    error: dict[str, Any] | None,
    started: int | None,
    completed: int | None,
    view: str,
) -> dict[str, Any]:
    return {
        "id": turn_id,
        "rootTurnId": turn_id,
        "items": items,
        "itemsView": view,
        "status": status,
        "error": error,
        "startedAt": started,
        "completedAt": completed,
        "durationMs": None
        if completed is None or started is None
        else (completed - started) * 1000,
    }


def agent_message(item_id: str, text: str) -> dict[str, Any]:
    """An ``agentMessage`` item, with every field codex-cli 0.163.0 sends (observed)."""
    return {
        "type": "agentMessage",
        "id": item_id,
        "text": text,
        "phase": None,
        "memoryCitation": None,
        "delivery": None,
        "questions": None,
    }


def _usage_breakdown(values: list[int]) -> dict[str, int]:
    input_tokens, cached, output_tokens, reasoning = values
    return {
        "totalTokens": input_tokens + output_tokens,
        "inputTokens": input_tokens,
        "cachedInputTokens": cached,
        "cacheWriteInputTokens": 0,
        "outputTokens": output_tokens,
        "reasoningOutputTokens": reasoning,
    }


class Turn:
    """One turn of a thread: the plan's ops rendered as app-server notifications."""

    def __init__(self, server: Server, queued: Queued) -> None:
        self.server = server
        self.rt = server.rt
        self.thread = queued.thread
        self.id = turn_id = queued.turn_id
        self.prompt = queued.prompt
        #: The latest user input the model requests of this turn carry (the prompt, then
        #: the last input steered in): what the next scripted turn is chosen by.
        self.request_prompt = queued.prompt
        self.input_items = queued.items
        self.chosen = queued.chosen
        self.choice_error = queued.error
        #: The turn is ending (its closing notifications are being sent): nothing can be
        #: steered into it any more.
        self.ended = False
        self.interrupted = False
        self.item_ids = server.rt.ids(f"items/{turn_id}")
        self.started_at = server.clock.seconds()
        #: The turn's completed agent messages (``thread/read`` keeps them all;
        #: ``turn/completed`` lists the last).
        self.messages: list[dict[str, Any]] = []
        self.calls: dict[str, dict[str, Any]] = {}
        self.waiting: list[str] = []
        self.last_call: str | None = None
        self.usage = [0, 0, 0, 0]
        #: What ``account/rateLimits/updated`` carries for the scripted turn playing.
        self.limits: dict[str, Any] = _RATE_LIMITS
        #: How codex retries the scripted turn's closing 5xx (None: it does not).
        self.retry: dict[str, Any] | None = None
        #: How far codex has got retrying the current model request.
        self.retries = Retries(server.retries)
        #: A model response is in progress (not yet ended, dropped or failed).
        self.in_response = False
        #: It has called tools: a steer waits for their results, then the response's end.
        self.tools_called = False
        #: Its tool results were played: it ends at the next op that is not one.
        self.after_results = False
        #: Input steered into the turn, not yet sent to the model.
        self.steers: list[list[Any]] = []
        #: An item other than the user's was shown (a completed or interrupted turn without
        #: one sends no ``thread/readState/changed``).
        self.any_item = False

    # --- framing --------------------------------------------------------------------------

    def notify(self, method: str, **params: Any) -> None:
        payload = {"threadId": self.thread["id"], "turnId": self.id}
        payload.update(params)
        self.server.notify(method, payload)
        if self.interrupted:
            raise Interrupted
        self.check_steer()

    def check_steer(self) -> None:
        """``_Steered`` when input was steered into a model response that is still streaming
        (one that has called tools finishes them first)."""
        if self.steers and self.in_response and not self.tools_called:
            raise _Steered

    def item(self, method: str, item: dict[str, Any]) -> None:
        stamp = "startedAtMs" if method == "item/started" else "completedAtMs"
        if method == "item/started":
            self.any_item = True
        self.notify(method, item=item, **{stamp: self.server.clock.ms})

    def resolved(self, request_id: int) -> None:
        self.server.notify(
            "serverRequest/resolved", {"threadId": self.thread["id"], "requestId": request_id}
        )
        if self.interrupted:
            raise Interrupted

    def new_id(self) -> str:
        return self.item_ids.uuid()

    def user_message(self, items: list[Any]) -> None:
        """The user's input as a ``userMessage`` item (started and completed at once); also
        what input steered into the running turn becomes."""
        content = [
            {**entry, "text_elements": []} if entry.get("type") == "text" else entry
            for entry in items
            if isinstance(entry, dict)
        ]
        user = {"type": "userMessage", "id": self.new_id(), "clientId": None, "content": content}
        clock = self.server.clock
        for method, stamp in (("item/started", "startedAtMs"), ("item/completed", "completedAtMs")):
            params = {"item": user, "threadId": self.thread["id"], "turnId": self.id}
            params[stamp] = clock.ms
            # sent as is: no stdin is handled between the two (an interrupt waits for both)
            self.rt.send({"method": method, "params": params, "emittedAtMs": clock.tick()})

    # --- the turn -------------------------------------------------------------------------

    def play(self) -> None:
        server = self.server
        thread = self.thread
        server.notify(
            "thread/status/changed",
            {"threadId": thread["id"], "status": {"type": "active", "activeFlags": []}},
        )
        turn = turn_object(self.id, [], "inProgress", None, self.started_at, None, "notLoaded")
        server.notify("turn/started", {"threadId": thread["id"], "turn": turn})
        try:
            self.user_message(self.input_items)
            if self.interrupted:
                raise Interrupted
            chosen, error = self.chosen, self.choice_error
            thread["turns"] += 1
            if not thread["preview"]:
                thread["preview"] = self.prompt[:200]
            if chosen is None:
                self.rt.stderr(f"stuntset: {error}\n")
                self.fail(str(error), "other", None)
            while chosen is not None:
                chosen = self.play_turn(chosen)
            self.finish("completed", None)
        except Interrupted:
            self.interrupted = False
            self.finish("interrupted", None)
        except _Ended:
            pass
        finally:
            server.threads.save(thread)

    def play_turn(self, chosen: dict[str, Any]) -> dict[str, Any] | None:
        """Play one scripted turn's ops as model responses; the next scripted turn to play
        in this app-server turn (a retry's, or the follow-up after a steer), or None."""
        self.limits = chosen.get("rate_limits") or _RATE_LIMITS
        self.retry = chosen.get("retry")
        self.start_response()
        try:
            for op in chosen["ops"]:
                self.op(op)
            self.end_response()
        except _Steered:
            self.drop_response()
        except _Retry:
            return self.next_turn(self.request_prompt, retry=True)
        if not self.steers:
            return None
        steers, self.steers = self.steers, []
        for items in steers:
            self.user_message(items)
        self.request_prompt = input_text(steers[-1])
        return self.next_turn(self.request_prompt)

    def next_turn(self, prompt: str, retry: bool = False) -> dict[str, Any] | None:
        """The scripted turn answering the next model request of this turn (chosen as the
        model double chooses: by the request's latest user input); none left fails it — a
        retry as the real codex fails over the model double, whose 500 for a request no turn
        answers codex retries silently and then reports (observed)."""
        chosen, error = choose_turn(self.rt, prompt, self.thread["model"])
        if chosen is None:
            self.rt.stderr(f"stuntset: {error}\n")
            if retry:
                self.fail(HIGH_DEMAND, "internalServerError", None)
            self.fail(str(error), "other", None)
        return chosen

    # --- model responses ------------------------------------------------------------------

    def start_response(self) -> None:
        self.in_response = True
        self.tools_called = False
        self.after_results = False

    def end_response(self) -> None:
        """A model response completed: its usage and the account's rate limits, as the real
        server sends them after each response (once its tools have run)."""
        if not self.in_response:
            return
        self.in_response = False
        self.retries.reset()
        last = list(self.usage)
        self.add_usage()
        usage = {
            "total": _usage_breakdown(self.thread["usage"]),
            "last": _usage_breakdown(last),
            "modelContextWindow": _CONTEXT_WINDOW,
        }
        params = {"threadId": self.thread["id"], "turnId": self.id, "tokenUsage": usage}
        self.server.notify("thread/tokenUsage/updated", params)
        self.server.notify("account/rateLimits/updated", {"rateLimits": dict(self.limits)})
        if self.interrupted:
            raise Interrupted

    def drop_response(self) -> None:
        """A model response cut short (interrupted, or steered before it called a tool): it
        never reported usage; the account's rate limits came with its head (observed)."""
        if not self.in_response:
            return
        self.in_response = False
        self.usage = [0, 0, 0, 0]
        self.server.notify("account/rateLimits/updated", {"rateLimits": dict(self.limits)})

    # --- ops ------------------------------------------------------------------------------

    def op(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if self.after_results and kind != "result":
            # the tool results went back: that response has ended, this op is the next one's
            self.end_response()
            if self.steers:
                raise _Steered
            self.start_response()
        if kind == "text":
            _, text, deltas, interval = op
            item = agent_message("msg_" + self.item_ids.hex(24), "")
            shown = []
            try:
                self.item("item/started", item)
                for number, delta in enumerate(deltas):
                    if number and interval:
                        self.wait(interval)
                    shown.append(delta)
                    self.notify("item/agentMessage/delta", itemId=item["id"], delta=delta)
            except (Interrupted, _Steered):
                # the message so far is completed (observed: interrupt and steer alike)
                self.item_at_once({**item, "text": "".join(shown)})
                raise
            done = {**item, "text": text}
            self.messages.append(done)
            self.item("item/completed", done)
        elif kind == "reasoning":
            _, text, deltas, interval = op
            item = {"type": "reasoning", "id": "rs_" + self.item_ids.hex(24)}
            shown = []
            try:
                self.item("item/started", {**item, "summary": [], "content": []})
                self.notify("item/reasoning/summaryPartAdded", itemId=item["id"], summaryIndex=0)
                for number, delta in enumerate(deltas):
                    if number and interval:
                        self.wait(interval)
                    shown.append(delta)
                    self.notify(
                        "item/reasoning/summaryTextDelta",
                        itemId=item["id"],
                        delta=delta,
                        summaryIndex=0,
                    )
            except (Interrupted, _Steered):
                self.item_at_once({**item, "summary": ["".join(shown)], "content": []})
                raise
            self.item("item/completed", {**item, "summary": [text], "content": []})
        elif kind in _TOOL_OPS:
            from stuntset.doubles.cli.codex._process.app_tools import play_tool_op

            if play_tool_op(self, op):  # an approval the client answered "cancel"
                raise Interrupted
        elif kind == "usage":
            self.usage[0] += op[1]
            self.usage[2] += op[2]
        elif kind == "delay":
            self.wait(op[1])
        else:
            self.fault(op)

    def item_at_once(self, item: dict[str, Any]) -> None:
        """``item/completed`` for an item cut short, written as is (the turn is already
        ending: nothing more is read from stdin before it)."""
        params = {"item": item, "threadId": self.thread["id"], "turnId": self.id}
        params["completedAtMs"] = self.server.clock.ms
        self.rt.send(
            {"method": "item/completed", "params": params, "emittedAtMs": self.server.clock.tick()}
        )

    def wait(self, seconds: float | None) -> None:
        """Wait ``seconds`` (``None``: for ever) of scaled time, handling stdin;
        ``Interrupted`` on an interrupt, ``_Steered`` on a steer into a streaming response.
        After stdin EOF nothing can interrupt: the wait just runs out (for ever: until the
        process is killed)."""
        import time

        rt = self.rt
        if seconds is not None:
            self.server.clock.advance(seconds)
        end = None if seconds is None else time.monotonic() + seconds * rt.time_scale
        while True:
            if self.interrupted:
                raise Interrupted
            self.check_steer()
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return
            if not self.server.pump(left):
                rt.sleep(1e9 if left is None else left / rt.time_scale)
                return

    # --- endings --------------------------------------------------------------------------

    def add_usage(self) -> None:
        total = self.thread["usage"]
        for index, value in enumerate(self.usage):
            total[index] += value
        self.usage = [0, 0, 0, 0]

    def finish(self, status: str, error: dict[str, Any] | None) -> None:
        """The real server's closing order (codex-cli 0.163.0, observed by ``stuntset
        drift``): the last model response's end — usage and the account's rate limits (a
        completed turn's was sent as it ended; an interrupted one's rate limits only; a
        failed one's both only when it reported usage) — the thread's read state (a
        completed or interrupted turn that showed an item), ``thread/status/changed`` —
        idle, or ``systemError`` for a failure, then its ``error`` notification and the read
        state — then ``turn/completed``."""
        server = self.server
        self.ended = True
        if status == "completed":
            self.end_response()
        elif status == "interrupted":
            self.drop_response()
        elif any(self.usage):  # the failing response had reported its usage
            self.end_response()
        self.in_response = False
        if error is None and self.any_item:
            self.read_state()
        # a failed turn leaves the thread in systemError, not idle (observed, 0.163.0)
        after = {"type": "idle"} if error is None else {"type": "systemError"}
        server.notify("thread/status/changed", {"threadId": self.thread["id"], "status": after})
        if error is not None:
            server.notify(
                "error",
                {
                    "error": error,
                    "willRetry": False,
                    "threadId": self.thread["id"],
                    "turnId": self.id,
                },
            )
            self.read_state()
        failed = status == "failed"
        items, view = self.summary(status)
        turn = turn_object(
            self.id, items, status, error, self.started_at, server.clock.seconds(), view
        )
        self.thread.setdefault("history", []).append(
            {**turn, "items": self.messages, "itemsView": "full"}
        )
        # saved before the client can see the turn end (and close, killing this process)
        server.threads.save(self.thread)
        server.notify("turn/completed", {"threadId": self.thread["id"], "turn": turn})
        self.rt.exit_code = 1 if failed else 0

    def summary(self, status: str) -> tuple[list[dict[str, Any]], str]:
        """``turn/completed``'s ``items`` and ``itemsView``, as the real server sends them
        (observed, 0.163.0): a completed turn lists its last agent message (``summary``),
        whichever model response it came from; a turn without one, an interrupted or a
        failed turn lists nothing (``notLoaded``)."""
        if status == "completed" and self.messages:
            return [self.messages[-1]], "summary"
        return [], "notLoaded"

    def read_state(self) -> None:
        """``thread/readState/changed`` as a turn of a durable thread ends: its first unread
        position is the thread's first ended turn (nothing here marks it read), with a new
        opaque revision. An ephemeral thread has none (observed, codex-cli 0.163.0)."""
        thread = self.thread
        if thread.get("ephemeral"):
            return
        first = thread.setdefault("first_unread", self.id)
        read_state = {"firstUnread": {"type": "turn", "turnId": first}, "revision": self.new_id()}
        self.server.notify(
            "thread/readState/changed", {"threadId": thread["id"], "readState": read_state}
        )

    def fail(self, message: str, info: Any, details: str | None) -> None:
        error = {
            "message": message,
            "codexErrorInfo": info,
            "additionalDetails": details,
            "misalignment": None,
        }
        self.finish("failed", error)
        raise _Ended

    def retried(self, message: str) -> bool:
        """Whether codex retries the request that just failed with a 5xx (``Retries``); an
        announced retry is an ``error`` notification "Reconnecting... n/m" (``willRetry``).
        The fake's clock moves on by codex's backoff; nothing waits."""
        assert self.retry is not None
        retry = self.retries.next(self.retry.get("streams", False))
        if retry is None:
            return False
        backoff, notice = retry
        if notice is not None:
            error = {
                "message": notice,
                "codexErrorInfo": self.retry["info"],
                "additionalDetails": self.retry["details"] or message,
                "misalignment": None,
            }
            params = {"error": error, "willRetry": True}
            params.update(threadId=self.thread["id"], turnId=self.id)
            self.server.notify("error", params)
        self.in_response = False
        self.usage = [0, 0, 0, 0]
        self.server.clock.advance(backoff)
        return True

    def fault(self, op: tuple[Any, ...]) -> None:
        rt = self.rt
        kind = op[0]
        if kind == "api_error":
            _, message, info, details = op
            if self.retry is not None and self.retried(message):
                raise _Retry
            self.fail(message, info, details)
        if kind == "ignored":  # the model's out-of-order content: the response ends, unused
            self.drop_response()
            return
        if kind == "cut":
            items, view = self.summary("completed")
            turn = turn_object(self.id, items, "completed", None, self.started_at, None, view)
            line = (
                rt.dumps(
                    {
                        "method": "turn/completed",
                        "params": {"threadId": self.thread["id"], "turn": turn},
                    }
                )
                + "\n"
            )
            rt.journal.write("cut", partial=line[: len(line) // 2])
            rt.write_bytes(line[: len(line) // 2].encode())
            self.server.threads.save(self.thread)
            rt.exit(0 if op[1] else 1)
        elif kind == "malformed":
            # the CLI itself breaks, then exits: a client that skips the line sees the end
            rt.journal.write("malformed", text=op[1])
            rt.write_bytes((op[1] + "\n").encode())
            self.server.threads.save(self.thread)
            rt.exit(1)
        elif kind == "garbage":
            rt.journal.write("garbage", data=op[1].decode("utf-8", "replace"))
            rt.write_bytes(op[1])
            self.server.threads.save(self.thread)
            rt.exit(1)
        elif kind == "out_of_order":
            self.notify("item/agentMessage/delta", itemId="msg_NEVERSTARTED", delta="orphan delta")
            self.finish("completed", None)
            late = agent_message("msg_" + self.item_ids.hex(24), "a message after the turn ended")
            self.item("item/completed", late)
            self.server.threads.save(self.thread)
            rt.exit(1)
        elif kind == "stall":
            rt.journal.write("stall")
            self.wait(None)
        elif kind == "exit":
            _, code, stderr = op
            if stderr:
                rt.stderr(stderr if stderr.endswith("\n") else stderr + "\n")
            self.server.threads.save(self.thread)
            rt.exit(code)
        raise _Ended
