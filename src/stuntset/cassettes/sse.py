"""The server-sent-events parser, where cassettes have always imported it from: it lives with
the wires (``stuntset.wires``), as the framing of their streams."""

from __future__ import annotations

from stuntset.wires import SseParser, parse_sse

__all__ = ["SseParser", "parse_sse"]
