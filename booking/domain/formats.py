"""The formats the booking Lua and Python share, declared once on each side: the hold value, the
booking record's fields, the wait member and notice, the slots a call found taken, the room's
outbox entries, and the stats hash's version, day width and field names. The booking Lua
(booking/lua/booking/common.lua) declares the same lists under the same names;
tests/booking/domain/test_booking_formats.py reads them from the Lua and checks that they agree.
The call specs (KEYS, ARGV, reply status words and fields by name) live with the engine module
that makes each call."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from booking.domain.rules import calendar_day, month_first, month_length, month_name

if TYPE_CHECKING:
    from booking.domain.parser import SlotRequest

DAY_WIDTH = 7  # digits of one day in a per-day stats field
STATS_VERSION = "1"  # the `v` of an exact stats hash
HOLD_FIELDS = ("expiry", "owner", "cls", "days", "hstart", "hend", "boxes")  # joined by '|'
# The owner of a priority hold placed but not yet granted in the buyer's own slot: this, then
# the person id ("pending:12"). No owner id has a ':', so it blocks everyone, that person too.
PRIORITY_PENDING = "pending:"
# The fields of a booking record as the claim writes them; cancel and pickup add LATER ones
# (and records made before codes were derived carry `code_sealed`).
RECORD_FIELDS = (
    "id", "owner", "cls", "room", "months", "days", "dates", "hstart", "hend", "boxes",
    "created", "status", "code_mac", "code_n", "collected", "inv", "made", "ref",
)  # fmt: skip
RECORD_LATER_FIELDS = (
    "cancelled_at", "cancelled_by", "cancel_reason", "cancel_request", "pickup_attempt",
    "collected_at",
    "code_sealed", "seq", "move_request", "moved_at", "moved_by", "uid_dates", "uid_id",
    "moved_to", "moved_from", "move_abort", "handed_by", "handed_at", "handed_note",
    "handed_request", "unsure",
)  # fmt: skip
WAIT_FIELDS = ("person", "cls", "day", "hstart", "hend", "box")  # a wait member, by '|'
NOTICE_FIELDS = ("told", "hold_id", "expiry", "room")  # a told wait's notice, by '|'
TAKEN_FIELDS = ("day", "box", "mask", "held")  # a slot found taken, by ':'
# The room's outbox entries: the kind, then its fields, joined by '|'.
OUTBOX_CONFIRM = ("confirm", "booking_id", "owner")
OUTBOX_CANCEL = ("cancel", "booking_id")
OUTBOX_FREED = ("freed", "room", *WAIT_FIELDS, "told")
OUTBOX_MOVED = ("moved", "booking_id", "sequence")
# A booking cancelled by its buyer's account deletion, to the address they had (percent-encoded
# name and address: the person is gone when it is sent); by: "staff" when staff deleted the
# account, else "" (the buyer did; also an entry queued before the field was added).
OUTBOX_CANCEL_TO = ("cancel_to", "booking_id", "lang", "name", "address", "by")
# A closure of a room (its value in the room's closures), by '|': days as calendar day numbers.
CLOSURE_FIELDS = ("first", "last", "hstart", "hend", "reason")
OUTBOX_ENTRIES = {
    entry[0]: entry
    for entry in (OUTBOX_CONFIRM, OUTBOX_CANCEL, OUTBOX_FREED, OUTBOX_MOVED, OUTBOX_CANCEL_TO)
}
# What the Lua declares, by its name there (for the test that the two sides agree).
DECLARED = {
    "HOLD_FIELDS": HOLD_FIELDS,
    "RECORD_FIELDS": RECORD_FIELDS,
    "WAIT_FIELDS": WAIT_FIELDS,
    "NOTICE_FIELDS": NOTICE_FIELDS,
    "TAKEN_FIELDS": TAKEN_FIELDS,
    "OUTBOX_CONFIRM": OUTBOX_CONFIRM,
    "OUTBOX_CANCEL": OUTBOX_CANCEL,
    "OUTBOX_CANCEL_TO": OUTBOX_CANCEL_TO,
    "OUTBOX_FREED": OUTBOX_FREED,
    "OUTBOX_MOVED": OUTBOX_MOVED,
    "CLOSURE_FIELDS": CLOSURE_FIELDS,
}


def fields_split(text: str, names: tuple[str, ...], sep: str = "|") -> dict[str, str]:
    """A joined value as its named fields; a value with another number of fields is refused."""
    parts = text.split(sep)
    if len(parts) != len(names):
        raise ValueError(f"not {sep.join(names)}: {text[:40]!r}")
    return dict(zip(names, parts, strict=True))


def fields_join(values: Mapping[str, object], names: tuple[str, ...], sep: str = "|") -> str:
    """The named values joined in the order of `names` (every name must have a value)."""
    return sep.join(str(values[name]) for name in names)


def hold_value_split(value: str) -> dict[str, str]:
    """A hold's stored value as its named fields (HOLD_FIELDS)."""
    return fields_split(value, HOLD_FIELDS)


