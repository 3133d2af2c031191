"""The keyspace: the one module that turns domain values into Redis key names.

Every key family is declared once below with its pattern, Redis type, what it holds, the app
that owns it and its cluster hash tag. Keys read `<prefix>:{<tag>}:<family>:<part>:...`,
the classic colon convention. Parts that come from users are percent-escaped, so they can
never contain `:`, `{`, `}`, `*` or white space: no input can forge another key or a hash tag.
Multi-key operations only combine families that share a tag, so they run on Redis Cluster.

Nothing else in the project writes a key name; Lua functions receive theirs in KEYS[].
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from django.conf import settings
from django.utils.translation import gettext_noop as noop

_PLACEHOLDER = re.compile(r"<(\w+)>")


# What `quote(..., safe="")` leaves alone: ASCII letters, digits and `_.-~`.
_UNESCAPED = re.compile(r"[A-Za-z0-9_.~-]+")


def escape_part(value: object) -> str:
    """Escape one key part: letters, digits and `_.-~` stay, everything else becomes %XX.

    The mapping is injective (`%` itself is escaped), so two inputs never share a key. Parts
    that need no escaping (room numbers, ids, dates) skip `quote`, which dominated key building
    on pages that read thousands of keys (measured by bench/profile_page.py).
    """
    text = value if isinstance(value, str) else str(value)
    if _UNESCAPED.fullmatch(text):
        return text
    return quote(text, safe="")


def unescape_part(part: str) -> str:
    """The inverse of `escape_part`, for showing key parts to staff."""
    return unquote(part)


@dataclass(frozen=True)
class Family:
    """One key family: `pattern` names its parts as <placeholders>; `{...}` is the hash tag."""

    name: str
    pattern: str
    type: str
    holds: str
    app: str
    why: str = ""
    placeholders: tuple[str, ...] = field(init=False)

    _chunks: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\{[^{}]+\}(:[^{}:]+)+", self.pattern):
            raise ValueError(f"{self.name}: a pattern is {{tag}}:part:part..., not {self.pattern}")
        object.__setattr__(self, "placeholders", tuple(_PLACEHOLDER.findall(self.pattern)))
        # Literal text and placeholder names alternate: key() joins them without a regex.
        object.__setattr__(self, "_chunks", tuple(_PLACEHOLDER.split(self.pattern)))

    @property
    def tag(self) -> str:
        """The hash tag, with its placeholders (`{room:<room>}`)."""
        return self.pattern[: self.pattern.index("}") + 1]

    def key(self, **parts: object) -> str:
        """The key for these parts; every placeholder must be given, each is escaped."""
        if len(parts) != len(self.placeholders) or any(p not in parts for p in self.placeholders):
            raise TypeError(f"{self.name} takes {self.placeholders}, got {tuple(parts)}")
        chunks = self._chunks
        pieces = [settings.STRONGROOM_KEY_PREFIX, ":", chunks[0]]
        for i in range(1, len(chunks), 2):
            pieces.append(escape_part(parts[chunks[i]]))
            pieces.append(chunks[i + 1])
        return "".join(pieces)

    def matches(self, key: str) -> bool:
        """Whether `key` belongs to this family (used to classify keys found by SCAN)."""
        return self.regex().fullmatch(key) is not None

    def regex(self) -> re.Pattern[str]:
        literal = [re.escape(chunk) for chunk in _PLACEHOLDER.split(self.pattern)[::2]]
        body = r"[^:{}]+".join(literal)
        return re.compile(re.escape(settings.STRONGROOM_KEY_PREFIX) + ":" + body)

    def parse(self, key: str) -> dict[str, str]:
        """The unescaped parts of one of this family's keys."""
        literal = [re.escape(c) for c in _PLACEHOLDER.split(self.pattern)[::2]]
        groups = "".join(
            chunk + (f"(?P<{name}>[^:{{}}]+)" if i < len(self.placeholders) else "")
            for i, (chunk, name) in enumerate(zip(literal, [*self.placeholders, ""], strict=True))
        )
        match = re.fullmatch(re.escape(settings.STRONGROOM_KEY_PREFIX) + ":" + groups, key)
        if match is None:
            raise ValueError(f"{key!r} is not a {self.name} key")
        return {name: unescape_part(value) for name, value in match.groupdict().items()}


