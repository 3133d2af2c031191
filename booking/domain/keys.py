"""The keys of one room and the composite score of the date index (names come from keyspace)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from booking.domain.formats import months_arg, request_months
from booking.domain.rules import CLASS_DIGIT, format_room, month_name
from strongroom import keyspace as ks

# score = YYYY * 10^7 + day of year * 10^4 + class digit * 10^3 + room: 11 digits < 2^53.
YEAR_FACTOR = 10**7
DAY_FACTOR = 10**4
CLASS_FACTOR = 10**3


@dataclass(frozen=True)
class RoomKeys:
    """Every key of one room (they share the hash tag {room:NNN})."""

    room: int

    @property
    def tag(self) -> str:
        return format_room(self.room)

    def named(self, names: tuple[str, ...], **given: str) -> dict[str, str]:
        """The room's keys a call names (a call spec's `keys`), each the property of that name;
        the keys that need more than the room (an inventory, a record) are `given`."""
        keys = {name: given[name] if name in given else getattr(self, name) for name in names}
        wrong = [name for name, key in keys.items() if not isinstance(key, str)]
        if wrong or set(given) - set(names):
            raise ValueError(f"no room key {sorted(wrong) or sorted(set(given) - set(names))}")
        return keys

    def inventory(self, cls: str, month: dt.date | str) -> str:
        """The bitmap of `cls` for a calendar month (a date in it, or its 'YYYY-MM' name)."""
        name = month if isinstance(month, str) else month_name(month)
        return ks.BOOKING_INVENTORY.key(room=self.tag, cls=cls, month=name)

    def inventories(self, cls: str, dates: Iterable[dt.date]) -> tuple[list[str], str]:
        """The bitmaps of `cls` holding `dates` (one per calendar month, in order) and the
        months as the functions read them (`formats.months_arg`)."""
        months = request_months(dates)
        return [self.inventory(cls, m) for m in months], months_arg(months)

    @property
    def edition(self) -> str:
        """Set anew by every function that writes a key of the room (kept pieces)."""
        return ks.BOOKING_EDITION.key(room=self.tag)

    @property
    def closures(self) -> str:
        return ks.BOOKING_CLOSURES.key(room=self.tag)

    @property
    def registry(self) -> str:
        return ks.BOOKING_REGISTRY.key(room=self.tag)

    def record(self, booking_id: str) -> str:
        return ks.BOOKING_RECORD.key(room=self.tag, booking_id=booking_id)

    @property
    def ledger(self) -> str:
        return ks.BOOKING_LEDGER.key(room=self.tag)

    @property
    def codes(self) -> str:
        return ks.BOOKING_CODES.key(room=self.tag)

    @property
    def holds(self) -> str:
        return ks.BOOKING_HOLDS.key(room=self.tag)

    @property
    def hold_days(self) -> str:
        return ks.BOOKING_HOLD_DAYS.key(room=self.tag)

    @property
    def hold_streaks(self) -> str:
        return ks.BOOKING_HOLD_STREAKS.key(room=self.tag)

    @property
    def gone(self) -> str:
        return ks.BOOKING_GONE.key(room=self.tag)

    @property
    def unindexed(self) -> str:
        return ks.BOOKING_UNINDEXED.key(room=self.tag)

    @property
    def moves(self) -> str:
        """Bookings moving in from another room, not yet decided."""
        return ks.BOOKING_MOVES.key(room=self.tag)

    def pickup_failures(self, client: str) -> str:
        """Wrong codes of one client (address) in this room."""
        return ks.BOOKING_PICKUP_FAILURES.key(room=self.tag, client=client)

    @property
    def audit(self) -> str:
        return ks.BOOKING_AUDIT.key(room=self.tag)

    @property
    def stats(self) -> str:
        return ks.BOOKING_STATS.key(room=self.tag)

    @property
    def outbox(self) -> str:
        return ks.BOOKING_OUTBOX.key(room=self.tag)

    @property
    def refs(self) -> str:
        return ks.BOOKING_REFS.key(room=self.tag)

    @property
    def waits(self) -> str:
        return ks.BOOKING_WAITS.key(room=self.tag)

    @property
    def wait_notices(self) -> str:
        return ks.BOOKING_WAIT_NOTICES.key(room=self.tag)


def person_index(owner_id: str) -> str:
    return ks.BOOKING_BY_PERSON.key(owner_id=owner_id)


def hold_of(owner_id: str) -> str:
    """The buyer's live hold id (one per buyer)."""
    return ks.BOOKING_HOLD_OF.key(owner_id=owner_id)


def pace_of(owner_id: str) -> str:
    """The buyer's bookings of the last hour (counted by the claim, or by booking_pace)."""
    return ks.BOOKING_PACE.key(owner_id=owner_id)


def pickup_client_failures(client: str) -> str:
    return ks.PICKUP_CLIENT_FAILURES.key(client=client)


def person_score(dates: tuple[dt.date, ...]) -> int:
    """The person index's score: the last booked day as YYYYMMDD (upcoming = score >= today)."""
    return day_number(max(dates))


def day_number(date: dt.date) -> int:
    return date.year * 10000 + date.month * 100 + date.day


def date_index(room: int) -> str:
    """The shard of the date index that holds `room`'s bookings."""
    return ks.BOOKING_BY_DATE.key(shard=room % ks.DATE_INDEX_SHARDS)


def date_indexes() -> list[str]:
    """Every shard of the date index (a range over the building reads them all)."""
    return [ks.BOOKING_BY_DATE.key(shard=shard) for shard in range(ks.DATE_INDEX_SHARDS)]


def date_score(date: dt.date, cls: str | None = None, room: int = 0) -> int:
    """The composite score: date first, then class (A=1, B=2, C=3), then room."""
    day = date.year * YEAR_FACTOR + date.timetuple().tm_yday * DAY_FACTOR
    return day + (CLASS_DIGIT[cls] * CLASS_FACTOR if cls else 0) + room


def date_member(booking_id: str, date: dt.date) -> str:
    return f"{booking_id}/{date.isoformat()}"


def member_booking_id(member: str) -> str:
    return member.split("/", 1)[0]
