"""The sample plugin's console script and provider."""

from __future__ import annotations

import sys


class EchoProvider:
    name = "echo"


def main() -> int:
    print(f"hello from {__file__}")
    print("args:", " ".join(sys.argv[1:]))
    return 0
