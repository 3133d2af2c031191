"""Writes about people: sign-up, passwords, staff, login records, the login throttle."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import redis
from django.conf import settings
from django.contrib.auth.hashers import check_password, make_password
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from accounts.names import name_key, username_validate
from accounts.passwords import password_validate
from accounts.people import Person
from accounts.selectors import person_with_password
from accounts.throttle import ThrottlePair, signup_key
from strongroom.clock import now_ms
from strongroom.keyspace import (
    LOGINS_RECENT,
    LOGINS_TOP,
    PERSON,
    PERSON_BY_NAME,
    PERSON_LAST_ID,
    PERSON_NAMES,
)
from strongroom.store import durable_fcall, fcall, text

_SIGNUP_ATTEMPTS = 100
_NO_PERSON_ID = 0  # ids start at 1


class NameTaken(ValidationError):
    """Someone already has this username (in any case or width)."""

    def __init__(self) -> None:
        super().__init__(_("This username is taken. Please choose another."), code="taken")


class PersonNotFound(Exception):
    """No person has this id."""


def person_create(
    *, client: redis.Redis, username: str, password: str, is_staff: bool = False
) -> Person:
    """Validate, hash and store a new person; raises ValidationError (NameTaken if taken).

    Nothing is written unless every check passes.
    """
    username_validate(username)
    password_validate(password, username=username)
    return person_register(
        client=client,
        username=username,
        password_hash=make_password(password),
        is_staff=is_staff,
    )


def person_register(
    *, client: redis.Redis, username: str, password_hash: str, is_staff: bool = False
) -> Person:
    """Store a person whose password is already hashed (person_create, fixtures, imports).

    The person is written under a fresh id in its own slot, then one server-side function
    claims the name in {people}: of two sign-ups of one name at the same moment exactly one
    claims it, and the other deletes its person again and gets NameTaken. A sign-up cut off
    between the two steps leaves a person no name leads to (never a name without a person).
    """
    username_validate(username)
    key = name_key(username)
    token = uuid.uuid4().hex
    for _attempt in range(_SIGNUP_ATTEMPTS):
        person_id = int(client.incr(PERSON_LAST_ID.key()))
        person = PERSON.key(person_id=person_id)
        created = durable_fcall(
            client,
            "accounts_person_create",
            [person],
            [username, key, password_hash, int(is_staff), now_ms(), token],
        )
        if created == "ok":
            break
    else:
        raise RuntimeError("sign-up could not get an id: too much contention")
    claimed = durable_fcall(
        client,
        "accounts_name_claim",
        [PERSON_BY_NAME.key(), PERSON_NAMES.key()],
        [key, person_id, username],
    )
    if claimed == "taken":
        fcall(client, "accounts_person_discard", [person], [token])
        raise NameTaken
    return Person(id=person_id, username=username, is_staff=is_staff)


def password_set(*, client: redis.Redis, person_id: int, password: str) -> str:
    """Validate and store a new password; returns the new hash (for the session check)."""
    username = client.hget(PERSON.key(person_id=person_id), "username")
    if username is None:
        raise PersonNotFound(person_id)
    password_validate(password, username=text(username))
    encoded = make_password(password)
    client.hset(PERSON.key(person_id=person_id), "password", encoded)
    return encoded


def staff_set(*, client: redis.Redis, person_id: int, is_staff: bool) -> Person:
    """Grant or revoke staff; raises PersonNotFound for an unknown id."""
    # One function checks that the person exists and sets the flag (one round trip, durable:
    # a revocation that was confirmed stays revoked).
    username = durable_fcall(
        client, "accounts_staff_set", [PERSON.key(person_id=person_id)], [int(is_staff)]
    )
    if username is None:
        raise PersonNotFound(person_id)
    return Person(id=person_id, username=username, is_staff=is_staff)


def login_record(*, client: redis.Redis, person_id: int, at_ms: int | None = None) -> None:
    """Record one login in one pipeline: the person's counters (its own slot) and the
    {people} lists; one round trip on one server, one per primary reached on a cluster."""
    at = now_ms() if at_ms is None else at_ms
    person = PERSON.key(person_id=person_id)
    recent = LOGINS_RECENT.key()
    pipe = client.pipeline(transaction=False)
    pipe.hincrby(person, "logins", 1)
    pipe.hset(person, "last_login", at)
    pipe.lpush(recent, f"{person_id}:{at}")
    pipe.ltrim(recent, 0, settings.STRONGROOM_RECENT_LOGINS - 1)
    pipe.zincrby(LOGINS_TOP.key(), 1, str(person_id))
    pipe.execute()


# --- the throttles -----------------------------------------------------------------------------


def login_gate(
    *, client: redis.Redis, pair: ThrottlePair, attempt: str, at_ms: int, username: str
) -> tuple[bool, int, int | None]:
    """Let one login attempt through the throttle, counting it as a failure until it succeeds;
    the name's person id is looked up in the same round trip.

    Returns whether the password may be checked, the end of the pair's lock (epoch ms, 0 for
    none: the lock that refused it, or the one a wrong password now meets) and the person id.
    One atomic call checks every limit and counts: parallel attempts cannot outrun it.
    """
    gate_args = [
        at_ms,
        settings.STRONGROOM_LOGIN_FAILURE_WINDOW_MINUTES * 60_000,
        settings.STRONGROOM_LOGIN_FAILURE_LIMIT,
        settings.STRONGROOM_LOGIN_LOCK_MINUTES * 60_000,
        settings.STRONGROOM_LOGIN_CLIENT_LIMIT,
        settings.STRONGROOM_LOGIN_NAME_LIMIT,
        settings.STRONGROOM_LOGIN_SLOWDOWN_SECONDS * 1000,
        attempt,
    ]
    keys = pair.gate_keys
    pipe = client.pipeline(transaction=False)
    pipe.fcall("accounts_login_gate", len(keys), *keys, *gate_args)
    pipe.hget(PERSON_BY_NAME.key(), name_key(username))
    gate, person_id = pipe.execute(raise_on_error=False)
    if isinstance(gate, redis.ResponseError) and "Function not found" in str(gate):
        gate = fcall(client, "accounts_login_gate", keys, gate_args)  # loads the libraries
    if isinstance(person_id, Exception):
        raise person_id
    if isinstance(gate, Exception):
        raise gate
    verdict, ends = gate
    return verdict == "go", int(ends), int(person_id) if person_id is not None else None


def login_passed(*, client: redis.Redis, pair: ThrottlePair, attempt: str) -> None:
    """The attempt was a success: uncount it, lift the pair's lock, trust the pair."""
    trust_ms = settings.STRONGROOM_LOGIN_TRUST_DAYS * 86_400_000
    fcall(client, "accounts_login_passed", pair.gate_keys, [attempt, trust_ms])


def signup_gate(*, client: redis.Redis, client_id: str, at_ms: int | None = None) -> int:
    """Count one sign-up from a client; returns 0 if it may go ahead, else when the next may."""
    at = now_ms() if at_ms is None else at_ms
    window = settings.STRONGROOM_SIGNUP_WINDOW_MINUTES * 60_000
    return int(
        fcall(
            client,
            "accounts_signup_gate",
            [signup_key(client_id=client_id)],
            [at, window, settings.STRONGROOM_SIGNUP_LIMIT, uuid.uuid4().hex],
        )
    )


# --- signing in ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoginOutcome:
    """What a login attempt came to: a person (with their hash), a lock, or a plain failure."""

    person: Person | None = None
    password_hash: str = ""
    locked_until_ms: int = 0

    @property
    def locked(self) -> bool:
        return self.locked_until_ms > 0


def login_attempt(
    *, client: redis.Redis, username: str, password: str, client_id: str
) -> LoginOutcome:
    """Check a name and password under the throttle; record the login or the failure.

    An unknown name and a wrong password look and cost the same (a hash is computed either way).
    """
    pair = ThrottlePair.of(username=username, client_id=client_id)
    at = now_ms()
    attempt = uuid.uuid4().hex
    may_check, locked_until, person_id = login_gate(
        client=client, pair=pair, attempt=attempt, at_ms=at, username=username
    )
    if not may_check:
        return LoginOutcome(locked_until_ms=locked_until)
    # An unknown name still reads a person (id 0 is never handed out): the same round trips.
    found = person_with_password(client=client, person_id=person_id or _NO_PERSON_ID)
    if person_id is None or found is None:
        make_password(password)  # the same work as a real check: no timing hint
        return LoginOutcome(locked_until_ms=locked_until)
    person, encoded = found
    if not check_password(password, encoded):
        return LoginOutcome(locked_until_ms=locked_until)
    login_record(client=client, person_id=person.id, at_ms=at)
    login_passed(client=client, pair=pair, attempt=attempt)
    return LoginOutcome(person=person, password_hash=encoded)
