"""One turn of the fake ``claude``: the plan's ops rendered as Claude Code's stream-json.

Runs in the fake process (built-ins only, see ``_runtime``). Message shapes follow what
CLI 2.1.332 writes (protocols.md §5.7): one ``assistant`` message per content block, all
blocks of one model response sharing ``message.id``; with partial messages the Anthropic
stream events around them (the ``assistant`` line just before its ``content_block_stop``).
Ids and durations come from the script's seed and the script itself, never the clock.
"""

from __future__ import annotations

import time

from stuntset.doubles.cli._runtime import dumps, no_turn_message
from stuntset.doubles.cli.claude._process.args import js_string
from stuntset.doubles.cli.claude._process.common import INTERRUPTED, Abort, HookTurnError, usage

#: Timestamps the double writes start here (2026-01-01T00:00:00Z) and advance by the script.
_BASE_TIME = 1767225600

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Ids
    from stuntset.doubles.cli.claude._process.run import Session

__all__ = ["TurnRun", "choose_turn"]

_ASK_TOOL = "AskUserQuestion"


def _accepts(match: dict[str, Any] | None, prompt: str, model: str, has_results: bool) -> bool:
    if not match:
        return True
    contains = match.get("contains")
    wanted_model = match.get("model")
    retry_count = match.get("retry_count")
    tool_result = match.get("tool_result")
    return (
        (contains is None or contains in prompt)
        and (wanted_model is None or wanted_model == model)
        and (retry_count is None or retry_count == 0)
        and (tool_result is None or tool_result == has_results)
    )


def choose_turn(
    session: Session, prompt: str, has_results: bool, model: str | None = None
) -> tuple[int, dict[str, Any] | None, str | None]:
    """The first scripted turn with uses left that accepts the prompt (as ``ScriptPlayer``
    chooses), counted in the double's shared state; or an error text naming the miss.
    ``model``: the request's model when it is not the session's (a prompt hook's)."""
    plan = session.rt.plan
    model = model or session.model
    turns: list[dict[str, Any]] = plan["turns"]

    def take(state: dict[str, Any]) -> tuple[int, str | None]:
        left: list[int] = state.setdefault("left", [t["times"] for t in turns])
        played = state.get("played", 0) + 1
        state["played"] = played
        sessions = state.setdefault("sessions", {})
        sessions[session.session_id] = sessions.get(session.session_id, 0) + 1
        for index, turn in enumerate(turns):
            if left[index] and _accepts(turn["match"], prompt, model, has_results):
                left[index] -= 1
                return index, None
        return -1, no_turn_message(state, plan, left, played, prompt, model, "claude")

    index, error = session.rt.state.update(take)
    return index, (turns[index] if index >= 0 else None), error


