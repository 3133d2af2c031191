"""Reads about people: finding a person, checking a password, and the login and visit records
the staff dashboard shows. Every public read is one round trip."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from django.utils import timezone
from redis.client import Pipeline

from accounts.calls import RECENT_LOGINS, TOP_LOGINS
from accounts.names import name_key
from accounts.people import Person
from strongroom.addresses import address_one_form
from strongroom.ahead import Command, command, pipeline_replies
from strongroom.clock import from_ms
from strongroom.decoders import text_values
from strongroom.keyspace import (
    LOGINS_RECENT,
    LOGINS_TOP,
    PERSON,
    PERSON_BY_EMAIL,
    PERSON_BY_NAME,
    PERSON_NAMES,
    VISITS_SHARDS,
    VISITS_VIEWS,
    VISITS_VISITORS,
)
from strongroom.libraries import fcall

MAX_LIST = 1000
_PERSON_FIELDS = ("username", "is_staff", "password", "sessions")


def _person_from(
    person_id: int, username: str | None, is_staff: str | None, epoch: str | None = None
) -> Person | None:
    if username is None:
        return None
    return Person(
        id=person_id, username=username, is_staff=is_staff == "1", session_epoch=epoch or ""
    )


def person_get(*, client: redis.Redis, person_id: int) -> Person | None:
    """The person with this id, or None."""
    username, is_staff = text_values(
        client.hmget(PERSON.key(person_id=person_id), "username", "is_staff")
    )
    return _person_from(person_id, username, is_staff)


def person_with_password(*, client: redis.Redis, person_id: int) -> tuple[Person, str] | None:
    """The person and their password hash (for sign-in and the session check), or None."""
    reply = text_values(client.hmget(PERSON.key(person_id=person_id), *_PERSON_FIELDS))
    return person_with_password_parse(person_id=person_id, reply=reply)


def person_with_password_queue(pipe: Pipeline, *, person_id: int) -> None:
    """Queue the one command of `person_with_password` on a pipeline shared with other reads."""
    pipe.hmget(PERSON.key(person_id=person_id), *_PERSON_FIELDS)


def person_with_password_parse(
    *, person_id: int, reply: list[str | None]
) -> tuple[Person, str] | None:
    """The answer of `person_with_password` from the reply of its queued command."""
    username, is_staff, password, epoch = reply
    person = _person_from(person_id, username, is_staff, epoch)
    if person is None or password is None:
        return None
    return person, password


def person_id_find(*, client: redis.Redis, username: str) -> int | None:
    """The id of the person with this name (any case, any width), or None."""
    value = client.hget(PERSON_BY_NAME.key(), name_key(username))
    return int(value) if value is not None else None


def person_find(*, client: redis.Redis, username: str) -> Person | None:
    """The person with this name (any case, any width), or None."""
    person_id = person_id_find(client=client, username=username)
    return None if person_id is None else person_get(client=client, person_id=person_id)


def person_count(*, client: redis.Redis) -> int:
    """How many people have signed up."""
    return int(client.hlen(PERSON_BY_NAME.key()))


@dataclass(frozen=True)
class LoginEntry:
    """One login on the recent list."""

    person_id: int
    username: str
    at: dt.datetime


@dataclass(frozen=True)
class LoginRank:
    """One person on the most-logins leaderboard."""

    person_id: int
    username: str
    logins: int


@dataclass(frozen=True)
class LoginSummary:
    """One person's login count and last login."""

    person_id: int
    username: str
    logins: int
    last_login: dt.datetime | None
    is_staff: bool = False
    email: str = ""  # as given (staff see it on the person page)
    email_verified: bool = False

    @property
    def person(self) -> Person:
        """The person this summary is about (read in the same round trip)."""
        return Person(id=self.person_id, username=self.username, is_staff=self.is_staff)


def logins_recent(*, client: redis.Redis, limit: int = 20) -> list[LoginEntry]:
    """The newest `limit` logins, newest first, with names (one round trip)."""
    limit = max(1, min(limit, MAX_LIST))
    keys, args = RECENT_LOGINS.call(
        keys={"recent": LOGINS_RECENT.key(), "names": PERSON_NAMES.key()}, args={"count": limit}
    )
    flat = fcall(client, RECENT_LOGINS.name, keys, args)
    entries = []
    for entry, username in zip(flat[::2], flat[1::2], strict=True):
        person_id, at = entry.split(":", 1)
        moment = dt.datetime.fromtimestamp(int(at) / 1000, tz=dt.UTC)
        entries.append(LoginEntry(person_id=int(person_id), username=username, at=moment))
    return entries


def logins_top(*, client: redis.Redis, limit: int = 10) -> list[LoginRank]:
    """The `limit` people with the most logins, most first, with names (one round trip)."""
    limit = max(1, min(limit, MAX_LIST))
    keys, args = TOP_LOGINS.call(
        keys={"leaderboard": LOGINS_TOP.key(), "names": PERSON_NAMES.key()}, args={"count": limit}
    )
    flat = fcall(client, TOP_LOGINS.name, keys, args)
    return [
        LoginRank(person_id=int(pid), username=name, logins=int(float(score)))
        for pid, score, name in zip(flat[::3], flat[1::3], flat[2::3], strict=True)
    ]


def login_summary(*, client: redis.Redis, person_id: int) -> LoginSummary | None:
    """One person's login count and last login, staff flag and address (one round trip), or
    None if no such person."""
    username, logins, last, is_staff, email, verified = text_values(
        client.hmget(
            PERSON.key(person_id=person_id),
            "username",
            "logins",
            "last_login",
            "is_staff",
            "email",
            "email_verified",
        )
    )
    if username is None:
        return None
    return LoginSummary(
        person_id=person_id,
        username=username,
        logins=int(logins or 0),
        last_login=from_ms(last),
        is_staff=is_staff == "1",
        email=email or "",
        email_verified=bool(email) and verified == "1",
    )


