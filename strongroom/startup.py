"""Checks a site runs on its store before it serves: an app plugs one into `STARTUP_CHECKS`
(strongroom/plugins.py, from its AppConfig.ready) and `serve`, like every web process, runs
them all. A check that finds the store unfit raises StoreNotReady with a message saying what to
do (e.g. which command to run)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

import redis
from django.conf import settings

from strongroom.keyspace import SIGNING_KEY
from strongroom.plugins import Point

STARTUP_CHECKS: Point[Callable[[redis.Redis], None]] = Point("startup checks")


class StoreNotReady(Exception):
    """The store cannot be served as it is; the message says what to run."""


def signing_key_fingerprint(key: str) -> str:
    """What the store keeps of SECRET_KEY: a keyed hash of a fixed text (not the key)."""
    return hmac.new(key.encode(), b"strongroom.signing-key-check", hashlib.sha256).hexdigest()


def signing_key_check(client: redis.Redis) -> None:
    """Refuse a SECRET_KEY other than the one the store was first served with: the pickup codes
    (booking.domain.codes), calendar addresses, sessions and mailed links derive from it, and a
    start with another key (a typo, a key made afresh each start) changed every code without a
    word: the issued ones opened nothing, and the new ones the pages showed did not either (the
    room's code index is keyed by the old key)."""
    mine = signing_key_fingerprint(settings.SECRET_KEY)
    known = client.set(SIGNING_KEY.key(), mine, nx=True, get=True)
    if known is None or known == mine:
        return
    raise StoreNotReady(
        "This store was served with another SECRET_KEY. The pickup codes of its bookings, the "
        "calendar addresses and the sessions derive from that key: with this one, no code "
        "given to a buyer would open its safe. Start with the key it was served with (for "
        "`make run`: var/secret-key), or serve an empty store with the new key."
    )


def startup_checks(client: redis.Redis) -> None:
    """Check the signing key, then run every plugged check; the first that refuses raises
    StoreNotReady."""
    signing_key_check(client)
    for check in STARTUP_CHECKS:
        check(client)