def outbox_fields(kind: str, args: list[str]) -> dict[str, str]:
    """An outbox entry's arguments (after its kind) by name; an entry queued before a field
    was added lacks it ('')."""
    names = OUTBOX_ENTRIES[kind][1:]
    return {name: args[i] if i < len(args) else "" for i, name in enumerate(names)}


@dataclass(frozen=True)
class OutboxSubject:
    """What a room's outbox entry is about, for staff: a booking, or the waiting list of a
    person (a freed slot); neither for an entry this version does not know."""

    booking_id: str = ""
    person_id: str = ""


def outbox_subject(member: str) -> OutboxSubject:
    """The booking (receipt, cancellation, move, reminder) or the waiting person (a freed slot)
    a room's outbox entry is about."""
    kind, *args = member.split("|")
    if kind == "remind":  # remind|<booking_id>|<first day> (booking.engine.reminders)
        return OutboxSubject(booking_id=args[0] if args else "")
    if kind not in OUTBOX_ENTRIES:
        return OutboxSubject()
    fields = outbox_fields(kind, args)
    return OutboxSubject(fields.get("booking_id", ""), fields.get("person", ""))


def format_shown(names: tuple[str, ...], sep: str = "|", kind: str = "") -> str:
    """A format as the keyspace documents it: 'confirm|<booking_id>|<owner>'."""
    return "'" + sep.join([*([kind] if kind else []), *(f"<{n}>" for n in names)]) + "'"


def request_months(dates: Iterable[dt.date]) -> tuple[dt.date, ...]:
    """The calendar months (their first days, in order) that `dates` fall in: the inventory
    keys one call passes, one per month."""
    return tuple(sorted({month_first(d) for d in dates}))


def months_arg(months: Iterable[dt.date]) -> str:
    """The months of a call's inventory keys as the booking Lua reads them (same order as the
    keys): 'YYYY-MM/<calendar day of the 1st>/<days in the month>', comma-joined."""
    return ",".join(f"{month_name(m)}/{calendar_day(m)}/{month_length(m)}" for m in months)


def stats_field(kind: str, month: str, cls: str, detail: str = "") -> str:
    """The name of a stats hash field as the booking Lua writes it: `slots` and `active` (per-day
    fields), `status` (detail: the status) and `made` (detail: the local creation date)."""
    if kind in ("slots", "active"):
        return f"{kind}:{month}:{cls}"
    if kind in ("status", "made") and detail:
        return f"{kind}:{month}:{cls}:{detail}"
    raise ValueError(f"no stats field {kind!r}")


def request_args(request: SlotRequest) -> dict[str, object]:
    """The request as the functions take it: cls, days "3,4", hstart, hend, boxes "1,2"."""
    start, end = request.hours or (0, 0)
    return {
        "cls": request.cls,
        "days": ",".join(str(d) for d in request.days),
        "hstart": str(start),
        "hend": str(end),
        "boxes": ",".join(str(b) for b in request.boxes),
    }
