"""The throttles: the login gate (before a password is checked, whoever asks: the login form,
or a signed-in person confirming their password) and the sliding-window gates (sign-ups, mail
someone asked for, a buyer's bookings per hour). Each is one atomic server-side call."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django import forms
from django.conf import settings
from django.contrib.auth.hashers import check_password
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.calls import LOGIN_DROPPED, LOGIN_GATE, LOGIN_PASSED, SIGNUP_GATE
from accounts.clients import client_address
from accounts.devices import device_check
from accounts.names import name_key
from accounts.people import Person
from accounts.selectors import person_with_password
from accounts.throttle import ThrottlePair, signup_key
from strongroom.clock import minutes_until, now_ms
from strongroom.keyspace import PERSON_BY_NAME
from strongroom.libraries import fcall, fcalls, pipeline_functions
from strongroom.offload import Busy, off_loop
from strongroom.store import get_store

_NO_PERSON_ID = 0  # ids start at 1
# A client with this many failures of a name in the window, or fewer, is not held to the
# name's pace: a person who mistyped once or twice is never kept out by strangers' guesses.
PACE_FREE_FAILURES = 2
# Whether this browser holds a live known-device note of the person (id, password hash).
DeviceCheck = Callable[[int, str], bool]


@dataclass(frozen=True)
class GateVerdict:
    """What the login gate said of one attempt (see `login_gate`)."""

    go: bool  # the password may be checked
    ends: int  # the end of the lock that refused it, or the one a wrong password now meets
    person_id: int | None  # the name's person (None: no such name)
    lock: str  # whose lock refused it: "address", "name" or "" (the pair's)
    known: bool  # a pair or browser where the name's person logged in: the limits skipped


def login_gate(
    *,
    client: redis.Redis,
    pair: ThrottlePair,
    attempt: str,
    at_ms: int,
    username: str,
    known_device: bool = False,
) -> GateVerdict:
    """Let one login attempt through the throttle, counting it as a failure until it succeeds;
    the name's person id is looked up in the same round trip.

    Returns whether the password may be checked, the end of the pair's lock (epoch ms, 0 for
    none: the lock that refused it, or the one a wrong password now meets), the person id,
    whose lock refused it: "address" (the client's own, whatever name it tries), "name" (the
    name's pace, guessed from many clients) or "" (the pair's), and whether the pair or the
    browser is known. A `known_device` (a browser where the name's person logged in) is held
    to neither the client's lock nor the pace.
    One atomic call checks every limit and counts: parallel attempts cannot outrun it.
    """
    keys, gate_args = LOGIN_GATE.call(
        keys=pair.gate_keys,
        args={
            "now_ms": at_ms,
            "window_ms": settings.STRONGROOM_LOGIN_FAILURE_WINDOW_MINUTES * 60_000,
            "pair_limit": settings.STRONGROOM_LOGIN_FAILURE_LIMIT,
            "lock_ms": settings.STRONGROOM_LOGIN_LOCK_MINUTES * 60_000,
            "address_limit": settings.STRONGROOM_LOGIN_CLIENT_LIMIT,
            "name_limit": settings.STRONGROOM_LOGIN_NAME_LIMIT,
            "slow_ms": settings.STRONGROOM_LOGIN_SLOWDOWN_SECONDS * 1000,
            "attempt_id": attempt,
            "pace_free": PACE_FREE_FAILURES,
            "known_device": int(known_device),
        },
    )
    gate, person_id = pipeline_functions(
        client,
        lambda pipe: (
            pipe.fcall(LOGIN_GATE.name, len(keys), *keys, *gate_args),
            pipe.hget(PERSON_BY_NAME.key(), name_key(username)),
        ),
    )
    verdict = LOGIN_GATE.reply_of(gate)
    return GateVerdict(
        go=verdict["verdict"] == "go",
        ends=int(verdict["ends"]),
        person_id=int(person_id) if person_id is not None else None,
        lock=str(verdict["lock"] or ""),
        known=verdict["known"] == "1",
    )


def login_passed(*, client: redis.Redis, pair: ThrottlePair, attempt: str) -> None:
    """The attempt was a success: uncount it, lift the pair's lock, trust the pair."""
    trust_ms = settings.STRONGROOM_LOGIN_TRUST_DAYS * 86_400_000
    keys, args = LOGIN_PASSED.call(
        keys=pair.gate_keys, args={"attempt_id": attempt, "trust_ms": trust_ms}
    )
    fcall(client, LOGIN_PASSED.name, keys, args)


def login_dropped(*, client: redis.Redis, pair: ThrottlePair, attempt: str) -> None:
    """The attempt was not checked after all (the open lane was full): uncount it."""
    keys, args = LOGIN_DROPPED.call(keys=pair.gate_keys, args={"attempt_id": attempt})
    fcall(client, LOGIN_DROPPED.name, keys, args)


def pair_cleared(*, client: redis.Redis, username: str, client_id: str) -> None:
    """The name proved its owner's another way (a password reset through its mail): the
    (name, client) pair's failures and lock go and the pair is trusted, as after a login."""
    pair = ThrottlePair.of(username=username, client_id=client_id)
    login_passed(client=client, pair=pair, attempt=uuid.uuid4().hex)


def signup_gate(*, client: redis.Redis, client_id: str, at_ms: int | None = None) -> int:
    """Count one sign-up from a client; returns 0 if it may go ahead, else when the next may."""
    return window_gate(
        client=client,
        key=signup_key(client_id=client_id),
        limit=settings.STRONGROOM_SIGNUP_LIMIT,
        window_ms=settings.STRONGROOM_SIGNUP_WINDOW_MINUTES * 60_000,
        at_ms=at_ms,
    )


def window_gate(
    *,
    client: redis.Redis,
    key: str,
    limit: int,
    window_ms: int,
    at_ms: int | None = None,
    event_id: str | None = None,
) -> int:
    """Count one event in the sliding window of `key` (a sign-up, a confirmation mail, a
    booking): 0 if it may go ahead, else the epoch ms when the next one may (and it is not
    counted). An `event_id` counted already (a retry of the same booking) goes ahead again."""
    return window_gates(
        client=client, gates=[(key, limit)], window_ms=window_ms, at_ms=at_ms, event_id=event_id
    )[0]


def window_gates(
    *,
    client: redis.Redis,
    gates: list[tuple[str, int]],
    window_ms: int,
    at_ms: int | None = None,
    event_id: str | None = None,
) -> list[int]:
    """`window_gate` for several (key, limit) at once, in one round trip."""
    at = now_ms() if at_ms is None else at_ms
    event = event_id or uuid.uuid4().hex
    calls = [
        SIGNUP_GATE.call(
            keys={"attempts": key},
            args={"now_ms": at, "window_ms": window_ms, "limit": limit, "attempt_id": event},
        )
        for key, limit in gates
    ]
    replies = fcalls(client, [(SIGNUP_GATE.name, keys, argv) for keys, argv in calls])
    return [int(reply) for reply in replies]


@dataclass(frozen=True)
class LoginOutcome:
    """What a login attempt came to: a person (with their hash), a lock, or a plain failure."""

    person: Person | None = None
    password_hash: str = ""
    locked_until_ms: int = 0
    address_locked: bool = False  # the lock is the client's, for any name it tries
    name_paced: bool = False  # the name's pace: it is guessed from many clients
    busy: bool = False  # not checked: too many passwords to check at once (nothing counted)

    @property
    def locked(self) -> bool:
        return self.locked_until_ms > 0


def password_check(
    *,
    client: redis.Redis,
    username: str,
    password: str,
    client_id: str,
    at_ms: int | None = None,
    device: DeviceCheck | None = None,
) -> LoginOutcome:
    """A name and password checked under the login throttle, nothing recorded as a login: the
    login form, and a signed-in person who confirms their password (to change it, to delete
    the account) guesses under the same limits as anyone logging in. `device` tells whether
    the browser is a known device of a person (asked only when a client-wide lock or the
    name's pace refuses the attempt: then the person's hash is read, one round trip more, for
    an unknown name too, so that a refusal costs and says the same whether the name exists)."""
    pair = ThrottlePair.of(username=username, client_id=client_id)
    at = now_ms() if at_ms is None else at_ms
    attempt = uuid.uuid4().hex

    def gate(known_device: bool = False) -> GateVerdict:
        return login_gate(
            client=client, pair=pair, attempt=attempt, at_ms=at, username=username,
            known_device=known_device,
        )  # fmt: skip

    verdict = gate()
    if not verdict.go and verdict.lock and device is not None:
        found = person_with_password(client=client, person_id=verdict.person_id or _NO_PERSON_ID)
        known = device(verdict.person_id or _NO_PERSON_ID, found[1] if found is not None else "")
        if known and found is not None:
            verdict = gate(known_device=True)
    if not verdict.go:
        return LoginOutcome(
            locked_until_ms=verdict.ends,
            address_locked=verdict.lock == "address",
            name_paced=verdict.lock == "name",
        )
    # An unknown name still reads a person (id 0 is never handed out): the same round trips.
    # It is not hashed: the sign-up form says whether a name is taken, so a hash would hide
    # nothing, and it let anyone make the site hash at will (a new name each time).
    found = person_with_password(client=client, person_id=verdict.person_id or _NO_PERSON_ID)
    if verdict.person_id is None or found is None:
        return LoginOutcome(locked_until_ms=verdict.ends)
    person, encoded = found
    # Strangers' guesses share the open lane; a known pair or browser has its own thread (the
    # browser's note is read here too, from any address: no store read, the hash is at hand).
    known = verdict.known or (device is not None and device(person.id, encoded))
    try:
        right = off_loop(
            check_password, password, encoded, open_lane=not known, share=pair.name_digest
        )
    except Busy:
        login_dropped(client=client, pair=pair, attempt=attempt)
        return LoginOutcome(busy=True)
    if not right:
        return LoginOutcome(locked_until_ms=verdict.ends)
    login_passed(client=client, pair=pair, attempt=attempt)
    return LoginOutcome(person=person, password_hash=encoded)


def locked_message(outcome: LoginOutcome) -> str:
    """What a locked login (or password check) says: whose lock it is, and for how long."""
    minutes = minutes_until(outcome.locked_until_ms)
    if outcome.name_paced:  # one wording whoever the name is: it tells nobody who has mail
        text = ngettext(
            "This username is being guessed from many places, and this connection has had "
            "several wrong passwords for it, so it waits its turn. Please try again in "
            "%(minutes)d minute, or log in from a browser where you have logged in before. "
            "If your account has a confirmed email address, you can also reset your password "
            "by mail to sign in now.",
            "This username is being guessed from many places, and this connection has had "
            "several wrong passwords for it, so it waits its turn. Please try again in "
            "%(minutes)d minutes, or log in from a browser where you have logged in before. "
            "If your account has a confirmed email address, you can also reset your password "
            "by mail to sign in now.",
            minutes,
        )
    elif outcome.address_locked:
        text = ngettext(
            "Too many failed logins from your connection. Please try again in %(minutes)d minute.",
            "Too many failed logins from your connection. Please try again in %(minutes)d minutes.",
            minutes,
        )
    else:
        text = ngettext(
            "Too many failed logins for this username from your connection. "
            "Please try again in %(minutes)d minute.",
            "Too many failed logins for this username from your connection. "
            "Please try again in %(minutes)d minutes.",
            minutes,
        )
    return text % {"minutes": minutes}


# When a client told "too many passwords to check at once" may try again.
BUSY_RETRY_S = 5


def busy_until_ms() -> int:
    """The end (epoch ms) a refusal for a full open lane gives its Retry-After."""
    return now_ms() + BUSY_RETRY_S * 1000


def busy_message() -> str:
    """What a password not checked says: the open lane was full (strongroom/offload.py)."""
    return _(
        "Too many passwords are being checked at this moment, so yours was not checked and "
        "nothing was counted. Please try again in a few seconds."
    )


def password_locked_message(outcome: LoginOutcome) -> str:
    """What a locked password check of a signed-in person says (changing the password,
    deleting the account): about the password typed here, not about logins."""
    minutes = minutes_until(outcome.locked_until_ms)
    text = ngettext(
        "Too many wrong passwords were typed here, so the password check is paused. "
        "Please try again in %(minutes)d minute.",
        "Too many wrong passwords were typed here, so the password check is paused. "
        "Please try again in %(minutes)d minutes.",
        minutes,
    )
    return text % {"minutes": minutes}


def retry_after(response: HttpResponse, *, until_ms: int) -> HttpResponse:
    """A 429 or 503 says when to come back (Retry-After, in seconds; `until_ms` epoch ms)."""
    if response.status_code in (429, 503) and until_ms:
        response["Retry-After"] = str(max(1, math.ceil((until_ms - now_ms()) / 1000)))
    return response


def password_confirmed(
    request: HttpRequest, form: forms.Form, field: str, *, person: Person, wrong: str
) -> tuple[Person | None, int, int]:
    """The signed-in person's password (`field` of `form`) checked under the login throttle:
    the person, or None with the refusal (`wrong`, or the lock) added to the form; the status
    to answer with and the lock's end (epoch ms, 0 for none)."""
    outcome = password_check(
        client=get_store(),
        username=person.username,
        password=form.cleaned_data[field],
        client_id=client_address(request),
        device=device_check(request),
    )
    if outcome.person is not None and outcome.person.id == person.id:
        return outcome.person, 200, 0
    if outcome.busy:
        form.add_error(field, busy_message())
        return None, 503, busy_until_ms()
    if outcome.locked:
        form.add_error(field, password_locked_message(outcome))
        return None, 429, outcome.locked_until_ms
    form.add_error(field, wrong)
    return None, 400, 0
