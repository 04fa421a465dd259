"""In-process use stays light: ``import stuntset; stuntset.transport(...)`` loads no server
or command-line module (the time it takes is measured in bench/README.md, not here)."""

from __future__ import annotations

import subprocess
import sys

SERVER_AND_CLI = ("uvicorn", "click", "rich", "starlette", "h11", "httptools", "websockets")


def test_the_in_process_transport_imports_no_server_or_cli_module() -> None:
    code = (
        "import sys, httpx2, stuntset\n"
        "from stuntset.script import Script, Text\n"
        "t = stuntset.transport(Script.of([Text('hi')]))\n"
        "with httpx2.Client(transport=t, base_url='http://x') as c:\n"
        "    r = c.post('/v1/chat/completions', json={'model': 'm', 'messages': "
        "[{'role': 'user', 'content': 'hi'}]})\n"
        "assert r.status_code == 200, r.text\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(done.stdout.split())
    assert "stuntset" in loaded
    assert loaded.isdisjoint(SERVER_AND_CLI), sorted(loaded & set(SERVER_AND_CLI))


def test_the_loopback_server_loads_when_first_started() -> None:
    code = (
        "import sys, stuntset\n"
        "import stuntset.doubles.model.transport, stuntset.doubles.model.serve\n"
        "assert callable(stuntset.transport) and callable(stuntset.serve)\n"
        "from stuntset.doubles.model import LoopbackServer, serve\n"
        "assert callable(serve)\n"
        "assert 'uvicorn' in sys.modules\n"
        "import stuntset.doubles.model as m\n"
        "try:\n"
        "    m.nothing\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "has no attribute 'nothing'" in done.stdout