def _content(output: Any) -> Any:
    """A tool result's ``content``: text, a list of content blocks, or other data as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(b, dict) and "type" in b for b in output):
        return output
    return dumps(output)


class TurnRun:
    """Plays one turn's ops through a session."""

    def __init__(
        self,
        session: Session,
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
            raise _MaxTurns
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
            raise _OverBudget

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
            self.emit(self.init_message())
            if self.prompt_blocked is not None:
                self.finish_blocked(self.prompt_blocked)
                return
            if over_budget:
                raise _OverBudget
            if choose:
                self.index, self.turn, self.error = self.next_turn(self.has_results)
            if self.turn is None:
                s.rt.stderr(f"stuntset: {self.error}\n")
                self.finish_error("error_during_execution", [str(self.error)])
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
                    turn = self.stop_hooks()
            self.finish()
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
            self.finish_error("error_during_execution", [], terminal_reason="aborted_streaming")
        except _OverBudget:
            # Observed (2.1.332): checked after every model response (cost >= budget), and
            # before a turn starts; the result has no ``result`` text.
            self.finish_error(
                "error_max_budget_usd",
                [f"Reached maximum budget (${js_string(s.budget or 0.0)})"],
                terminal_reason="budget_exhausted",
                stop_reason=self.stop_reason,
                total_cost_usd=s.spent,
                usage=usage(self.input_tokens, self.output_tokens),
            )
        except (_NoTurn, HookTurnError) as no_turn:
            s.rt.stderr(f"stuntset: {no_turn}\n")
            self.finish_error("error_during_execution", [str(no_turn)])
        except _HookStopped:
            self.finish(stopped=True)
        except _MaxTurns:
            self.finish_error(
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
        elif kind == "tool_use":
            _, call_id, name, tool_input = op
            self.tool_use(call_id or self.ids.token("toolu_01"), name, tool_input)
        elif kind == "tool_result":
            self.close_message()
            _, output, is_error, call_id = op
            target = call_id or (self.waiting[0] if self.waiting else None)
            if target is not None and target not in self.done:
                self.run_tool(target, output, bool(is_error))
        elif kind == "approval":
            self.close_message()
            _, tool, tool_input, call_id = op
            target = call_id or self.last_call
            if target is None or target not in self.calls:
                target = target or self.ids.token("toolu_01")
                self.calls[target] = {"name": tool or "unknown", "input": tool_input or {}}
                self.waiting.append(target)
            self.check_permission(target)
        elif kind == "ask":
            self.ask(op[1])
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

    def tool_use(self, call_id: str, name: str, tool_input: dict[str, Any]) -> None:
        self.calls[call_id] = {"name": name, "input": tool_input}
        self.waiting.append(call_id)
        self.last_call = call_id
        arguments = dumps(tool_input)
        third = max(1, len(arguments) // 3)
        pieces = [arguments[i : i + third] for i in range(0, len(arguments), third)]
        self.block_out(
            {"type": "tool_use", "id": call_id, "name": name, "input": tool_input},
            {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            [{"type": "input_json_delta", "partial_json": p} for p in pieces],
            0.0,
        )
        self.message_has_tool = True

    def tool_message(self, call_id: str, content: Any, is_error: bool, extra: Any) -> None:
        if call_id in self.waiting:
            self.waiting.remove(call_id)
        self.done.add(call_id)
        self.emit(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": call_id,
                            "type": "tool_result",
                            "content": content,
                            "is_error": is_error,
                        }
                    ],
                },
                "tool_use_result": extra,
            }
        )

    def run_tool(self, call_id: str, output: Any, is_error: bool) -> None:
        if call_id not in self.checked and not self.check_permission(call_id, ask=False):
            return
        call = self.calls.get(call_id, {"name": "unknown", "input": {}})
        content = _content(output)
        extra = {"input": call["input"], "output": output}
        # observed: PostToolUse hooks run (and write their events) before the tool's result
        self.hooks(
            "PostToolUse",
            call["name"],
            {
                "tool_name": call["name"],
                "tool_input": call["input"],
                "tool_response": output,
                "tool_use_id": call_id,
                "duration_ms": 0,
            },
        )
        self.tool_message(call_id, content, is_error, extra)
        if self.hook_stop:
            raise _HookStopped

    def deny(self, call_id: str, message: str) -> None:
        call = self.calls[call_id]
        self.denials.append(
            {"tool_name": call["name"], "tool_use_id": call_id, "tool_input": call["input"]}
        )
        self.tool_message(call_id, message, True, f"Error: {message}")

    def check_permission(self, call_id: str, ask: bool = True) -> bool:
        """Hooks, then the permission rules, then (``ask``) ``can_use_tool``; False if the
        tool was denied (its denial already written)."""
        self.checked.add(call_id)
        call = self.calls[call_id]
        name = call["name"]
        decision = self.hooks(
            "PreToolUse",
            name,
            {"tool_name": name, "tool_input": call["input"], "tool_use_id": call_id},
        )
        if decision == "deny":
            self.deny(call_id, self.hook_denial or f"Hook PreToolUse denied this tool ({name})")
            if self.hook_stop:
                raise _HookStopped
            return False
        if not ask or decision == "allow":
            return True
        s = self.s
        if s.permission_mode == "bypassPermissions" or name in s.allowed:
            return True
        if name in s.disallowed or s.permission_mode == "dontAsk" or not s.stdio_prompt:
            self.deny(
                call_id,
                f"Claude requested permissions to use {name}, but you haven't granted it yet.",
            )
            return False
        answer = s.request(
            {
                "subtype": "can_use_tool",
                "tool_name": name,
                "display_name": name,
                "input": call["input"],
                "permission_suggestions": [],
                "tool_use_id": call_id,
            }
        )
        return self.apply_answer(call_id, answer)

    def apply_answer(self, call_id: str, answer: dict[str, Any] | None) -> bool:
        if answer is None:
            self.deny(call_id, "Stream closed")
            return False
        if answer.get("subtype") == "error":
            self.deny(call_id, f"Tool permission request failed: {answer.get('error')}")
            return False
        body = answer.get("response")
        body = body if isinstance(body, dict) else {}
        allowed = body.get("behavior") == "allow" or body.get("allow") is True
        if allowed:
            updated = body.get("updatedInput", body.get("input"))
            if isinstance(updated, dict):
                self.calls[call_id]["input"] = updated
            return True
        self.deny(call_id, str(body.get("message") or body.get("reason") or "Permission denied"))
        if body.get("interrupt"):
            raise Abort
        return False

    def ask(self, prompt: str) -> None:
        call_id = self.ids.token("toolu_01")
        question = {"question": prompt, "header": "Question", "options": [], "multiSelect": False}
        self.tool_use(call_id, _ASK_TOOL, {"questions": [question]})
        self.close_message()
        self.checked.add(call_id)
        if not self.s.stdio_prompt:
            self.deny(
                call_id,
                f"Claude requested permissions to use {_ASK_TOOL}, but you haven't granted it yet.",
            )
            return
        answer = self.s.request(
            {
                "subtype": "can_use_tool",
                "tool_name": _ASK_TOOL,
                "display_name": _ASK_TOOL,
                "input": {"questions": [question]},
                "permission_suggestions": [],
                "tool_use_id": call_id,
            }
        )
        if not self.apply_answer(call_id, answer):
            return
        answers = self.calls[call_id]["input"].get("answers")
        reply = answers.get(prompt, "") if isinstance(answers, dict) else ""
        text = (
            f'User has answered your questions: "{prompt}"="{reply}". You can now continue '
            f"with the user's answers in mind."
        )
        self.tool_message(call_id, text, False, {"questions": [question], "answers": answers})

    def hooks(self, event: str, tool: str | None, payload: dict[str, Any]) -> str | None:
        """Run the settings' hooks, then the SDK's, for ``event`` (``_process.hooks``); a
        PreToolUse permission decision if any (a hook's deny text in ``hook_denial``)."""
        self.hook_denial = ""
        self.stop_feedback = None
        if self.s.settings_hooks is None and not self.s.hooks.get(event):
            return None
        from stuntset.doubles.cli.claude._process.hooks import run_event

        return run_event(self, event, tool, payload, choose_turn)

    def prompt_id(self) -> str:
        """The id hooks see for this turn's prompt (its own id stream: the turn's ids stay)."""
        if self._prompt_id is None:
            stream = f"{self.s.session_id}/{self.s.turns_in_session}/prompt"
            self._prompt_id = self.s.rt.ids(stream).uuid()
        return self._prompt_id

    # --- endings --------------------------------------------------------------------------

    def init_message(self) -> dict[str, Any]:
        s = self.s
        return {
            "type": "system",
            "subtype": "init",
            "cwd": s.cwd,
            "session_id": s.session_id,
            "tools": s.tools,
            "mcp_servers": [],
            "model": s.model,
            "permissionMode": s.permission_mode,
            "slash_commands": [],
            "apiKeySource": "none",
            "claude_code_version": s.rt.plan["version"],
            "output_style": "default",
            "agents": [],
            "skills": [],
            "plugins": [],
        }

    def durations(self) -> tuple[int, int]:
        api = 10 * self.api_messages
        return int(self.delay_ms) + api + 1, api

    def finish(self, *, stopped: bool = False) -> None:
        """The success result; ``stopped``: a hook ended the turn after an action (observed:
        no ``result`` text, ``stop_reason: "tool_use"``, the next model request counted)."""
        s = self.s
        duration, api = self.durations()
        model_usage = {
            s.model: {
                "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "webSearchRequests": 0,
                "costUSD": s.spent,
                "contextWindow": 200000,
            }
        }
        self.emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "duration_ms": duration,
                "duration_api_ms": api,
                "num_turns": self.api_messages + 1 if stopped else max(1, self.api_messages),
                "result": "" if stopped else self.final_text,
                "stop_reason": "tool_use" if stopped else "end_turn",
                # Observed (2.1.332): total_cost_usd and modelUsage's cost are the process's
                # running total; usage is this turn's
                "total_cost_usd": s.spent,
                "usage": usage(self.input_tokens, self.output_tokens),
                "modelUsage": model_usage,
                "permission_denials": self.denials,
                "terminal_reason": "hook_stopped" if stopped else "completed",
            },
            final=True,
        )
        s.rt.exit_code = 0
        s.state_changed("idle", self.ids)

    def stop_hooks(self) -> dict[str, Any] | None:
        """Run the Stop hooks; if one exited 2, hand its feedback to the model as the CLI does
        and return the scripted turn that answers it (``None``: the turn is over)."""
        self.hooks(
            "Stop",
            None,
            {
                "stop_hook_active": self.stop_hook_active,
                "last_assistant_message": self.final_text,
                "background_tasks": [],
                "session_crons": [],
            },
        )
        feedback = self.stop_feedback
        if feedback is None:
            return None
        self.stop_hook_active = True
        # Observed (2.1.332): a synthetic user message, then a notification, then the model
        # is called again with the feedback (inside a system-reminder).
        stamp = _BASE_TIME + self.delay_ms / 1000
        self.emit(
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "text", "text": feedback}]},
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp))
                + f".{int(stamp * 1000) % 1000:03d}Z",
                "isSynthetic": True,
            }
        )
        self.emit(
            {
                "type": "system",
                "subtype": "notification",
                "key": "stop-hook-error",
                "text": "stop hook problem \u00b7 ctrl+o to see",
                "priority": "immediate",
            }
        )
        self.index, turn, error = choose_turn(self.s, feedback, False)
        if turn is None:
            raise _NoTurn(str(error))
        return turn

    def finish_blocked(self, informational: dict[str, Any]) -> None:
        """A prompt a hook blocked: no model request (the scripted turn is given back)."""
        s = self.s
        if self.index >= 0:

            def give_back(state: dict[str, Any]) -> None:
                state["left"][self.index] += 1

            s.rt.state.update(give_back)
        self.emit(dict(informational))
        duration, _ = self.durations()
        self.emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "duration_ms": duration,
                "duration_api_ms": 0,
                "num_turns": 0,
                "result": informational["content"],
                "stop_reason": None,
                "total_cost_usd": s.spent,
                "usage": usage(0, 0),
                "modelUsage": {},
                "permission_denials": [],
            },
            final=True,
        )
        s.rt.exit_code = 0
        s.state_changed("idle", self.ids)

    def finish_error(self, subtype: str, errors: list[str], **extra: Any) -> None:
        s = self.s
        message = s.result_error(subtype, errors, max(1, self.api_messages), self.ids, **extra)
        duration, api = self.durations()
        message.update(duration_ms=duration, duration_api_ms=api, permission_denials=self.denials)
        message["session_id"] = s.session_id
        s.send(message)
        s.rt.exit_code = 1
        s.state_changed("idle", self.ids)


class _MaxTurns(Exception):
    """``--max-turns`` reached."""


class _NoTurn(Exception):
    """The model was asked again (a Stop hook's feedback) and the script has no turn for it."""


class _OverBudget(Exception):
    """``--max-budget-usd`` spent."""


class _HookStopped(Exception):
    """A hook ended the turn after the action it checked (``continue: false``, or a prompt
    hook's ``ok: false``)."""
