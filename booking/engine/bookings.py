"""Reads of bookings and holds: one by id, a buyer's bookings a page at a time, by date, and
the sets a room's statistics are rebuilt from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace

import redis

from booking.domain.keys import (
    CLASS_FACTOR,
    DAY_FACTOR,
    RoomKeys,
    date_indexes,
    date_score,
    day_number,
    hold_of,
    member_booking_id,
    person_index,
)
from booking.domain.parser import SlotRequest
from booking.domain.records import (
    Booking,
    Hold,
    booking_from_hash,
    booking_taking,
    hold_value_parse,
)
from booking.domain.rules import (
    CLASS_DIGIT,
    CLASSES,
    booking_id_room,
    calendar_date,
)
from booking.engine.indexes import indexes_read, indexes_read_commands, records_by_id
from booking.engine.moves_rooms import move_finish
from booking.engine.unsure import record_confirmed, unsure_forget
from strongroom.ahead import Command, command, pipeline_replies
from strongroom.clock import from_ms, to_ms
from strongroom.decoders import text, text_hash, text_list, text_or_none
from strongroom.durable import NotDurable


def booking_read(*, booking_id: str) -> list[Command]:
    """What `booking_get` reads (nothing for a malformed id)."""
    room = booking_id_room(booking_id)
    return [] if room is None else [command("HGETALL", RoomKeys(room).record(booking_id))]


MOVE_HOPS = 50  # a booking moved across rooms more often than this is not followed further


def booking_get(*, client: redis.Redis, booking_id: str) -> Booking | None:
    """One booking, or None (also for a malformed id); one HGETALL unless read ahead."""
    read = booking_read(booking_id=booking_id)
    if not read:
        return None
    (reply,) = pipeline_replies(client, read)
    data = text_hash(reply)
    origin: dict[str, str] | None = None
    for _hop in range(MOVE_HOPS):
        if data.get("status") != "moved" or not booking_read(booking_id=data.get("moved_to", "")):
            break
        # Moved to another room: the booking lives on under its new id (old links still work).
        (moved,) = pipeline_replies(client, booking_read(booking_id=data["moved_to"]))
        origin, data = data, text_hash(moved)
    if origin is not None and data.get("status") == "pending":
        # The old room decided and the new one has not confirmed yet: finished here, rather
        # than the booking missing for its owner and staff until the recovery; but only once
        # the old room's decision is known to be safe (its primary confirms it: a durable call
        # there), else a failover could bring the old booking back beside the new one. Until
        # then it is shown as not confirmed yet, without a code.
        if _decision_durable(client, origin):
            finished = move_finish(client=client, old=origin, new=data)
            if finished is not None and data.get("unsure"):
                # Both rooms' steps are confirmed now: the mark its mover left goes.
                unsure_forget(client=client, booking_id=finished.id)
                finished = replace(finished, unsure=False)
            if finished is not None:
                return finished
            # Not this reader's to finish (another reader or the mover did, a moment ago):
            # the booking as the new room holds it now, not missing (a 404 in a race).
            (now_there,) = pipeline_replies(client, booking_read(booking_id=origin["moved_to"]))
            data = text_hash(now_there)
        else:
            pending = booking_from_hash(data)
            if pending is not None:
                return replace(pending, status="confirmed", unsure=True)
    found = booking_from_hash(data)
    return found if found is not None and found.status not in ("pending", "moved") else None


def _decision_durable(client: redis.Redis, old: dict[str, str]) -> bool:
    """Whether the old room's record of a move (its decision) is confirmed durable now."""
    try:
        return record_confirmed(client=client, booking_id=old.get("id", ""))
    except NotDurable:
        return False


def bookings_listed(*, client: redis.Redis, ids: Sequence[str]) -> list[Booking]:
    """The bookings of `ids` as a list shows them (see `indexes.bookings_by_id`), and one
    whose move to another room is half way (its old id still listed, the new room's record
    pending: a mover that fell short or died between the steps) finished and listed under its
    new id, as `booking_get` does, rather than missing until the recovery. Each once."""
    listed: dict[str, Booking] = {}
    for found in records_by_id(client=client, ids=ids):
        booking: Booking | None = found
        if found.status == "moved" and found.moved_to:
            booking = booking_get(client=client, booking_id=found.id)  # follows, finishes
        if booking is not None and booking.status not in ("pending", "moved"):
            listed.setdefault(booking.id, booking)
    return list(listed.values())


@dataclass(frozen=True)
class BookingPage:
    """One page of a person's bookings: upcoming first (soonest last day first), then the
    earlier ones (latest first). `total`: all of them; `upcoming`: how many are upcoming."""

    bookings: list[Booking]
    total: int
    upcoming: int
    offset: int
    limit: int

    @property
    def has_next(self) -> bool:
        return self.offset + self.limit < self.total


