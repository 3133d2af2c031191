"""Booking pages in process (Django test client, real store, frozen clock): pickers and calendar,
hold -> confirm -> book, conflicts, my bookings and cancel, the pickup kiosk, bad input."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.codes import CODE_ALPHABET, code_display
from booking.domain.keys import RoomKeys
from booking.domain.rules import booking_new_id
from booking.engine.bookings import bookings_of
from booking.engine.cancel import booking_cancel
from booking.engine.holds import booking_hold
from booking.engine.pickup import booking_pickup
from booking.slots.panel_state import PanelState, panel_state
from strongroom.store import round_trips
from tests.booking_support import (
    NOW,
    SHANGHAI,
    claim,
    day,
    free_hours,
    request,
    snapshot,
)
from tests.conftest import ON_CLUSTER
from tests.pages_support import hidden
from tests.store_support import claim_trips, identity_trips, store_probed

B_8_12 = {"cls": "B", "room": "7", "start": "8", "end": "12", "date": "2026-12-08"}


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def search(pattern: str, text: str, flags: int = 0) -> re.Match[str]:
    """The first match of `pattern` in `text`; fails the test when there is none."""
    match = re.search(pattern, text, flags)
    assert match is not None, pattern
    return match


def html(response: Any) -> str:
    return response.content.decode()


def day_button(page: str, date: str) -> str:
    match = re.search(rf'<button name="toggle" value="{date}".*?</button>', page, re.S)
    assert match, f"no button for {date}"
    return match.group(0)


def hold_and_confirm(client: Client, data: dict[str, Any]) -> dict[str, str]:
    """POST the choices to hold, follow to the confirmation; return the Book form's fields."""
    response = client.post("/book/hold/", data)
    assert response.status_code == 302, html(response)
    assert response["Location"].startswith("/book/confirm/")
    page = html(client.get(response["Location"]))
    return {**data, "booking_id": hidden(page, "booking_id"), "hold_id": hidden(page, "hold_id")}


