"""Writes about people: sign-up, passwords, staff, login records (the throttles are in
accounts/gates.py)."""

from __future__ import annotations

import functools
import secrets
import uuid
from dataclasses import dataclass
from urllib.parse import quote

import redis
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from accounts.calls import (
    EMAIL_FORGET,
    NAME_CLAIM,
    PERSON_CREATE,
    PERSON_DISCARD,
    SKELETON_FORGET,
    STAFF_SET,
)
from accounts.extensions import person_forget_everywhere
from accounts.gates import DeviceCheck, LoginOutcome, password_check
from accounts.names import name_key, name_skeleton, username_validate
from accounts.passwords import password_validate
from accounts.people import Person
from strongroom.addresses import address_arg
from strongroom.clock import now_ms
from strongroom.decoders import text, text_values
from strongroom.durable import durable_fcall
from strongroom.keyspace import (
    LOGINS_RECENT,
    LOGINS_TOP,
    PERSON,
    PERSON_BY_EMAIL,
    PERSON_BY_NAME,
    PERSON_BY_SKELETON,
    PERSON_LAST_ID,
    PERSON_NAMES,
)
from strongroom.libraries import fcall
from strongroom.offload import off_loop
from strongroom.outbox import mail_queue, mail_queue_once

_SIGNUP_ATTEMPTS = 100


class NameTaken(ValidationError):
    """Someone already has this username (in any case or width)."""

    def __init__(self) -> None:
        super().__init__(_("This username is taken. Please choose another."), code="taken")


class NameLookalike(NameTaken):
    """The username looks like one already taken (same confusable skeleton, Unicode TR39)."""

    def __init__(self) -> None:
        ValidationError.__init__(
            self,
            _(
                "This username looks like one already taken (letters from another script, "
                "or 1 for l). Please choose another."
            ),
            code="lookalike",
        )


def name_refusal(*, client: redis.Redis, username: str) -> NameTaken | None:
    """Why `username` cannot be had (taken, or like a name taken), read before anything is
    written or counted; None when it looks free (the name's claim still decides between two
    sign-ups of it at the same moment). One round trip."""
    with client.pipeline(transaction=False) as pipe:
        pipe.hget(PERSON_BY_NAME.key(), name_key(username))
        pipe.hget(PERSON_BY_SKELETON.key(), name_skeleton(username))
        owner, alike = pipe.execute()
    if owner is not None:
        return NameTaken()
    return NameLookalike() if alike is not None else None


class PersonNotFound(Exception):
    """No person has this id."""