# A page reads the records of up to this many upcoming bookings, so that the live ones come
# first across pages (the index orders by last day and cannot tell a cancelled one).
UPCOMING_SORTED_MAX = 500


def bookings_page_read(
    *, owner_id: str, today: dt.date, limit: int = 20, offset: int = 0
) -> list[Command]:
    """The index reads of `bookings_page` (counts and both ranges)."""
    limit, offset = max(1, limit), max(0, offset)
    key, day = person_index(owner_id), day_number(today)
    return [
        command("ZCARD", key),
        command("ZCOUNT", key, day, "+inf"),
        # Every upcoming one (up to UPCOMING_SORTED_MAX), or the page's share of them.
        command(
            "ZRANGEBYSCORE", key, day, "+inf", "LIMIT", 0, max(UPCOMING_SORTED_MAX, offset + limit)
        ),
        # The page's earlier part starts at offset - upcoming, unknown yet: read up to its end.
        command("ZREVRANGEBYSCORE", key, f"({day}", "-inf", "LIMIT", 0, offset + limit),
    ]


def bookings_page(
    *,
    client: redis.Redis,
    owner_id: str,
    today: dt.date,
    limit: int = 20,
    offset: int = 0,
) -> BookingPage:
    """A page of a person's bookings, every one reachable: upcoming (last day from `today` on)
    by last day, the live ones before the cancelled ones, then the earlier ones newest first.
    Two round trips: the index (counts and both ranges in one pipeline; see
    `indexes_read_commands`), then the records: of every upcoming one, so that a cancelled
    booking never pushes a live one off the first pages (beyond UPCOMING_SORTED_MAX upcoming,
    in the index's order and only the page's)."""
    limit, offset = max(1, limit), max(0, offset)
    reads = bookings_page_read(owner_id=owner_id, today=today, limit=limit, offset=offset)
    total, upcoming, soon, earlier = indexes_read(client=client, reads=reads)
    soon_ids = text_list(soon)
    sorted_all = int(upcoming) <= UPCOMING_SORTED_MAX
    if not sorted_all:
        soon_ids = soon_ids[offset : offset + limit]
    shown_soon = min(limit, max(0, int(upcoming) - offset))
    first_earlier = max(0, offset - int(upcoming))
    earlier_ids = text_list(earlier)[first_earlier : first_earlier + limit - shown_soon]
    listed = bookings_listed(client=client, ids=soon_ids + earlier_ids)
    coming = [b for b in listed if b.dates and b.dates[-1] >= today]
    past = [b for b in listed if not (b.dates and b.dates[-1] >= today)]
    if sorted_all:
        # Stable: the index's order (by last day) within the live ones and the cancelled ones.
        coming.sort(key=lambda b: b.status == "cancelled")
        coming = coming[offset : offset + limit]
    return BookingPage((coming + past)[:limit], int(total), int(upcoming), offset, limit)


def bookings_of_read(
    *, client: redis.Redis, owner_id: str, limit: int = 50, offset: int = 0
) -> list[Command]:
    """What `bookings_of` reads first (its index), to send with other reads."""
    read = command("ZREVRANGE", person_index(owner_id), offset, offset + limit - 1)
    return indexes_read_commands(client=client, reads=[read])


def bookings_of(
    *, client: redis.Redis, owner_id: str, limit: int = 50, offset: int = 0
) -> list[Booking]:
    """A person's bookings, latest last day first (the person index, then the records)."""
    key = person_index(owner_id)
    (ids,) = indexes_read(
        client=client, reads=[command("ZREVRANGE", key, offset, offset + limit - 1)]
    )
    return bookings_listed(client=client, ids=text_list(ids))


def _since_read(owner_id: str, since: dt.date) -> Command:
    # The index's score is the booking's last day.
    return command("ZRANGEBYSCORE", person_index(owner_id), day_number(since), "+inf")


def bookings_in_room_since_read(
    *, client: redis.Redis, owner_id: str, since: dt.date
) -> list[Command]:
    """What `bookings_in_room_since` reads first (the index), to send with other reads."""
    return indexes_read_commands(client=client, reads=[_since_read(owner_id, since)])


def bookings_in_room_since(
    *, client: redis.Redis, owner_id: str, room: int, since: dt.date
) -> list[Booking]:
    """The owner's bookings in `room` whose last day is `since` or later: the ids of their
    person index from that day on, then the records of those in this room (an id names its
    room; none read when there are none)."""
    (ids,) = indexes_read(client=client, reads=[_since_read(owner_id, since)])
    here = [i for i in text_list(ids) if booking_id_room(i) == room]
    return bookings_listed(client=client, ids=here)


