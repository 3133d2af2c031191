"""The known-device cookie: a browser where a person has logged in keeps a signed note of it, so
that strangers guessing that person's name from many places never keep them out of it (the
OWASP "device cookie"). The note names the person and is bound to their password hash: a new
password makes every earlier note worthless."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import constant_time_compare, salted_hmac

DEVICE_COOKIE = "strongroom_device"
DEVICE_MAX_AGE_S = 365 * 24 * 3600
_SALT = "strongroom.accounts.device"
_PEOPLE_PER_BROWSER = 5  # a shared computer keeps the notes of the last few people


def _binding(person_id: int, password_hash: str) -> str:
    return salted_hmac(_SALT, f"{person_id}|{password_hash}").hexdigest()[:32]


def _notes(value: str | None) -> list[list[object]]:
    """The notes of a cookie value: [[person id, binding], ...], or none if it is not ours."""
    if not value or len(value) > 2000:
        return []
    try:
        notes = signing.loads(value, salt=_SALT, max_age=DEVICE_MAX_AGE_S)
    except signing.BadSignature:
        return []
    if not isinstance(notes, list):
        return []
    return [n for n in notes if isinstance(n, list) and len(n) == 2]


def device_known(request: HttpRequest, *, person_id: int, password_hash: str) -> bool:
    """Whether this browser holds a live note that this person logged in on it."""
    binding = _binding(person_id, password_hash)
    return any(
        note[0] == person_id and constant_time_compare(str(note[1]), binding)
        for note in _notes(request.COOKIES.get(DEVICE_COOKIE))
    )


def device_check(request: HttpRequest) -> Callable[[int, str], bool]:
    """The login gate's question about this browser (accounts.gates.DeviceCheck): whether it
    holds a live note of the person with this id and password hash."""

    def known(person_id: int, password_hash: str) -> bool:
        return device_known(request, person_id=person_id, password_hash=password_hash)

    return known


def device_remember(
    request: HttpRequest, response: HttpResponse, *, person_id: int, password_hash: str
) -> None:
    """Note on the response that this person signed in on this browser (newest first): at a
    login, a sign-up, and a new password (which makes the earlier note worthless)."""
    kept = [n for n in _notes(request.COOKIES.get(DEVICE_COOKIE)) if n[0] != person_id]
    notes = [[person_id, _binding(person_id, password_hash)], *kept][:_PEOPLE_PER_BROWSER]
    response.set_cookie(
        DEVICE_COOKIE,
        signing.dumps(notes, salt=_SALT, compress=True),
        max_age=DEVICE_MAX_AGE_S,
        httponly=True,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )
