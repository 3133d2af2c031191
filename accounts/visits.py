"""Visit records: page views and unique visitors per day, written in one round trip."""

from __future__ import annotations

import datetime as dt

import redis
from django.conf import settings
from django.utils.crypto import salted_hmac

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


def visit_record(*, client: redis.Redis, day: dt.date, visitor: str) -> None:
    """Count one page view and one (possibly repeated) visitor of `day`: one round trip."""
    views = VISITS_VIEWS.key(day=day.isoformat())
    visitors = VISITS_VISITORS.key(day=day.isoformat())
    keep = (settings.STRONGROOM_VISITS_KEEP_DAYS + 1) * 86400
    pipe = client.pipeline(transaction=False)
    pipe.incr(views)
    pipe.expire(views, keep)
    pipe.pfadd(visitors, visitor)
    pipe.expire(visitors, keep)
    pipe.execute()
