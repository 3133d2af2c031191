"""The booking POST (booking:claim): who may book (a session that has ended books nothing, however
it ended) and how a refusal answers (the whole booking page, or the panel alone for htmx)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.rules import booking_new_id
from booking.engine.bookings import bookings_of
from tests.booking_support import NOW, SHANGHAI, claim, day, request

TAKEN = {"cls": "A", "room": "20", "date": day(5).isoformat()}


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def book_form(room: int = 21) -> dict[str, str]:
    return {"cls": "A", "room": str(room), "date": day(5).isoformat(),
            "booking_id": booking_new_id(room=room)}  # fmt: skip


def booked(r: redis.Redis, someone: Any) -> int:
    return len(bookings_of(client=r, owner_id=str(someone.id)))


def stored(r: redis.Redis) -> list[str]:
    """Every key but the sessions' (an ended session's request may begin a new, empty one)."""
    from strongroom.keyspace import SESSION

    return sorted(k for k in r.scan_iter("*") if not SESSION.matches(k))


def cookie_of(client: Client) -> str:
    from django.conf import settings

    return client.cookies[settings.SESSION_COOKIE_NAME].value


def second_browser(client: Client) -> Client:
    """Another client holding the same session cookie (the same session in a second tab)."""
    from django.conf import settings

    other = Client()
    other.cookies[settings.SESSION_COOKIE_NAME] = cookie_of(client)
    return other


@pytest.mark.parametrize("ending", ["signed out", "other sessions ended", "expired"])
def test_a_session_that_has_ended_books_nothing(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any, ending: str
) -> None:
    from strongroom.keyspace import SESSION

    client = client_for(buyer)
    assert client.post("/book/claim/", book_form(21)).status_code == 302
    stale = second_browser(client)
    if ending == "signed out":
        assert client.post("/accounts/logout/").status_code in (302, 303)
    elif ending == "other sessions ended":
        other = client_for(buyer)  # another browser of the same buyer ends every other session
        assert other.post("/accounts/me/sessions/").status_code == 302
    else:
        r.delete(SESSION.key(session_key=cookie_of(client)))  # what the store's TTL does
    keys_before = stored(r)
    answer = stale.post("/book/claim/", book_form(22))
    assert answer.status_code == 302 and "/accounts/login/" in answer["Location"]
    assert booked(r, buyer) == 1
    assert stored(r) == keys_before, "nothing of the booking is written"
    # After the login, the booking page with the very choice the form held, said why.
    assert answer["Location"] == "/accounts/login/?next=" + quote(
        f"/book/?cls=A&room=22&date={day(5).isoformat()}", safe=""
    )
    assert "that form was not taken" in stale.get(answer["Location"]).content.decode()


def test_book_pressed_again_after_midnight_answers_with_the_booking_the_first_press_made(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any
) -> None:
    """The first press booked at 23:59:50; its answer was lost, the buyer presses again at
    00:00:10, when the day reads as today: the booking, not "book at least one day ahead"."""
    client = client_for(buyer)
    form = {**book_form(23), "date": day(4).isoformat()}
    with time_machine.travel(dt.datetime(2026, 12, 3, 23, 59, 50, tzinfo=SHANGHAI), tick=False):
        first = client.post("/book/claim/", form)
    assert first.status_code == 302 and first["Location"].startswith("/book/done/")
    with time_machine.travel(dt.datetime(2026, 12, 4, 0, 0, 10, tzinfo=SHANGHAI), tick=False):
        again = client.post("/book/claim/", form)
        other = client.post("/book/claim/", {**form, "booking_id": booking_new_id(room=23)})
    assert again.status_code == 302 and again["Location"] == first["Location"]
    assert other.status_code == 400 and "is today" in other.content.decode()
    assert booked(r, buyer) == 1


def test_a_resent_form_changed_since_leads_to_its_booking_and_says_the_change_was_not_booked(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any
) -> None:
    client = client_for(buyer)
    form = book_form(24)
    with time_machine.travel(NOW, tick=False):
        first = client.post("/book/claim/", form)
        same = client.post("/book/claim/", form, follow=True)
        changed = client.post("/book/claim/", {**form, "date": day(6).isoformat()}, follow=True)
    assert first.status_code == 302
    word = "What the form asked for this time was not booked."
    assert word not in same.content.decode()  # the same form again: just its booking
    assert changed.redirect_chain[-1][0] == first["Location"]
    assert word in changed.content.decode()
    (made,) = bookings_of(client=r, owner_id=str(buyer.id))
    assert made.dates == (day(5),)


def test_a_refused_booking_answers_the_whole_page_or_for_htmx_the_panel_alone(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any, second_buyer: Any
) -> None:
    assert claim(r, request("A", room=20, dates=(5,)), owner=str(second_buyer.id)).ok
    client = client_for(buyer)
    page = client.post("/book/claim/", {**TAKEN, "booking_id": booking_new_id(room=20)})
    assert page.status_code == 409
    text = page.content.decode()
    assert text.lstrip().startswith("<!DOCTYPE html>") and 'id="booking-panel"' in text
    assert "Someone was faster" in text
    part = client.post(
        "/book/claim/",
        {**TAKEN, "booking_id": booking_new_id(room=20)},
        headers={"HX-Request": "true"},
    )
    assert part.status_code == 409
    fragment = part.content.decode()
    assert "<html" not in fragment and "<!DOCTYPE" not in fragment
    assert fragment.startswith('<div id="booking-panel"') and "Someone was faster" in fragment
    assert part["HX-Retarget"] == "#booking-panel" and part["HX-Reswap"] == "outerHTML"
    assert part["HX-Push-Url"].startswith("/book/?cls=A&room=20")
    restore = client.post(
        "/book/claim/",
        {**TAKEN, "booking_id": booking_new_id(room=20)},
        headers={"HX-Request": "true", "HX-History-Restore-Request": "true"},
    )
    assert restore.content.decode().lstrip().startswith("<!DOCTYPE html>")
    assert booked(r, buyer) == 0


def test_refusals_of_a_taken_slot_share_one_panel_that_equals_a_fresh_render(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any, second_buyer: Any
) -> None:
    """The panel of a refusal is rendered once per kept panel and language: the same bytes
    for every buyer refused the slot, with no CSRF token of any of them, equal to a render
    with keeping off, and rendered again after the room changes."""
    from booking.web import pick_panel
    from strongroom.templatetags import fixed_markup

    assert claim(r, request("A", room=20, dates=(5,)), owner=str(second_buyer.id)).ok
    clients = [client_for(buyer), client_for(second_buyer)]

    def refusal(client: Client, **headers: str) -> str:
        answer = client.post(
            "/book/claim/", {**TAKEN, "booking_id": booking_new_id(room=20)}, headers=headers
        )
        assert answer.status_code == 409
        return answer.content.decode()

    def fresh(client: Client, **headers: str) -> str:
        pick_panel.KEPT_PANELS.enabled = fixed_markup.KEEPING = False
        try:
            return refusal(client, **({"HX-Request": "true"} | headers))
        finally:
            pick_panel.KEPT_PANELS.enabled = fixed_markup.KEEPING = True

    def tokens_out(page: str) -> str:  # Django masks the CSRF token afresh in every answer
        page = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1", page)
        return re.sub(r'("X-CSRFToken": ")[^"]+', r"\1", page)

    panels = [refusal(c, **{"HX-Request": "true"}) for c in clients]
    assert panels[0] == panels[1] and "csrfmiddlewaretoken" not in panels[0]
    assert "Someone was faster" in panels[0]
    assert panels[0] == fresh(clients[0])
    for client in clients:  # the whole page holds the same panel, and is the page unkept
        page = refusal(client)
        assert panels[0] in page
        assert tokens_out(page) == tokens_out(fresh(client, **{"HX-Request": "false"}))
    chinese = refusal(clients[0], **{"HX-Request": "true", "Accept-Language": "zh-hans"})
    assert "有人抢先了一步" in chinese and "Someone was faster" not in chinese
    # Another day of the room is booked: the room's edition moves, the panel is built again.
    assert claim(r, request("A", room=20, dates=(6,)), owner=str(second_buyer.id)).ok
    after = refusal(clients[1], **{"HX-Request": "true"})
    assert after == fresh(clients[1])
    assert after != panels[0]  # the calendar now shows the other day taken too
    assert booked(r, buyer) == 0