def person_create(
    *,
    client: redis.Redis,
    username: str,
    password: str,
    is_staff: bool = False,
    open_lane: bool = False,
) -> Person:
    """Validate, hash and store a new person; raises ValidationError (NameTaken if taken), or
    with `open_lane` (a sign-up: anyone may send one) strongroom.offload.Busy when too many
    passwords are being hashed at once.

    Nothing is written unless every check passes.
    """
    username_validate(username)
    password_validate(password, username=username)
    return person_register(
        client=client,
        username=username,
        password_hash=off_loop(make_password, password, open_lane=open_lane),
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
    refused = name_refusal(client=client, username=username)
    if refused is not None:
        raise refused  # taken already: no id is used up and nothing is written
    key = name_key(username)
    token = uuid.uuid4().hex
    for _attempt in range(_SIGNUP_ATTEMPTS):
        person_id = int(client.incr(PERSON_LAST_ID.key()))
        person = PERSON.key(person_id=person_id)
        create_args = {
            "username": username, "name_key": key, "password": password_hash,
            "is_staff": int(is_staff), "joined_ms": now_ms(), "token": token,
        }  # fmt: skip
        keys, args = PERSON_CREATE.call(keys={"person": person}, args=create_args)
        if durable_fcall(client, PERSON_CREATE.name, keys, args) == "ok":
            break
    else:
        raise RuntimeError("sign-up could not get an id: too much contention")
    keys, args = NAME_CLAIM.call(
        keys={
            "by_name": PERSON_BY_NAME.key(), "names": PERSON_NAMES.key(),
            "by_skeleton": PERSON_BY_SKELETON.key(),
        },
        args={
            "name_key": key, "id": person_id, "username": username,
            "skeleton": name_skeleton(username),
        },
    )  # fmt: skip
    claimed = durable_fcall(client, NAME_CLAIM.name, keys, args)
    if claimed != "ok":
        keys, args = PERSON_DISCARD.call(keys={"person": person}, args={"token": token})
        fcall(client, PERSON_DISCARD.name, keys, args)
        raise NameLookalike if claimed == "lookalike" else NameTaken
    return Person(id=person_id, username=username, is_staff=is_staff)


def skeletons_fill(*, client: redis.Redis) -> int:
    """Give every claimed name its look-alike entry (names claimed before the skeleton check
    existed); HSETNX leaves a claim made meanwhile alone. Returns how many were added."""
    added = 0
    for key, person_id in client.hscan_iter(PERSON_BY_NAME.key(), count=1000):
        added += int(client.hsetnx(PERSON_BY_SKELETON.key(), name_skeleton(text(key)), person_id))
    return added


def password_set(*, client: redis.Redis, person_id: int, password: str) -> str:
    """Validate and store a new password; returns the new hash (for the session check). A new
    address still waiting to be confirmed is dropped with the old password (its link stops
    working): the confirmed address's owner, told of it, cancels it this way."""
    key = PERSON.key(person_id=person_id)
    username, email, verified = text_values(
        client.hmget(key, "username", "email", "email_verified")
    )
    if username is None:
        raise PersonNotFound(person_id)
    password_validate(password, username=username)
    encoded = off_loop(make_password, password)
    pipe = client.pipeline(transaction=False)
    pipe.hset(key, "password", encoded)
    pipe.hdel(key, "email_pending")
    if email and verified == "1":  # "your password was changed", to the confirmed address
        notice = (person_id, secrets.token_hex(6), address_arg(email))
        mail_queue(pipe, kind="password_changed", args=notice)
    pipe.execute()
    return encoded


@dataclass(frozen=True)
class StaffChange:
    """What `staff_set` did: the person as they now are, and whether their flag changed (False:
    they already were what was asked, and nothing was written)."""

    person: Person
    changed: bool


def staff_set(*, client: redis.Redis, person_id: int, is_staff: bool) -> StaffChange:
    """Grant or revoke staff; raises PersonNotFound for an unknown id."""
    # One function checks that the person exists, compares and sets the flag (one round trip,
    # durable: a revocation that was confirmed stays revoked); it alone says whether this call
    # changed it, so that two presses at once are audited once.
    answer = STAFF_SET.send(
        functools.partial(durable_fcall, client),
        keys={"person": PERSON.key(person_id=person_id)},
        args={"is_staff": int(is_staff)},
    )
    if answer["status"] == "gone":
        raise PersonNotFound(person_id)
    person = Person(id=person_id, username=text(answer["username"]), is_staff=is_staff)
    return StaffChange(person=person, changed=answer["status"] == "changed")


def login_record(
    *, client: redis.Redis, person_id: int, at_ms: int | None = None, language: str = ""
) -> None:
    """Record one login in one pipeline: the person's counters (its own slot) and the {people}
    lists (one round trip per primary reached); `language` becomes the person's mail language
    when they have none yet (one chosen on the account page stays whatever the browser says)."""
    at = now_ms() if at_ms is None else at_ms
    person = PERSON.key(person_id=person_id)
    recent = LOGINS_RECENT.key()
    pipe = client.pipeline(transaction=False)
    pipe.hincrby(person, "logins", 1)
    pipe.hset(person, "last_login", at)
    if language in LANGUAGE_CODES:
        pipe.hsetnx(person, "lang", language)
    pipe.lpush(recent, f"{person_id}:{at}")
    pipe.ltrim(recent, 0, settings.STRONGROOM_RECENT_LOGINS - 1)
    pipe.zincrby(LOGINS_TOP.key(), 1, str(person_id))
    pipe.execute()


LANGUAGE_CODES = frozenset(code for code, _name in settings.LANGUAGES)


def language_set(*, client: redis.Redis, person_id: int, language: str) -> None:
    """The language mail is written in (one of settings.LANGUAGES)."""
    if language not in LANGUAGE_CODES:
        raise ValueError(language)
    client.hset(PERSON.key(person_id=person_id), "lang", language)


def sessions_end_others(*, client: redis.Redis, person_id: int) -> str:
    """End every session of this person (a new session epoch); returns the new epoch, which
    the caller puts in the current session to keep it."""
    return str(client.hincrby(PERSON.key(person_id=person_id), "sessions", 1))


def calendar_token_new(*, client: redis.Redis, person_id: int) -> str:
    """A new secret for the person's calendar subscription (the old URL stops working)."""
    token = secrets.token_urlsafe(24)
    client.hset(PERSON.key(person_id=person_id), "cal_token", token)
    return token


def calendar_token_revoke(*, client: redis.Redis, person_id: int) -> None:
    """No subscription URL works any more."""
    client.hdel(PERSON.key(person_id=person_id), "cal_token")


def account_delete(*, client: redis.Redis, person_id: int, staff_id: int | None = None) -> bool:
    """Delete an account, whoever asks (the person, or the staff member `staff_id`): every
    other app forgets them first (booking cancels their upcoming bookings, each with its mail,
    which says who closed the account), then the person goes. False when nobody had this id."""
    actor = "" if staff_id is None else str(staff_id)
    person_forget_everywhere(client=client, person_id=person_id, actor_id=actor)
    return person_delete(client=client, person_id=person_id)


def person_delete(*, client: redis.Redis, person_id: int) -> bool:
    """Forget a person: their name, address and leaderboard entry (in {people}), then their
    record (its own slot; one pipeline, one round trip per primary); their sessions end with
    the record. A crash in between leaves a record that no name leads to. The recent-logins
    list keeps only ids, which no longer lead to a name. Bookings are the booking app's
    (booking.engine.owners)."""
    key = PERSON.key(person_id=person_id)
    name, email, verified, username, lang = text_values(
        client.hmget(key, "name_key", "email", "email_verified", "username", "lang")
    )
    if name is None:
        return False
    if email and verified == "1":  # told once (a retried deletion queues nothing more)
        notice = (person_id, quote(username or ""), lang or "en", address_arg(email))
        mail_queue_once(
            client, kind="account_deleted", args=notice, request_id=f"deleted-{person_id}"
        )
    pipe = client.pipeline(transaction=False)
    pipe.hdel(PERSON_BY_NAME.key(), name)
    # Only the person's own look-alike entry (checked and deleted in one call).
    keys, args = SKELETON_FORGET.call(
        keys={"by_skeleton": PERSON_BY_SKELETON.key()},
        args={"skeleton": name_skeleton(name), "person_id": person_id},
    )
    pipe.fcall(SKELETON_FORGET.name, len(keys), *keys, *args)
    pipe.hdel(PERSON_NAMES.key(), str(person_id))
    pipe.zrem(LOGINS_TOP.key(), str(person_id))
    if email:  # only if the address still names this person (confirmed or merely claimed)
        keys, args = EMAIL_FORGET.call(
            keys={"by_email": PERSON_BY_EMAIL.key()},
            args={"email": email, "person_id": person_id},
        )
        pipe.fcall(EMAIL_FORGET.name, len(keys), *keys, *args)
    pipe.delete(key)
    pipe.execute()
    return True


# --- signing in ----------------------------------------------------------------------------------


def login_attempt(
    *,
    client: redis.Redis,
    username: str,
    password: str,
    client_id: str,
    language: str = "",
    device: DeviceCheck | None = None,
) -> LoginOutcome:
    """Check a name and password under the throttle; record the login or the failure.

    An unknown name and a wrong password read the same (an unknown name is not hashed: the
    sign-up form tells anyone whether a name is taken).
    """
    at = now_ms()
    outcome = password_check(
        client=client,
        username=username,
        password=password,
        client_id=client_id,
        at_ms=at,
        device=device,
    )
    if outcome.person is not None:
        login_record(client=client, person_id=outcome.person.id, at_ms=at, language=language)
    return outcome