@dataclass(frozen=True)
class DayVisits:
    """Page views and unique visitors on one day (site time zone)."""

    day: dt.date
    views: int
    visitors: int


MAX_VISIT_DAYS = 366


def visits_by_day(*, client: redis.Redis, start: dt.date, end: dt.date) -> list[DayVisits]:
    """Views and unique visitors for every day from start to end inclusive (one round trip).

    Raises ValueError for a reversed or over-long range.
    """
    if end < start:
        raise ValueError("the range ends before it starts")
    days = [start + dt.timedelta(days=n) for n in range((end - start).days + 1)]
    if len(days) > MAX_VISIT_DAYS:
        raise ValueError(f"a range is at most {MAX_VISIT_DAYS} days")
    # Each day is VISITS_SHARDS counters and HyperLogLogs (one per hash tag); a visitor is in
    # one shard only, so the shards' counts add up.
    pipe = client.pipeline(transaction=False)
    for day in days:
        for shard in range(VISITS_SHARDS):
            pipe.get(VISITS_VIEWS.key(shard=shard, day=day.isoformat()))
            # As a raw command: redis-py's cluster pipeline refuses pfcount() (it may name keys
            # of several slots); with one key it goes to that key's primary like any read.
            pipe.execute_command("PFCOUNT", VISITS_VISITORS.key(shard=shard, day=day.isoformat()))
    replies = pipe.execute()
    width = 2 * VISITS_SHARDS
    rows = []
    for n, day in enumerate(days):
        chunk = replies[n * width : (n + 1) * width]
        views = sum(int(v or 0) for v in chunk[::2])
        rows.append(DayVisits(day=day, views=views, visitors=sum(int(v) for v in chunk[1::2])))
    return rows


def visits_today(*, client: redis.Redis) -> DayVisits:
    """Today's views and unique visitors (site time zone)."""
    today = timezone.localdate()
    return visits_by_day(client=client, start=today, end=today)[0]


def person_names(*, client: redis.Redis, person_ids: list[int]) -> dict[int, str]:
    """The usernames of these people (one HMGET, one round trip); unknown ids are left out."""
    ids = sorted({int(pid) for pid in person_ids})
    if not ids:
        return {}
    names = text_values(client.hmget(PERSON_NAMES.key(), [str(pid) for pid in ids]))
    return {pid: name for pid, name in zip(ids, names, strict=True) if name is not None}


@dataclass(frozen=True)
class Account:
    """What the account page shows of one person (one round trip)."""

    person_id: int
    username: str
    email: str
    email_verified: bool
    # A new address asked for while `email` is confirmed: it takes over once its link is opened,
    # and until then the confirmed one gets the mail and resets the password.
    email_pending: str
    language: str
    calendar_token: str
    logins: int
    last_login: dt.datetime | None
    joined: dt.datetime | None


_ACCOUNT_FIELDS = (
    "username", "email", "email_verified", "email_pending", "lang", "cal_token", "logins",
    "last_login", "joined",
)  # fmt: skip


def account_read(*, person_id: int) -> list[Command]:
    """What `account_get` reads (the account page reads it ahead with the identity)."""
    return [command("HMGET", PERSON.key(person_id=person_id), *_ACCOUNT_FIELDS)]


def account_get(*, client: redis.Redis, person_id: int) -> Account | None:
    """One's own account (one HMGET, unless read ahead), or None."""
    (reply,) = pipeline_replies(client, account_read(person_id=person_id))
    username, email, verified, pending, lang, token, logins, last, joined = text_values(reply)
    if username is None:
        return None
    return Account(
        person_id=person_id,
        username=username,
        email=email or "",
        email_verified=bool(email) and verified == "1",
        email_pending=pending or "",
        language=lang or "",
        calendar_token=token or "",
        logins=int(logins or 0),
        last_login=from_ms(last),
        joined=from_ms(joined),
    )


@dataclass(frozen=True)
class MailTarget:
    """Where and how to write to a person: a verified address and their language."""

    person_id: int
    username: str
    email: str
    language: str


def mail_target_read(*, person_id: int) -> list[Command]:
    """What `mail_target` reads (a batch of mail reads its people's together)."""
    key = PERSON.key(person_id=person_id)
    return [command("HMGET", key, "username", "email", "email_verified", "lang")]


def mail_target(*, client: redis.Redis, person_id: int) -> MailTarget | None:
    """The person's verified address and language, or None (no such person, no verified
    address); one HMGET unless read ahead."""
    (reply,) = pipeline_replies(client, mail_target_read(person_id=person_id))
    return mail_target_from(person_id, reply)


def mail_target_from(person_id: int, reply: Sequence[bytes | str | None]) -> MailTarget | None:
    """The MailTarget a `mail_target_read` reply shows, or None (no verified address)."""
    username, email, verified, lang = text_values(reply)
    if username is None or not email or verified != "1":
        return None
    return MailTarget(person_id, username, email, lang or "en")


def person_id_by_email(*, client: redis.Redis, email: str) -> int | None:
    """The person whose verified address this is (written any way: `address_one_form`), or
    None."""
    try:
        address = address_one_form(email.strip())
    except UnicodeError:  # a domain that is no IDNA: no address of anyone's
        return None
    value = client.hget(PERSON_BY_EMAIL.key(), address)
    return int(value) if value is not None else None


def email_current(*, client: redis.Redis, person_id: int) -> str:
    """The person's address as stored (confirmed or not; '' for none)."""
    return text_values(client.hmget(PERSON.key(person_id=person_id), "email"))[0] or ""
