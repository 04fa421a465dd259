"""One turn of the fake ``claude``: the plan's ops rendered as Claude Code's stream-json.

Runs in the fake process (built-ins only, see ``_runtime``). Message shapes follow what
CLI 2.1.332 writes (protocols.md §5.7): one ``assistant`` message per content block, all
blocks of one model response sharing ``message.id``; with partial messages the Anthropic
stream events around them (the ``assistant`` line just before its ``content_block_stop``).
Ids and durations come from the script's seed and the script itself, never the clock.
Tool calls and their permission are in ``tools`` (loaded when the first one plays); how the
turn ends (its ``system/init`` and ``result``, the Stop hooks) in ``endings``.
"""

from __future__ import annotations

from stuntset.doubles.cli.claude._process.args import js_string
from stuntset.doubles.cli.claude._process.common import (
    INTERRUPTED,
    Abort,
    HookTurnError,
    choose_turn,
    usage,
)
from stuntset.doubles.cli.claude._process.endings import (
    HookStopped,
    MaxTurns,
    NoTurn,
    OverBudget,
    finish,
    finish_blocked,
    finish_error,
    init_message,
    stop_hooks,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Ids
    from stuntset.doubles.cli.claude._process.faces import SessionState

__all__ = ["TurnRun"]

#: The ops ``tools`` plays (loaded when the first of them plays).
_TOOL_OPS = frozenset({"tool_use", "tool_result", "approval", "ask"})


class TurnRun:
    """Plays one turn's ops through a session."""

    def __init__(
        self,
        session: SessionState,
        ids: Ids,
        prompt: str,
        index: int,
        turn: dict[str, Any] | None,
        error: str | None,
        has_results: bool = False,
    ) -> None:
        self.s = session
        self.ids = ids
        self.prompt = prompt
        self.index = index
        self.turn = turn
        self.error = error
        self.has_results = has_results  # the prompt's message carries tool results
        # the CLI's own retries of a failed model request (``faults.retry``): the request
        # (``api_messages`` when it failed), its attempts so far, and whether it carries tool
        # results (a retried request is the same request)
        self.retry_of = -1
        self.retries = 0
        self.retry_results = False
        self.message_id: str | None = None
        self.message_has_tool = False
        self.block = 0
        self.api_messages = 0
        self.final_text = ""
        self.calls: dict[str, dict[str, Any]] = {}
        self.waiting: list[str] = []
        self.last_call: str | None = None
        self.done: set[str] = set()
        self.checked: set[str] = set()
        self.denials: list[dict[str, Any]] = []
        self.input_tokens = 0
        self.output_tokens = 0
        self.delay_ms = 0.0
        self.stop_reason: str | None = None
        self.hook_denial = ""
        #: the ``informational`` message of a UserPromptSubmit hook that blocked the prompt
        self.prompt_blocked: dict[str, Any] | None = None
        #: what a Stop hook that exited 2 said (the model is asked again with it)
        self.stop_feedback: str | None = None
        self.stop_hook_active = False
        #: a hook said the turn ends after the action it checked (``terminal_reason:
        #: "hook_stopped"``)
        self.hook_stop = False
        self._prompt_id: str | None = None

    # --- framing helpers ------------------------------------------------------------------

    def emit(self, message: dict[str, Any], *, final: bool = False) -> None:
        """Write a message; then ``Abort`` if an interrupt came in (not after a ``final``
        one: a turn whose result is out is over)."""
        if message["type"] != "system":
            message.setdefault("parent_tool_use_id", None)
        message["session_id"] = self.s.session_id
        message["uuid"] = self.ids.uuid()
        self.s.send(message)
        if self.s.interrupted and not final:
            raise Abort

    def event(self, event: dict[str, Any]) -> None:
        if self.s.partial:
            self.emit({"type": "stream_event", "event": event})

    def open_message(self) -> None:
        if self.message_id is not None:
            return
        if self.s.max_turns and self.api_messages >= self.s.max_turns:
            raise MaxTurns
        self.api_messages += 1
        self.message_id = self.ids.token("msg_01")
        self.message_has_tool = False
        self.block = 0
        self.event(
            {
                "type": "message_start",
                "message": {
                    "id": self.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.s.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": self.input_tokens, "output_tokens": 0},
                },
            }
        )

    def close_message(self) -> None:
        if self.message_id is None:
            return
        stop = "tool_use" if self.message_has_tool else "end_turn"
        self.stop_reason = stop
        self.event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": self.output_tokens},
            }
        )
        self.event({"type": "message_stop"})
        self.message_id = None
        budget = self.s.budget
        if budget is not None and self.s.spent >= budget:
            raise OverBudget

    def block_out(
        self,
        block: dict[str, Any],
        start: dict[str, Any],
        deltas: list[dict[str, Any]],
        interval: float,
    ) -> None:
        self.open_message()
        index = self.block
        self.block += 1
        self.event({"type": "content_block_start", "index": index, "content_block": start})
        for number, delta in enumerate(deltas):
            if number and interval:
                self.pause(interval)
            self.event({"type": "content_block_delta", "index": index, "delta": delta})
        self.emit(
            {
                "type": "assistant",
                "message": {
                    "id": self.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.s.model,
                    "content": [block],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage(self.input_tokens, self.output_tokens),
                },
            }
        )
        self.event({"type": "content_block_stop", "index": index})

    def pause(self, seconds: float) -> None:
        self.delay_ms += seconds * 1000
        self.s.wait(seconds)

    def next_turn(self, has_results: bool) -> tuple[int, dict[str, Any] | None, str | None]:
        """The scripted turn for another request of this prompt (``choose_turn``)."""
        return choose_turn(self.s, self.prompt, has_results)

    # --- the turn -------------------------------------------------------------------------

    def play(self, *, over_budget: bool = False, choose: bool = False) -> None:
        """Play the turn; ``choose``: its scripted turn is chosen here, after the
        UserPromptSubmit hooks (whose prompt hooks ask the model first)."""
        s = self.s
        try:
            s.state_changed("running", self.ids)
            if not over_budget:  # observed: UserPromptSubmit hooks run before system/init
                self.hooks("UserPromptSubmit", None, {"prompt": self.prompt})
            self.emit(init_message(self))
            if self.prompt_blocked is not None:
                finish_blocked(self, self.prompt_blocked)
                return
            if over_budget:
                raise OverBudget
            if choose:
                self.index, self.turn, self.error = self.next_turn(self.has_results)
            if self.turn is None:
                s.rt.stderr(f"stuntset: {self.error}\n")
                finish_error(self, "error_during_execution", [str(self.error)])
                return
            turn: dict[str, Any] | None = self.turn
            while turn is not None:
                for op in turn["ops"]:
                    if ended := self.op(op):
                        if ended is True:
                            return
                        turn = ended  # the CLI retried the request: the next turn answers it
                        break
                else:
                    self.close_message()
                    turn = stop_hooks(self)
            finish(self)
        except Abort:
            self.s.interrupted = False
            self.s.send(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "text", "text": INTERRUPTED}],
                    },
                    "parent_tool_use_id": None,
                    "session_id": s.session_id,
                    "uuid": self.ids.uuid(),
                }
            )
            finish_error(self, "error_during_execution", [], terminal_reason="aborted_streaming")
        except OverBudget:
            # Observed (2.1.332): checked after every model response (cost >= budget), and
            # before a turn starts; the result has no ``result`` text.
            finish_error(
                self,
                "error_max_budget_usd",
                [f"Reached maximum budget (${js_string(s.budget or 0.0)})"],
                terminal_reason="budget_exhausted",
                stop_reason=self.stop_reason,
                total_cost_usd=s.spent,
                usage=usage(self.input_tokens, self.output_tokens),
            )
        except (NoTurn, HookTurnError) as no_turn:
            s.rt.stderr(f"stuntset: {no_turn}\n")
            finish_error(self, "error_during_execution", [str(no_turn)])
        except HookStopped:
            finish(self, stopped=True)
        except MaxTurns:
            finish_error(
                self,
                "error_max_turns",
                [f"Reached maximum number of turns ({s.max_turns})"],
                terminal_reason="max_turns",
            )

    def op(self, op: tuple[Any, ...]) -> bool | dict[str, Any]:
        """Render one op; True if it ended the turn, the next scripted turn if the failed
        request was retried (``faults.retry``)."""
        kind = op[0]
        if kind == "text":
            _, text, deltas, interval = op
            self.final_text = text
            self.block_out(
                {"type": "text", "text": text},
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": d} for d in deltas],
                interval,
            )
        elif kind == "thinking":
            _, text, signature, deltas, interval = op
            self.block_out(
                {"type": "thinking", "thinking": text, "signature": signature},
                {"type": "thinking", "thinking": "", "signature": ""},
                [{"type": "thinking_delta", "thinking": d} for d in deltas]
                + [{"type": "signature_delta", "signature": signature}],
                interval,
            )
        elif kind in _TOOL_OPS:
            from stuntset.doubles.cli.claude._process.tools import play_tool_op

            play_tool_op(self, op)
        elif kind == "usage":
            _, input_tokens, output_tokens, cost = op
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.s.spent += cost or 0.0
        elif kind == "delay":
            self.pause(op[1])
        else:
            self.close_message()
            from stuntset.doubles.cli.claude._process.faults import render_fault

            return render_fault(self, op)
        return False

    def hooks(self, event: str, tool: str | None, payload: dict[str, Any]) -> str | None:
        """Run the settings' hooks, then the SDK's, for ``event`` (``_process.hooks``); a
        PreToolUse permission decision if any (a hook's deny text in ``hook_denial``)."""
        self.hook_denial = ""
        self.stop_feedback = None
        if self.s.settings_hooks is None and not self.s.hooks.get(event):
            return None
        from stuntset.doubles.cli.claude._process.hooks import run_event

        return run_event(self, event, tool, payload)

    def prompt_id(self) -> str:
        """The id hooks see for this turn's prompt (its own id stream: the turn's ids stay)."""
        if self._prompt_id is None:
            stream = f"{self.s.session_id}/{self.s.turns_in_session}/prompt"
            self._prompt_id = self.s.rt.ids(stream).uuid()
        return self._prompt_id
