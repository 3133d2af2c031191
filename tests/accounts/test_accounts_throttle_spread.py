"""The login and sign-up throttles against parallel clients and many client addresses.

The parallel tests drive the served site (gunicorn, real password hashing, several workers)
behind the proxy setting that trusts the last X-Forwarded-For entry, so each thread can be a
different client address.
"""

from __future__ import annotations

import datetime as dt
import http.cookiejar
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from accounts.selectors import person_count
from accounts.services import person_create
from strongroom.serving import start_site
from tests.conftest import person_make, site_env

T0 = dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC)
PARALLEL = 30


@pytest.fixture(scope="module")
def proxied_site(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The served site behind a proxy: the client is the last X-Forwarded-For entry."""
    from django.conf import settings

    env = site_env(str(settings.REDIS_URL), tmp_path_factory.mktemp("proxied"), BEHIND_PROXY="1")
    process, base = start_site(env, workers=4)
    yield base
    process.terminate()
    process.wait(timeout=15)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def post_form(base: str, path: str, form: dict[str, str], *, address: str) -> int:
    """GET the form for its CSRF cookie, then POST it, as the client at `address`."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect())
    opener.addheaders = [("X-Forwarded-For", f"10.9.9.9, {address}")]
    with opener.open(base + path, timeout=60):
        pass
    token = next(c.value for c in jar if c.name == "csrftoken")
    data = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": token or ""}).encode()
    try:
        with opener.open(base + path, data=data, timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def together(count: int, action: Any) -> list[int]:
    """Run action(i) in `count` threads released at one moment; their statuses."""
    barrier = threading.Barrier(count)
    statuses: list[int] = [0] * count

    def run(i: int) -> None:
        barrier.wait()
        statuses[i] = action(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return statuses


def test_thirty_parallel_wrong_passwords_are_checked_at_most_five_times(
    r: redis.Redis, proxied_site: str
) -> None:
    target = person_make(r, "Parallel_Pam")
    form = {"username": target.username, "password": "not-her-password"}
    statuses = together(
        PARALLEL, lambda i: post_form(proxied_site, "/accounts/login/", form, address="192.0.2.7")
    )
    # 400: checked and wrong. 429: refused, except the one check that reached the limit. 503:
    # not checked and not counted, the name having its part of the open lane already
    # (strongroom/offload.py).
    assert statuses.count(400) + statuses.count(429) + statuses.count(503) == PARALLEL, statuses
    assert statuses.count(400) <= 4, statuses
    right = {"username": target.username, "password": target.password}
    locked = 429 in statuses  # the fifth failure counted locks the pair
    again = post_form(proxied_site, "/accounts/login/", right, address="192.0.2.7")
    assert again == (429 if locked else 302), statuses
    assert post_form(proxied_site, "/accounts/login/", right, address="192.0.2.8") == 302


def test_parallel_sign_ups_from_one_address_make_at_most_five_accounts(
    r: redis.Redis, proxied_site: str
) -> None:
    def sign_up(i: int) -> int:
        form = {"username": f"spam{i:02d}", "password1": "Sign-up-pass-77", "password2": ""}
        form["password2"] = form["password1"]
        return post_form(proxied_site, "/accounts/signup/", form, address="192.0.2.50")

    statuses = together(12, sign_up)
    assert statuses.count(302) == 5 and statuses.count(429) == 7, statuses
    assert person_count(client=r) == 5
    other = {"username": "neighbour", "password1": "Sign-up-pass-77", "password2": ""}
    other["password2"] = other["password1"]
    assert post_form(proxied_site, "/accounts/signup/", other, address="192.0.2.51") == 302


# In-process below: the rules over time, with a frozen clock and a fast hasher.


@pytest.fixture
def fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def attempt(username: str, password: str, address: str) -> int:
    client = Client(REMOTE_ADDR=address)
    return int(
        client.post("/accounts/login/", {"username": username, "password": password}).status_code
    )


def test_one_address_guessing_many_names_is_locked_for_every_name(
    r: redis.Redis, fast_hashing: None
) -> None:
    real = person_create(client=r, username="Rita", password="rita-real-pass-1")
    with time_machine.travel(T0, tick=False) as clock:
        guesses = [attempt(f"name{n}", "guess-pass", "203.0.113.9") for n in range(30)]
        assert guesses[:29] == [400] * 29
        assert attempt(real.username, "rita-real-pass-1", "203.0.113.9") == 429
        assert attempt(real.username, "rita-real-pass-1", "203.0.113.10") == 302
        clock.shift(dt.timedelta(minutes=15))
        assert attempt(real.username, "rita-real-pass-1", "203.0.113.9") == 302


def test_a_trusted_login_through_a_locked_address_does_not_lengthen_its_lock(
    r: redis.Redis, fast_hashing: None
) -> None:
    """Behind a shared address locked by someone's guessing, a regular's logins go through
    (trusted pair) and leave the lock's end where it was: the others wait 15 minutes from
    the guessing, not from the regular's last login."""
    real = person_create(client=r, username="Tess", password="tess-real-pass-1")
    shared = "203.0.113.50"
    with time_machine.travel(T0, tick=False) as clock:
        assert attempt(real.username, "tess-real-pass-1", shared) == 302  # her usual address
        assert [attempt(f"ghost{n}", "guess-pass", shared) for n in range(30)][-1] == 400
        assert attempt("ghost30", "guess-pass", shared) == 429  # the address is locked
        for _ in range(3):
            clock.shift(dt.timedelta(minutes=4))
            assert attempt(real.username, "tess-real-pass-1", shared) == 302
            assert attempt(real.username, "wrong-once", shared) == 400
            assert attempt("ghost31", "guess-pass", shared) == 429
        clock.shift(dt.timedelta(minutes=3, seconds=1))  # 15 minutes after the guessing
        assert attempt("ghost0", "guess-pass", shared) == 400  # tried again, not locked


def test_many_addresses_guessing_one_name_are_slowed_but_not_its_owner(
    r: redis.Redis, fast_hashing: None
) -> None:
    person_create(client=r, username="Nora", password="nora-real-pass-1")
    with time_machine.travel(T0, tick=False) as clock:
        assert attempt("Nora", "nora-real-pass-1", "198.51.100.1") == 302  # her usual address
        clock.shift(dt.timedelta(minutes=1))
        # Twelve addresses, four guesses each: past two failures of its own, an address is
        # held to the name's pace (one try a minute among them all) once the name has ten
        # failures; the third address's fourth guess starts it.
        outcomes = []
        for n in range(12):
            outcomes.append(
                [attempt("Nora", f"guess-{g}", f"203.0.113.{n + 20}") for g in range(4)]
            )
        assert outcomes[:3] == [[400] * 4] * 3, outcomes
        assert all(guesses == [400, 400, 400, 429] for guesses in outcomes[3:]), outcomes
        clock.shift(dt.timedelta(seconds=61))
        assert attempt("Nora", "guess-again", "203.0.113.23") == 400  # the minute's one try
        assert attempt("Nora", "guess-again", "203.0.113.24") == 429  # and only one
        assert attempt("Nora", "guess-again", "203.0.113.30") == 429
        # Her usual address is not slowed; her new phone (no failure) gets its try at once,
        # and so does her laptop after two typos.
        assert attempt("Nora", "nora-real-pass-1", "198.51.100.1") == 302
        assert attempt("Nora", "nora-real-pass-1", "198.51.100.77") == 302
        assert [attempt("Nora", "typo", "198.51.100.78") for _ in range(2)] == [400, 400]
        assert attempt("Nora", "nora-real-pass-1", "198.51.100.78") == 302