FAMILIES: dict[str, Family] = {}


def declare(name: str, pattern: str, *, type: str, holds: str, app: str, why: str = "") -> Family:
    """Declare a key family once; a second family with the same name or pattern is an error."""
    family = Family(name, pattern, type, holds, app, why)
    if name in FAMILIES or any(f.pattern == pattern for f in FAMILIES.values()):
        raise ValueError(f"key family {name} ({pattern}) is declared twice")
    FAMILIES[name] = family
    return family


def family_of(key: str) -> Family | None:
    """The declared family a key belongs to, or None for a stranger."""
    for family in FAMILIES.values():
        if family.matches(key):
            return family
    return None


def prefix_pattern() -> str:
    """A SCAN MATCH pattern for every key of this site."""
    return f"{settings.STRONGROOM_KEY_PREFIX}:*"


# --- strongroom (the site itself) ----------------------------------------------------------

SESSION = declare(
    "session",
    "{session:<session_key>}:session",
    type="string",
    holds=noop("one Django session, signed and encoded by Django; expires with the session"),
    app="strongroom",
    why=noop(
        "a string with a TTL is the whole need: read whole, written whole, expired by the "
        "server; every signed-in request reads one, so each session is its own hash tag and the "
        "sessions spread over every primary of a cluster"
    ),
)
STORE_LAYOUT = declare(
    "store-layout",
    "{site}:layout",
    type="string",
    holds=noop("the layout the store's data is written in ('calendar-1': inventory by date)"),
    app="strongroom",
    why=noop(
        "a site refuses to serve a store still in an older layout and names the command that "
        "moves it (`manage.py upgradestore`); set at the first start on an empty store"
    ),
)
DEMO_LOADED = declare(
    "demo-loaded",
    "{site}:demo:loaded",
    type="string",
    holds=noop("epoch ms at which `serve` loaded the demo data into this store (first run only)"),
    app="strongroom",
    why=noop(
        "a later `make run` finds it and loads nothing again: no demo bookings re-added, no demo "
        "staff re-granted after a revocation"
    ),
)


# --- accounts ------------------------------------------------------------------------------

