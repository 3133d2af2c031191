"""A store remembers the SECRET_KEY it is served with (a fingerprint): a start with another key
is refused, since every pickup code given out derives from it (and the rooms' code indexes are
keyed by it)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from booking.domain.codes import code_for
from strongroom.keyspace import SIGNING_KEY
from strongroom.startup import StoreNotReady, signing_key_check, signing_key_fingerprint


def test_another_secret_key_is_refused_and_the_stores_own_is_served(
    r: redis.Redis, settings: Any
) -> None:
    r.delete(SIGNING_KEY.key())
    first = settings.SECRET_KEY
    code = code_for("007-aaaaaaaaaaaaaaaaaaaaaaaaaa", 0)
    signing_key_check(r)  # the first start: remembered
    assert r.get(SIGNING_KEY.key()) == signing_key_fingerprint(first)
    assert first not in (r.get(SIGNING_KEY.key()) or "")  # a fingerprint, not the key
    signing_key_check(r)  # the same key again: served
    settings.SECRET_KEY = "another-key-" + "x" * 40
    # Why it matters: the same booking's code is another one under another key.
    assert code_for("007-aaaaaaaaaaaaaaaaaaaaaaaaaa", 0) != code
    with pytest.raises(StoreNotReady, match="served with another SECRET_KEY"):
        signing_key_check(r)
    assert r.get(SIGNING_KEY.key()) == signing_key_fingerprint(first)  # nothing changed
    settings.SECRET_KEY = first
    signing_key_check(r)  # the store's key again: served
    r.delete(SIGNING_KEY.key())
