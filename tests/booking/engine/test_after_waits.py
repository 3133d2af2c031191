"""The waiting list: waiters are told in order when a slot frees; the first gets a hold."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.conf import settings
from django.test import Client
from django.utils import timezone

from booking.domain.parser import slot_request_parse
from booking.domain.records import Booking
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import booking_get, hold_get
from booking.engine.cancel import booking_cancel
from booking.engine.claims import ClaimResult, booking_claim
from booking.engine.holds import booking_hold
from booking.engine.priority import priority_grant
from booking.engine.waits import Wait, wait_join, wait_leave, waits_of
from booking.engine.waits_upkeep import waits_sweep
from strongroom import keyspace as ks
from strongroom.decoders import text_list, text_stream
from tests.booking_support import day
from tests.conftest import Someone, person_make


def whole_minute_now() -> dt.datetime:
    """Now, on the minute: a hold ends on a whole minute, so one placed now ends exactly its
    time later (STRONGROOM_HOLD_SECONDS is whole minutes)."""
    return dt.datetime.now(tz=dt.UTC).replace(second=0, microsecond=0)


def booked(r: redis.Redis, someone: Someone, n: int = 5) -> Booking:
    """`someone`'s booking of room 7, class A, on season day `n` (made and checked)."""
    made = booking_claim(
        client=r, owner_id=str(someone.id), request=a_day(n=n), booking_id=booking_new_id(room=7)
    )
    assert made.ok and made.booking is not None
    return made.booking


def a_day(room: int = 7, n: int = 5):
    return slot_request_parse(cls="A", room=room, dates=[day(n)])


