"""Model doubles: one stand-in that speaks every model wire of ``stuntset.wires.WIRES`` (OpenAI
Chat Completions, OpenAI Responses, Anthropic Messages, Gemini) from a script, in-process or
over loopback.

::

    with stuntset.serve(script) as stand_in:          # uvicorn on 127.0.0.1:<free port>
        client = OpenAI(base_url=stand_in.url("openai"), api_key="test")
        anthropic = Anthropic(base_url=stand_in.url("anthropic"), api_key="test")

    transport = stuntset.transport(script)             # httpx2/httpx transport, no socket
    client = OpenAI(http_client=httpx2.Client(transport=transport), api_key="test")
"""

from typing import TYPE_CHECKING

from stuntset.doubles.model.double import ModelDouble
from stuntset.doubles.model.journal import JournalEntry
from stuntset.doubles.model.serve import StandIn, serve
from stuntset.doubles.model.transport import ModelTransport, transport
from stuntset.wires import (
    ANTHROPIC_MESSAGES,
    GEMINI,
    MODEL_WIRES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Framing,
)

if TYPE_CHECKING:
    from stuntset.doubles.model._loopback_server import LoopbackServer


def __getattr__(name: str) -> object:
    # the loopback server (uvicorn) loads on first use: in-process use never needs it
    if name == "LoopbackServer":
        from stuntset.doubles.model._loopback_server import LoopbackServer

        return LoopbackServer
    raise AttributeError(f"module 'stuntset.doubles.model' has no attribute {name!r}")


__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI",
    "MODEL_WIRES",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "Framing",
    "JournalEntry",
    "LoopbackServer",
    "ModelDouble",
    "ModelTransport",
    "StandIn",
    "serve",
    "transport",
]
