"""The login and sign-up throttles' units: a (username, client) pair, a client, a name."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.crypto import salted_hmac

from accounts.names import name_key
from strongroom.keyspace import (
    LOGIN_CLIENT_FAILURES,
    LOGIN_CLIENT_LOCK,
    LOGIN_FAILURES,
    LOGIN_LOCK,
    LOGIN_NAME_FAILURES,
    LOGIN_NAME_PACE,
    LOGIN_NAME_TURNS,
    LOGIN_TRUSTED,
    MAIL_GATE,
    SIGNUP_ATTEMPTS,
)

_SALT = "strongroom.accounts.throttle"


def _digest(*parts: str) -> str:
    return salted_hmac(_SALT, "\x00".join(parts)).hexdigest()[:32]


@dataclass(frozen=True)
class ThrottlePair:
    """One login attempt's throttle units, as salted hashes: no name or address is stored."""

    digest: str
    client_digest: str = ""
    name_digest: str = ""

    @classmethod
    def of(cls, *, username: str, client_id: str) -> ThrottlePair:
        name = name_key(username)
        return cls(
            digest=_digest(name, client_id),
            client_digest=_digest("client", client_id),
            name_digest=_digest("name", name),
        )

    @property
    def failures_key(self) -> str:
        return LOGIN_FAILURES.key(pair=self.digest)

    @property
    def lock_key(self) -> str:
        return LOGIN_LOCK.key(pair=self.digest)

    @property
    def gate_keys(self) -> dict[str, str]:
        """The keys of `accounts_login_gate` (and `accounts_login_passed`), by name."""
        return {
            "pair": self.failures_key,
            "pair_lock": self.lock_key,
            "trusted": LOGIN_TRUSTED.key(pair=self.digest),
            "address": LOGIN_CLIENT_FAILURES.key(client=self.client_digest),
            "address_lock": LOGIN_CLIENT_LOCK.key(client=self.client_digest),
            "name": LOGIN_NAME_FAILURES.key(name=self.name_digest),
            "name_pace": LOGIN_NAME_PACE.key(name=self.name_digest),
            "name_turns": LOGIN_NAME_TURNS.key(name=self.name_digest),
        }


def signup_key(*, client_id: str) -> str:
    """The sign-up counter of one client."""
    return SIGNUP_ATTEMPTS.key(client=_digest("signup", client_id))


def mail_gate_keys(*, kind: str, person_id: int, address: str, client_id: str) -> dict[str, str]:
    """The counters of a mail someone asked for (`kind`: what the gate counts as one): of the
    person, of the address it goes to and of the asking client (`accounts_mail_gate`'s keys)."""
    return {
        "person": MAIL_GATE.key(who=_digest("person", kind, str(person_id))),
        "address": MAIL_GATE.key(who=_digest("address", kind, address.lower())),
        "client": MAIL_GATE.key(who=_digest("client", client_id)),
    }
