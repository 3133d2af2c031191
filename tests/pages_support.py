"""Every page family of the site as HTML, rendered by Django's test client on the test store:
for a visitor, a buyer and staff, in a given language, refused forms included. The W3C validator
(tests/site/test_html_valid.py) and axe-core (tests/site/test_axe_pages.py) check the same set."""

from __future__ import annotations

import re
from typing import Any

import redis
from django.test import Client, RequestFactory

from accounts.emails import reset_token_make
from booking.domain.rules import booking_new_id
from catalog.demo import load_demo, read_books

B_8_12 = {"cls": "B", "room": "7", "start": "8", "end": "12", "date": "2026-12-08"}
B_14_16 = {**B_8_12, "start": "14", "end": "16"}


def rendered(client: Client, path: str, *, data: dict[str, str] | None = None) -> str:
    response = client.post(path, data) if data is not None else client.get(path)
    assert response.status_code < 500, (path, response.status_code)
    assert "text/html" in response["Content-Type"], path
    return response.content.decode()


def refused(client: Client, path: str, data: dict[str, str], status: int) -> str:
    """A form the site refuses: its page, with the expected status."""
    response = client.post(path, data)
    assert response.status_code == status, (path, response.status_code)
    return response.content.decode()


def hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]+)"', page)
    assert match, f"no hidden {name}"
    return match.group(1)


def speaking(client: Client, language: str) -> Client:
    """The client, asking for pages in `language` (as a browser set to it does)."""
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    return client


def outage_pages(language: str) -> dict[str, str]:
    """The pages the site shows while its store is away: the 503 page, and a form sent into the
    outage offered again (strongroom/middleware.py), in `language`."""
    from django.utils import translation

    from strongroom.durable import NotDurable
    from strongroom.middleware import store_failure_response
    from strongroom.store import StoreUnavailable

    post = RequestFactory().post("/book/claim/", {"room": "7", "booking_id": "007-x"})
    pages = {}
    with translation.override(language):
        for label, error in (
            ("store lost", StoreUnavailable("away")),
            ("not durable", NotDurable()),
        ):
            answer = store_failure_response(post, error)
            assert answer is not None
            pages[f"visitor form sent in an outage ({label})"] = answer.content.decode()
        away = store_failure_response(RequestFactory().get("/"), StoreUnavailable("away"))
        assert away is not None
        pages["visitor 503 page"] = away.content.decode()
    return pages