def test_a_waiting_buyer_gets_the_priority_hold_and_the_second_waiter_does_not(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    third = person_make(r, "third_waiter")
    made = booked(r, buyer)
    wait = Wait(7, "A", day(5))
    assert wait_join(client=r, owner_id=str(second_buyer.id), wait=wait) == "ok"
    assert wait_join(client=r, owner_id=str(third.id), wait=wait) == "ok"

    done = booking_cancel(
        client=r, booking_id=made.id, actor_id=str(buyer.id), actor_is_staff=False
    )
    assert done.ok

    (first,) = waits_of(client=r, owner_id=str(second_buyer.id))
    (second,) = waits_of(client=r, owner_id=str(third.id))
    assert first.told and first.mine and first.priority_until is not None
    assert second.told and not second.mine and second.priority_until == first.priority_until
    # Placed pending: nobody may use it until the waiter's own slot grants it (the mail
    # sender, or their "Book it", asks).
    held = hold_get(client=r, hold_id=first.hold_id)
    assert held is not None and held.owner_id == f"pending:{second_buyer.id}"
    assert priority_grant(client=r, person_id=second_buyer.id, hold_id=first.hold_id) == "granted"
    held = hold_get(client=r, hold_id=first.hold_id)
    assert held is not None and held.owner_id == str(second_buyer.id)
    # The third buyer cannot take it during the priority hold; the first waiter can.
    blocked = booking_claim(
        client=r, owner_id=str(third.id), request=a_day(), booking_id=booking_new_id(room=7)
    )
    assert not blocked.ok
    taken = booking_claim(
        client=r,
        owner_id=str(second_buyer.id),
        request=a_day(),
        booking_id=booking_new_id(room=7),
        hold_id=first.hold_id,
    )
    assert taken.ok
    outbox = [f["m"] for _, f in text_stream(r.xrange(ks.BOOKING_OUTBOX.key(room="007")))]
    freed = [m for m in outbox if m.startswith("freed|")]
    assert len(freed) == 2 and freed[0].startswith(f"freed|007|{second_buyer.id}|")
    # Booked, the wait is fulfilled: its notice goes, and it no longer counts towards the
    # buyer's limit; the third buyer is still told that the slot opened.
    assert waits_of(client=r, owner_id=str(second_buyer.id)) == []
    assert not r.exists(ks.BOOKING_WAITS_BY_PERSON.key(owner_id=str(second_buyer.id)))
    assert [w.told for w in waits_of(client=r, owner_id=str(third.id))] == [True]


def test_booking_a_waited_for_slot_directly_ends_that_wait_only(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """A buyer told that their slot freed who books it without the priority hold is no longer
    listed as waiting for it; their other waits stay."""
    made = booked(r, buyer)
    booked(r, buyer, n=6)
    me = str(second_buyer.id)
    assert wait_join(client=r, owner_id=me, wait=Wait(7, "A", day(5))) == "ok"
    assert wait_join(client=r, owner_id=me, wait=Wait(7, "A", day(6))) == "ok"
    booking_cancel(client=r, booking_id=made.id, actor_id=str(buyer.id),
                   actor_is_staff=False)  # fmt: skip
    (told,) = [w for w in waits_of(client=r, owner_id=me) if w.told]
    assert priority_grant(client=r, person_id=second_buyer.id, hold_id=told.hold_id) == "granted"
    mine = booking_claim(client=r, owner_id=me, request=a_day(), booking_id=booking_new_id(room=7))
    assert mine.ok
    assert [w.wait.date for w in waits_of(client=r, owner_id=me)] == [day(6)]
    assert r.zcard(ks.BOOKING_WAITS_BY_PERSON.key(owner_id=me)) == 1


@pytest.mark.parametrize("granted", [False, True], ids=["pending", "granted"])
@pytest.mark.parametrize("how", ["dismissed", "account deleted"])
def test_a_priority_hold_given_back_is_everyones_and_the_other_waiters_are_told_so(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, how: str, granted: bool
) -> None:
    """The first waiter dismisses the notice, or deletes their account, with the priority hold
    still pending or already theirs: the hold goes, and the waiter told after them no longer
    reads that someone has the slot until the hold's end (their notice had said so)."""
    from booking.engine.owners import owner_forget

    third = person_make(r, "third_waiter")
    made = booked(r, buyer)
    for who in (second_buyer, third):
        assert wait_join(client=r, owner_id=str(who.id), wait=Wait(7, "A", day(5))) == "ok"
    booking_cancel(client=r, booking_id=made.id, actor_id=str(buyer.id),
                   actor_is_staff=False)  # fmt: skip
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id))
    assert told.mine and hold_get(client=r, hold_id=told.hold_id) is not None
    if granted:
        assert priority_grant(client=r, person_id=second_buyer.id, hold_id=told.hold_id) == (
            "granted"
        )
    (other,) = waits_of(client=r, owner_id=str(third.id))
    assert other.told and other.priority_until == told.priority_until
    if how == "dismissed":
        assert wait_leave(client=r, owner_id=str(second_buyer.id), entry=told.entry)
    else:
        owner_forget(client=r, owner_id=str(second_buyer.id))
    assert hold_get(client=r, hold_id=told.hold_id) is None
    (other,) = waits_of(client=r, owner_id=str(third.id))
    assert other.told and not other.mine and other.priority_until is None
    taken = booking_claim(
        client=r, owner_id=str(third.id), request=a_day(), booking_id=booking_new_id(room=7)
    )
    assert taken.ok


def test_a_wait_for_a_free_slot_is_refused_and_nothing_is_written(
    r: redis.Redis, buyer: Someone
) -> None:
    assert wait_join(client=r, owner_id=str(buyer.id), wait=Wait(7, "A", day(5))) == "free"
    assert not r.exists(ks.BOOKING_WAITS.key(room="007"))
    assert not r.exists(ks.BOOKING_WAITS_BY_PERSON.key(owner_id=str(buyer.id)))


def test_waits_are_bounded_per_buyer(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object
) -> None:
    settings.STRONGROOM_WAITS_PER_BUYER = 2  # type: ignore[attr-defined]
    for n in (5, 6, 7):
        made = booking_claim(
            client=r,
            owner_id=str(buyer.id),
            request=a_day(n=n),
            booking_id=booking_new_id(room=7),
        )
        assert made.ok
    owner = str(second_buyer.id)
    assert wait_join(client=r, owner_id=owner, wait=Wait(7, "A", day(5))) == "ok"
    assert wait_join(client=r, owner_id=owner, wait=Wait(7, "A", day(6))) == "ok"
    assert wait_join(client=r, owner_id=owner, wait=Wait(7, "A", day(7))) == "limit"
    assert wait_join(client=r, owner_id=owner, wait=Wait(7, "A", day(5))) == "ok"  # again


