""" "Book it" on a priority hold from the waiting list that no mail sender granted yet: the page
grants it if the buyer may have one more, else says so and the slot is everyone's (issue 33,
point 3)."""

from __future__ import annotations

from collections.abc import Callable

import redis
from django.test import Client

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.bookings import hold_get
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.waits import Wait, wait_join, waits_of
from tests.booking_support import day
from tests.conftest import Someone, person_make


def freed(r: redis.Redis, owner: Someone, waiter: Someone, rooms: list[int]) -> dict[int, str]:
    """`waiter` waits for rooms `owner` booked and cancels; room -> the waiter's priority hold."""
    for room in rooms:
        made = booking_claim(
            client=r, owner_id=str(owner.id),
            request=slot_request_parse(cls="A", room=room, dates=[day(5)]),
            booking_id=booking_new_id(room=room),
        )  # fmt: skip
        assert made.ok and made.booking is not None
        assert wait_join(client=r, owner_id=str(waiter.id), wait=Wait(room, "A", day(5))) == "ok"
        assert booking_cancel(
            client=r, booking_id=made.booking.id, actor_id=str(owner.id), actor_is_staff=False
        ).ok
    return {w.wait.room: w.hold_id for w in waits_of(client=r, owner_id=str(waiter.id)) if w.mine}


def test_book_it_grants_a_priority_hold_no_sender_came_to(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    (hold_id,) = freed(r, buyer, second_buyer, [61]).values()
    held = hold_get(client=r, hold_id=hold_id)
    assert held is not None and held.owner_id == f"pending:{second_buyer.id}"
    page = client_for(second_buyer).get(f"/book/confirm/{hold_id}/")
    assert page.status_code == 200 and f'value="{hold_id}"' in page.content.decode()
    held = hold_get(client=r, hold_id=hold_id)
    assert held is not None and held.owner_id == str(second_buyer.id)
    # Nobody else may open it.
    assert client_for(buyer).get(f"/book/confirm/{hold_id}/").status_code == 404


def test_book_it_over_the_cap_says_so_and_the_slot_is_everyones(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
    settings: object,
) -> None:
    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    holds = freed(r, buyer, second_buyer, [62, 63])
    browser = client_for(second_buyer)
    assert browser.get(f"/book/confirm/{holds[62]}/").status_code == 200
    over = browser.get(f"/book/confirm/{holds[63]}/", follow=True)
    assert over.redirect_chain[0][0].startswith("/book/")
    assert "as many slots held from the waiting list as one buyer may keep" in (
        over.content.decode()
    )
    assert hold_get(client=r, hold_id=holds[63]) is None
    third = person_make(r, "third_party")
    assert booking_claim(
        client=r, owner_id=str(third.id),
        request=slot_request_parse(cls="A", room=63, dates=[day(5)]),
        booking_id=booking_new_id(room=63),
    ).ok  # fmt: skip
    zh = client_for(second_buyer)
    holds = freed(r, buyer, second_buyer, [64])
    chinese = zh.get(
        f"/book/confirm/{holds[64]}/", headers={"Accept-Language": "zh-hans"}, follow=True
    ).content.decode()
    assert "每位买家同时可保留的上限" in chinese


def test_a_fetch_ahead_of_book_it_grants_nothing_and_the_click_then_does(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """A browser fetching "Book it" ahead of a click (speculation rules, <link rel=prefetch>,
    prerender, Safari's Top Sites preview) is answered 503 uncached, whatever the header's case
    or extra tokens, and the hold stays ungranted until the real visit."""
    (hold_id,) = freed(r, buyer, second_buyer, [68]).values()
    browser = client_for(second_buyer)
    for header, value in [("Sec-Purpose", "prefetch"), ("Sec-Purpose", "prefetch;prerender"),
                          ("sec-purpose", "Prefetch"), ("Sec-Purpose", "prerender"),
                          ("SEC-PURPOSE", "PREFETCH;anonymous-client-ip"), ("Purpose", "prefetch"),
                          ("purpose", "Prefetch"), ("X-Moz", "prefetch"), ("x-moz", "Prefetch"),
                          ("X-Purpose", "preview"), ("X-Purpose", "Preview")]:  # fmt: skip
        ahead = browser.get(f"/book/confirm/{hold_id}/", headers={header: value})
        assert ahead.status_code == 503 and "no-store" in ahead["Cache-Control"], header
        held = hold_get(client=r, hold_id=hold_id)
        assert held is not None and held.owner_id == f"pending:{second_buyer.id}", header
    page = browser.get(f"/book/confirm/{hold_id}/", headers={"Purpose": "", "X-Moz": "x"})
    assert page.status_code == 200 and f'value="{hold_id}"' in page.content.decode()
    held = hold_get(client=r, hold_id=hold_id)
    assert held is not None and held.owner_id == str(second_buyer.id)
