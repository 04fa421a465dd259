"""Faults of the fake ``claude``: what the CLI shows for each catalog failure.

Loaded only when a fault plays (runs in the fake process: built-ins only, see ``_runtime``).

* API errors (after the CLI's own retries): a synthetic ``assistant`` (model
  ``<synthetic>``, ``error`` set) and an ``is_error`` result with ``api_error_status`` and
  ``terminal_reason: "api_error"``; the process goes on, and exits 1 at EOF.
* ``cut``: half of the line that would come next, then exit (1, or 0 when clean).
* ``malformed`` / ``garbage``: the line or bytes as given; the turn ends without a result.
* ``out_of_order``: a tool result for a call never made, the result, then more content.
* ``stall``: nothing until an interrupt (or for ever after stdin EOF).
* ``exit``: stderr, then exit with the code, mid-turn.
"""

from __future__ import annotations

from stuntset.doubles.cli._runtime import dumps
from stuntset.doubles.cli.claude._process.common import usage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.claude._process.turn import TurnRun

__all__ = ["render_fault"]


def render_fault(run: TurnRun, op: tuple[Any, ...]) -> bool:
    """Render a fault op (it ends the turn); True: the turn is over."""
    s = run.s
    rt = s.rt
    kind = op[0]
    if kind == "api_error":
        _, status, error_type, text, assistant_error = op
        body = dumps({"type": "error", "error": {"type": error_type, "message": text}})
        prose = f"API Error: {status} {body}"
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
            }
        )
        duration, api = run.durations()
        run.emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": status,
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
        return True
    rt.exit_code = 1
    if kind == "cut":
        line = dumps(_result_preview(run)) + "\n"
        rt.journal.write("cut", partial=line[: len(line) // 2])
        rt.write_bytes(line[: len(line) // 2].encode())
        rt.exit(0 if op[1] else 1)
    elif kind == "malformed":
        rt.journal.write("malformed", text=op[1])
        rt.write_bytes((op[1] + "\n").encode())
    elif kind == "garbage":
        rt.journal.write("garbage", data=op[1].decode("utf-8", "replace"))
        rt.write_bytes(op[1])
    elif kind == "out_of_order":
        run.tool_message("toolu_01NEVERSTARTED", "a result for a call never made", False, None)
        run.finish()
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
    elif kind == "stall":
        s.wait(None)
    elif kind == "exit":
        _, code, stderr = op
        if stderr:
            rt.stderr(stderr if stderr.endswith("\n") else stderr + "\n")
        rt.exit(code)
    return True


def _result_preview(run: TurnRun) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": run.final_text,
        "session_id": run.s.session_id,
    }
