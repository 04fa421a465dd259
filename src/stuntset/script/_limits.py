"""Rate limits: what a model API reports about the account's quota with each response.

Codex reads them from the Responses API's ``x-codex-*`` response headers and shows them to
its client as ``account/rateLimits/updated``. A script sets them for one turn
(``Turn.rate_limits``) or for every turn without its own (``Script.rate_limits``); the
Responses model double sends them as those headers and the fake ``codex`` as those
notifications, so the same script shows the same values on the real binary and the fake::

    [rate_limits]                                 # every turn of the script
    primary = { used_percent = 42.5, window_minutes = 300, resets_at = 1767240000 }
    secondary = { used_percent = 7, window_minutes = 10080 }
    credits = { has_credits = true, balance = "12.50" }

    [[turns]]
    rate_limits = { primary = { used_percent = 99 } }   # this turn's responses
    steps = [{ text = "hi" }]
"""

from __future__ import annotations

import math
import re

import msgspec

__all__ = ["RateLimitCredits", "RateLimitWindow", "RateLimits"]

_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")


class RateLimitWindow(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One limit window: how much of it is used (percent, 0–100), how long it is (minutes)
    and when it resets (Unix seconds). Codex shows the percent rounded to a whole number."""

    used_percent: float
    window_minutes: int | None = None
    resets_at: int | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.used_percent) and 0 <= self.used_percent <= 100):
            raise ValueError(
                f"used_percent must be a percentage from 0 to 100, got {self.used_percent!r}"
            )
        if self.window_minutes is not None and self.window_minutes < 1:
            raise ValueError(
                f"window_minutes must be at least 1 (the window's length in minutes), "
                f"got {self.window_minutes!r}"
            )
        if self.resets_at is not None and self.resets_at < 0:
            raise ValueError(
                f"resets_at must be a Unix time in seconds (not negative), got {self.resets_at!r}"
            )


class RateLimitCredits(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """The account's credits: whether it has any, whether they are unlimited, and the
    balance as the decimal text the API sends (``"12.50"``)."""

    has_credits: bool
    unlimited: bool = False
    balance: str | None = None

    def __post_init__(self) -> None:
        if self.balance is not None and not _DECIMAL.fullmatch(self.balance):
            raise ValueError(
                f"balance must be a decimal number written as text, like '12.50', got "
                f"{self.balance!r}"
            )


class RateLimits(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """What the API reports with a response: the primary and secondary limit windows (for
    Codex, the 5-hour and the weekly one) and the credits. At least one must be given."""

    primary: RateLimitWindow | None = None
    secondary: RateLimitWindow | None = None
    credits: RateLimitCredits | None = None

    def __post_init__(self) -> None:
        if self.primary is None and self.secondary is None and self.credits is None:
            raise ValueError(
                "rate_limits needs primary, secondary or credits (an empty table reports "
                "nothing; leave it out instead)"
            )
