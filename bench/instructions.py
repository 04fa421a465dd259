"""``python -m bench.instructions [serve|floor|bare] [--requests N]``: the instructions a server
process executes per request, counted by callgrind (valgrind must be installed).

The wall clock of this shared 2-core machine swings 2× from run to run; an instruction count
does not. The server runs under callgrind, answers 300 keep-alive requests (warm-up), its
counters are zeroed, it answers ``N`` more, they are dumped: the total over ``N``. The request
is the ``serve_load`` cases' (a non-streamed chat turn on one connection).

- ``serve``: ``stuntset serve`` (default flags);
- ``floor``: the load cases' floor, uvicorn (httptools) + a raw ASGI app answering the same
  bytes (``bench/cases/_floor_server.py``);
- ``bare``: an ``asyncio.Protocol`` on httptools writing the same bytes from its
  ``on_message_complete`` (what the event loop, the socket and the parser cost alone).
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.cases.serve_load import REQUEST, _answer

BARE = """
import asyncio, socket, sys
import httptools
body = open(sys.argv[1], "rb").read()
reply = b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: %d\\r\\n\\r\\n%s" % (
    len(body), body)
class Bare(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.parser = transport, httptools.HttpRequestParser(self)
    def data_received(self, data):
        self.parser.feed_data(data)
    def on_message_complete(self):
        self.transport.write(reply)
async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"bare on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server = await asyncio.get_running_loop().create_server(Bare, sock=sock)
    await server.serve_forever()
try:
    asyncio.run(main())
except KeyboardInterrupt:
    pass
"""


def _port(line: bytes) -> int:
    return int(line.decode().split("://", 1)[1].split(":", 1)[1].split("/", 1)[0])


def _requests(port: int, count: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            sock.sendall(REQUEST)
            data = b""
            while True:
                data += sock.recv(65536)
                head, found, body = data.partition(b"\r\n\r\n")
                length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
                if found and length and len(body) >= int(length.group(1)):
                    break


def _canned(folder: Path) -> Path:
    """The body ``stuntset serve`` answers (asked of a server not under valgrind)."""
    serve = subprocess.Popen(
        [sys.executable, "-m", "stuntset.cli", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert serve.stdout is not None
    try:
        path = folder / "answer.json"
        path.write_bytes(_answer(_port(serve.stdout.readline())))
        return path
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(30)


def measure(which: str, requests: int) -> float:
    """Instructions per request of the ``which`` server."""
    folder = Path(tempfile.mkdtemp(prefix="stuntset-callgrind-"))
    if which == "serve":
        argv = [sys.executable, "-m", "stuntset.cli", "serve"]
    elif which == "floor":
        argv = [sys.executable, "-m", "bench.cases._floor_server", str(_canned(folder))]
    else:
        argv = [sys.executable, "-c", BARE, str(_canned(folder))]
    out = folder / "callgrind.out"
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdout is not None
    try:
        port = _port(server.stdout.readline())
        _requests(port, 300)
        subprocess.run(
            ["callgrind_control", "--zero", str(server.pid)], check=True, capture_output=True
        )
        _requests(port, requests)
        subprocess.run(
            ["callgrind_control", "--dump", str(server.pid)], check=True, capture_output=True
        )
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(120)
    for dump in sorted(folder.glob("callgrind.out*")):
        text = dump.read_text(errors="replace")
        if re.search(r"^desc: Trigger: Client Request: dump|^desc: Trigger: dump", text, re.M):
            total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            assert total is not None
            shutil.rmtree(folder, ignore_errors=True)
            return int(total.group(1)) / requests
    raise RuntimeError(f"no dump made by callgrind_control in {folder}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("servers", nargs="*", default=["serve", "floor", "bare"])
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("error: valgrind (callgrind) is not installed", file=sys.stderr)
        return 2
    unknown = [name for name in args.servers if name not in ("serve", "floor", "bare")]
    if unknown:
        print(f"error: unknown server(s) {unknown}; known: serve, floor, bare", file=sys.stderr)
        return 2
    for name in args.servers:
        print(f"{name}: {measure(name, args.requests):,.0f} instructions per request", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