# A person's own record has its own tag {person:<id>}: every signed-in request reads it, so the
# records spread over a cluster's primaries. The name -> id claim, the names, the id counter and
# the login lists share the small tag {people}: sign-up writes the person first, then claims the
# name in {people} (the claim is the commit point; a lost race deletes its person again), and a
# login writes the person's counters and the {people} lists in one pipeline.
PERSON = declare(
    "person",
    "{person:<person_id>}:person",
    type="hash",
    holds=noop(
        "one person: username (as typed), name_key, password (Django hash), is_staff, joined, "
        "logins (count), last_login (epoch ms), "
        "signup_token (lets a retried sign-up see its success)"
    ),
    app="accounts",
    why=noop(
        "a hash per person: one key, fields read and written singly (HINCRBY logins) or together "
        "(HMGET), compact (listpack) for a handful of small fields"
    ),
)
PERSON_BY_NAME = declare(
    "person-by-name",
    "{people}:by-name",
    type="hash",
    holds=noop("normalised username (NFKC + casefold) -> person id"),
    app="accounts",
    why=noop(
        "people know their name, not their id; one hash, so the claim function takes a name "
        "with HSET after HGET inside one atomic call (the commit point of a sign-up)"
    ),
)
PERSON_BY_SKELETON = declare(
    "person-by-skeleton",
    "{people}:by-skeleton",
    type="hash",
    holds=noop("confusable skeleton (Unicode TR39) of a normalised username -> person id"),
    app="accounts",
    why=noop(
        "a name that looks like a taken one ('anna' spelt with a Cyrillic a beside "
        "'anna') is refused by the same claim function that takes the name: HGET, "
        "then HSET, in one atomic call"
    ),
)
PERSON_NAMES = declare(
    "person-names",
    "{people}:names",
    type="hash",
    holds=noop("person id -> username as typed"),
    app="accounts",
    why=noop(
        "lets the recent-logins and leaderboard reads fetch every name with one HMGET, in the "
        "same server-side call (one round trip)"
    ),
)
PERSON_LAST_ID = declare(
    "person-last-id",
    "{people}:last-id",
    type="string",
    holds=noop("the highest person id handed out"),
    app="accounts",
)
LOGINS_RECENT = declare(
    "logins-recent",
    "{people}:logins:recent",
    type="list",
    holds=noop(
        "'<person id>:<epoch ms>' per login, newest first, trimmed to STRONGROOM_RECENT_LOGINS"
    ),
    app="accounts",
    why=noop("LPUSH + LTRIM keeps the newest N; the newest N is one LRANGE"),
)
LOGINS_TOP = declare(
    "logins-top",
    "{people}:logins:top",
    type="zset",
    holds=noop("person id scored by login count"),
    app="accounts",
    why=noop("ZINCRBY per login; the people who log in most are one ZRANGE ... REV"),
)
# The throttles share the tag {throttle}: one login attempt checks and counts its (name, client)
# pair, its client and its name in one atomic call. Every <...> part is a salted hash: no name
# or address is stored.
LOGIN_FAILURES = declare(
    "login-failures",
    "{throttle}:login:failures:<pair>",
    type="zset",
    holds=noop(
        "login attempts of one (username, client) pair not (yet) known to have succeeded, "
        "scored by epoch ms"
    ),
    app="accounts",
    why=noop(
        "a window of timestamps the site passes in (not server TTLs), so a frozen clock can test it"
    ),
)
LOGIN_LOCK = declare(
    "login-lock",
    "{throttle}:login:lock:<pair>",
    type="string",
    holds=noop(
        "epoch ms until which the (username, client) pair may not log in (a lock, or the "
        "name's slowdown)"
    ),
    app="accounts",
)
LOGIN_TRUSTED = declare(
    "login-trusted",
    "{throttle}:login:trusted:<pair>",
    type="string",
    holds=noop(
        "present while a (username, client) pair that logged in is trusted (30 days): it skips "
        "the client's lock and the name's slowdown"
    ),
    app="accounts",
)
LOGIN_CLIENT_FAILURES = declare(
    "login-client-failures",
    "{throttle}:login:client-failures:<client>",
    type="zset",
    holds=noop("failed logins from one client across every name, scored by epoch ms"),
    app="accounts",
)
LOGIN_CLIENT_LOCK = declare(
    "login-client-lock",
    "{throttle}:login:client-lock:<client>",
    type="string",
    holds=noop("epoch ms until which a client that guessed too many names may not log in"),
    app="accounts",
)
LOGIN_NAME_FAILURES = declare(
    "login-name-failures",
    "{throttle}:login:name-failures:<name>",
    type="zset",
    holds=noop("failed logins of one username from every client, scored by epoch ms"),
    app="accounts",
)
SIGNUP_ATTEMPTS = declare(
    "signup-attempts",
    "{throttle}:signup:<client>",
    type="zset",
    holds=noop("sign-ups from one client, scored by epoch ms"),
    app="accounts",
)
MAIL_GATE = declare(
    "mail-gate",
    "{throttle}:mail:<who>",
    type="zset",
    holds=noop(
        "mails someone asked for (confirmation and reset links), one zset per person and kind, "
        "per address and kind, per asking client (salted hashes, never the address), scored "
        "by epoch ms; expires after the window"
    ),
    app="accounts",
    why=noop(
        "sliding windows checked together by accounts_mail_gate before any is counted: nobody "
        "can make the site flood an inbox, by asking again and again or by alternating addresses"
    ),
)
PERSON_BY_EMAIL = declare(
    "person-by-email",
    "{people}:by-email",
    type="hash",
    holds=noop("verified email address (lower-cased) -> person id"),
    app="accounts",
    why=noop(
        "'forgot password' knows an address, not an id; only verified addresses are entered, "
        "the last person to verify an address owns it"
    ),
)
# Page views are the one write every page makes: the counters are spread over VISITS_SHARDS
# hash tags so that no cluster slot takes every view. A visitor always lands in the same shard
# (a hash of the visitor id), so the shards' HyperLogLogs count disjoint sets and their counts
# add up; views go to any shard. Readers sum the shards.
VISITS_SHARDS = 8
VISITS_VIEWS = declare(
    "visits-views",
    "{visits:<shard>}:views:<day>",
    type="string",
    holds=noop(
        "page views on one day (site time zone) counted in one of VISITS_SHARDS shards, "
        "INCRBY once a second per worker; expires after STRONGROOM_VISITS_KEEP_DAYS"
    ),
    app="accounts",
    why=noop(
        "sharded so that page views spread over several cluster slots; the day's views are the "
        "sum of the shards"
    ),
)
VISITS_VISITORS = declare(
    "visits-visitors",
    "{visits:<shard>}:visitors:<day>",
    type="hyperloglog",
    holds=noop(
        "unique visitors on one day whose id hashes to this shard: person ids, session keys or "
        "salted hashes of IP + user agent (never the raw IP); expires after "
        "STRONGROOM_VISITS_KEEP_DAYS"
    ),
    app="accounts",
    why=noop(
        "a HyperLogLog counts distinct visitors in at most 12 KB a day, within about 1 %; a "
        "visitor is in one shard only, so the day's count is the sum of the shards' counts"
    ),
)


