"""The accounts' keys: people, names, logins and their throttles, the mail gate, visits."""

from __future__ import annotations

from django.utils.translation import gettext_noop as noop

from strongroom.keyspace.core import declare

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
LOGIN_NAME_PACE = declare(
    "login-name-pace",
    "{throttle}:login:name-pace:<name>",
    type="string",
    holds=noop(
        "epoch ms until which no (username, client) pair with more than two failures of the "
        "name (and not trusted, not a known device) may try it: one such try a slowdown"
    ),
    app="accounts",
)
LOGIN_NAME_TURNS = declare(
    "login-name-turns",
    "{throttle}:login:name-turns:<name>",
    type="zset",
    holds=noop(
        "the turns at the name's pace kept for (username, client) pairs told to come back: "
        "the pair's failures key, scored by the epoch ms its turn comes"
    ),
    app="accounts",
    why=noop(
        "a pair told to come back gets that turn, one each, in the order they were told: "
        "strangers polling the moment a turn opens took every turn before its owner came back"
    ),
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
        "the first person to verify an address owns it (accounts_email_claim) until they let it "
        "go: another account's confirmation of it changes nothing"
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
        "added once a second per worker (accounts_visits_add); expires after "
        "STRONGROOM_VISITS_KEEP_DAYS"
    ),
    app="accounts",
    why=noop(
        "sharded so that page views spread over several cluster slots; the day's views are the "
        "sum of the shards"
    ),
)
VISITS_APPLIED = declare(
    "visits-applied",
    "{visits:<shard>}:applied",
    type="zset",
    holds=noop(
        "the ids of the view counts written to this shard in the last hour (score: when), so a "
        "flush sent again after a lost reply adds nothing; expires an hour after the last"
    ),
    app="accounts",
    why=noop(
        "a stalled store runs a flush whose reply the worker never got: without its id the "
        "worker's next try counted the same views twice"
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
        "a HyperLogLog counts distinct visitors in at most 12 KB a day, within about one per "
        "cent; a visitor is in one shard only, so the day's count is the sum of the shards' "
        "counts"
    ),
)
