"""A room's own keys (inventory, records, codes, holds, pace, audit, stats): one hash tag a
room, so every check-and-take touches one slot."""

from __future__ import annotations

from django.utils.translation import gettext_noop as noop

from strongroom.keyspace.core import declare

# Every key of one room shares the tag {room:NNN}: a claim, hold, cancel, pickup or flush touches
# the room's bitmap, registry, record, ledger, codes, holds and audit at once, in one slot.
# Booking ids start with the room number, which is all it takes to find a record's tag.
BOOKING_INVENTORY = declare(
    "booking-inventory",
    "{room:<room>}:inv:<cls>:<month>",
    type="string",
    holds=noop(
        "one bit per slot of one class in one room for the calendar month <month> (YYYY-MM), "
        "d the day of the month from 0: A bit d, B bit d*24+hour, C bit (d*100+box-1)*24+hour"
    ),
    app="booking",
    why=noop(
        "a bitmap is the bit limit itself (class C: 31*24*100 bits = 9,300 bytes a room and "
        "month); addressed by the calendar month, so a change of the sales window never moves "
        "a slot; a day is one GETRANGE, occupancy one BITCOUNT; created by the first claim and "
        "deleted when a cancel empties it, so empty costs zero keys; a request over a month's "
        "end takes both months' keys in one call (same room, same hash tag)"
    ),
)
BOOKING_REGISTRY = declare(
    "booking-registry",
    "{room:<room>}:inventories",
    type="set",
    holds=noop("the inventory keys of the room that exist"),
    app="booking",
    why=noop(
        "staff list and flush inventory without KEYS; kept by the same function that creates "
        "or deletes a bitmap, so it never drifts; per room so it shares the claim's slot"
    ),
)
BOOKING_RECORD = declare(
    "booking-record",
    "{room:<room>}:booking:<booking_id>",
    type="hash",
    holds=noop(
        "one booking: owner, class, room, dates, hours, boxes, created (and its local date, "
        "made), status, code MAC, sealed code, collected days, cancel details"
    ),
    app="booking",
    why=noop(
        "written by the claim function with the bits it takes, so a record without its slots "
        "(or slots without a record) cannot exist; its existence makes a retried claim idempotent"
    ),
)
BOOKING_LEDGER = declare(
    "booking-ledger",
    "{room:<room>}:ledger",
    type="set",
    holds=noop("every booking id of the room, any status"),
    app="booking",
    why=noop(
        "finds the records without KEYS (rebuildindexes, flush); in the claim's slot, so it is "
        "exact"
    ),
)
BOOKING_CODES = declare(
    "booking-codes",
    "{room:<room>}:codes",
    type="hash",
    holds=noop("HMAC of a pickup code -> booking id"),
    app="booking",
    why=noop(
        "a pickup knows room + code, not the booking: one HGET finds it without storing codes"
    ),
)
BOOKING_HOLDS = declare(
    "booking-holds",
    "{room:<room>}:holds",
    type="hash",
    holds=noop(
        "hold id -> '<expiry>|<owner>|<cls>|<days>|<hstart>|<hend>|<boxes>' (expiry in epoch "
        "ms); key PEXPIREs with its last hold"
    ),
    app="booking",
    why=noop(
        "holds are few and short; a claim or hold reads only those its days touch (through "
        "booking-hold-days) and drops the expired ones it meets, "
        "so abandoned holds free themselves and the key vanishes"
    ),
)
BOOKING_HOLD_DAYS = declare(
    "booking-hold-days",
    "{room:<room>}:holds:days",
    type="zset",
    holds=noop(
        "'<hold id>/<day>' per held day (calendar day number), score class digit * 100000 + "
        "day (all of one class and day share a score); PEXPIREs with the holds hash"
    ),
    app="booking",
    why=noop(
        "a claim checks the holds that touch its days with one ZRANGEBYSCORE per day, never "
        "every hold of the room; kept by the same functions as the holds hash, in its slot"
    ),
)
BOOKING_HOLD_STREAKS = declare(
    "booking-hold-streaks",
    "{room:<room>}:holds:streaks",
    type="zset",
    holds=noop(
        "person id -> when their holds in this room began (epoch ms); a booking there ends "
        "it, entries older than two hold times are dropped by the next hold"
    ),
    app="booking",
    why=noop(
        "one person holds a room's slots for one hold time out of two: holding again cannot "
        "keep slots from everyone else for ever"
    ),
)
BOOKING_GONE = declare(
    "booking-gone",
    "{room:<room>}:gone",
    type="zset",
    holds=noop(
        "person id -> when their account's deletion began (epoch ms); entries older than a "
        "day are dropped by the next deletion, the key PEXPIREs a day after the last one"
    ),
    app="booking",
    why=noop(
        "the room's taking functions (claim, hold, wait) refuse a person being deleted in the "
        "same atomic call: nothing is booked for them while their bookings are cancelled"
    ),
)
BOOKING_PRIORITY_OF = declare(
    "booking-priority-of",
    "{person:<person_id>}:priority",
    type="zset",
    holds=noop(
        "the person's granted priority holds from the waiting list: hold id scored by its end "
        "(epoch ms), at most STRONGROOM_PRIORITY_HOLDS_PER_BUYER, added in one call before the "
        "hold is made usable; PEXPIREs a minute after the newest ends"
    ),
    app="booking",
    why=noop(
        "every page shows a live priority hold in a banner: in the person's own slot, it is "
        "read with the session and the person record (no round trip of its own)"
    ),
)
BOOKING_PACE = declare(
    "booking-pace",
    "{owner:<owner_id>}:bookings:pace",
    type="zset",
    holds=noop("the buyer's booking ids of the last hour, scored by epoch ms; expires after it"),
    app="booking",
    why=noop(
        "bounds how fast one account can book (STRONGROOM_BOOKINGS_PER_HOUR): a retry of the "
        "same booking id is not counted twice; per buyer, so it spreads over a cluster"
    ),
)
BOOKING_RECEIPTS_OWED = declare(
    "booking-receipts-owed",
    "{owner:<owner_id>}:receipts-owed",
    type="set",
    holds=noop(
        "booking ids whose receipt found no confirmed address; expires 30 days after the last"
    ),
    app="booking",
    why=noop(
        "once the buyer confirms an address, each of these receipts is queued again (a booking "
        "made before the address was confirmed still gets its receipt)"
    ),
)
BOOKING_HOLD_OF = declare(
    "booking-hold-of",
    "{owner:<owner_id>}:hold",
    type="string",
    holds=noop("the id of the buyer's live hold; PX with the hold"),
    app="booking",
    why=noop(
        "one live hold per buyer across sessions and workers: a new hold SET ... GET here and "
        "releases the previous one by id (idempotent); logout releases it"
    ),
)
BOOKING_PICKUP_FAILURES = declare(
    "booking-pickup-failures",
    "{room:<room>}:pickup:failures:<client>",
    type="zset",
    holds=noop("wrong codes typed by one client (address) in the room, scored by epoch ms"),
    app="booking",
    why=noop(
        "a sliding window per guessing client (trim by score and to the newest 1,024, count with "
        "ZCARD): sets the delay a wrong code asks for; never a lock, the right code always opens"
    ),
)
PICKUP_CLIENT_FAILURES = declare(
    "pickup-client-failures",
    "{pickup:<client>}:failures",
    type="zset",
    holds=noop("wrong pickup codes of one client in any room, scored by epoch ms"),
    app="booking",
    why=noop(
        "the building-wide delay per client (spreading guesses over rooms does not help); "
        "its own tag per client, so it spreads over a cluster"
    ),
)
BOOKING_AUDIT = declare(
    "booking-audit",
    "{room:<room>}:audit",
    type="stream",
    holds=noop(
        "claims, holds, cancels, pickups (and failed ones), flushes of the room: kind, actor, "
        "booking, detail, at; capped with MAXLEN ~"
    ),
    app="booking",
    why=noop(
        "appended inside the same function as the action, so an action and its entry cannot "
        "part; per room to stay in the action's slot (the reader merges the rooms)"
    ),
)
BOOKING_STATS = declare(
    "booking-stats",
    "{room:<room>}:stats",
    type="hash",
    holds=noop(
        "counters of the room: v (format, set once exact), slots:<month>:<cls> and "
        "active:<month>:<cls> (7 digits per day of the calendar month: booked bits, confirmed "
        "+ collected bookings), status:<month>:<cls>:<status> (by the month of a booking's "
        "first day), made:<month>:<cls>:<local date>"
    ),
    app="booking",
    why=noop(
        "the dashboard's figures in one HMGET per room instead of every record and 27,900 "
        "BITCOUNTs; kept by the claim, cancel, pickup and flush functions in the same slot (so "
        "exact and atomic with the slots); rebuildindexes recomputes it from records + bitmaps"
    ),
)
BOOKING_EDITION = declare(
    "booking-edition",
    "{room:<room>}:edition",
    type="string",
    holds=noop(
        "the room's edition: set anew (above the last one and at least the store's clock in "
        "microseconds) by every function that writes a key of the room, in the same call"
    ),
    app="booking",
    why=noop(
        "a worker keeps the pieces of a page it rendered from the room (the calendar, the "
        "booking panel) per edition: read in the same round trip as the room, an unchanged "
        "edition says the piece is exact; from the clock, so a store that lost its last writes "
        "never gives an edition again with other contents; never deleted"
    ),
)
