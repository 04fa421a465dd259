"""Tests of the doubles with an httpx-era client (openai 1.x). They run only in the separate
legacy environment (`make legacy`: .venv-legacy, uv group `legacy`); the main environment's
openai is 3.x, so there they are not collected at all."""

from __future__ import annotations

import openai

collect_ignore_glob = [] if openai.__version__.startswith("1.") else ["test_*.py"]
