"""A buyer's bookings seen from their account: the upcoming ones, and forgetting the buyer
when they delete their account (each room in one atomic call)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from urllib.parse import quote

import redis
from django.conf import settings

from accounts.extensions import AccountPart
from accounts.selectors import MailTarget, mail_target
from booking.domain.keys import RoomKeys, person_index
from booking.domain.records import Booking
from booking.domain.rules import (
    booking_id_room,
    first_bookable_day,
    format_room,
    hold_new_id,
    priority_day_starts,
    room_count,
    site_today,
)
from booking.engine.bookings import booking_get, bookings_page_read, hold_current
from booking.engine.indexes import (
    bookings_by_id,
    indexes_drain,
    indexes_read,
    indexes_read_commands,
)
from booking.engine.pickup import pickup_first_open_day, pickup_still_open
from booking.engine.waits import waits_of, waits_of_read
from strongroom import keyspace as ks
from strongroom.addresses import address_arg
from strongroom.ahead import Command, command
from strongroom.calls import FunctionSpec
from strongroom.clock import to_ms
from strongroom.decoders import text_list, text_values
from strongroom.durable import Write, durable_calls, durable_fcall
from strongroom.outbox import sender_wake
from strongroom.store import tags_may_mix

# more_keys: the owner's record keys (ARGV n of them), then every inventory key they name.
OWNER_FORGET = FunctionSpec(
    "booking_owner_forget",
    "OWNER_FORGET",
    ("registry", "audit", "stats", "waits", "wait_notices", "holds", "outbox", "hold_days",
     "edition", "closures"),
    ("owner", "now_ms", "audit_maxlen", "n", "room", "first_day", "priority_hold_id",
     "priority_hold_ms", "mail_lang", "mail_name", "mail_address", "actor", "day_starts"),
    replies=("ok cancelled kept", "stale", "invalid what"),
    key_tails=("records", "inventories"),
)  # fmt: skip


# The account page lists the soonest upcoming bookings; "My bookings" pages through all of them.
ACCOUNT_UPCOMING = 10


def bookings_upcoming_read(
    *, client: redis.Redis, owner_id: str, now: dt.datetime | None = None,
    limit: int = ACCOUNT_UPCOMING,
) -> list[Command]:  # fmt: skip
    """What `bookings_upcoming` reads first (its index)."""
    return indexes_read_commands(client=client, reads=_upcoming_index(owner_id, now, limit))


def _upcoming_index(owner_id: str, now: dt.datetime | None, limit: int) -> list[Command]:
    # From the earliest day whose pickup may still be open (yesterday during the grace after
    # midnight), twice `limit` ids: cancelled ones stay in the index.
    return bookings_page_read(owner_id=owner_id, today=pickup_first_open_day(now), limit=2 * limit)


def bookings_upcoming(
    *,
    client: redis.Redis,
    owner_id: str,
    now: dt.datetime | None = None,
    limit: int = ACCOUNT_UPCOMING,
) -> list[Booking]:
    """At most `limit` confirmed bookings whose pickup is not over (`pickup_still_open`: their
    last day is to come, or today's hours or the grace after midnight still run): those that end
    soonest (the index's order), shown by their next pickup (`Booking.soonest_key`; a booking
    of a near and a far day that ends after them is not among them). The index from today on
    (twice `limit` ids, as cancelled ones stay in it), then the first `limit` records; the next
    `limit` (one more round trip) only when some of those were cancelled. Two round trips,
    three at most, whatever the number of bookings."""
    today = site_today(now)
    reads = _upcoming_index(owner_id, now, limit)
    _total, _upcoming, soon, _earlier = indexes_read(client=client, reads=reads)
    ids = text_list(soon)[: 2 * limit]
    upcoming: list[Booking] = []
    for chunk in (ids[:limit], ids[limit:]):
        if not chunk or len(upcoming) >= limit:
            break
        found = bookings_by_id(client=client, ids=chunk)
        upcoming += [b for b in found if b.status == "confirmed" and pickup_still_open(b, now=now)]
    return sorted(upcoming, key=lambda b: b.soonest_key(today))[:limit]


def owner_forget(
    *,
    client: redis.Redis,
    owner_id: str,
    now: dt.datetime | None = None,
    mail_to: MailTarget | None = None,
    actor_id: str = "",
) -> int:
    """Cancel the owner's bookings not collected at all (freeing their slots; a booking moved to
    another room is followed there), keep every record for staff with owner '0', drop their
    holds and waits, tell waiters of what freed: one durable call per room, which also queues
    the cancellation mail of each booking it cancels to `mail_to` (the owner's confirmed
    address, read before they are forgotten), under `actor_id` (the staff member who deleted
    the account; empty: the owner did, and the mail says so). First the person
    is marked gone in every room, so that nothing is booked, held or moved for them while (or
    after) this runs. Returns the number of bookings cancelled."""
    at = to_ms(now or dt.datetime.now(tz=dt.UTC))
    _mark_gone(client, owner_id, at)
    # Every booking made before the marks (all this person will ever have) is indexed first:
    # on a cluster one whose claim has not written its entries yet is still named by its
    # room's `unindexed` set, marked or not, so every room's is drained.
    if not tags_may_mix(client):
        indexes_drain(client=client, rooms=range(1, room_count() + 1))
    (found,) = indexes_read(client=client, reads=[command("ZRANGE", person_index(owner_id), 0, -1)])
    ids = text_list(found)
    by_room: dict[int, list[str]] = defaultdict(list)
    for booking_id in dict.fromkeys(ids + _moved_on(client, ids)):  # each once
        room = booking_id_room(booking_id)
        if room is not None:
            by_room[room].append(booking_id)
    held = hold_current(client=client, owner_id=owner_id)  # a hold where they have nothing else
    if held is not None and (held_room := booking_id_room(held.id)) is not None:
        by_room.setdefault(held_room, [])
    waits_index = ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner_id)
    for entry in text_list(client.zrange(waits_index, 0, -1)):
        room_text = entry.split("|", 1)[0]
        if room_text.isdigit():
            by_room.setdefault(int(room_text), [])
    cancelled = 0
    for room, booking_ids in sorted(by_room.items()):
        cancelled += _room_forget(
            client, room, owner_id, booking_ids, at, now, mail_to, actor_id or owner_id
        )
    # Durable like the rooms' calls: a failover must not bring the deleted indexes back.
    durable_calls(
        client,
        [Write(key, ("DEL", key)) for key in (person_index(owner_id), waits_index)],
    )
    return cancelled


def _moved_on(client: redis.Redis, ids: list[str]) -> list[str]:
    """Where the bookings of `ids` that moved to another room are now (a move whose new room
    has not confirmed yet is finished first, by `booking_get`): the old record is only a
    pointer, so they are cancelled there. A move still before its old room's step comes later
    than the marks and the old room's cancel, and is refused."""
    named = [(i, room) for i in ids if (room := booking_id_room(i)) is not None]
    pipe = client.pipeline(transaction=False)
    for booking_id, room in named:
        pipe.hget(RoomKeys(room).record(booking_id), "status")
    statuses = text_values(pipe.execute()) if named else []
    found = []
    for (booking_id, _room), status in zip(named, statuses, strict=True):
        if status == "moved" and (now_at := booking_get(client=client, booking_id=booking_id)):
            found.append(now_at.id)
    return found


