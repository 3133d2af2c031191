"""The login throttle's unit: one (username, client) pair."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.crypto import salted_hmac

from accounts.names import name_key
from strongroom.keyspace import LOGIN_FAILURES, LOGIN_LOCK


@dataclass(frozen=True)
class ThrottlePair:
    """One (username, client) pair, as a salted hash: no name or address is stored."""

    digest: str

    @classmethod
    def of(cls, *, username: str, client_id: str) -> ThrottlePair:
        value = f"{name_key(username)}\x00{client_id}"
        return cls(salted_hmac("strongroom.accounts.throttle", value).hexdigest()[:32])

    @property
    def failures_key(self) -> str:
        return LOGIN_FAILURES.key(pair=self.digest)

    @property
    def lock_key(self) -> str:
        return LOGIN_LOCK.key(pair=self.digest)