# --- booking -------------------------------------------------------------------------------

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
        "the person's priority holds from the waiting list: hold id scored by its end (epoch "
        "ms), noted by the mail sender; PEXPIREs a minute after the newest ends"
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
        "<told>', 'moved|<booking_id>|<sequence>'), with the consumer group 'senders'; an "
        "entry is deleted once the mail server took it"
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

# --- catalog -------------------------------------------------------------------------------

# Every catalog key shares the `{cat}` hash tag: filters combine tag sets with SINTER / SUNION /
# SDIFF and sort with ZINTERSTORE, which Redis Cluster only allows within one slot.
CATALOG_BOOK = declare(
    "catalog_book",
    "{cat}:book:<book_id>",
    type="hash",
    holds=noop(
        "one book: title, author, year, description, tags (a JSON list), version, edit token"
    ),
    app="catalog",
    why=noop("read and written whole; the tag list lets an edit find the tag sets it must leave"),
)
CATALOG_TAG = declare(
    "catalog_tag",
    "{cat}:tag:<tag>",
    type="set",
    holds=noop("the ids of the books that carry one tag (the tag name is percent-escaped)"),
    app="catalog",
    why=noop("AND / OR / NOT are SINTER / SUNION / SDIFF; an empty set vanishes with its tag"),
)
CATALOG_TAGS = declare(
    "catalog_tags",
    "{cat}:tags",
    type="zset",
    holds=noop("every tag in use, scored by its number of books"),
    app="catalog",
    why=noop("lists tags with counts and picks the most popular tags for facets in one command"),
)
CATALOG_BOOKS = declare(
    "catalog_books",
    "{cat}:books",
    type="set",
    holds=noop("the ids of every book (the universe a NOT-only query subtracts from)"),
    app="catalog",
)
CATALOG_BY_TITLE = declare(
    "catalog_by_title",
    "{cat}:by-title",
    type="zset",
    holds=noop(
        "book id scored by its position in title order (gapped ranks, renumbered when full)"
    ),
    app="catalog",
    why=noop("ZINTERSTORE with a result set sorts it by title without reading the books"),
)
CATALOG_TITLE_LEX = declare(
    "catalog_title_lex",
    "{cat}:title-lex",
    type="zset",
    holds=noop("`<casefolded title>\\0<book id>` at score 0, to find a new title's neighbours"),
    app="catalog",
)
CATALOG_BY_YEAR = declare(
    "catalog_by_year",
    "{cat}:by-year",
    type="zset",
    holds=noop(
        "book id scored by year * 1e10 + its title score: oldest first, A to Z within a year"
    ),
    app="catalog",
    why=noop("a result page walks it in order (or intersects it) without reading the books"),
)
CATALOG_BY_YEAR_DESC = declare(
    "catalog_by_year_desc",
    "{cat}:by-year-desc",
    type="zset",
    holds=noop(
        "book id scored by -year * 1e10 + its title score: newest first, A to Z within a year"
    ),
    app="catalog",
)
CATALOG_BOOK_TAGS = declare(
    "catalog_book_tags",
    "{cat}:book-tags",
    type="hash",
    holds=noop("book id -> the book's tags as a JSON list (the book hash's own value)"),
    app="catalog",
    why=noop(
        "a small result's facets are counted from one HMGET instead of one SINTERCARD per tag"
    ),
)

