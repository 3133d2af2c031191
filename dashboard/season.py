"""The season's name, which staff type to confirm a flush of its inventory."""

from __future__ import annotations

from booking.domain.rules import season_end, season_start


def season_name() -> str:
    """`YYYY-MM` for a season inside one calendar month (the tests' `2026-12`), otherwise
    `<first day>..<last day>` in ISO form."""
    start, end = season_start(), season_end()
    if (start.year, start.month) == (end.year, end.month):
        return start.strftime("%Y-%m")
    return f"{start.isoformat()}..{end.isoformat()}"