def site_pages(
    r: redis.Redis, *, client_for: Any, buyer: Any, second_buyer: Any, staff: Any,
    settings: Any, language: str = "en",
) -> dict[str, str]:  # fmt: skip
    """label -> HTML of every page family (about 60 pages)."""
    load_demo(r)
    book_id = read_books()[0].id
    found: dict[str, str] = {}
    visitor = speaking(Client(), language)
    for path in (
        "/", "/catalog/", "/catalog/?all=algorithms&any=python&any=web&not=java&sort=-year",
        "/catalog/?all=no-such-tag", f"/catalog/book/{book_id}/", "/accounts/login/",
        "/accounts/signup/", "/book/", "/book/pickup/", "/no-such-page/", "/book/find/",
    ):  # fmt: skip
        found[f"visitor {path}"] = rendered(visitor, path)
    found["visitor wrong login"] = rendered(
        visitor, "/accounts/login/", data={"username": "x", "password": "y"}
    )
    found["visitor sign-up refused"] = rendered(
        visitor,
        "/accounts/signup/",
        data={"username": "a b", "password1": "short", "password2": "other"},
    )
    found["visitor pickup refused"] = rendered(
        visitor, "/book/pickup/", data={"room": "7", "code": "AAAAA-AAAAA"}
    )
    found["visitor forgot password"] = rendered(visitor, "/accounts/password/forgot/")
    found["visitor reset sent"] = rendered(
        visitor, "/accounts/password/forgot/", data={"login": "nobody"}
    )
    found["visitor reset link gone"] = rendered(visitor, "/accounts/password/reset/1/x-y/")
    found["visitor 405 page"] = rendered(visitor, "/accounts/logout/")
    found.update(outage_pages(language))
    token = reset_token_make(client=r, person_id=buyer.id)
    reset = f"/accounts/password/reset/{buyer.id}/{token}/"
    found["visitor reset form"] = rendered(visitor, reset)
    found["visitor reset form refused"] = rendered(
        visitor, reset, data={"new_password1": "a", "new_password2": "b"}
    )

    shopper = speaking(client_for(buyer), language)
    for path in (
        "/", "/book/?cls=C&room=7&boxes=1&boxes=2&start=9&end=11", "/book/?cls=A&room=158",
        "/accounts/me/", "/accounts/password/", "/book/find/",
        "/book/find/?cls=C&date=2026-12-12&start=14&end=16",
        "/book/find/?cls=Q&date=someday&start=30", "/book/?cls=B&room=999&start=9&end=3",
    ):  # fmt: skip
        found[f"buyer {path}"] = rendered(shopper, path)
    found["buyer hold refused (bad input)"] = refused(
        shopper, "/book/hold/", {**B_8_12, "room": "0"}, 400
    )
    held = shopper.post("/book/hold/", B_8_12)
    assert held.status_code == 302, held.content.decode()[:2000]
    confirm = rendered(shopper, held["Location"])
    found["buyer confirm"] = confirm
    form = {
        **B_8_12,
        "booking_id": hidden(confirm, "booking_id"),
        "hold_id": hidden(confirm, "hold_id"),
    }
    done = shopper.post("/book/claim/", form)
    assert done.status_code == 302
    found["buyer done"] = rendered(shopper, done["Location"])
    booking_id = done["Location"].rstrip("/").rsplit("/", 1)[-1]
    found["buyer move page"] = rendered(shopper, f"/book/mine/{booking_id}/move/")
    found["buyer cancel page"] = rendered(shopper, f"/book/mine/{booking_id}/cancel/")
    found["buyer wait page"] = rendered(shopper, "/book/wait/?cls=B&room=7&start=8&end=12")
    found["buyer wait refused"] = refused(shopper, "/book/wait/", {"cls": "B"}, 400)
    waiter = speaking(client_for(second_buyer), language)
    found["waiter hold refused (taken)"] = refused(
        waiter, "/book/hold/", {**B_8_12, "seen": "free"}, 409
    )
    assert waiter.post("/book/wait/", B_8_12).status_code == 302
    found["waiter mine with a wait"] = rendered(waiter, "/book/mine/")
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 1
    found["buyer over the hourly bookings"] = refused(
        shopper, "/book/claim/", {**B_14_16, "booking_id": booking_new_id(room=7)}, 429
    )
    shopper.post("/accounts/me/calendar/", {"action": "new"})
    shopper.post(
        "/accounts/me/email/",
        {"email": "b@example.test", "language": "en", "current_password": buyer.password},
    )
    found["buyer account, address and calendar"] = rendered(shopper, "/accounts/me/")
    found["buyer account, wrong password"] = rendered(
        shopper, "/accounts/me/delete/", data={"password": "no"}
    )
    found["buyer password change refused"] = rendered(
        shopper,
        "/accounts/password/",
        data={"old_password": "no", "new_password1": "a", "new_password2": "b"},
    )
    shopper.post(f"/book/mine/{booking_id}/cancel/", {"request_id": "r" * 20})
    found["buyer mine"] = rendered(shopper, "/book/mine/")
    found["waiter mine, told"] = rendered(waiter, "/book/mine/")

    desk = speaking(client_for(staff), language)
    for path in (
        "/staff/", "/staff/occupancy/", "/staff/occupancy/?date=2026-12-01&cls=B",
        "/staff/occupancy/?date=1999-01-01", "/staff/bookings/",
        "/staff/bookings/?start=1999-01-01&end=x", f"/staff/bookings/{booking_id}/",
        "/staff/people/", f"/staff/people/{buyer.id}/", "/staff/catalog/", "/staff/keyspace/",
        "/staff/audit/", "/staff/mail/", "/staff/catalog/books/", "/staff/catalog/books/add/",
        f"/staff/catalog/books/{book_id}/edit/",
    ):  # fmt: skip
        found[f"staff {path}"] = rendered(desk, path)
    found["staff book delete page"] = rendered(desk, f"/staff/catalog/books/{book_id}/delete/")
    found["staff flush refused"] = rendered(
        desk, "/staff/keyspace/flush/", data={"confirmation": "no"}
    )
    found["staff book form with errors"] = rendered(
        desk,
        "/staff/catalog/books/add/",
        data={"title": "", "author": "", "year": "99999", "tags": "{"},
    )
    return found
