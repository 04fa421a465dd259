"""``stuntset console --trace FILE``: a trace (its ``.html`` or ``.jsonl``) served on loopback,
the same self-contained page CI keeps, plus the records at ``/trace.jsonl``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .trace import load_trace, render_trace_html

__all__ = ["TraceViewer", "run_trace_viewer"]


class TraceViewer:
    """The trace at ``path`` served on ``127.0.0.1:port`` (0: a free port) from a thread;
    ``url`` once made, ``close()`` to stop. A bad file is a ``UsageError`` before listening."""

    def __init__(self, path: str | Path, *, port: int = 0) -> None:
        records = load_trace(path)
        page = render_trace_html(records).encode()
        jsonl = "".join(json.dumps(r, default=str) + "\n" for r in records).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                route = self.path.split("?", 1)[0]
                if route in ("/", "/index.html"):
                    self._send(200, "text/html; charset=utf-8", page)
                elif route == "/trace.jsonl":
                    self._send(200, "application/x-ndjson", jsonl)
                else:
                    self._send(404, "text/plain", b"not found: / or /trace.jsonl\n")

            def _send(self, status: int, kind: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        host, bound = self._server.server_address[:2]
        self.url = f"http://{host!s}:{bound}/"
        self._thread: threading.Thread | None = None

    def start(self) -> TraceViewer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="stuntset-trace-viewer", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (Ctrl-C), then stop listening."""
        try:
            self._server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self._server.server_close()

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> TraceViewer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_trace_viewer(path: str, port: int, echo: Callable[[str], None] = print) -> None:
    """Serve the trace until interrupted (Ctrl-C)."""
    viewer = TraceViewer(path, port=port)
    echo(f"stuntset trace viewer on {viewer.url} ({path}); Ctrl-C to stop")
    viewer.serve_forever()