def test_twelve_parallel_waits_for_twelve_rooms_keep_the_buyers_bound(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object
) -> None:
    from tests.booking.engine.test_booking_race import run_together

    settings.STRONGROOM_WAITS_PER_BUYER = 5  # type: ignore[attr-defined]
    rooms = range(11, 23)
    for room in rooms:
        assert booked_room(r, buyer, room).ok
    owner = str(second_buyer.id)
    answers = run_together(
        lambda i: wait_join(client=r, owner_id=owner, wait=Wait(rooms[i], "A", day(5))),
        threads=len(rooms),
    )
    assert sorted(answers) == ["limit"] * 7 + ["ok"] * 5, answers
    stored = sum(
        len([m for m in text_list(r.zrange(ks.BOOKING_WAITS.key(room=f"{room:03d}"), 0, -1))
             if m.startswith(owner + "|")])
        for room in rooms
    )  # fmt: skip
    assert stored == 5
    assert r.zcard(ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner)) == 5
    assert len(waits_of(client=r, owner_id=owner)) == 5


def test_a_refused_wait_gives_its_place_on_the_buyers_list_back(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object
) -> None:
    settings.STRONGROOM_WAITS_PER_BUYER = 1  # type: ignore[attr-defined]
    booked(r, buyer, n=5)
    owner = str(second_buyer.id)
    assert wait_join(client=r, owner_id=owner, wait=Wait(7, "A", day(6))) == "free"
    assert not r.exists(ks.BOOKING_WAITS_BY_PERSON.key(owner_id=owner))
    assert wait_join(client=r, owner_id=owner, wait=Wait(7, "A", day(5))) == "ok"


def booked_room(r: redis.Redis, someone: Someone, room: int) -> ClaimResult:
    return booking_claim(
        client=r, owner_id=str(someone.id), request=a_day(room=room),
        booking_id=booking_new_id(room=room),
    )  # fmt: skip


def test_an_expired_hold_tells_the_waiters_at_the_next_sweep(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    start = whole_minute_now()  # a hold placed on a whole minute ends on one
    req = slot_request_parse(cls="B", room=9, dates=[day(8)], hour_start=8, hour_end=12)
    held = booking_hold(
        client=r, owner_id=str(buyer.id), request=req, hold_id=hold_new_id(room=9), now=start
    )
    assert held.ok
    wait = Wait(9, "B", day(8), (9, 10))
    assert wait_join(client=r, owner_id=str(second_buyer.id), wait=wait, now=start) == "ok"
    assert waits_sweep(client=r, now=start) == 0
    later = start + dt.timedelta(minutes=11)
    assert waits_sweep(client=r, now=later) == 1
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id), now=later)
    assert told.told and told.mine


