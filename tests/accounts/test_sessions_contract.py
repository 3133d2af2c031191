"""The store's session backend keeps Django's promises to the code that uses sessions:
expired sessions read as empty, keys cycle without losing data, flush forgets everything,
tampered data is ignored, and a session ended elsewhere is not brought back by a save."""

from __future__ import annotations

import datetime as dt

import pytest
import redis
from django.contrib.sessions.backends.base import UpdateError
from django.utils import timezone

from strongroom.keyspace import SESSION, family_of
from strongroom.sessions import SessionStore


def stored(client: redis.Redis, session: SessionStore) -> bool:
    assert session.session_key is not None
    return bool(client.exists(SESSION.key(session_key=session.session_key)))


def sessions_in(client: redis.Redis) -> list[str]:
    return [key for key in client.scan_iter(count=1000) if family_of(key) is SESSION]


def saved(**data: object) -> SessionStore:
    session = SessionStore()
    session.update(data)
    session.save()
    return session


@pytest.mark.parametrize(
    "expiry",
    [-60, dt.timedelta(seconds=-5), "past datetime", "now"],
    ids=["negative", "negative-delta", "past", "now"],
)
def test_a_session_saved_with_an_expiry_now_or_past_reads_as_expired(
    r: redis.Redis, expiry: object
) -> None:
    session = saved(basket="full")
    if expiry == "past datetime":
        expiry = timezone.now() - dt.timedelta(minutes=1)
    elif expiry == "now":
        expiry = timezone.now()
    session.set_expiry(expiry)  # type: ignore[arg-type]
    session["basket"] = "still full"
    session.save()  # no error
    assert not stored(r, session)
    assert SessionStore(session.session_key).load() == {}
    assert "basket" not in SessionStore(session.session_key)


def test_an_expiry_of_zero_means_at_browser_close_not_expired(r: redis.Redis) -> None:
    session = saved(a=1)
    session.set_expiry(0)
    session.save()
    assert stored(r, session) and session.get_expire_at_browser_close()


def test_a_new_session_created_already_expired_is_not_kept(r: redis.Redis) -> None:
    session = SessionStore()
    session.set_expiry(-1)
    session["x"] = 1
    session.save()
    assert session.session_key is not None and not stored(r, session)


def test_the_expiry_set_is_the_stored_lifetime(r: redis.Redis) -> None:
    session = saved(a=1)
    session.set_expiry(120)
    session.save()
    assert session.session_key is not None
    assert 110_000 < r.pttl(SESSION.key(session_key=session.session_key)) <= 120_000
    session.set_expiry(None)  # back to the site's default age
    session.save()
    from django.conf import settings

    ttl = r.ttl(SESSION.key(session_key=session.session_key))
    assert settings.SESSION_COOKIE_AGE - 10 < ttl <= settings.SESSION_COOKIE_AGE


def test_cycle_key_keeps_the_data_under_a_new_key_and_drops_the_old(r: redis.Redis) -> None:
    session = saved(who="anna", n=3)
    old = session.session_key
    session.cycle_key()
    assert session.session_key not in (None, old)
    assert not session.exists(str(old))
    assert dict(SessionStore(session.session_key).load()) == {"who": "anna", "n": 3}


def test_flush_forgets_everything_and_the_key(r: redis.Redis) -> None:
    session = saved(who="anna")
    old = str(session.session_key)
    session.flush()
    assert session.session_key is None and dict(session.items()) == {}
    assert not session.exists(old)
    assert SessionStore(old).load() == {}


def test_exists_tells_stored_keys_from_others(r: redis.Redis) -> None:
    session = saved(a=1)
    assert session.exists(str(session.session_key))
    assert not session.exists("k" * 32)


def test_tampered_or_garbled_data_reads_as_an_empty_session(r: redis.Redis) -> None:
    session = saved(is_staff=False)
    key = SESSION.key(session_key=str(session.session_key))
    for garbage in ("not a signed value", "e30:bad:signature", "\x00\xff", ""):
        r.set(key, garbage)
        assert SessionStore(session.session_key).load() == {}


def test_the_kept_signature_check_reads_like_a_fresh_one(r: redis.Redis) -> None:
    """Each worker checks a stored session's signature once (strongroom.sessions keeps the
    checked contents by their text and keys): every load still parses them afresh, a tampered
    copy is still refused, and another secret key trusts nothing checked under the old one."""
    from django.test import override_settings

    from strongroom import sessions

    session = saved(basket=["a"], n=1)
    first = SessionStore(session.session_key)
    first.load()["basket"].append("changed by one request")
    before = sessions._verified_payload.cache_info().hits
    second = SessionStore(session.session_key).load()
    assert second == {"basket": ["a"], "n": 1}
    assert sessions._verified_payload.cache_info().hits == before + 1
    key = SESSION.key(session_key=str(session.session_key))
    text = r.get(key)
    assert isinstance(text, str)
    payload, _sep, signature = text.rpartition(":")
    r.set(key, f"{payload}:{signature[::-1]}")
    assert SessionStore(session.session_key).load() == {}
    r.set(key, text)
    with override_settings(SECRET_KEY="another secret key, for this test only, 50 characters"):
        assert SessionStore(session.session_key).load() == {}
    assert SessionStore(session.session_key).load() == {"basket": ["a"], "n": 1}


def test_loading_an_unknown_key_stores_nothing_and_forgets_the_key(r: redis.Redis) -> None:
    session = SessionStore("x" * 32)
    assert session.load() == {}
    assert session.session_key is None
    assert sessions_in(r) == []


def test_a_session_ended_elsewhere_is_not_brought_back_by_a_save(r: redis.Redis) -> None:
    session = saved(cart=1)
    other = SessionStore(session.session_key)
    other.delete()
    session["cart"] = 2
    with pytest.raises(UpdateError):
        session.save()
    assert not stored(r, session)


def test_clear_expired_is_left_to_the_server(r: redis.Redis) -> None:
    saved(a=1)
    SessionStore.clear_expired()
    assert len(sessions_in(r)) == 1


def test_the_kept_password_check_follows_the_secret_key_and_the_epoch() -> None:
    from django.test import override_settings

    from accounts.sessions import password_check_value

    value = password_check_value("a password hash", "1")
    assert password_check_value("a password hash", "1") == value
    assert password_check_value("a password hash", "2") != value
    with override_settings(SECRET_KEY="another secret key, for this test only, 50 characters"):
        assert password_check_value("a password hash", "1") != value
