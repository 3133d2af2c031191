"""The site's own keys: sessions, the store's layout, signing key and demo marks, the
cluster's last known primaries and the repair lease after a failover."""

from __future__ import annotations

from django.utils.translation import gettext_noop as noop

from strongroom.keyspace.core import declare

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
SIGNING_KEY = declare(
    "signing-key",
    "{site}:signing-key",
    type="string",
    holds=noop(
        "a fingerprint of the SECRET_KEY the site runs with (a keyed hash of a fixed text, "
        "which tells nothing of the key); set at the first start"
    ),
    app="strongroom",
    why=noop(
        "the pickup codes, calendar addresses, sessions and links derive from SECRET_KEY: a "
        "site started with another key would change every code without a word, so it refuses "
        "to serve"
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
DURABLE_FENCE = declare(
    "durable-fence",
    "{fence:<n>}:fence",
    type="string",
    holds=noop(
        "nothing once a durable call is over: set and deleted right after the call, on the "
        "same primary, in a slot that primary serves (the first n whose slot it is)"
    ),
    app="strongroom",
    why=noop(
        "WAITAOF and WAIT wait for the connection's own last write; a retried call that finds "
        "its earlier success writes nothing, and on a new connection would be confirmed at "
        "once, disk and replica or not. The fence is a write that always happens, so the wait "
        "covers everything the server holds, the earlier success included"
    ),
)
