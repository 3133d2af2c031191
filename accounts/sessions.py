"""Signing a person in and out of a Django session (no django.contrib.auth), and the session
store that reads the signed-in person with the session (SESSION_ENGINE = "accounts.sessions").

A signed-in session's key is `<32 random characters>-<person id>`, so loading it reads the
person's record in the same pipeline: the request's identity costs one round trip. The id in a
key is only a hint of what to read along: the person counts only when the session's own
(signed) contents name the same id.
"""

from __future__ import annotations

import functools
from typing import Any

import redis
from django.conf import settings
from django.contrib.sessions.backends.base import VALID_KEY_CHARS
from django.http import HttpRequest
from django.middleware.csrf import rotate_token
from django.utils.crypto import constant_time_compare, get_random_string, salted_hmac
from redis.client import Pipeline

from accounts.extensions import identity_reads, signed_out
from accounts.people import ANONYMOUS, AnonymousPerson, Person
from accounts.selectors import person_with_password, person_with_password_queue
from strongroom import sessions
from strongroom.decoders import text_values

SESSION_PERSON_ID = "_person_id"
SESSION_PERSON_CHECK = "_person_check"


def password_check_value(password_hash: str, epoch: str = "") -> str:
    """A value derived from the password hash and the person's session epoch: a new password,
    or "sign out everywhere else", ends every other session."""
    return _check_value(password_hash, epoch, settings.SECRET_KEY)


@functools.lru_cache(maxsize=4096)
def _check_value(password_hash: str, epoch: str, secret: str) -> str:
    # Every signed-in request compares with it: kept per worker, keyed by all it derives from.
    return salted_hmac(
        "strongroom.accounts.session", f"{password_hash}|{epoch}", secret=secret
    ).hexdigest()


def session_person_id(session: Any) -> int | None:
    """The id of the person signed in to this session (no store round trip beyond the session)."""
    value = session.get(SESSION_PERSON_ID)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


# A signed-in session's key is `<32 random characters>-<person id>`: the session backend reads
# the person along with the session (one round trip). Anonymous sessions keep a plain key.
_KEY_PERSON_SEPARATOR = "-"
_KEY_RANDOM_LENGTH = 32


def session_key_new(data: dict[str, Any]) -> str:
    """A fresh session key for a session holding `data`; it names the person signed in."""
    key = get_random_string(_KEY_RANDOM_LENGTH, VALID_KEY_CHARS)
    person_id = session_person_id(data)
    return key if person_id is None else f"{key}{_KEY_PERSON_SEPARATOR}{person_id}"


def session_key_person_id(session_key: str) -> int | None:
    """The person id a session key names (a hint: the session's contents decide)."""
    _, separator, tail = session_key.rpartition(_KEY_PERSON_SEPARATOR)
    if not separator or not tail.isascii() or not tail.isdigit() or len(tail) > 18:
        return None
    return int(tail)


class SessionStore(sessions.SessionStore):
    """The site's sessions, read with the person their key names (one pipeline)."""

    # (person id, HMGET reply) read with the session when its key names a person.
    person_read: tuple[int, list[str | None]] | None = None
    # (person id, {name: reply}) of the other apps' reads along (accounts.extensions).
    along_read: tuple[int, dict[str, Any]] | None = None
    _person_hint: int | None = None
    _along_names: tuple[str, ...] = ()

    def _reads_along(self, pipe: Pipeline, session_key: str) -> None:
        self._person_hint = session_key_person_id(session_key)
        if self._person_hint is not None:
            person_with_password_queue(pipe, person_id=self._person_hint)
            along = identity_reads(person_id=self._person_hint)
            self._along_names = tuple(name for name, _command in along)
            for _name, (args, options) in along:
                pipe.execute_command(*args, **options)

    def _read_along(self, replies: list[Any]) -> None:
        if self._person_hint is not None:
            self.person_read = (self._person_hint, text_values(replies[0]))
            named = dict(zip(self._along_names, replies[1:], strict=True))
            self.along_read = (self._person_hint, named)

    def _new_key(self, data: dict[str, Any]) -> str:
        return session_key_new(data)


def session_sign_in(session: Any, *, person: Person, password_hash: str) -> None:
    """Put a person in a session whose key the caller has just rotated."""
    session[SESSION_PERSON_ID] = person.id
    session[SESSION_PERSON_CHECK] = password_check_value(password_hash, person.session_epoch)


def request_sign_in(request: HttpRequest, *, person: Person, password_hash: str) -> None:
    """Sign in: the person in the session, then a new session key (no fixation; the key names
    the person, see `session_key_new`), a new CSRF token."""
    session_sign_in(request.session, person=person, password_hash=password_hash)
    request.session.cycle_key()
    rotate_token(request)
    request.user = person  # type: ignore[assignment]


def request_sign_out(request: HttpRequest) -> None:
    """Sign out: the session is deleted from the store and a fresh, empty one begins (the
    sign-out hooks go first, so the person's holds are given back)."""
    person_id = session_person_id(request.session)
    if person_id is not None:
        signed_out(person_id=str(person_id))
    request.session.flush()
    request.user = ANONYMOUS  # type: ignore[assignment]


def session_person(session: Any, *, client: redis.Redis) -> Person | AnonymousPerson:
    """The person of a session, or anonymous when none, gone, or their password changed."""
    person_id = session_person_id(session)
    if person_id is None:
        return ANONYMOUS
    return session_person_settle(
        session, found=person_with_password(client=client, person_id=person_id)
    )


def session_person_settle(
    session: Any, *, found: tuple[Person, str] | None
) -> Person | AnonymousPerson:
    """The person of a session from a `person_with_password` answer read by the caller (the
    middleware reads it in the same round trip as the visit record): anonymous, and the session
    ended, when the person is gone or their password changed since this session signed in."""
    check = session.get(SESSION_PERSON_CHECK) or ""
    if found is None or not constant_time_compare(
        check, password_check_value(found[1], found[0].session_epoch)
    ):
        session.flush()
        return ANONYMOUS
    return found[0]