GONE_KEPT_MS = 86_400_000  # a deleted person's marks outlive any request of theirs in flight


def _mark_gone(client: redis.Redis, owner_id: str, at: int) -> None:
    """Mark the person as being deleted in every room: from here on no claim, hold or wait of
    theirs succeeds (each room's function checks the mark in the same atomic call), so the
    bookings found next are all they will ever have. One pipeline (one round trip per primary);
    marks older than GONE_KEPT_MS are dropped on the way."""
    pipe = client.pipeline(transaction=False)
    for room in range(1, room_count() + 1):
        gone = RoomKeys(room).gone
        pipe.zremrangebyscore(gone, "-inf", f"({at - GONE_KEPT_MS}")
        pipe.zadd(gone, {owner_id: at})
        pipe.pexpire(gone, GONE_KEPT_MS)
    pipe.execute()


def _room_forget(
    client: redis.Redis,
    room: int,
    owner_id: str,
    booking_ids: list[str],
    at: int,
    now: dt.datetime | None,
    mail_to: MailTarget | None,
    actor_id: str,
) -> int:
    keys = RoomKeys(room)
    records = [keys.record(i) for i in booking_ids]
    for _attempt in range(5):
        pipe = client.pipeline(transaction=False)
        for record in records:
            pipe.hget(record, "inv")
        # Every bitmap the records name (a record names one per calendar month of its days).
        named = {key for value in text_values(pipe.execute()) for key in (value or "").split(",")}
        inventories = sorted(named - {""})
        call = OWNER_FORGET.call(
            keys={
                "registry": keys.registry,
                "edition": keys.edition,
                "audit": keys.audit,
                "stats": keys.stats,
                "waits": keys.waits,
                "wait_notices": keys.wait_notices,
                "holds": keys.holds,
                "hold_days": keys.hold_days,
                "closures": keys.closures,
                "outbox": keys.outbox,
            },
            args={
                "owner": owner_id,
                "now_ms": at,
                "audit_maxlen": settings.STRONGROOM_AUDIT_MAXLEN,
                "n": len(records),
                "room": format_room(room),
                "first_day": first_bookable_day(now),
                "priority_hold_id": hold_new_id(room=room),
                "priority_hold_ms": settings.STRONGROOM_WAIT_HOLD_SECONDS * 1000,
                "day_starts": priority_day_starts(now),
                "mail_lang": mail_to.language if mail_to else "",
                "mail_name": quote(mail_to.username) if mail_to else "",
                "mail_address": address_arg(mail_to.email) if mail_to else "",
                "actor": actor_id,
            },
            tails={"records": records, "inventories": inventories},
        )
        answer = OWNER_FORGET.answer_of(durable_fcall(client, OWNER_FORGET.name, *call))
        if answer["status"] == "ok":
            if int(answer["cancelled"]) and mail_to is not None:
                sender_wake(keys.outbox)  # their cancellation mail is in the room's outbox
            return int(answer["cancelled"])
        if answer["status"] != "stale":
            raise RuntimeError(f"booking_owner_forget refused: {answer}")
    raise RuntimeError("the room kept changing while the owner was forgotten")