def test_two_accounts_passing_a_slot_between_their_holds_cannot_keep_it_from_a_waiter(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """One account holds a slot; at the instant its hold runs out, a second account of the
    same person holds it, and so on: each hold's cool-down is its own owner's, so the room never
    came free for anyone else. A slot someone waits for is theirs first once a hold runs out:
    the other account is refused (nothing written) until the sweep offers it to the waiter."""
    third = person_make(r, "third_party")
    start = whole_minute_now()  # a hold placed on a whole minute ends on one
    req = slot_request_parse(cls="C", room=9, dates=[day(8)], hour_start=8, hour_end=12,
                             boxes=[1, 2, 3])  # fmt: skip

    def hold(someone: Someone, at: dt.datetime) -> Any:
        return booking_hold(
            client=r, owner_id=str(someone.id), request=req, hold_id=hold_new_id(room=9), now=at
        )

    assert hold(buyer, start).ok
    wait = Wait(9, "C", day(8), (10, 11), box=2)
    assert wait_join(client=r, owner_id=str(third.id), wait=wait, now=start) == "ok"
    ran_out = start + dt.timedelta(seconds=settings.STRONGROOM_HOLD_SECONDS, milliseconds=1)
    before = {k: r.dump(k) for k in r.scan_iter(match="*{room:009}*")}
    refused = hold(second_buyer, ran_out)
    assert not refused.ok and refused.waited
    assert {k: r.dump(k) for k in r.scan_iter(match="*{room:009}*")} == before
    # Slots nobody waits for are anyone's, at once.
    other = slot_request_parse(cls="C", room=9, dates=[day(8)], hour_start=8, hour_end=12,
                               boxes=[4, 5])  # fmt: skip
    assert booking_hold(
        client=r, owner_id=str(second_buyer.id), request=other, hold_id=hold_new_id(room=9),
        now=ran_out,
    ).ok  # fmt: skip
    assert waits_sweep(client=r, now=ran_out) == 1  # the waiter's priority hold
    (told,) = waits_of(client=r, owner_id=str(third.id), now=ran_out)
    assert told.told and told.mine
    assert not hold(second_buyer, ran_out).ok  # held for the waiter now


def test_a_hold_that_ran_out_gives_its_slots_to_the_waiting_list_not_to_a_book_press(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """The holder's Book button pressed after their hold ran out (the confirm page stays on
    screen), or anyone's Book on the booking page: a slot someone waits for, freed by a hold
    running out, is the waiting list's first, as a hold of it is refused. Nothing is written;
    the waiter themself may book it, and once the sweep has offered it, it is held for them."""
    third = person_make(r, "third_party")
    start = whole_minute_now()  # a hold placed on a whole minute ends on one
    req = slot_request_parse(cls="A", room=9, dates=[day(8)])
    hold_id = hold_new_id(room=9)
    assert booking_hold(
        client=r, owner_id=str(buyer.id), request=req, hold_id=hold_id, now=start
    ).ok
    wait = Wait(9, "A", day(8))
    assert wait_join(client=r, owner_id=str(third.id), wait=wait, now=start) == "ok"
    ran_out = start + dt.timedelta(seconds=settings.STRONGROOM_HOLD_SECONDS, milliseconds=300)
    before = {k: r.dump(k) for k in r.scan_iter(match="*{room:009}*")}
    for someone, hold in ((buyer, hold_id), (second_buyer, None)):
        refused = booking_claim(
            client=r, owner_id=str(someone.id), request=req, booking_id=booking_new_id(room=9),
            hold_id=hold, now=ran_out,
        )  # fmt: skip
        assert refused == ClaimResult(False, waited=True)
    assert {k: r.dump(k) for k in r.scan_iter(match="*{room:009}*")} == before
    assert waits_sweep(client=r, now=ran_out) == 1  # the waiter's priority hold
    late = booking_claim(
        client=r, owner_id=str(buyer.id), request=req, booking_id=booking_new_id(room=9),
        now=ran_out,
    )  # fmt: skip
    assert not late.ok and not late.waited and late.taken  # held for the waiter now


def test_the_confirm_page_s_book_button_after_the_hold_ran_out_says_why(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """Without JavaScript the confirm page's Book button stays on screen after the hold ends:
    pressed then, with someone waiting, the buyer reads why (409) and nothing is booked."""
    start = whole_minute_now()  # a hold placed on a whole minute ends on one
    browser = client_for(buyer)
    with time_machine.travel(start, tick=False):
        held = browser.post("/book/hold/", {"cls": "A", "room": "9", "date": "2026-12-08"})
        assert held.status_code == 302 and "/book/confirm/" in held["Location"]
        hold_id = held["Location"].rstrip("/").rsplit("/", 1)[1]
        page = browser.get(held["Location"]).content.decode()
        booking_id = re.search(r'name="booking_id" value="([^"]+)"', page)
        assert booking_id is not None
        wait = Wait(9, "A", dt.date(2026, 12, 8))
        assert wait_join(client=r, owner_id=str(second_buyer.id), wait=wait) == "ok"
    ran_out = start + dt.timedelta(seconds=settings.STRONGROOM_HOLD_SECONDS, milliseconds=300)
    with time_machine.travel(ran_out, tick=False):
        form = {"cls": "A", "room": "9", "date": "2026-12-08", "hold_id": hold_id,
                "booking_id": booking_id.group(1)}  # fmt: skip
        pressed = browser.post("/book/claim/", form)
    assert pressed.status_code == 409
    assert "offered to the waiting list first" in pressed.content.decode()
    assert booking_get(client=r, booking_id=booking_id.group(1)) is None


def test_the_waiter_may_book_the_slot_a_hold_left_at_once(r: redis.Redis, buyer: Someone) -> None:
    third = person_make(r, "third_party")
    start = whole_minute_now()  # a hold placed on a whole minute ends on one
    req = slot_request_parse(cls="A", room=9, dates=[day(8)])
    assert booking_hold(
        client=r, owner_id=str(buyer.id), request=req, hold_id=hold_new_id(room=9), now=start
    ).ok
    assert wait_join(client=r, owner_id=str(third.id), wait=Wait(9, "A", day(8)), now=start)
    ran_out = start + dt.timedelta(seconds=settings.STRONGROOM_HOLD_SECONDS, milliseconds=300)
    made = booking_claim(
        client=r, owner_id=str(third.id), request=req, booking_id=booking_new_id(room=9),
        now=ran_out,
    )  # fmt: skip
    assert made.ok and made.booking is not None


def test_a_wait_whose_slot_is_still_partly_booked_keeps_no_free_hour_from_anyone(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """A wait for 08-16 while 15-16 is booked: the sweep offers it only once all of it is
    free, so the hours 9-10 it covers are anyone's to hold meanwhile (a wide wait would
    otherwise freeze every free hour of a room's day)."""
    third = person_make(r, "third_party")
    start = whole_minute_now()  # a hold placed on a whole minute ends on one
    late = slot_request_parse(cls="B", room=9, dates=[day(8)], hour_start=15, hour_end=16)
    assert booking_claim(
        client=r, owner_id=str(buyer.id), request=late, booking_id=booking_new_id(room=9)
    ).ok
    wide = Wait(9, "B", day(8), (8, 16))
    assert wait_join(client=r, owner_id=str(third.id), wait=wide, now=start) == "ok"
    early = slot_request_parse(cls="B", room=9, dates=[day(8)], hour_start=9, hour_end=10)
    held = booking_hold(
        client=r, owner_id=str(second_buyer.id), request=early, hold_id=hold_new_id(room=9),
        now=start,
    )  # fmt: skip
    assert held.ok and not held.waited


def test_waits_of_past_days_are_cleared_at_the_days_end(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    booking_claim(
        client=r, owner_id=str(buyer.id), request=a_day(), booking_id=booking_new_id(room=7)
    )
    assert wait_join(client=r, owner_id=str(second_buyer.id), wait=Wait(7, "A", day(5))) == "ok"
    after = dt.datetime(2026, 12, 5, 1, 0, tzinfo=dt.UTC)  # Dec 5, 09:00 in Shanghai
    waits_sweep(client=r, now=after)
    assert not r.exists(ks.BOOKING_WAITS.key(room="007"))
    assert waits_of(client=r, owner_id=str(second_buyer.id), now=after) == []


def test_the_wait_pages_join_show_and_leave(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    booking_claim(
        client=r, owner_id=str(buyer.id), request=a_day(), booking_id=booking_new_id(room=7)
    )
    browser = client_for(second_buyer)
    form = browser.get("/book/wait/?cls=A&room=7&date=2026-12-05")
    assert form.status_code == 200
    joined = browser.post("/book/wait/", {"cls": "A", "room": "7", "date": "2026-12-05"})
    assert joined.status_code == 302
    page = browser.get("/book/mine/").content.decode()
    assert 'id="waits"' in page
    assert 'id="waits"' in browser.get("/accounts/me/").content.decode()
    (status,) = waits_of(client=r, owner_id=str(second_buyer.id))
    left = browser.post("/book/wait/leave/", {"entry": status.entry})
    assert left.status_code == 302
    assert waits_of(client=r, owner_id=str(second_buyer.id)) == []
    # A slot that is free needs no wait: back to the booking page with the same choice.
    free = browser.post("/book/wait/", {"cls": "A", "room": "8", "date": "2026-12-05"}, follow=True)
    assert free.redirect_chain[0][0].startswith("/book/?")
    assert "room=8" in free.redirect_chain[0][0] and "2026-12-05" in free.redirect_chain[0][0]
    assert "it is free right now" in free.content.decode()
    assert waits_of(client=r, owner_id=str(second_buyer.id)) == []


def test_the_wait_limit_says_that_notices_count_and_how_to_make_room(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
    settings: object,
) -> None:
    settings.STRONGROOM_WAITS_PER_BUYER = 1  # type: ignore[attr-defined]
    for room in (7, 8):
        booking_claim(
            client=r, owner_id=str(buyer.id), request=a_day(room=room),
            booking_id=booking_new_id(room=room),
        )  # fmt: skip
    browser = client_for(second_buyer)
    assert browser.post("/book/wait/", {"cls": "A", "room": "7", "date": "2026-12-05"}).status_code
    second = browser.post(
        "/book/wait/", {"cls": "A", "room": "8", "date": "2026-12-05"}, follow=True
    ).content.decode()
    assert "the notices of slots that freed included" in html_text(second)
    assert "dismiss a notice on My bookings" in html_text(second)
    assert len(waits_of(client=r, owner_id=str(second_buyer.id))) == 1


def html_text(page: str) -> str:
    return re.sub(r"\s+", " ", page)


def test_hostile_input_on_the_wait_forms_is_refused_without_a_500(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    browser = client_for(buyer)
    hostile = ["", ":", "{x}", "*", " ", "\n", "🙂", "9" * 5000, "2026-13-45", "-1"]
    for value in hostile:
        for field in ("cls", "room", "date", "start", "end", "box"):
            data = {"cls": "A", "room": "7", "date": "2026-12-05", field: value}
            answer = browser.post("/book/wait/", data)
            assert answer.status_code in (302, 400), (field, value, answer.status_code)
        assert browser.post("/book/wait/leave/", {"entry": value}).status_code == 302
        assert browser.get("/book/wait/", {"room": value}).status_code == 200
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post("/book/wait/", {"cls": "A"}).status_code in (302, 403)
    assert not r.exists(ks.BOOKING_WAITS.key(room="007"))


@pytest.mark.parametrize("priority", [True, False], ids=["priority-hold", "control-no-hold"])
def test_no_one_slips_in_between_the_cancellation_and_the_priority_hold(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    priority: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight buyers keep trying to take the slot while it is cancelled: the waiter gets it. The
    control cancels without a priority hold, and then a thief does take it."""
    import threading

    from booking.engine import cancel

    if not priority:
        monkeypatch.setattr(cancel, "hold_new_id", lambda *, room: "")
    made = booked(r, buyer)
    assert wait_join(client=r, owner_id=str(second_buyer.id), wait=Wait(7, "A", day(5))) == "ok"
    cancelled = threading.Event()
    won: list[str] = []
    tries_after = [0] * 8

    def thief(n: int) -> None:
        while tries_after[n] < 20:
            after = cancelled.is_set()
            result = booking_claim(
                client=r, owner_id=f"9{n}", request=a_day(), booking_id=booking_new_id(room=7)
            )
            if result.ok:
                won.append(f"9{n}")
                return
            tries_after[n] += after

    threads = [threading.Thread(target=thief, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    done = booking_cancel(
        client=r, booking_id=made.id, actor_id=str(buyer.id), actor_is_staff=False
    )
    cancelled.set()
    for thread in threads:
        thread.join()
    assert done.ok
    (status,) = waits_of(client=r, owner_id=str(second_buyer.id))
    if priority:
        assert won == [], "a thief took the freed slot before the waiter's hold"
        assert status.mine and hold_get(client=r, hold_id=status.hold_id) is not None
    else:
        assert len(won) == 1 and not status.mine


# --- finding the waiting list, and the priority hold (issue 33, point 15) ----------------------


def test_the_priority_hold_lasts_long_enough_to_act_on_the_mail(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    from strongroom.clock import to_ms

    made = booked(r, buyer)
    assert wait_join(client=r, owner_id=str(second_buyer.id), wait=Wait(7, "A", day(5))) == "ok"
    before = to_ms(dt.datetime.now(tz=dt.UTC))
    assert booking_cancel(
        client=r, booking_id=made.id, actor_id=str(buyer.id), actor_is_staff=False
    ).ok
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id))
    assert told.priority_until is not None
    assert to_ms(told.priority_until) - before >= 3_600_000, "an hour by default"


def test_every_page_shows_a_live_priority_hold_until_it_is_booked(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
    settings: Any,
    tmp_path: Path,
) -> None:
    from strongroom.outbox_delivery import outbox_send
    from tests.mail_support import mail_to_files, with_address

    mail_to_files(settings, tmp_path)
    with_address(r, second_buyer, "bo@example.test")
    made = booked(r, buyer)
    browser = client_for(second_buyer)
    assert wait_join(client=r, owner_id=str(second_buyer.id), wait=Wait(7, "A", day(5))) == "ok"
    assert 'id="priority-banner"' not in browser.get("/").content.decode()
    assert booking_cancel(
        client=r, booking_id=made.id, actor_id=str(buyer.id), actor_is_staff=False
    ).ok
    outbox_send(client=r)  # the mail sender tells the buyer (and notes the hold)
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id))
    for page in ("/", "/book/", "/catalog/", "/book/find/", "/accounts/me/"):
        html = browser.get(page).content.decode()
        assert 'id="priority-banner"' in html, page
        assert "A slot you waited for in room 007 is held for you until" in html, page
        assert f'href="/book/confirm/{told.hold_id}/"' in html, page
    # The banner and the waiting list name the same end: the hold's own minute (12:16:40 is
    # 12:16), never a later time than the hold lasts.
    banner = re.search(r"is held for you until (\d\d:\d\d)", html)
    listed = re.search(
        r"held for you until (\d\d:\d\d)", browser.get("/book/mine/").content.decode()
    )
    assert banner and listed and banner.group(1) == listed.group(1)
    assert told.priority_until is not None
    assert banner.group(1) == timezone.localtime(told.priority_until).strftime("%H:%M")
    # The mail that told them names the same end, and its hours' zone.
    (sent,) = [p.read_text() for p in tmp_path.glob("*.eml")]
    text = sent.replace("=\n", "")
    assert f"held for you until {banner.group(1)} (" in text, text
    zh = client_for(second_buyer)
    chinese = zh.get("/", headers={"Accept-Language": "zh-hans"}).content.decode()
    assert "您候补的房间 007 的时段为您暂留至" in chinese
    assert 'id="priority-banner"' not in client_for(buyer).get("/").content.decode()
    # Its own confirmation page says it already: no banner there.
    confirm = browser.get(f"/book/confirm/{told.hold_id}/").content.decode()
    assert "Held for you until" in confirm and 'id="priority-banner"' not in confirm
    # Booked with the hold: the banner goes.
    assert booking_claim(
        client=r, owner_id=str(second_buyer.id), request=a_day(),
        booking_id=booking_new_id(room=7), hold_id=told.hold_id,
    ).ok  # fmt: skip
    assert 'id="priority-banner"' not in browser.get("/").content.decode()


def test_the_refusal_offers_the_waiting_list_and_sold_out_rooms_on_the_map_link_to_it(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    booked(r, buyer)
    query = "cls=A&room=7&date=2026-12-05"
    page = client_for(second_buyer).get(f"/book/?{query}").content.decode()
    blocked = page[page.index('id="choice-blocked"') :]
    blocked = blocked[: blocked.index("</div>")]
    assert "Not free as chosen" in blocked
    assert f'id="blocked-wait" href="/book/wait/?{query.replace("&", "&amp;")}"' in blocked
    anonymous = Client().get(f"/book/?{query}").content.decode()
    assert "Log in to be told when it frees" in anonymous
    tiles = Client().get("/book/find/?cls=A&date=2026-12-05").content.decode()
    tile = tiles[tiles.index('id="map-room-007"') :]
    tile = tile[: tile.index("</li>")]
    assert 'href="/book/wait/?cls=A&amp;room=7&amp;date=2026-12-05"' in tile
    assert "Tell me when it frees" in tile
    free_tile = tiles[tiles.index('id="map-room-008"') :]
    assert "/book/wait/" not in free_tile[: free_tile.index("</li>")]


def test_a_buyer_keeps_one_priority_hold_at_once_and_the_others_open_to_everyone(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object
) -> None:
    from strongroom.outbox_delivery import outbox_send

    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    third = person_make(r, "third_party")
    owner = str(second_buyer.id)
    made = [booked_room(r, buyer, room) for room in (7, 8, 9)]
    for room in (7, 8, 9):
        assert wait_join(client=r, owner_id=owner, wait=Wait(room, "A", day(5))) == "ok"
    for booking in made:
        assert booking.booking is not None
        assert booking_cancel(
            client=r, booking_id=booking.booking.id, actor_id=str(buyer.id), actor_is_staff=False
        ).ok
    outbox_send(client=r)  # the sender tells the buyer, keeping what they may keep
    told = waits_of(client=r, owner_id=owner)
    assert len(told) == 3 and all(w.told for w in told)
    live = [w for w in told if w.hold_id and hold_get(client=r, hold_id=w.hold_id) is not None]
    assert len(live) == 1, "one priority hold kept, beside the buyer's one normal hold"
    # The other two slots are everyone's at once.
    others = [w.wait.room for w in told if w not in live]
    for room in others:
        assert booking_claim(
            client=r, owner_id=str(third.id), request=a_day(room=room),
            booking_id=booking_new_id(room=room),
        ).ok  # fmt: skip
    # Sending again (a retry) changes nothing.
    outbox_send(client=r)
    assert hold_get(client=r, hold_id=live[0].hold_id) is not None


def test_only_the_waiters_of_the_slot_under_the_priority_hold_are_told_to_wait_for_it(
    r: redis.Redis, buyer: Someone, second_buyer: Someone
) -> None:
    """One cancel frees two days. The first waiter gets the priority hold of the first day;
    the second day is open to everyone at once, and its waiters (the first waiter too) are not
    told that someone has priority on it (they were, until the first day's hold ended)."""
    third = person_make(r, "third_waiter")
    made = booking_claim(
        client=r, owner_id=str(buyer.id), booking_id=booking_new_id(room=7),
        request=slot_request_parse(cls="A", room=7, dates=[day(13), day(14)]),
    )  # fmt: skip
    assert made.ok and made.booking is not None
    for who, n in ((second_buyer, 13), (second_buyer, 14), (third, 14)):
        assert wait_join(client=r, owner_id=str(who.id), wait=Wait(7, "A", day(n))) == "ok"
    assert booking_cancel(
        client=r, booking_id=made.booking.id, actor_id=str(buyer.id), actor_is_staff=False
    ).ok
    told = {w.wait.date: w for w in waits_of(client=r, owner_id=str(second_buyer.id))}
    assert told[day(13)].mine and told[day(13)].priority_until is not None
    assert told[day(14)].told and told[day(14)].priority_until is None
    (other,) = waits_of(client=r, owner_id=str(third.id))
    assert other.told and other.priority_until is None
    assert booking_claim(
        client=r, owner_id=str(third.id), request=a_day(n=14), booking_id=booking_new_id(room=7)
    ).ok


def test_the_mail_link_of_a_lapsed_priority_hold_leads_to_its_choice(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Any], Client],
) -> None:
    """Followed after the hour it lasted: the booking page with the waited slot chosen (and
    free, here), not the bare booking page and "it lasts a few minutes"."""
    made = booked(r, buyer)
    assert wait_join(client=r, owner_id=str(second_buyer.id), wait=Wait(7, "A", day(5))) == "ok"
    assert booking_cancel(
        client=r, booking_id=made.id, actor_id=str(buyer.id), actor_is_staff=False
    ).ok
    (told,) = waits_of(client=r, owner_id=str(second_buyer.id))
    assert told.mine and told.priority_until is not None
    client = client_for(second_buyer)
    later = told.priority_until + dt.timedelta(minutes=5)
    with time_machine.travel(later, tick=False):
        answer = client.get(f"/book/confirm/{told.hold_id}/")
        assert answer.status_code == 302
        assert answer["Location"] == f"/book/?cls=A&room=7&date={day(5).isoformat()}"
        page = client.get(answer["Location"]).content.decode()
    assert "That hold has ended" in page and "a few minutes" not in page


def test_the_second_waiters_mail_says_until_when_the_first_has_priority(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: Any, tmp_path: Path
) -> None:
    """Not "it is open to everyone now" while the slot is held for the first waiter (booking
    it from that mail was refused); the first waiter's mail offers the hold."""
    import email

    from strongroom.outbox_delivery import outbox_send
    from tests.mail_support import mail_to_files, with_address

    sent = mail_to_files(settings, tmp_path)
    third = person_make(r, "third_waiter")
    with_address(r, second_buyer, "bo@example.test")
    with_address(r, third, "third@example.test")
    made = booked(r, buyer)
    for who in (second_buyer, third):
        assert wait_join(client=r, owner_id=str(who.id), wait=Wait(7, "A", day(5))) == "ok"
    assert booking_cancel(
        client=r, booking_id=made.id, actor_id=str(buyer.id), actor_is_staff=False
    ).ok
    outbox_send(client=r)
    bodies = {}
    for path in sent.glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes())
        if str(message["Subject"]).startswith("Free again"):
            part = next(p for p in message.walk() if p.get_content_type() == "text/plain")
            bodies[message["To"]] = part.get_payload(decode=True).decode()  # type: ignore[union-attr]
    assert "held for you until" in bodies["bo@example.test"]
    assert "has priority until" in bodies["third@example.test"]
    assert "open to everyone now" not in bodies["third@example.test"]
