"""The sales window: the days on sale. Rolling (the default): from tomorrow in the site's zone to
`days` days ahead, moving forward by itself every day; or fixed: a first and a last day. The
store keeps it (staff change it on the dashboard, booking.engine.window); the environment gives
only its first value. Nothing stored depends on it: the inventory is addressed by calendar date
(rules.calendar_day), so a change of the window cannot move or free a sold slot.

Each process keeps the stored window it read last (`window_remember`) and reads it again when it
is older than a few seconds (booking.engine.window.window_refresh, from a middleware)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

MAX_DAYS = 366  # the longest window, rolling or fixed


@dataclass(frozen=True)
class SalesWindow:
    """Rolling (`first` and `last` None: tomorrow to `days` days ahead) or fixed."""

    days: int = 31
    first: dt.date | None = None
    last: dt.date | None = None

    def __post_init__(self) -> None:
        if (self.first is None) != (self.last is None):
            raise ValueError("a fixed window has a first and a last day")
        if not 1 <= self.days <= MAX_DAYS:
            raise ValueError(f"a rolling window is 1 to {MAX_DAYS} days")
        if self.first and self.last and not 0 <= (self.last - self.first).days < MAX_DAYS:
            raise ValueError(f"a fixed window is 1 to {MAX_DAYS} days, first to last")

    @property
    def rolling(self) -> bool:
        return self.first is None

    def bounds(self, today: dt.date) -> tuple[dt.date, dt.date]:
        """The first and last day on sale when it is `today` in the site's zone."""
        if self.first is not None and self.last is not None:
            return self.first, self.last
        return today + dt.timedelta(days=1), today + dt.timedelta(days=self.days)

    def as_fields(self) -> dict[str, str]:
        """The window as the store keeps it (a hash)."""
        return {
            "days": str(self.days),
            "first": self.first.isoformat() if self.first else "",
            "last": self.last.isoformat() if self.last else "",
        }


def window_from_fields(fields: dict[str, str]) -> SalesWindow | None:
    """The stored window, or None when nothing (or something unreadable) is stored."""
    try:
        first, last = fields.get("first") or "", fields.get("last") or ""
        return SalesWindow(
            days=int(fields.get("days") or settings.STRONGROOM_SELL_DAYS),
            first=dt.date.fromisoformat(first) if first else None,
            last=dt.date.fromisoformat(last) if last else None,
        )
    except ValueError:
        return None


_FROM_SETTINGS = ("STRONGROOM_SELL_DAYS", "STRONGROOM_SEASON_START", "STRONGROOM_SEASON_END")
_settings_kept: SalesWindow | None = None


def window_from_settings() -> SalesWindow:
    """The first value, from the environment: fixed when STRONGROOM_SEASON_START/END are set,
    else rolling over STRONGROOM_SELL_DAYS. Built once per change of those settings: a month's
    calendar asks for the window in force about 70 times a request (each day's refusal), and
    each build cost three lazy settings look-ups and the checks of a new SalesWindow."""
    global _settings_kept
    kept = _settings_kept
    if kept is None:
        kept = _settings_kept = SalesWindow(
            days=settings.STRONGROOM_SELL_DAYS,
            first=settings.STRONGROOM_SEASON_START,
            last=settings.STRONGROOM_SEASON_END,
        )
    return kept


def _settings_forget(*, setting: str, **_kwargs: Any) -> None:
    global _settings_kept
    if setting in _FROM_SETTINGS:
        _settings_kept = None


setting_changed.connect(_settings_forget, dispatch_uid="booking.domain.window.settings")


# The stored window this process read last, and when (time.monotonic); None: not read yet.
_stored: SalesWindow | None = None
_read_at: float | None = None


def window_remember(window: SalesWindow | None, *, at: float | None = None) -> None:
    """Keep what the store holds (None: no window stored, the environment's applies)."""
    global _stored, _read_at
    _stored, _read_at = window, time.monotonic() if at is None else at


def window_forget() -> None:
    """Forget what was read (the next refresh reads the store)."""
    global _stored, _read_at
    _stored, _read_at = None, None


def window_age() -> float | None:
    """Seconds since the store's window was read (None: never)."""
    return None if _read_at is None else time.monotonic() - _read_at


def window_current() -> SalesWindow:
    """The window in force: the stored one, else the environment's first value."""
    return _stored or window_from_settings()