def _upcoming_reads(*, client: redis.Redis, person_id: int) -> list[Command]:
    """The first reads of the account page's part: the person's bookings index and waits."""
    owner = str(person_id)
    return [*bookings_upcoming_read(client=client, owner_id=owner), *waits_of_read(owner_id=owner)]


def upcoming_on_the_account_page(*, client: redis.Redis, person_id: int) -> dict[str, object]:
    """The upcoming bookings and the waiting list's notices: their indexes come read with the
    account (`_upcoming_reads`); then the records (one pipeline) and, with waits, their notices
    (one more)."""
    owner = str(person_id)
    return {
        "upcoming": bookings_upcoming(client=client, owner_id=owner),
        "waits": waits_of(client=client, owner_id=owner),
        "now": dt.datetime.now(tz=dt.UTC),
    }


def forget_on_account_deletion(*, client: redis.Redis, person_id: int, actor_id: str = "") -> None:
    """A person's account is deleted (by them, or by the staff member `actor_id`): their
    bookings are cancelled and anonymised, and each one cancelled is told to their confirmed
    address (read now: it is forgotten next)."""
    target = mail_target(client=client, person_id=person_id)
    owner_forget(client=client, owner_id=str(person_id), mail_to=target, actor_id=actor_id)


# Plugged into the account page by booking's AppConfig.ready.
ACCOUNT_PART = AccountPart(render=upcoming_on_the_account_page, reads=_upcoming_reads)
