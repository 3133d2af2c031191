"""Visit records: page views and unique visitors per day, written in one round trip."""

from __future__ import annotations

import datetime as dt

import redis
from django.conf import settings
from django.utils.crypto import salted_hmac
from redis.client import Pipeline

from strongroom.keyspace import VISITS_VIEWS, VISITS_VISITORS
from strongroom.store import get_store


def visits_client() -> redis.Redis:
    """The client the visit writer uses (the site's store)."""
    return get_store()


def visitor_id(
    *, person_id: int | None, session_key: str | None, ip: str, user_agent: str, day: dt.date
) -> str:
    """Who counts as one visitor: a person by id, else the session, else a salted hash of
    IP + user agent that changes every day (the raw address is never stored)."""
    if person_id is not None:
        return f"p:{person_id}"
    if session_key:
        return "s:" + salted_hmac("strongroom.accounts.visit.session", session_key).hexdigest()[:24]
    raw = f"{day.isoformat()}\x00{ip}\x00{user_agent}"
    return "a:" + salted_hmac("strongroom.accounts.visit.address", raw).hexdigest()[:24]


def _keep_seconds() -> int:
    return (settings.STRONGROOM_VISITS_KEEP_DAYS + 1) * 86400


VISIT_COMMANDS = 4


def visit_queue(pipe: Pipeline, *, day: dt.date, visitor: str) -> None:
    """Queue the VISIT_COMMANDS commands of one visit record on `pipe` (so that a signed-in
    page view can send them with the person read: one round trip for both)."""
    views = VISITS_VIEWS.key(day=day.isoformat())
    visitors = VISITS_VISITORS.key(day=day.isoformat())
    keep = _keep_seconds()
    pipe.incr(views)
    pipe.expire(views, keep)
    pipe.pfadd(visitors, visitor)
    pipe.expire(visitors, keep)


def visit_record(*, client: redis.Redis, day: dt.date, visitor: str) -> None:
    """Count one page view and one (possibly repeated) visitor of `day`: one round trip."""
    pipe = client.pipeline(transaction=False)
    visit_queue(pipe, day=day, visitor=visitor)
    pipe.execute()


def visit_withdraw(*, client: redis.Redis, day: dt.date) -> None:
    """Take back one page view of `day` that was counted before its response turned out not to
    be a page (an error, a redirect, a download). The visitor stays counted: they did come."""
    views = VISITS_VIEWS.key(day=day.isoformat())
    pipe = client.pipeline(transaction=False)
    pipe.decr(views)
    pipe.expire(views, _keep_seconds())
    pipe.execute()
