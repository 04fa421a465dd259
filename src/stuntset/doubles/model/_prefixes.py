"""The reserved path prefix of the control API, and the prefix and header that address one
of its stages (shared by the double, which routes them, and ``control``)."""

from __future__ import annotations

__all__ = ["CONTROL_PREFIX", "STAGE_HEADER", "STAGE_PREFIX"]

CONTROL_PREFIX = "/_stuntset"
STAGE_PREFIX = "/stages/"
STAGE_HEADER = "x-stuntset-stage"
