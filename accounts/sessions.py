"""Signing a person in and out of a Django session (no django.contrib.auth)."""

from __future__ import annotations

from typing import Any

import redis
from django.http import HttpRequest
from django.middleware.csrf import rotate_token
from django.utils.crypto import constant_time_compare, salted_hmac

from accounts.people import ANONYMOUS, AnonymousPerson, Person
from accounts.selectors import person_with_password

SESSION_PERSON_ID = "_person_id"
SESSION_PERSON_CHECK = "_person_check"


def password_check_value(password_hash: str, epoch: str = "") -> str:
    """A value derived from the password hash and the person's session epoch: a new password,
    or "sign out everywhere else", ends every other session."""
    return salted_hmac("strongroom.accounts.session", f"{password_hash}|{epoch}").hexdigest()


def session_person_id(session: Any) -> int | None:
    """The id of the person signed in to this session (no store round trip beyond the session)."""
    value = session.get(SESSION_PERSON_ID)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def session_sign_in(session: Any, *, person: Person, password_hash: str) -> None:
    """Put a person in a session whose key the caller has just rotated."""
    session[SESSION_PERSON_ID] = person.id
    session[SESSION_PERSON_CHECK] = password_check_value(password_hash, person.session_epoch)


def request_sign_in(request: HttpRequest, *, person: Person, password_hash: str) -> None:
    """Sign in: a new session key (no fixation), a new CSRF token, the person in the session."""
    request.session.cycle_key()
    session_sign_in(request.session, person=person, password_hash=password_hash)
    rotate_token(request)
    request.user = person  # type: ignore[assignment]


def request_sign_out(request: HttpRequest) -> None:
    """Sign out: the session is deleted from the store and a fresh, empty one begins."""
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