CATALOG_EDITION = declare(
    "catalog_edition",
    "{cat}:edition",
    type="string",
    holds=noop("a random token, set anew by every write of the catalog's functions"),
    app="catalog",
    why=noop(
        "a worker keeps a result page while the token stays the same: one GET instead of the query"
    ),
)


# --- mail ----------------------------------------------------------------------------------

MAIL_REMINDED = declare(
    "mail-reminded",
    "{mail}:reminded:<date>",
    type="set",
    holds=noop("booking ids whose first day is <date> and whose reminder is queued"),
    app="booking",
    why=noop(
        "added in the same transaction as the reminder's outbox entry (same tag as the outbox), "
        "so each booking is reminded once, whatever sender passes or restarts come; expires "
        "after its day"
    ),
)
MAIL_OUTBOX = declare(
    "mail-outbox",
    "{mail}:queue",
    type="stream",
    holds=noop(
        "mail about accounts (field m: 'verify|<person id>|<nonce>|...', 'reset|<person "
        "id>|<nonce>|...'), with the consumer group 'senders'; rooms keep their own outbox"
    ),
    app="strongroom",
    why=noop(
        "an entry is acknowledged and deleted only once the mail server took it; one a "
        "sender stopped touching (it died) is taken over by another within seconds"
    ),
)
MAIL_TRIES = declare(
    "mail-tries",
    "{mail}:tries",
    type="hash",
    holds=noop(
        "'<outbox key> <entry id>' -> 'attempts|first failure ms|next try ms|last error' of "
        "messages that failed at least once"
    ),
    app="strongroom",
)
MAIL_DEAD = declare(
    "mail-dead",
    "{mail}:dead",
    type="hash",
    holds=noop(
        "'<outbox key> <entry id>' -> JSON (box, member, attempts, first, at, error) of "
        "messages that failed every try; staff retry or discard them"
    ),
    app="strongroom",
)
MAIL_SWEEP = declare(
    "mail-sweep",
    "{mail}:sweep",
    type="string",
    holds=noop("the sender that runs the periodic hooks this period; PX expiry, never released"),
    app="strongroom",
    why=noop(
        "one waiting-list sweep per period across processes; nothing waits on it after a crash"
    ),
)

STORE_PRIMARIES = declare(
    "store-primaries",
    "{cluster}:primaries",
    type="string",
    holds=noop("the cluster's slot ranges and the primary serving each, as last repaired"),
    app="strongroom",
    why=noop(
        "a web process that sees other primaries than these (a failover) repairs what the "
        "changed slots may have lost, then writes the new list (durably)"
    ),
)
STORE_REPAIR_LEASE = declare(
    "store-repair-lease",
    "{cluster}:repair",
    type="string",
    holds=noop("the token of the process repairing after a failover; PX expiry"),
    app="strongroom",
    why=noop("one repair at a time across processes, none forever if it dies"),
)


# --- dashboard -----------------------------------------------------------------------------

SALES_WINDOW = declare(
    "sales-window",
    "{staff}:sales-window",
    type="hash",
    holds=noop(
        "the days on sale: days (a rolling window: tomorrow to that many days ahead), first and "
        "last (a fixed window; empty when rolling); absent: the environment's first value"
    ),
    app="booking",
    why=noop(
        "staff change it on the dashboard without a restart; in the staff audit's slot, so the "
        "change and its audit entry are written in one transaction; no inventory key depends "
        "on it (they are named by calendar month)"
    ),
)

STAFF_AUDIT = declare(
    "staff-audit",
    "{staff}:audit",
    type="stream",
    holds=noop(
        "staff actions taken in the dashboard (grant or revoke staff, flush the season's "
        "inventory): kind, actor, subject, detail, at; capped with MAXLEN ~"
    ),
    app="dashboard",
    why=noop(
        "a stream is an append-only log read newest first with XREVRANGE; actions on rooms keep "
        "their own per-room booking-audit streams, the dashboard merges both"
    ),
)
