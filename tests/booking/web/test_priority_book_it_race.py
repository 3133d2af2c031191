""" "Book it" on a priority hold pressed in ten tabs at once (and twice in each), while another
buyer tries to hold, book and open the same slot: one booking, the buyer's; the other buyer is
refused until the hold ends; never a 500."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import redis
from django.test import Client

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.bookings import hold_get
from booking.engine.claims import booking_claim
from booking.selectors import bookings_of
from tests.booking.web.test_priority_book_it import freed
from tests.booking_support import day
from tests.conftest import Someone, person_make

SLOT = {"cls": "A", "room": "66", "date": "2026-12-05"}


def claim_form(page: str) -> dict[str, str]:
    """The fields of the confirm page's Book form."""
    form = re.search(r'<form method="post" action="/book/claim/#summary".*?</form>', page, re.S)
    assert form is not None, "no Book form"
    fields = re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.group(0))
    return {name: value.replace("&amp;", "&") for name, value in fields}


def test_ten_tabs_pressing_book_it_at_once_make_one_booking_and_shut_out_the_other_buyer(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    (hold_id,) = freed(r, buyer, second_buyer, [66]).values()
    other = person_make(r, "other_party")
    tabs = [client_for(second_buyer) for _ in range(10)]
    rival = [client_for(other) for _ in range(4)]
    start = threading.Barrier(len(tabs) + len(rival))
    statuses: list[tuple[str, int]] = []
    failures: list[BaseException] = []

    def book_it(tab: Client) -> None:
        try:
            start.wait()
            page = tab.get(f"/book/confirm/{hold_id}/")
            statuses.append(("confirm", page.status_code))
            if page.status_code != 200:
                return
            form = claim_form(page.content.decode())
            for _ in range(2):  # a double click: the same booking id twice
                statuses.append(("claim", tab.post("/book/claim/", form).status_code))
        except BaseException as exc:
            failures.append(exc)

    def rival_tries(tab: Client, step: int) -> None:
        try:
            start.wait()
            if step == 0:
                answer = tab.post("/book/hold/", SLOT)
            elif step == 1:
                answer = tab.post("/book/claim/", {**SLOT, "booking_id": booking_new_id(room=66)})
            elif step == 2:
                answer = tab.get(f"/book/confirm/{hold_id}/")
            else:
                answer = tab.post(
                    "/book/claim/",
                    {**SLOT, "booking_id": booking_new_id(room=66), "hold_id": hold_id},
                )
            statuses.append((f"rival{step}", answer.status_code))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=book_it, args=(tab,)) for tab in tabs]
    threads += [
        threading.Thread(target=rival_tries, args=(tab, step)) for step, tab in enumerate(rival)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert all(status < 500 for _, status in statuses), statuses
    mine = [b for b in bookings_of(client=r, owner_id=str(second_buyer.id)) if b.room == 66]
    assert len(mine) == 1, statuses
    # Every tab's Book names the booking of the hold: each leads to it, none is "too late".
    # A tab that opened the page after another's Book is sent on (the hold is a booking now).
    assert all(s in (200, 302) for n, s in statuses if n == "confirm"), statuses
    claims = [s for n, s in statuses if n == "claim"]
    assert claims and all(s == 302 for s in claims), statuses
    assert bookings_of(client=r, owner_id=str(other.id)) == []
    rivals = dict(s for s in statuses if s[0].startswith("rival"))
    # Another's hold does not open for them (404), or has become the booking already (302 on).
    assert rivals["rival0"] == 409 and rivals["rival1"] == 409 and rivals["rival2"] in (302, 404)
    assert rivals["rival3"] == 409
    assert hold_get(client=r, hold_id=hold_id) is None  # turned into the booking
    # Afterwards too: the slot is booked, nobody else takes it.
    late = booking_claim(
        client=r, owner_id=str(other.id),
        request=slot_request_parse(cls="A", room=66, dates=[day(5)]),
        booking_id=booking_new_id(room=66),
    )  # fmt: skip
    assert not late.ok


def test_the_other_buyer_is_refused_while_the_priority_hold_lasts_and_may_book_after(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    import datetime as dt

    import time_machine

    (hold_id,) = freed(r, buyer, second_buyer, [67]).values()
    other = client_for(person_make(r, "other_party"))
    slot = {**SLOT, "room": "67"}
    assert other.post("/book/hold/", slot).status_code == 409
    assert (
        other.post("/book/claim/", {**slot, "booking_id": booking_new_id(room=67)}).status_code
        == 409
    )
    assert other.get(f"/book/confirm/{hold_id}/").status_code == 404
    later = dt.datetime.now(tz=dt.UTC) + dt.timedelta(hours=2)
    with time_machine.travel(later, tick=False):
        answer = other.post("/book/claim/", {**slot, "booking_id": booking_new_id(room=67)})
        assert answer.status_code == 302, "the hold ended: everyone may book it"
        assert client_for(second_buyer).get(f"/book/confirm/{hold_id}/").status_code == 302


def test_book_it_on_two_priority_holds_at_once_grants_one_when_one_is_the_most(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
    settings: object,
) -> None:
    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    holds = freed(r, buyer, second_buyer, [68, 69])
    presses = [holds[68], holds[69]] * 5
    tabs = [client_for(second_buyer) for _ in presses]
    start = threading.Barrier(len(tabs))
    statuses: list[int] = []

    def press(tab: Client, hold_id: str) -> None:
        start.wait()
        statuses.append(tab.get(f"/book/confirm/{hold_id}/").status_code)

    threads = [threading.Thread(target=press, args=p) for p in zip(tabs, presses, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(statuses) == len(presses) and all(s in (200, 302) for s in statuses), statuses
    owners = {room: hold_get(client=r, hold_id=hold_id) for room, hold_id in holds.items()}
    granted = [room for room, held in owners.items() if held is not None]
    assert len(granted) == 1, owners
    held = owners[granted[0]]
    assert held is not None and held.owner_id == str(second_buyer.id)


def test_book_pressed_in_two_tabs_of_one_browser_leads_both_to_the_one_booking(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """The second tab's Book used to say "Someone was faster" (409): it was the buyer."""
    (hold_id,) = freed(r, buyer, second_buyer, [72]).values()
    browser = client_for(second_buyer)
    tabs = [claim_form(browser.get(f"/book/confirm/{hold_id}/").content.decode()) for _ in "12"]
    first, second = (browser.post("/book/claim/", form) for form in tabs)
    assert first.status_code == 302, first.content.decode()[:500]
    assert second.status_code == 302, second.content.decode()[:2000]
    assert first["Location"] == second["Location"]
    assert len(bookings_of(client=r, owner_id=str(second_buyer.id))) == 1
