"""`stuntset serve --verdicts` as a real process: a client in any language reads what the
double judged at GET /stuntset/verdicts, and the server prints the verdicts when it stops."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from test_serve_hardening import Served

SCRIPT = (
    '{"turns":[{"steps":[{"kind":"rate_limit","retry_after":1.0,"retry_after_ms":null}]},'
    '{"steps":[{"kind":"text","text":"ok"}]}]}'
)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.slow
def test_serve_verdicts_judges_an_impatient_client(tmp_path: Path) -> None:
    script = tmp_path / "limited.json"
    script.write_text(SCRIPT)
    server = Served("--script", str(script), "--verdicts")
    try:
        with httpx2.Client(base_url=server.base, timeout=20) as client:
            statuses = [
                client.post("/openai/v1/chat/completions", json=BODY).status_code for _ in range(2)
            ]
            assert statuses == [429, 200]
            judged = client.get("/stuntset/verdicts").json()
            assert judged["requests"] == 2
            (verdict,) = judged["verdicts"]
            assert verdict["rule"] == "retry_after_ignored"
            assert "after a 429, Retry-After asked 1.00 s (request #0" in verdict["message"]
            ignored = client.get("/stuntset/verdicts?ignore=retry_after_ignored").json()
            assert ignored["verdicts"] == []
            bad = client.get("/stuntset/verdicts?max_attempts=many")
            assert bad.status_code == 400
            assert "max_attempts='many' is not a number" in bad.json()["error"]
    finally:
        err = server.stop()
    assert "stuntset serve: resilience: 1 rule(s) broken:" in err
    assert "  retry_after_ignored: retried " in err