def booking_covering(
    *,
    client: redis.Redis,
    owner_id: str,
    room: int,
    cls: str,
    dates: Sequence[dt.date],
    hours: tuple[int, int] | None = None,
    boxes: Sequence[int] = (),
    own: Sequence[Booking] | None = None,
) -> Booking | None:
    """The owner's own live booking that takes any of these slots (the room and class, any of
    `dates`, for B and C any of `hours`, for C any of `boxes`), or None: what the booking page
    names as the buyer's own, and what nobody waits for. `own`: the owner's bookings in the
    room as `bookings_in_room_since` read them from the first of `dates` or earlier (else read
    here)."""
    if not dates:
        return None
    if own is None:
        own = bookings_in_room_since(client=client, owner_id=owner_id, room=room, since=min(dates))
    return booking_taking(own, cls=cls, room=room, dates=dates, hours=hours, boxes=boxes)


def bookings_between(
    *,
    client: redis.Redis,
    start: dt.date,
    end: dt.date,
    cls: str | None = None,
    limit: int = 500,
) -> list[Booking]:
    """Bookings with a day from `start` to `end` (and of class `cls`), by date, class, room.
    One ZRANGEBYSCORE per shard of the date index (one pipeline), then the records."""
    if cls is not None and cls not in CLASSES:
        raise ValueError(f"no class {cls!r}")
    if end < start:
        return []

    low = date_score(start)
    high = date_score(end) + DAY_FACTOR - 1
    # The date index is sharded by room: every shard is read, then merged in score order.
    reads = [
        command("ZRANGEBYSCORE", shard, low, high, "WITHSCORES", withscores=True)
        for shard in date_indexes()
    ]
    entries = sorted(
        (int(score), member)
        for members in indexes_read(client=client, reads=reads)
        for member, score in members
    )
    ids: dict[str, None] = {}
    for score, member in entries:
        if cls is not None and score % DAY_FACTOR // CLASS_FACTOR != CLASS_DIGIT[cls]:
            continue
        ids.setdefault(member_booking_id(member))
        if len(ids) >= limit:
            break
    found = bookings_listed(client=client, ids=list(ids)[:limit])
    # By the records' own dates: a moved booking's old days may linger in the index after a
    # crash between its move and the clean-up (booking.engine.moves).
    return [b for b in found if any(start <= d <= end for d in b.dates)]


def hold_get(*, client: redis.Redis, hold_id: str, now: dt.datetime | None = None) -> Hold | None:
    """A live hold, or None when expired, released or unknown."""
    room = booking_id_room(hold_id)
    if room is None:
        return None
    value = client.hget(RoomKeys(room).holds, hold_id)
    if value is None:
        return None
    expiry, owner, cls, days, start, end, boxes = hold_value_parse(text(value))
    if expiry <= to_ms(now or dt.datetime.now(tz=dt.UTC)):
        return None
    dates = tuple(calendar_date(d) for d in days)
    request = SlotRequest(cls, room, dates, None if cls == "A" else (start, end), tuple(boxes))
    expires = from_ms(expiry)
    assert expires is not None
    return Hold(hold_id, owner, request, expires)


def hold_current_read(*, owner_id: str) -> list[Command]:
    """What `hold_current` reads first (the buyer's pointer to their hold)."""
    return [command("GET", hold_of(owner_id))]


def hold_current(*, client: redis.Redis, owner_id: str) -> Hold | None:
    """The buyer's live hold (one per buyer: a new one replaces it), or None."""
    (pointer,) = pipeline_replies(client, hold_current_read(owner_id=owner_id))
    hold_id = text_or_none(pointer)
    held = hold_get(client=client, hold_id=hold_id) if hold_id else None
    return held if held is not None and held.owner_id == owner_id else None


def room_sets_read(
    client: redis.Redis, rooms: Sequence[int]
) -> dict[int, tuple[set[str], set[str]]]:
    """Registry and ledger of each room (one pipeline); rooms with neither are left out."""
    pipe = client.pipeline(transaction=False)
    for room in rooms:
        pipe.smembers(RoomKeys(room).registry)
        pipe.smembers(RoomKeys(room).ledger)
    replies = pipe.execute()
    found = {}
    for index, room in enumerate(rooms):
        registered, ledger = replies[2 * index], replies[2 * index + 1]
        if registered or ledger:
            found[room] = (registered, ledger)
    return found


# --- The person and date indexes ---------------------------------------------------------------
# On one server the claim function writes them with the booking (one atomic call). On a cluster
# they live in other slots than the room's: the claim function puts the id in the room's
# `unindexed` set instead, in the same atomic call; the entries are then written and confirmed
# (WAITAOF on each primary written to) before the id leaves the set. A claim that could not
# confirm them marks its room in one small set that every list reads with its index
# (`indexes_read`); the keeper drains every room each pass and repairs after a failover
# (booking/engine/indexes_repair.py, strongroom/keeper.py).
