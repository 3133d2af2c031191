"""Checks a site runs on its store before it serves: an app plugs one into `STARTUP_CHECKS`
(strongroom/plugins.py, from its AppConfig.ready) and `serve`, like every web process, runs
them all. A check that finds the store unfit raises StoreNotReady with a message saying what to
do (e.g. which command to run)."""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable

import redis
from django.conf import settings

from strongroom.keyspace import SIGNING_KEY
from strongroom.plugins import Point

logger = logging.getLogger(__name__)

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
    word; the issued ones then opened nothing. STRONGROOM_ACCEPT_NEW_SECRET_KEY=1 takes the new
    key and remembers it."""
    mine = signing_key_fingerprint(settings.SECRET_KEY)
    known = client.set(SIGNING_KEY.key(), mine, nx=True, get=True)
    if known is None or known == mine:
        return
    if settings.STRONGROOM_ACCEPT_NEW_SECRET_KEY:
        client.set(SIGNING_KEY.key(), mine)
        logger.warning(
            "SECRET_KEY changed (STRONGROOM_ACCEPT_NEW_SECRET_KEY=1): every pickup code, "
            "calendar address and session made with the old key no longer works"
        )
        return
    raise StoreNotReady(
        "This store was served with another SECRET_KEY. The pickup codes of its bookings, the "
        "calendar addresses and the sessions derive from that key: with this one, every code "
        "already given to a buyer would open nothing. Start with the key it was served with; "
        "to change the key on purpose (every pickup code changes: tell the buyers), start once "
        "with STRONGROOM_ACCEPT_NEW_SECRET_KEY=1."
    )


def startup_checks(client: redis.Redis) -> None:
    """Check the signing key, then run every plugged check; the first that refuses raises
    StoreNotReady."""
    signing_key_check(client)
    for check in STARTUP_CHECKS:
        check(client)
