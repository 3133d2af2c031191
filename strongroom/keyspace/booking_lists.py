"""The booking keys that list and follow bookings: the unindexed sets, moves, the outbox,
references, the waiting list, closures and the person and date indexes."""

from __future__ import annotations

from django.utils.translation import gettext_noop as noop

from strongroom.keyspace.core import declare

BOOKING_UNINDEXED = declare(
    "booking-unindexed",
    "{room:<room>}:unindexed",
    type="zset",
    holds=noop(
        "booking ids of the room whose person and date index entries may be missing, scored "
        "by created epoch ms (used only where the indexes live in other slots: a cluster)"
    ),
    app="booking",
    why=noop(
        "written by the claim function with the record, so a booking is either indexed (its "
        "entries confirmed by a replica under aof+replica) or listed here; drained (entries "
        "written and confirmed, then ZREM) by the claim, by list readers of marked rooms and by "
        "the keeper's pass"
    ),
)
BOOKING_MOVES = declare(
    "booking-moves",
    "{room:<room>}:moves",
    type="zset",
    holds=noop(
        "ids of pending records: bookings moving into the room from another, whose new slots "
        "are taken until the old room decides; scored by epoch ms"
    ),
    app="booking",
    why=noop(
        "written with the pending record by booking_move_in and cleared by the commit or the "
        "release, so a move cut off half way is found and finished or undone by moves_recover"
    ),
)
BOOKING_UNINDEXED_ROOMS = declare(
    "booking-unindexed-rooms",
    "{unindexed}:rooms",
    type="set",
    holds=noop("rooms whose booking-unindexed set names a booking its claim could not index"),
    app="booking",
    why=noop(
        "the list readers read this one set instead of every room's booking-unindexed set; a "
        "claim whose index writes were not confirmed adds its room, a reader that drains a "
        "room removes it first (so a later claim's mark is never lost to the drain); a mark "
        "lost with its primary is made good by the repair after the failover"
    ),
)
BOOKING_OUTBOX = declare(
    "booking-outbox",
    "{room:<room>}:mail",
    type="stream",
    holds=noop(
        "mail to send about the room's bookings (field m: 'confirm|<booking_id>|<owner>', "
        "'cancel|<booking_id>', 'freed|<room>|<person>|<cls>|<day>|<hstart>|<hend>|<box>|"
        "<told>', 'moved|<booking_id>|<sequence>', 'cancel_to|<booking_id>|<lang>|<name>|"
        "<address>|<by>'), with the consumer group 'senders'; an entry is deleted once the mail "
        "server took it"
    ),
    app="booking",
    why=noop(
        "appended by the claim and cancel functions themselves, so a confirmed booking's "
        "receipt is as durable as the booking and costs no extra round trip; the consumer "
        "group hands each entry to one sender and keeps it pending until acknowledged"
    ),
)
BOOKING_REFS = declare(
    "booking-refs",
    "{room:<room>}:refs",
    type="hash",
    holds=noop(
        "short reference (B-XXXX-XXXX, its first two letters encode the room) -> booking id"
    ),
    app="booking",
    why=noop(
        "the claim function refuses a reference already in use, so references are unique; "
        "staff search by one with one HGET (the reference names its room)"
    ),
)
BOOKING_WAITS = declare(
    "booking-waits",
    "{room:<room>}:waits",
    type="zset",
    holds=noop(
        "'<person>|<cls>|<day>|<hstart>|<hend>|<box>' buyers waiting for a sold-out slot "
        "(day: calendar day number), "
        "scored by when they asked (first come, first told)"
    ),
    app="booking",
    why=noop(
        "in the room's slot, so a cancel (or the sweep after an expired hold) finds and tells "
        "the waiters, and gives the first a priority hold, in the same atomic call"
    ),
)
BOOKING_WAIT_NOTICES = declare(
    "booking-wait-notices",
    "{room:<room>}:wait-notices",
    type="hash",
    holds=noop(
        "a told wait's member -> '<told>|<hold_id>|<expiry>|<room>' (the on-page notice: told "
        "at, the priority hold and its expiry in epoch ms, the room)"
    ),
    app="booking",
    why=noop("cleared with the waits at the day's end"),
)
BOOKING_WAITS_BY_PERSON = declare(
    "booking-waits-by-person",
    "{owner:<owner_id>}:waits",
    type="zset",
    holds=noop("'<room>|<wait member>' of one buyer, scored by the waited day's epoch ms"),
    app="booking",
    why=noop(
        "the buyer's pages list their waits and notices without reading every room; bounds "
        "the waits per buyer"
    ),
)
BOOKING_CLOSURES = declare(
    "booking-closures",
    "{room:<room>}:closures",
    type="hash",
    holds=noop(
        "closure id -> 'first|last|hstart|hend|reason' (calendar day numbers; hours 0 24 for "
        "whole days): the room is closed then"
    ),
    app="booking",
    why=noop(
        "in the room's slot, so the claim, hold, wait and move functions refuse a closed slot "
        "in the same atomic call that checks it is free"
    ),
)
CLOSURES_ALL = declare(
    "closures-all",
    "{closures}:all",
    type="hash",
    holds=noop(
        "closure id -> 'rooms|first|last|hstart|hend|by|at|reason' of every closure, for the "
        "staff page (rooms: comma list)"
    ),
    app="booking",
    why=noop("staff list and reopen closures without reading every room"),
)
BOOKING_WAIT_ROOMS = declare(
    "booking-wait-rooms",
    "{waits}:rooms",
    type="set",
    holds=noop("rooms that may have waits; the sweep visits only these"),
    app="booking",
)
BOOKING_BY_PERSON = declare(
    "booking-by-person",
    "{owner:<owner_id>}:bookings",
    type="zset",
    holds=noop("a person's booking ids scored by their last booked day as YYYYMMDD"),
    app="booking",
    why=noop(
        "'my bookings, upcoming first' is one ZRANGEBYSCORE from today and one ZREVRANGEBYSCORE "
        "before it, paged with LIMIT; written by the claim function (one server) or drained from "
        "booking-unindexed (cluster), rebuilt by rebuildindexes"
    ),
)
# The date index is split into DATE_INDEX_SHARDS zsets by room (room mod shards), so a claim
# writes one of several slots rather than one slot for the whole site; a range over the building
# reads every shard (one pipeline) and merges by score.
DATE_INDEX_SHARDS = 16
BOOKING_BY_DATE = declare(
    "booking-by-date",
    "{bookings:<shard>}:by-date",
    type="zset",
    holds=noop(
        "'<booking id>/<date>' per booked day, score YYYY*10^7 + day-of-year*10^4 + class*10^3 "
        "+ room (11 digits, < 2^53)"
    ),
    app="booking",
    why=noop(
        "a composite score: a range of days, or one day and one class, is one ZRANGEBYSCORE "
        "per shard"
    ),
)