def code_digits(n: int) -> str:
    """Five characters of a code's own alphabet, the n-th such (a well-formed wrong code)."""
    return "".join(
        CODE_ALPHABET[n // len(CODE_ALPHABET) ** i % len(CODE_ALPHABET)] for i in range(5)
    )


def owner(someone: Any) -> str:
    return str(someone.id)


# --- the booking page and its fragments ---------------------------------------------------


def test_anyone_may_look_and_is_asked_to_log_in_to_book(client: Client) -> None:
    page = html(client.get("/book/", B_8_12))
    assert "Log in to book" in page
    assert "/accounts/login/?next=/book/%3Fcls%3DB" in page
    assert 'action="/book/hold/' not in page


def test_the_room_picker_names_the_building_s_last_room(client: Client, settings: Any) -> None:
    settings.STRONGROOM_ROOM_COUNT = 120
    page = html(client.get("/book/"))
    assert "Room number (001 to 120)" in page
    # no 300-option list of room numbers on every page: the building map shows what is free
    assert "<datalist" not in page and 'href="/book/find/?cls=C"' in page


def test_anonymous_hold_goes_to_login_and_writes_nothing(client: Client, r: redis.Redis) -> None:
    before = snapshot(r)
    response = client.post("/book/hold/", B_8_12)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert snapshot(r) == before


def test_calendar_marks_sold_out_and_not_bookable_days(r: redis.Redis, client: Client) -> None:
    assert claim(r, request("A", dates=(3,))).ok
    page = html(client.get("/book/parts/calendar/", {"cls": "A", "room": "7"}))
    sold = day_button(page, "2026-12-03")
    assert "Sold out" in sold and "disabled" in sold and 'aria-disabled="true"' in sold
    assert "day--sold_out" in sold
    free = day_button(page, "2026-12-04")
    assert "disabled" not in free and "day--available" in free
    # Another room is not affected.
    other = html(client.get("/book/parts/calendar/", {"cls": "A", "room": "8"}))
    assert "disabled" not in day_button(other, "2026-12-03")


@pytest.mark.parametrize(
    ("choice", "line"),
    [
        (B_8_12, "Dec. 8, 2026 · 10:00–12:00 Shanghai time: closed (repairs)"),
        ({"cls": "A", "room": "7", "date": "2026-12-08"}, "Dec. 8, 2026: closed (repairs)"),
    ],
)
def test_a_choice_staff_closed_says_so_before_any_hold_and_the_map_counts_it(
    r: redis.Redis, client_for: Any, buyer: Any, choice: dict[str, str], line: str
) -> None:
    from booking.engine.closures import Closure, closure_add, closure_new_id

    closure = Closure(closure_new_id(), (7,), day(8), day(8), (10, 14), "repairs")
    closure_add(client=r, actor_id="1", closure=closure)
    page = html(client_for(buyer).get("/book/", choice))
    blocked = re.search(r'id="choice-blocked">(.*?)</div>', page, re.S)
    assert blocked and line in blocked.group(1), page
    assert 'action="/book/hold/' not in page  # no Hold button for what cannot be held
    # Nor the waiting list, which refuses a closed slot; nor after a hold sent all the same.
    assert "Tell me when it frees" not in page
    held = client_for(buyer).post("/book/hold/", choice)
    assert held.status_code == 409 and "Closed: repairs" in held.content.decode()
    assert "Tell me when it frees" not in held.content.decode()
    cls = choice["cls"]
    query = {
        "cls": cls,
        "date": "2026-12-08",
        # (Hours inside the closure: a range only partly closed is partly free on the map.)
        **({"start": "10", "end": "12"} if cls == "B" else {}),
    }
    counts = html(client_for(buyer).get("/book/find/", query))
    numbers = re.search(r'id="map-counts">(.*?)</p>', counts, re.S)
    assert numbers and "1 room closed" in numbers.group(1)
    assert sum(int(n) for n in re.findall(r"<span>(\d+) ", numbers.group(1))) == 300


def test_calendar_shows_today_and_past_as_not_bookable(client: Client) -> None:
    with time_machine.travel(dt.datetime(2026, 12, 10, 9, 0, tzinfo=SHANGHAI), tick=False):
        page = html(client.get("/book/parts/calendar/", {"cls": "A", "room": "7"}))
    assert "Today" in day_button(page, "2026-12-10")
    assert "Past" in day_button(page, "2026-12-09")
    assert "disabled" in day_button(page, "2026-12-09")
    assert "disabled" not in day_button(page, "2026-12-11")


def test_weeks_start_on_sunday_in_english_and_monday_in_chinese(client: Client) -> None:
    english = html(client.get("/book/parts/calendar/", HTTP_ACCEPT_LANGUAGE="en"))
    chinese = html(client.get("/book/parts/calendar/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    first = r'<thead><tr><th scope="col"><abbr title="([^"]+)">'
    assert search(first, english).group(1) == "Sunday"
    assert search(first, chinese).group(1) == "星期一"
    # December 2026 starts on a Tuesday: two empty cells in English, one in Chinese.
    assert english.split("<tbody>")[1].split("</tr>")[0].count("<td></td>") == 2
    assert chinese.split("<tbody>")[1].split("</tr>")[0].count("<td></td>") == 1


def test_chinese_calendar_marks_a_sold_out_day_with_que(r: redis.Redis, client: Client) -> None:
    assert claim(r, request("A", dates=(5,))).ok
    page = html(
        client.get("/book/parts/calendar/", {"cls": "A", "room": "7"}, HTTP_ACCEPT_LANGUAGE="zh")
    )
    assert "缺" in day_button(page, "2026-12-05")
    assert "缺" not in day_button(page, "2026-12-06")


def test_calendar_fragment_costs_one_round_trip_with_the_identity(
    r: redis.Redis, client: Client, client_for: Any, buyer: Any
) -> None:
    assert claim(r, request("C", dates=(3,), hour_start=8, hour_end=12, boxes=[5])).ok
    query = {"cls": "C", "room": "7", "start": "8", "end": "12", "box": "5"}
    # The site's middleware (session, person, visit record) has a fixed cost per request:
    # measured on a page that reads nothing of the booking engine. A visitor without a
    # session reads the room on its own; a signed-in one reads it in the identity's pipeline
    # (strongroom/ahead.py), which on a cluster also reaches the room's primary.
    for who, own in ((client, 1), (client_for(buyer), 1 if ON_CLUSTER else 0)):
        who.get("/book/pickup/")
        with round_trips() as baseline:
            who.get("/book/pickup/")
        with round_trips() as trips:
            response = who.get("/book/parts/calendar/", query)
        assert "disabled" in day_button(html(response), "2026-12-03")
        assert trips.count <= baseline.count + own, (trips.count, baseline.count)
        assert trips.count <= 4


def test_the_whole_booking_page_reads_the_room_once(
    r: redis.Redis, client: Client, client_for: Any, buyer: Any
) -> None:
    assert claim(r, request("C", dates=(8,), hour_start=8, hour_end=12, boxes=[5])).ok
    query = {"cls": "C", "room": "7", "date": "2026-12-08", "start": "9", "end": "10", "box": "6"}
    # (signed in, the read rides in the identity's pipeline: see the calendar fragment's test)
    for who, own in ((client, 1), (client_for(buyer), 1 if ON_CLUSTER else 0)):
        for path in ("/book/", "/book/parts/panel/"):
            who.get("/book/pickup/")
            with round_trips() as baseline:
                who.get("/book/pickup/")
            with round_trips() as trips:
                page = html(who.get(path, query))
            # calendar, hour row and box grid all come from the same single read
            assert trips.count <= baseline.count + own, (path, trips.count, baseline.count)
            box5 = search(r'name="pick_box" value="5".*?</button>', page, re.S).group(0)
            hour9 = search(r'name="hour" value="9".*?</button>', page, re.S).group(0)
            assert "disabled" in box5 and "disabled" not in hour9
            assert "disabled" not in day_button(page, "2026-12-08")


def test_hour_row_and_box_grid_disable_taken_slots(r: redis.Redis, client: Client) -> None:
    assert claim(r, request("C", dates=(8,), hour_start=8, hour_end=12, boxes=[5])).ok
    page = html(
        client.get(
            "/book/", {"cls": "C", "room": "7", "date": "2026-12-08", "start": "9", "end": "10"}
        )
    )
    box5 = search(r'name="pick_box" value="5".*?</button>', page, re.S).group(0)
    box6 = search(r'name="pick_box" value="6".*?</button>', page, re.S).group(0)
    assert "disabled" in box5 and "disabled" not in box6
    # Hours for box 5 alone: 08..11 taken; for all boxes nothing is taken (99 boxes are free).
    page5 = html(client.get("/book/", {"cls": "C", "room": "7", "date": "2026-12-08", "box": "5"}))
    hour8 = search(r'name="hour" value="8".*?</button>', page5, re.S).group(0)
    hour12 = search(r'name="hour" value="12".*?</button>', page5, re.S).group(0)
    assert "disabled" in hour8 and "disabled" not in hour12


def test_class_c_with_a_day_and_no_hours_says_what_marks_the_boxes(client: Client) -> None:
    """No day: pick a day. A day but no hours: no box is marked yet, and the page says why."""
    no_day = html(client.get("/book/", {"cls": "C", "room": "7"}))
    assert "Pick a day to see which boxes are free." in no_day
    day_only = html(client.get("/book/", {"cls": "C", "room": "7", "date": "2026-12-08"}))
    assert "Pick the hours too (below) to see which boxes are free then." in day_only
    hours = {"cls": "C", "room": "7", "date": "2026-12-08", "start": "8", "end": "9"}
    both = html(client.get("/book/", hours))
    assert "to see which boxes are free" not in both


def test_buttons_change_the_choices_and_redirect_to_a_clean_url(client: Client) -> None:
    base = {"cls": "B", "room": "7", "date": "2026-12-08"}
    first = client.get("/book/", {**base, "hour": "8"})
    assert first.status_code == 302
    # Without JavaScript the page loads again: it opens at the picker pressed, not the top.
    assert first["Location"] == "/book/?cls=B&room=7&start=8&end=9&date=2026-12-08#pick-hours"
    second = client.get("/book/", {**base, "start": "8", "end": "9", "hour": "11"})
    assert "start=8&end=12" in second["Location"]
    # A From chosen in the list and no To: an hour button ends the range there.
    listed = client.get("/book/", {**base, "start": "9", "end": "", "hour": "14"})
    assert "start=9&end=15" in listed["Location"]
    earlier = client.get("/book/", {**base, "start": "9", "end": "", "hour": "7"})
    assert "start=7&end=10" in earlier["Location"]
    # The later hour first, then the earlier one: the range between them, both included.
    backwards = client.get("/book/", {**base, "start": "15", "end": "16", "hour": "13"})
    assert "start=13&end=16" in backwards["Location"]
    again = client.get("/book/", {**base, "start": "8", "end": "12", "hour": "6"})
    assert "start=6&end=7" in again["Location"]  # a press on a longer range starts again
    toggled = client.get("/book/", {**base, "toggle": "2026-12-09"})
    assert "date=2026-12-08&date=2026-12-09" in toggled["Location"]
    removed = client.get("/book/", {**base, "toggle": "2026-12-08"})
    assert "date=" not in removed["Location"]
    boxes = client.get("/book/", {"cls": "C", "room": "7", "pick_box": "42"})
    assert "box=42" in boxes["Location"] and boxes["Location"].endswith("#pick-boxes")
    assert toggled["Location"].endswith("#pick-dates")


def test_panel_fragment_answers_htmx_with_the_page_url_to_push(client: Client) -> None:
    response = client.get(
        "/book/parts/panel/", {"cls": "B", "room": "7", "hour": "8"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert response["HX-Push-Url"] == "/book/?cls=B&room=7&start=8&end=9"
    page = html(response)
    assert page.lstrip().startswith('<div id="booking-panel"') and "<html" not in page


# --- hold, book, conflicts ----------------------------------------------------------------


def test_hold_and_book_land_on_a_summary_that_takes_the_focus(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    """The Hold and Book forms send the buyer to #summary; the confirmation and the booked
    page had no such element, so the focus stayed at the top of the page."""
    client = client_for(buyer)
    summary = r'<section [^>]*id="summary" tabindex="-1"'
    response = client.post("/book/hold/", B_8_12)
    confirm = html(client.get(response["Location"]))
    search(summary + r".*?08:00–12:00", confirm, re.S)
    form = {**B_8_12, "booking_id": hidden(confirm, "booking_id")}
    form["hold_id"] = hidden(confirm, "hold_id")
    done = html(client.get(client.post("/book/claim/", form)["Location"]))
    search(summary + r'.*?id="pickup-code"', done, re.S)


def test_buyer_holds_then_books_and_sees_the_code(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    form = hold_and_confirm(client, B_8_12)
    confirm = html(client.get(f"/book/confirm/{form['hold_id']}/"))
    assert "Held for you until" in confirm and 'data-expires="' in confirm
    response = client.post("/book/claim/", form)
    assert response.status_code == 302
    done = html(client.get(response["Location"]))
    code = search(r'id="pickup-code">([A-Z0-9]{5}-[A-Z0-9]{5})<', done).group(1)
    booking = bookings_of(client=r, owner_id=owner(buyer))[0]
    assert code.replace("-", "") == booking.pickup_code()
    assert "How to pick up" in done
    # The hold is converted: nothing of it is left.
    assert r.hlen(RoomKeys(7).holds) == 0
    # Back to the confirm page leads to the booking, not to "that hold has ended".
    back = client.get(f"/book/confirm/{form['hold_id']}/", follow=True)
    assert back.redirect_chain[-1][0] == response["Location"]
    assert "You have booked these slots already" in html(back)


def test_a_cancelled_or_collected_booking_page_shows_no_code_and_no_pickup_rules(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    me = owner(buyer)
    gone = claim(r, request("A", dates=(8,)), owner=me).booking
    used = claim(r, request("A", room=8, dates=(8,)), owner=me).booking
    assert gone is not None and used is not None
    booking_cancel(client=r, booking_id=gone.id, actor_id=me, actor_is_staff=False, now=NOW)
    at = dt.datetime(2026, 12, 8, 9, 0, tzinfo=SHANGHAI)
    assert booking_pickup(client=r, room=8, code=used.pickup_code(), now=at).ok
    client = client_for(buyer)
    for booking, line in ((gone, "This booking was cancelled."), (used, "already been collected")):
        page = html(client.get(f"/book/done/{booking.id}/"))
        assert line in page and booking.id in page
        assert code_display(booking.pickup_code()) not in page
        assert "How to pick up" not in page and "Copy the code" not in page
        assert "<title>Your booking" in page  # the tab said "Booked"


def test_the_hold_countdown_is_a_timer_not_a_live_region_read_every_second(
    client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    form = hold_and_confirm(client, B_8_12)
    confirm = html(client.get(f"/book/confirm/{form['hold_id']}/"))
    assert search(r'role="timer" data-countdown-clock', confirm)
    timer = confirm[confirm.index('class="hold-timer"') : confirm.index('role="timer"')]
    assert "role=" not in timer and "aria-live" not in timer
    assert search(r'role="status" data-countdown-status data-expired-text="[^"]+"', confirm)


@pytest.mark.parametrize("step", ["hold", "claim"])
def test_midnight_between_reading_the_form_and_booking_is_a_message_not_a_500(
    r: redis.Redis, client_for: Any, buyer: Any, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    from booking.web import pick as views

    evening = dt.datetime(2026, 12, 7, 23, 59, 59, tzinfo=SHANGHAI)
    client = client_for(buyer)
    with time_machine.travel(evening, tick=False) as clock:
        form = hold_and_confirm(client, B_8_12) if step == "claim" else B_8_12
        engine = getattr(views, f"booking_{step}")

        def after_midnight(**kwargs: Any) -> Any:
            clock.move_to(evening + dt.timedelta(seconds=1))  # the form said "tomorrow"
            return engine(**kwargs)

        monkeypatch.setattr(views, f"booking_{step}", after_midnight)
        before = snapshot(r)
        response = client.post(f"/book/{step}/", form)
    assert response.status_code == 400
    assert "Dec. 8, 2026 is today: book at least one day ahead" in html(response)
    assert snapshot(r) == before


def test_double_click_on_book_books_once(r: redis.Redis, client_for: Any, buyer: Any) -> None:
    client = client_for(buyer)
    form = hold_and_confirm(client, B_8_12)
    store_probed(r)  # asked of the store once per client, not in the counted request
    with round_trips() as trips:
        first = client.post("/book/claim/", form)
    second = client.post("/book/claim/", form)
    assert first["Location"] == second["Location"]
    assert len(bookings_of(client=r, owner_id=owner(buyer))) == 1
    # Session read + claim (FCALL+WAITAOF, the index pipeline) + session write.
    claimed = claim_trips(r, owner_id=owner(buyer), room=7)
    assert trips.count == identity_trips(r, client) + 1 + claimed + 1  # + the buyer's pace


def test_booking_post_round_trips(r: redis.Redis, client_for: Any, buyer: Any) -> None:
    client = client_for(buyer)
    form = hold_and_confirm(client, B_8_12)
    store_probed(r)  # asked of the store once per client, not in the counted request
    with round_trips() as baseline:
        client.get("/book/pickup/")
    with round_trips() as trips:
        response = client.post("/book/claim/", form)
    assert response.status_code == 302
    # The claim: FCALL + WAITAOF in one pipeline, then the index pipeline (one round trip per
    # primary it reaches); then the session write that forgets the converted hold. The rest is
    # the middleware's: the identity, as on any signed-in page. Before the claim, the buyer's
    # pace (bookings of the last hour) in their own slot.
    claimed = claim_trips(r, owner_id=owner(buyer), room=7)
    assert baseline.count == identity_trips(r, client)
    assert trips.count - baseline.count == 1 + claimed + 1, (trips.count, baseline.count)


def test_one_account_books_at_most_its_hourly_allowance_and_a_retry_is_not_counted(
    r: redis.Redis, client_for: Any, buyer: Any, settings: Any
) -> None:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 2
    client = client_for(buyer)
    forms = [
        {"cls": "A", "room": str(room), "date": day(5).isoformat(),
         "booking_id": booking_new_id(room=room)}
        for room in (11, 12, 13)
    ]  # fmt: skip
    assert client.post("/book/claim/", forms[0]).status_code == 302
    assert client.post("/book/claim/", forms[1]).status_code == 302
    assert client.post("/book/claim/", forms[1]).status_code == 302  # a retry: not counted
    keys_before = sorted(r.scan_iter("*"))
    refused = client.post("/book/claim/", forms[2])
    assert refused.status_code == 429
    assert "You have made 2 bookings in the last hour" in html(refused)
    assert sorted(r.scan_iter("*")) == keys_before
    assert len(bookings_of(client=r, owner_id=owner(buyer))) == 2


def test_a_buyer_at_the_hourly_booking_cap_is_refused_a_hold_with_the_same_message(
    r: redis.Redis, client_for: Any, buyer: Any, settings: Any
) -> None:
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 2
    client = client_for(buyer)
    for room in (11, 12):
        form = {"cls": "A", "room": str(room), "date": day(5).isoformat(),
                "booking_id": booking_new_id(room=room)}  # fmt: skip
        assert client.post("/book/claim/", form).status_code == 302
    keys_before = sorted(r.scan_iter("*"))
    held = client.post("/book/hold/", {"cls": "A", "room": "13", "date": day(5).isoformat()})
    assert held.status_code == 429
    assert "You have made 2 bookings in the last hour" in html(held)
    assert sorted(r.scan_iter("*")) == keys_before, "no hold placed, nothing blocked"
    zh = client.post(
        "/book/hold/", {"cls": "A", "room": "13", "date": day(5).isoformat()},
        headers={"Accept-Language": "zh-hans"},
    )  # fmt: skip
    assert zh.status_code == 429 and "一小时" in html(zh)


def test_a_refused_booking_does_not_use_up_the_allowance(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any, settings: Any
) -> None:
    """Slots someone else has (409) leave nothing behind, the pace entry included: a buyer who
    lost three races still has the whole allowance."""
    settings.STRONGROOM_BOOKINGS_PER_HOUR = 2
    assert claim(r, request("A", room=20, dates=(5,)), owner=owner(second_buyer)).ok
    client = client_for(buyer)
    keys_before = sorted(r.scan_iter("*"))
    for _ in range(3):
        lost = {"cls": "A", "room": "20", "date": day(5).isoformat(),
                "booking_id": booking_new_id(room=20)}  # fmt: skip
        assert client.post("/book/claim/", lost).status_code == 409
    assert sorted(r.scan_iter("*")) == keys_before
    for room in (21, 22):
        form = {"cls": "A", "room": str(room), "date": day(5).isoformat(),
                "booking_id": booking_new_id(room=room)}  # fmt: skip
        assert client.post("/book/claim/", form).status_code == 302


def test_a_refusal_reads_no_neighbouring_room_and_links_to_the_alternatives(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from booking.web import pick_alternatives

    asked: list[str] = []

    def spied(name: str) -> Any:
        real = getattr(pick_alternatives, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            asked.append(name)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(pick_alternatives, "alternatives_build", spied("alternatives_build"))
    late = client_for(second_buyer)
    assert claim(r, request("B", dates=(8,), hour_start=10, hour_end=14), owner=owner(buyer)).ok
    response = late.post("/book/claim/", {**B_8_12, "booking_id": booking_new_id(room=7)})
    assert response.status_code == 409 and asked == []  # the room alone was read
    page = html(response)
    assert "Someone was faster" in page and 'id="alternatives"' not in page
    link = search(r'id="alternatives-link" href="([^"#]+)#choice-blocked"', page).group(1)
    shown = html(late.get(link.replace("&amp;", "&")))
    assert 'id="alternatives"' in search(r'id="choice-blocked".*?</div>', shown, re.S).group(0)
    assert "alternatives_build" in asked


def test_conflict_keeps_the_choices_names_the_slots_and_refreshes_the_calendar(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    late = client_for(second_buyer)
    form = {**B_8_12, "booking_id": booking_new_id(room=7)}
    assert claim(r, request("B", dates=(8,), hour_start=10, hour_end=14), owner=owner(buyer)).ok
    response = late.post("/book/claim/", form)
    assert response.status_code == 409
    page = html(response)
    assert "Someone was faster" in page
    assert "10:00–12:00" in page  # the taken hours, named
    assert 'value="B" checked' in page and 'value="007"' in page  # the choices kept
    hour10 = search(r'name="hour" value="10".*?</button>', page, re.S).group(0)
    assert "disabled" in hour10
    assert bookings_of(client=r, owner_id=owner(second_buyer)) == []


def test_a_hold_keeps_the_slots_from_another_buyer(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    # The form sends the buyer to its answer's summary, where a refusal says why (a phone
    # would otherwise open the refused page at its top, the reason screens below).
    assert 'action="/book/hold/#summary"' in html(client_for(buyer).get("/book/", B_8_12))
    hold_and_confirm(client_for(buyer), B_8_12)
    other = client_for(second_buyer)
    page = html(other.get("/book/", B_8_12))
    hour9 = search(r'name="hour" value="9".*?</button>', page, re.S).group(0)
    assert "disabled" in hour9
    refused = other.post("/book/hold/", B_8_12)
    assert refused.status_code == 409
    summary = search(r'<section id="summary".*?</section>', html(refused), re.S).group(0)
    assert "held by another buyer" in summary
    # The holder sees the slots as free for them.
    mine = html(client_for(buyer).get("/book/", B_8_12))
    assert "disabled" not in search(r'name="hour" value="9".*?</button>', mine, re.S).group(0)


def test_an_abandoned_hold_frees_itself(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    form = hold_and_confirm(client_for(buyer), B_8_12)
    with time_machine.travel(NOW + dt.timedelta(minutes=11), tick=False):
        other = client_for(second_buyer)
        assert other.post("/book/hold/", B_8_12).status_code == 302
        gone = client_for(buyer).get(f"/book/confirm/{form['hold_id']}/")
        assert gone.status_code == 302 and gone["Location"] == "/book/?room=7"  # its room


def test_release_gives_the_hold_back(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    client = client_for(buyer)
    form = hold_and_confirm(client, B_8_12)
    response = client.post("/book/hold/release/", form)
    assert response.status_code == 302 and "cls=B" in response["Location"]
    assert client_for(second_buyer).post("/book/hold/", B_8_12).status_code == 302


def test_class_a_books_several_days(r: redis.Redis, client_for: Any, buyer: Any) -> None:
    client = client_for(buyer)
    data = {"cls": "A", "room": "12", "date": ["2026-12-04", "2026-12-06"]}
    form = hold_and_confirm(client, data)
    assert client.post("/book/claim/", form).status_code == 302
    booking = bookings_of(client=r, owner_id=owner(buyer))[0]
    assert booking.dates == (day(4), day(6)) and booking.room == 12


# --- bad input ----------------------------------------------------------------------------

HOSTILE = ["{room:007}", "*", "a b", "7\n8", "🗝️", "x" * 500, "-1", "301", "0", "1e3", "７"]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_query_values_are_named_and_never_a_500(client: Client, value: str) -> None:
    for name in ("cls", "room", "start", "end", "box", "date", "month", "toggle", "hour"):
        response = client.get("/book/", {"cls": "C", "room": "7", name: value})
        assert response.status_code in (200, 302), (name, value)
    page = html(client.get("/book/", {"room": value}))
    assert "errorlist" in page


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("room", "301", "Room 301 does not exist"),
        ("room", "{*}", "The room must be a number"),
        ("start", "25", "is not an hour of the day"),
        ("end", "8", "the end must be later"),
        ("date", "2026-11-22", "outside the season"),
        ("date", "2027-02-30", "is not a date"),
        ("cls", "D", "Choose a class"),
    ],
)
def test_hostile_posts_are_refused_with_a_message_and_write_nothing(
    r: redis.Redis, client_for: Any, buyer: Any, field: str, value: str, message: str
) -> None:
    client = client_for(buyer)
    before = snapshot(r)
    for url in ("/book/hold/", "/book/claim/"):
        data = {**B_8_12, field: value, "booking_id": booking_new_id(room=7)}
        response = client.post(url, data)
        assert response.status_code == 400, (url, response.status_code)
        assert message in html(response)
    assert snapshot(r) == before


def test_box_out_of_range_and_a_foreign_booking_id_are_refused(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    before = snapshot(r)
    c = {"cls": "C", "room": "7", "start": "8", "end": "9", "date": "2026-12-08"}
    assert client.post("/book/hold/", {**c, "box": "101"}).status_code == 400
    wrong_room = {**c, "box": "5", "booking_id": booking_new_id(room=8)}
    page = client.post("/book/claim/", wrong_room)
    assert page.status_code == 400 and "out of date" in html(page)
    assert (
        client.post("/book/claim/", {**c, "box": "5", "booking_id": "007-{x}"}).status_code == 400
    )
    assert snapshot(r) == before


def test_someone_elses_booking_id_in_the_form_is_refused(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    theirs = claim(r, request("B", dates=(9,), hour_start=1, hour_end=2), owner=owner(buyer))
    assert theirs.ok and theirs.booking is not None
    form = {**B_8_12, "booking_id": theirs.booking.id}
    response = client_for(second_buyer).post("/book/claim/", form)
    assert response.status_code == 400
    assert bookings_of(client=r, owner_id=owner(second_buyer)) == []


def test_missing_csrf_token_is_a_403_page(r: redis.Redis, client_for: Any, buyer: Any) -> None:
    client = client_for(buyer)
    client.handler.enforce_csrf_checks = True
    before = snapshot(r)
    for url in ("/book/hold/", "/book/claim/", "/book/pickup/"):
        response = client.post(url, {**B_8_12, "booking_id": booking_new_id(room=7)})
        assert response.status_code == 403
        assert "<html" in html(response)
    assert snapshot(r) == before


def test_other_peoples_bookings_and_holds_are_not_found(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any
) -> None:
    result = claim(r, request("B", dates=(9,), hour_start=1, hour_end=2), owner=owner(buyer))
    assert result.booking is not None
    booking_id = result.booking.id
    hold = booking_hold(
        client=r,
        owner_id=owner(buyer),
        request=request("A", dates=(20,)),
        hold_id=booking_new_id(room=7),
    )
    assert hold.hold is not None
    other = client_for(second_buyer)
    assert other.get(f"/book/done/{booking_id}/").status_code == 404
    assert other.get(f"/book/mine/{booking_id}/cancel/").status_code == 404
    assert other.post(f"/book/mine/{booking_id}/cancel/").status_code == 404
    assert other.get(f"/book/confirm/{hold.hold.id}/").status_code == 404
    assert other.get("/book/done/not-an-id/").status_code == 404
    assert result.booking.pickup_code() not in html(other.get("/book/mine/"))
    assert bookings_of(client=r, owner_id=owner(buyer))[0].status == "confirmed"


# --- my bookings and cancel ---------------------------------------------------------------


def test_my_bookings_lists_upcoming_first_with_code_and_cancels(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    me = owner(buyer)
    late = claim(r, request("A", dates=(20,)), owner=me).booking
    soon = claim(r, request("B", dates=(8,), hour_start=8, hour_end=12), owner=me).booking
    gone = claim(r, request("A", room=9, dates=(4,)), owner=me).booking
    assert late and soon and gone
    booking_cancel(client=r, booking_id=gone.id, actor_id=me, actor_is_staff=False, now=NOW)
    client = client_for(buyer)
    page = html(client.get("/book/mine/"))
    assert page.index(soon.id) < page.index(late.id) < page.index(gone.id)
    assert soon.pickup_code()[:5] in page
    confirm = client.get(f"/book/mine/{soon.id}/cancel/")
    assert "Cancel this booking?" in html(confirm)
    assert 8 not in free_hours(client=r, room=7, date=day(8), cls="B")
    response = client.post(f"/book/mine/{soon.id}/cancel/", follow=True)
    assert "The booking is cancelled" in html(response)
    assert 8 in free_hours(client=r, room=7, date=day(8), cls="B")


def test_my_bookings_and_the_account_page_list_upcoming_ones_by_their_next_pickup(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    """A booking of Dec. 6 and Dec. 20 comes before one of Dec. 10 alone: its next pickup is
    sooner, though it ends later (the index's order)."""
    me = owner(buyer)
    single = claim(r, request("A", room=11, dates=(10,)), owner=me).booking
    spread = claim(r, request("A", room=12, dates=(6, 20)), owner=me).booking
    assert single and spread
    client = client_for(buyer)
    page = html(client.get("/book/mine/"))
    assert page.index(spread.id) < page.index(single.id)
    account = html(client.get("/accounts/me/"))
    assert account.index(spread.reference) < account.index(single.reference)


def test_cancel_after_the_cut_off_is_refused_with_a_message(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    booking = claim(r, request("A", dates=(8,)), owner=owner(buyer)).booking
    assert booking is not None
    with time_machine.travel(dt.datetime(2026, 12, 8, 9, 0, tzinfo=SHANGHAI), tick=False):
        client = client_for(buyer)
        assert "Too late to cancel online" in html(client.get("/book/mine/"))
        response = client.post(f"/book/mine/{booking.id}/cancel/", follow=True)
    assert "only before their first day" in html(response)
    assert bookings_of(client=r, owner_id=owner(buyer))[0].status == "confirmed"


def cancel_form(r: redis.Redis, client_for: Any, buyer: Any) -> tuple[Client, Any, dict[str, str]]:
    """A buyer's client, their booking of class A, and the fields its cancel form sends."""
    booking = claim(r, request("A", dates=(8,)), owner=owner(buyer)).booking
    assert booking is not None
    client = client_for(buyer)
    form = html(client.get(f"/book/mine/{booking.id}/cancel/"))
    return client, booking, {"request_id": hidden(form, "request_id")}


def test_a_double_click_on_yes_cancel_reports_success_both_times(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    client, booking, data = cancel_form(r, client_for, buyer)
    first = html(client.post(f"/book/mine/{booking.id}/cancel/", data, follow=True))
    second = html(client.post(f"/book/mine/{booking.id}/cancel/", data, follow=True))
    assert "The booking is cancelled" in first and "The booking is cancelled" in second
    assert "already cancelled" not in second


def test_the_done_page_says_plainly_until_when_one_may_cancel_in_both_languages(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    booking = claim(r, request("A", dates=(8,)), owner=owner(buyer)).booking
    assert booking is not None
    client = client_for(buyer)
    english = html(client.get(f"/book/done/{booking.id}/"))
    assert "You can cancel until the day before the first day." in english
    chinese = html(client.get(f"/book/done/{booking.id}/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "直到第一天的前一天为止（那一天仍可取消；第一天当天起不能取消）" in chinese
    assert "（含当天）" not in chinese


def test_a_double_click_on_yes_cancel_shows_its_message_once(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    """The browser sends both posts, then follows the last redirect: one page, one message."""
    client, booking, data = cancel_form(r, client_for, buyer)
    for _click in range(2):
        assert client.post(f"/book/mine/{booking.id}/cancel/", data).status_code == 302
    assert html(client.get("/book/mine/")).count("The booking is cancelled") == 1


# --- pickup kiosk -------------------------------------------------------------------------


def test_the_kiosk_shows_its_time_in_one_clean_sentence(client: Client) -> None:
    page = html(client.get("/book/pickup/"))
    assert "Kiosk time: Nov. 21, 2026 10:00 (Shanghai time)." in page and "m.." not in page
    chinese = html(client.get("/book/pickup/", HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "终端时间：2026年11月21日 10:00（上海时间）。" in chinese


def test_a_double_press_at_the_kiosk_opens_and_says_open_twice(
    r: redis.Redis, client: Client
) -> None:
    booking = claim(r, request("A", dates=(8,))).booking
    assert booking is not None
    with time_machine.travel(dt.datetime(2026, 12, 8, 9, 0, tzinfo=SHANGHAI), tick=False):
        form = html(client.get("/book/pickup/"))
        data = {"room": "7", "code": booking.pickup_code(), "attempt": hidden(form, "attempt")}
        first = html(client.post("/book/pickup/", data))
        second = html(client.post("/book/pickup/", data))
        assert hidden(first, "attempt") != data["attempt"]  # the next try is a new attempt
    assert "pickup-result--open" in first and "pickup-result--open" in second
    assert "already been collected" not in second


def test_pickup_opens_once_then_says_why_not(r: redis.Redis, client: Client) -> None:
    booking = claim(r, request("B", dates=(8,), hour_start=8, hour_end=12)).booking
    assert booking is not None
    code = booking.pickup_code()
    at = dt.datetime(2026, 12, 8, 9, 30, tzinfo=SHANGHAI)
    with time_machine.travel(at, tick=False):
        opened = html(client.post("/book/pickup/", {"room": "007", "code": code.lower()}))
        again = html(client.post("/book/pickup/", {"room": "7", "code": code}))
        wrong = html(client.post("/book/pickup/", {"room": "7", "code": "AAAAA-BBBBB"}))
        hostile = client.post("/book/pickup/", {"room": "{7}*", "code": "x\n" * 40})
    assert "pickup-result--open" in opened and ">Open<" in opened
    assert "already been collected" in again and "pickup-result--refused" in again
    assert "does not open a safe" in wrong
    assert hostile.status_code == 200
    assert "The room must be a number from 001 to 300 (not “{7}*”)." in html(hostile)
    with time_machine.travel(at.replace(hour=16), tick=False):
        late = html(client.post("/book/pickup/", {"room": "7", "code": code}))
    assert "not for this hour" in late or "already been collected" in late


def test_a_full_width_code_opens_the_safe_beside_a_room_of_plain_digits(
    r: redis.Redis, client: Client
) -> None:
    """A code typed with a Chinese keyboard in full-width mode (letters, digits and the dash)
    is read; the room is a number, the digits 0-9 only (tests/site/test_typed_numbers.py)."""
    booking = claim(r, request("A", dates=(8,))).booking
    assert booking is not None
    code = booking.pickup_code()
    wide = "".join(chr(ord(c) + 0xFEE0) for c in code)
    with time_machine.travel(dt.datetime(2026, 12, 8, 9, 0, tzinfo=SHANGHAI), tick=False):
        page = html(client.post("/book/pickup/", {
            "room": "007", "code": f"{wide[:5]}\uff0d{wide[5:]}",
        }))  # fmt: skip
    assert "pickup-result--open" in page


def test_after_todays_pickup_hours_the_kiosk_says_they_passed(
    r: redis.Redis, client: Client
) -> None:
    """Not "come back today from 08:00" at 16:00: today's hours and grace are over."""
    one_day = claim(r, request("B", dates=(8,), hour_start=8, hour_end=12)).booking
    two_days = claim(r, request("B", room=9, dates=(8, 9), hour_start=8, hour_end=12)).booking
    assert one_day is not None and two_days is not None
    with time_machine.travel(dt.datetime(2026, 12, 8, 16, 0, tzinfo=SHANGHAI), tick=False):
        over = html(client.post("/book/pickup/", {"room": "7", "code": one_day.pickup_code()}))
        later = html(client.post("/book/pickup/", {"room": "9", "code": two_days.pickup_code()}))
    # Today's end is named with the grace the kiosk gave (12:00 + 15 minutes).
    assert "not for this hour" in over and "pickup hours of this booking ended at 12:15" in over
    assert "Come back" not in over
    assert "ended at 12:15" in later and "Come back on Dec. 9, 2026, from 08:00 to 12:15" in later
    with time_machine.travel(dt.datetime(2026, 12, 8, 6, 0, tzinfo=SHANGHAI), tick=False):
        early = html(client.post("/book/pickup/", {"room": "7", "code": one_day.pickup_code()}))
    assert "Come back today, from 08:00 to 12:15" in early and "ended at" not in early
    zh = {"Accept-Language": "zh-hans"}
    with time_machine.travel(dt.datetime(2026, 12, 8, 16, 0, tzinfo=SHANGHAI), tick=False):
        chinese = html(
            client.post("/book/pickup/", {"room": "9", "code": two_days.pickup_code()}, headers=zh)
        )
    assert "今天的取件时间已于 12:15（上海时间）结束" in chinese
    assert "请于 2026年12月9日 08:00 至 12:15（上海时间）再来" in chinese


def test_pickup_on_the_wrong_day_cancelled_and_after_many_wrong_codes(
    r: redis.Redis, client: Client
) -> None:
    booking = claim(r, request("B", dates=(8,), hour_start=8, hour_end=12)).booking
    cancelled = claim(r, request("A", room=8, dates=(8,))).booking
    assert booking and cancelled
    booking_cancel(client=r, booking_id=cancelled.id, actor_id="101", actor_is_staff=False, now=NOW)
    with time_machine.travel(dt.datetime(2026, 12, 7, 10, 0, tzinfo=SHANGHAI), tick=False):
        early = html(client.post("/book/pickup/", {"room": "7", "code": booking.pickup_code()}))
    # It says when to come back, and nothing else of the booking (whoever typed it may not be
    # its owner): no reference, class, room line or boxes.
    assert "not for today" in early and "Come back on Dec. 8, 2026, from 08:00 to 12:15" in early
    assert booking.reference not in early and "Class B" not in early
    assert "The booking this code opens" not in early
    with time_machine.travel(dt.datetime(2026, 12, 9, 10, 0, tzinfo=SHANGHAI), tick=False):
        late = html(client.post("/book/pickup/", {"room": "7", "code": booking.pickup_code()}))
    assert "The days of this booking have passed." in late and "not for today" not in late
    with time_machine.travel(dt.datetime(2026, 12, 8, 10, 0, tzinfo=SHANGHAI), tick=False):
        assert "was cancelled" in html(
            client.post("/book/pickup/", {"room": "8", "code": cancelled.pickup_code()})
        )
        answers = [
            client.post("/book/pickup/", {"room": "7", "code": "AAAAA-" + code_digits(n)})
            for n in range(200)
        ]
        opened = client.post("/book/pickup/", {"room": "7", "code": booking.pickup_code()})
    # Wrong codes are slowed (429 + Retry-After, at most the ceiling); the right one opens.
    assert [a.status_code for a in answers[:3]] == [200] * 3
    assert all(a.status_code == 429 for a in answers[3:])
    waits = [int(a["Retry-After"]) for a in answers[3:]]
    assert waits[:4] == [1, 2, 4, 8] and max(waits) == 60
    assert "wait 60 seconds before the next one" in html(answers[-1])
    assert opened.status_code == 200 and "pickup-result--open" in html(opened)


def test_the_kiosk_names_a_room_that_does_not_exist(r: redis.Redis, client: Client) -> None:
    for room in ("999", "0"):
        answer = html(client.post("/book/pickup/", {"room": room, "code": "AAAAA-BBBBB"}))
        assert f"There is no room {room} here" in answer and "001 to 300" in answer
    answer = html(client.post("/book/pickup/", {"room": "abc", "code": "AAAAA-BBBBB"}))
    assert "The room must be a number from 001 to 300 (not “abc”)." in answer
    assert not r.keys("*pickup*")  # not counted as a wrong code anywhere


def test_wrong_codes_from_one_address_slow_it_and_do_not_stop_the_owner_from_another(
    r: redis.Redis, client: Client, settings: Any
) -> None:
    settings.STRONGROOM_CLIENT_FROM_FORWARDED_FOR = True  # behind the proxy (BEHIND_PROXY=1)
    booking = claim(r, request("A", dates=(8,))).booking
    assert booking is not None

    def kiosk(code: str, address: str) -> str:
        # The proxy appends the address it saw; whatever the client sent comes before it.
        forwarded = f"10.9.8.7, {address}"
        return html(
            client.post(
                "/book/pickup/", {"room": "7", "code": code}, HTTP_X_FORWARDED_FOR=forwarded
            )
        )

    with time_machine.travel(dt.datetime(2026, 12, 8, 10, 0, tzinfo=SHANGHAI), tick=False):
        guesses = [kiosk(f"AAAAA-BBBB{c}", "203.0.113.66") for c in "CDEFGHJKMN"]
        assert all("does not open a safe" in page for page in guesses)
        assert "wait 64 seconds" not in guesses[9] and "wait 60 seconds" in guesses[9]
        # Other guessers elsewhere change nothing either.
        for n in range(3):
            kiosk("AAAAA-BBBBC", f"192.0.2.{n}")
        opened = kiosk(booking.pickup_code(), "198.51.100.77")
        same_address = kiosk(booking.pickup_code(), "203.0.113.66")
    assert "pickup-result--open" in opened
    # The guesser's address, once the owner has opened, is told so like anyone else.
    assert "already been collected" in same_address


# --- the one read model the pages use (booking.slots.panel_state) ---------------------------


def test_taken_hours_and_boxes_cover_every_chosen_day_in_one_round_trip(r: redis.Redis) -> None:
    assert claim(r, request("B", dates=(8,), hour_start=8, hour_end=10)).ok
    assert claim(r, request("B", dates=(9,), hour_start=20, hour_end=21)).ok
    assert claim(r, request("C", dates=(8,), hour_start=8, hour_end=10, boxes=[3, 4])).ok

    def panel(cls: str, dates: list[dt.date], **choice: Any) -> PanelState:
        return panel_state(client=r, cls=cls, room=7, calendar=[], dates=dates, **choice)

    with round_trips() as trips:
        hours = panel("B", [day(8), day(9)]).taken_hours
    assert hours == (8, 9, 20) and trips.count == 1
    assert panel("C", [day(8)]).taken_hours == ()
    assert panel("C", [day(8)], boxes=[4, 9]).taken_hours == (8, 9)
    with round_trips() as trips:
        boxes = panel("C", [day(8), day(9)], hours=(9, 11)).taken_boxes
    assert boxes == (3, 4) and trips.count == 1
    assert panel("C", [day(8)], hours=(10, 11)).taken_boxes == ()
    assert panel("C", [day(8)]).taken_boxes == ()
    assert panel("A", [day(8)]).taken_hours == ()  # class A is booked by the day


def test_the_chinese_calendar_heads_its_columns_with_one_character(client: Client) -> None:
    page = client.get("/book/?cls=A&room=7", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert '<abbr title="星期一">一</abbr>' in page and '<abbr title="星期日">日</abbr>' in page


def test_the_cancel_page_of_a_booking_that_cannot_be_cancelled_says_why_and_offers_no_button(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    me = owner(buyer)
    gone = claim(r, request("A", dates=(4,)), owner=me).booking
    assert gone
    booking_cancel(client=r, booking_id=gone.id, actor_id=me, actor_is_staff=False, now=NOW)
    page = html(client_for(buyer).get(f"/book/mine/{gone.id}/cancel/"))
    assert "This booking was already cancelled." in page
    assert "Yes, cancel the booking" not in page
    assert "request_id" not in page


def test_a_session_of_an_account_being_deleted_books_and_holds_nothing(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    from booking.engine.owners import owner_forget

    client = client_for(buyer)
    owner_forget(client=r, owner_id=owner(buyer))  # another session deletes the account
    form = {"cls": "A", "room": "11", "date": day(5).isoformat()}
    booked = client.post("/book/claim/", {**form, "booking_id": booking_new_id(room=11)})
    held = client.post("/book/hold/", form)
    for refused in (booked, held):
        assert refused.status_code == 403
        assert "Your account is being deleted" in html(refused)
    assert bookings_of(client=r, owner_id=owner(buyer)) == []


def test_hold_pressed_twice_leads_both_answers_to_the_hold_that_lives(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    first = client.post("/book/hold/", B_8_12)["Location"]
    second = client.post("/book/hold/", B_8_12)["Location"]
    assert first != second  # the second hold replaced the first
    answer = client.get(first)
    assert answer.status_code == 302 and answer["Location"] == second
    page = html(client.get(second))
    assert "Your newer hold replaced that one" in page and "That hold has ended" not in page
    client.post("/book/hold/release/", {**B_8_12, "hold_id": second.split("/")[3]})
    back = client.get(second)["Location"]
    gone = html(client.get(back))
    assert "That hold has ended" in gone
    # ... and its link leads to the whole choice again, not the room alone.
    for name, value in B_8_12.items():
        for one in value if isinstance(value, list) else [value]:
            assert f"{name}={one}" in back, (name, back)
    # In another browser (which does not remember the choice) the link leads to the room, and
    # says so rather than promising the choice.
    elsewhere = client_for(buyer)  # a session of its own
    assert elsewhere is not client
    room_only = elsewhere.get(second)
    assert room_only.status_code == 302 and "cls=" not in room_only["Location"]
    said = html(elsewhere.get(room_only["Location"]))
    assert "here is its room, to choose again" in said and "its choice again" not in said


def test_after_a_desk_hand_over_and_a_missed_day_the_pages_say_so(
    r: redis.Redis, client_for: Callable[[Any], Client], buyer: Any, staff: Any
) -> None:
    """Day 1 of two handed over at the desk: the code was withdrawn, so neither page shows it,
    both say to come to the desk, and the collected day is listed. A past booking never
    collected reads "Not collected", not "Confirmed". Staff are not offered a cancel or a
    move that would be refused."""
    from booking.engine.desk import booking_handover

    mine = claim(r, request("A", dates=(8, 9)), owner=str(buyer.id)).booking
    missed = claim(r, request("A", room=9, dates=(8,)), owner=str(buyer.id)).booking
    assert mine is not None and missed is not None
    code = code_display(mine.pickup_code())
    on_the_day = dt.datetime(2026, 12, 8, 10, 0, tzinfo=SHANGHAI)
    handed = booking_handover(
        client=r,
        booking_id=mine.id,
        actor_id=str(staff.id),
        now=on_the_day,
        request_id="desk-req-01",
    )
    assert handed.ok
    client = client_for(buyer)
    with time_machine.travel(on_the_day + dt.timedelta(days=1), tick=False):
        listed = html(client.get("/book/mine/"))
        done = html(client.get(f"/book/done/{mine.id}/"))
        staff_page = html(client_for(staff).get(f"/staff/bookings/{mine.id}/"))
    for page in (listed, done):
        assert code not in page and "collect its other days at the desk" in page
        assert "Collected" in page and "Dec. 8, 2026" in page
    assert "Not collected" in listed
    assert code_display(missed.pickup_code()) not in listed
    # Over: nothing to add to a calendar, no word about cancelling too late.
    row = listed.split(f'aria-labelledby="b-{missed.id}"')[1].split("</article>")[0]
    assert f"/book/mine/{missed.id}/calendar.ics" not in row
    assert "Too late to cancel online" not in row and "Details" in row
    with time_machine.travel(on_the_day + dt.timedelta(days=1), tick=False):
        over = html(client.get(f"/book/done/{missed.id}/"))
    assert "not collected" in over and code_display(missed.pickup_code()) not in over
    assert 'id="cancel-form"' not in staff_page and "collected already" in staff_page


def test_a_month_outside_the_season_is_said_and_the_calendar_shows_one_of_the_season(
    client: Client,
) -> None:
    """Not silently another month: ?month=2030-01 (or nonsense) says the calendar has no such
    month; a month of the season says nothing."""
    for month in ("2030-01", "2026-02", "2026-13", "garbage{*}"):
        page = html(client.get(f"/book/?cls=A&room=7&month={month}"))
        assert "The calendar has no such month" in page, month
        assert (
            "<caption>December 2026</caption>" in page or "<caption>November 2026</caption>" in page
        )
    assert "no such month" not in html(client.get("/book/?cls=A&room=7&month=2026-12"))
    # A pressed day still leads to the page's clean address; the map has no calendar to say
    # it of.
    assert client.get("/book/?cls=A&room=7&month=2030-01&toggle=2026-12-08").status_code == 302
    assert "no such month" not in html(client.get("/book/find/?cls=A&date=2026-12-05&month=1"))
    chinese = client.get("/book/?cls=A&room=7&month=2030-01", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "日历中没有这个月份" in chinese.content.decode()


def test_my_bookings_past_the_last_page_says_so_and_leads_to_it(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    """Not a blank page: ?page=7 of one page says there is none and links to the last one."""
    claim(r, request("A", room=11, dates=(10,)), owner=owner(buyer))
    client = client_for(buyer)
    page = html(client.get("/book/mine/?page=7"))
    assert "There is no page 7: your bookings fill 1 page." in page
    assert '<a href="?page=1">Go to the last page</a>' in page
    assert "There is no page" not in html(client.get("/book/mine/"))
    chinese = client.get("/book/mine/?page=7", headers={"Accept-Language": "zh-hans"})
    assert "没有第 7 页：您的预订共 1 页。" in chinese.content.decode()


def test_the_kiosk_says_a_handed_over_code_was_collected_and_refuses_a_non_code_uncounted(
    r: redis.Redis, client: Client
) -> None:
    """After staff handed a booking over at the desk its owner's code was "does not open a safe
    in this room", counted as a wrong guess (then 429, "wait a second"); ten emoji were counted
    as a guess too."""
    from booking.engine.desk import booking_handover

    booking = claim(r, request("A", dates=(8,))).booking
    assert booking is not None
    at = dt.datetime(2026, 12, 8, 9, 30, tzinfo=SHANGHAI)
    handed = booking_handover(
        client=r, booking_id=booking.id, actor_id="1", now=at, request_id="desk-request-000009"
    )
    assert handed.ok
    before = snapshot(r)
    with time_machine.travel(at, tick=False):
        answers = [
            client.post("/book/pickup/", {"room": "7", "code": booking.pickup_code()})
            for _ in range(6)
        ]
        junk = [client.post("/book/pickup/", {"room": "7", "code": "😀" * 10}) for _ in range(6)]
    for answer in answers:
        page = html(answer)
        assert answer.status_code == 200 and "handed over at the desk" in page
        assert "does not open a safe" not in page and "pickup-result--refused" in page
    for answer in junk:
        page = html(answer)
        assert answer.status_code == 200 and "That is not a pickup code" in page
    assert snapshot(r) == before  # nothing counted


def test_a_code_typed_again_after_its_safe_opened_says_when_it_opened(
    r: redis.Redis, client: Client
) -> None:
    """A new press (a new attempt) with a code whose safe opened: when, and, within minutes,
    that it may have been this person's own press whose answer never came (a slow store)."""
    booking = claim(r, request("B", dates=(8,), hour_start=8, hour_end=12)).booking
    assert booking is not None
    form = {"room": "7", "code": booking.pickup_code()}
    opened_at = dt.datetime(2026, 12, 8, 9, 30, 5, tzinfo=SHANGHAI)
    with time_machine.travel(opened_at, tick=False):
        assert "pickup-result--open" in html(client.post("/book/pickup/", form))
    with time_machine.travel(opened_at + dt.timedelta(minutes=2), tick=False):
        soon = html(client.post("/book/pickup/", form))
        chinese = html(client.post("/book/pickup/", form, HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "already been collected" in soon
    assert "opened with this code today at 09:30:05 (Shanghai time)." in soon
    assert "that press opened it" in soon
    assert "保险柜已于今天 09:30:05（上海时间）用此取件码打开过。" in chinese
    with time_machine.travel(opened_at + dt.timedelta(hours=1), tick=False):
        later = html(client.post("/book/pickup/", form))
    assert "today at 09:30:05" in later and "that press opened it" not in later
