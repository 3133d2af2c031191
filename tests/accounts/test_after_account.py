"""The account page, calendar files, short references, and the settings for mail."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import zoneinfo
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.test import Client
from icalendar import Calendar

from accounts import services
from accounts.emails import email_normalise
from accounts.selectors import person_get
from booking.domain.parser import slot_request_parse
from booking.domain.records import Booking
from booking.domain.references import reference_parse, reference_room
from booking.domain.rules import booking_new_id
from booking.engine.bookings import booking_get, bookings_of
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from strongroom import keyspace as ks
from strongroom.addresses import address_sendable
from strongroom.conf import env_email_url
from tests.booking_support import day
from tests.conftest import ROOT, Someone

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")


def book(r: redis.Redis, someone: Someone, *, room: int = 7, n: int = 5, **hours: int) -> Booking:
    cls = "B" if hours else "A"
    req = slot_request_parse(cls=cls, room=room, dates=[day(n)], **hours)  # type: ignore[arg-type]
    made = booking_claim(
        client=r, owner_id=str(someone.id), request=req, booking_id=booking_new_id(room=room)
    )
    assert made.ok and made.booking is not None
    return made.booking


def test_the_header_links_the_name_to_the_account_page_which_lists_upcoming_bookings(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    booking = book(r, buyer)
    page = client_for(buyer).get("/accounts/me/").content.decode()
    assert 'href="/accounts/me/"' in page
    assert booking.reference in page
    for action in ("/accounts/me/email/", "/accounts/me/sessions/", "/accounts/me/delete/"):
        assert f'action="{action}"' in page


def test_the_account_page_lists_the_ten_soonest_confirmed_bookings_whatever_their_number(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    made = [book(r, buyer, room=20 + n, n=n) for n in range(3, 17)]  # 14 bookings, Dec 3-16
    cancelled = booking_cancel(
        client=r, booking_id=made[0].id, actor_id=str(buyer.id), actor_is_staff=False
    )
    assert cancelled.ok
    page = client_for(buyer).get("/accounts/me/").content.decode()
    listed = re.findall(r'href="/book/done/([^/"]+)/"', page)
    assert listed == [b.id for b in made[1:11]]  # Dec 4-13, soonest first; Dec 3 is cancelled
    assert 'href="/book/mine/"' in page  # every booking is one link away


def test_a_booking_ics_parses_and_carries_the_local_hours(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    booking = book(r, buyer, hour_start=8, hour_end=12)
    answer = client_for(buyer).get(f"/book/mine/{booking.id}/calendar.ics")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/calendar")
    calendar = Calendar.from_ical(answer.content)
    (event,) = calendar.walk("VEVENT")
    start, end = event.decoded("dtstart"), event.decoded("dtend")
    assert start == dt.datetime(2026, 12, 5, 8, tzinfo=SHANGHAI)
    assert end == dt.datetime(2026, 12, 5, 12, tzinfo=SHANGHAI)
    assert str(start.tzinfo) == "Asia/Shanghai"
    assert calendar.walk("VTIMEZONE"), "the zone is described for calendars that lack it"
    assert booking.reference in str(event.get("description"))


def test_a_class_a_booking_is_an_all_day_event(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    booking = book(r, buyer)
    answer = client_for(buyer).get(f"/book/mine/{booking.id}/calendar.ics")
    (event,) = Calendar.from_ical(answer.content).walk("VEVENT")
    assert event.decoded("dtstart") == day(5)


def test_other_peoples_calendar_files_do_not_exist(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    booking = book(r, buyer)
    assert client_for(second_buyer).get(f"/book/mine/{booking.id}/calendar.ics").status_code == 404


def test_the_private_subscription_lists_the_bookings_and_can_be_revoked(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    booking = book(r, buyer, hour_start=20, hour_end=22)
    browser = client_for(buyer)
    assert browser.post("/accounts/me/calendar/", {"action": "new"}).status_code == 302
    page = browser.get("/accounts/me/").content.decode()
    match = re.search(r'value="http://testserver(/book/calendar/[^"]+\.ics)"', page)
    assert match
    feed = Client().get(match.group(1))
    assert feed.status_code == 200
    (event,) = Calendar.from_ical(feed.content).walk("VEVENT")
    assert event.decoded("dtstart") == dt.datetime(2026, 12, 5, 20, tzinfo=SHANGHAI)
    assert booking.id in str(event.get("uid"))
    assert Client().get(match.group(1).replace("-", "-x", 1)).status_code == 404
    for odd in ({"action": "garbage"}, {}):  # not a button of the page: nothing changes
        refused = browser.post("/accounts/me/calendar/", odd)
        assert refused.status_code == 400
        assert "your calendar address is unchanged" in refused.content.decode()
        assert Client().get(match.group(1)).status_code == 200
    browser.post("/accounts/me/calendar/", {"action": "revoke"})
    assert Client().get(match.group(1)).status_code == 404


def test_references_are_short_name_their_room_and_read_back_in_any_form(
    r: redis.Redis, buyer: Someone
) -> None:
    booking = book(r, buyer, room=251)
    assert re.fullmatch(r"B-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}", booking.reference)
    assert reference_room(booking.reference) == 251
    loose = booking.reference.lower().replace("-", " ")[2:]
    assert reference_parse(loose) == booking.reference
    assert r.hget(ks.BOOKING_REFS.key(room="251"), booking.reference) == booking.id
    assert reference_parse("B-0O1I-LLLL") is None
    again = booking_get(client=r, booking_id=booking.id)
    assert again is not None and again.reference == booking.reference


def test_signing_out_other_sessions_keeps_this_one(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    here, elsewhere = client_for(buyer), client_for(buyer)
    assert here.post("/accounts/me/sessions/").status_code == 302
    assert here.get("/accounts/me/").status_code == 200
    assert elsewhere.get("/accounts/me/").status_code == 302  # to the login page


def test_deleting_the_account_frees_upcoming_slots_and_keeps_collected_ones_anonymous(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    upcoming = book(r, buyer, room=7)
    collected = book(r, buyer, room=8)
    r.hset(ks.BOOKING_RECORD.key(room="008", booking_id=collected.id), "status", "collected")
    r.hset(ks.BOOKING_RECORD.key(room="008", booking_id=collected.id), "collected", "2026-12-05")
    browser = client_for(buyer)
    wrong = browser.post("/accounts/me/delete/", {"password": "not it"})
    assert wrong.status_code == 400 and person_get(client=r, person_id=buyer.id) is not None
    # The refused form sits far down the page: its field takes the focus (and the view), and
    # only that one.
    assert wrong.content.decode().count("autofocus") == 1
    assert re.search(r'<input[^>]*name="password"[^>]*autofocus', wrong.content.decode())
    refused = browser.post("/accounts/me/email/", {"email": "not an address", "language": "en"})
    assert refused.status_code == 400 and refused.content.decode().count("autofocus") == 1
    assert re.search(r'<input[^>]*name="email"[^>]*autofocus', refused.content.decode())
    assert "autofocus" not in browser.get("/accounts/me/").content.decode()
    gone = browser.post("/accounts/me/delete/", {"password": buyer.password})
    assert gone.status_code == 302
    assert person_get(client=r, person_id=buyer.id) is None
    first = booking_get(client=r, booking_id=upcoming.id)
    kept = booking_get(client=r, booking_id=collected.id)
    assert first is not None and first.status == "cancelled" and first.owner_id == "0"
    assert kept is not None and kept.status == "collected" and kept.owner_id == "0"
    assert not r.exists(ks.BOOKING_INVENTORY.key(room="007", cls="A", month="2026-12"))
    again = slot_request_parse(cls="A", room=7, dates=[day(5)])
    retaken = booking_claim(
        client=r, owner_id="77", request=again, booking_id=booking_new_id(room=7)
    )
    assert retaken.ok
    assert (
        services.login_attempt(
            client=r, username=buyer.username, password=buyer.password, client_id="t"
        ).person
        is None
    )


def test_staff_see_a_deleted_account_as_such_not_as_a_bare_id(
    r: redis.Redis, buyer: Someone, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    upcoming = book(r, buyer, room=7)
    gone = client_for(buyer).post("/accounts/me/delete/", {"password": buyer.password})
    assert gone.status_code == 302
    desk = client_for(staff)
    detail = desk.get(f"/staff/bookings/{upcoming.id}/").content.decode()
    assert "deleted account" in detail
    trail = desk.get("/staff/audit/?kind=claim").content.decode()
    assert f"deleted account (#{buyer.id})" in trail


@pytest.mark.parametrize(
    "value",
    [
        "",
        ":",
        "{x}",
        "*",
        " ",
        "a\nb@example.test",
        "🙂@🙂",
        "x" * 300 + "@example.test",
        "no-at-sign",
    ],
)
def test_hostile_input_on_the_account_forms_never_fails_the_site(
    value: str, r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    browser = client_for(buyer)
    answers = [
        browser.post("/accounts/me/email/", {"email": value, "language": value}),
        browser.post("/accounts/me/email/", {"email": value, "language": "en"}),
        browser.post("/accounts/me/delete/", {"password": value}),
        browser.post("/accounts/me/calendar/", {"action": value}),
        Client().post("/accounts/password/forgot/", {"login": value}),
        Client().get(f"/accounts/verify/{value or 'x'}/".replace("\n", "")),
        Client().get("/accounts/password/reset/1/x-y/"),
        Client().post(
            "/accounts/signup/",
            {"username": "someone", "email": value, "password1": "p", "password2": "p"},
        ),
        Client().get("/book/calendar/1-abc.ics"),
    ]
    assert all(a.status_code < 500 for a in answers), [a.status_code for a in answers]
    assert person_get(client=r, person_id=buyer.id) is not None
    email_value = r.hget(ks.PERSON.key(person_id=buyer.id), "email")
    assert email_value in (None, "", value.strip().lower())


@pytest.mark.parametrize("token", ["²-abc", "١-abc", "①-x", "-abc", "1-", "9" * 13 + "-x"])
def test_a_calendar_feed_address_with_odd_digits_is_not_found(r: redis.Redis, token: str) -> None:
    assert Client().get(f"/book/calendar/{token}.ics").status_code == 404


def test_a_calendar_feed_says_the_language_its_events_are_in(
    r: redis.Redis, buyer: Someone
) -> None:
    """A calendar app asks with no language of its own: the feed is the account's language
    (Chinese here), and Content-Language says so, not the asker's English."""
    services.language_set(client=r, person_id=buyer.id, language="zh-hans")
    secret = services.calendar_token_new(client=r, person_id=buyer.id)
    feed = Client().get(f"/book/calendar/{buyer.id}-{secret}.ics", HTTP_ACCEPT_LANGUAGE="en")
    assert feed.status_code == 200 and feed["Content-Language"] == "zh-hans"


def test_a_post_without_csrf_is_refused_on_the_new_forms(
    buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    browser = client_for(buyer)
    browser.handler.enforce_csrf_checks = True
    for path in ("/accounts/me/email/", "/accounts/me/sessions/", "/accounts/me/delete/"):
        assert browser.post(path, {"email": "a@b.test"}).status_code == 403


@pytest.mark.parametrize(
    ("raw", "host", "port", "ssl", "tls"),
    [
        ("smtp://mail.example:2525", "mail.example", 2525, False, False),
        ("smtp://u:p%40ss@mail.example?starttls=1", "mail.example", 25, False, True),
        ("smtps://mail.example", "mail.example", 465, True, False),
    ],
)
def test_email_url_is_parsed_strictly(
    monkeypatch: pytest.MonkeyPatch, raw: str, host: str, port: int, ssl: bool, tls: bool
) -> None:
    monkeypatch.setenv("EMAIL_URL", raw)
    server = env_email_url("EMAIL_URL")
    assert server is not None
    assert (server.host, server.port, server.use_ssl, server.use_tls) == (host, port, ssl, tls)


@pytest.mark.parametrize(
    "raw",
    ["http://mail.example", "smtp://", "smtp://h:port", "smtp://h?tls=1", "smtp://h/path", "h"],
)
def test_a_malformed_email_url_stops_start_up(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("EMAIL_URL", raw)
    with pytest.raises(ImproperlyConfigured, match="EMAIL_URL"):
        env_email_url("EMAIL_URL")


def test_unset_email_url_writes_files_under_the_data_directory(tmp_path: Path) -> None:
    script = (
        "from django.conf import settings as s; "
        "print(s.EMAIL_BACKEND, s.STRONGROOM_MAIL_DIR == s.STRONGROOM_DATA_DIR / 'mail')"
    )
    env = {k: v for k, v in os.environ.items() if k != "EMAIL_URL"}
    env |= {"STRONGROOM_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "strongroom.settings"}
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert result.stdout.split() == ["strongroom.mail.FilePerMessageBackend", "True"]


def test_staff_find_a_booking_by_the_reference_a_buyer_reads_out(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    booking = book(r, buyer, room=42)
    browser = client_for(staff)
    spoken = booking.reference.lower().replace("-", " ")
    found = browser.get("/staff/bookings/find/", {"ref": spoken})
    assert found.status_code == 302
    assert found["Location"] == f"/staff/bookings/{booking.id}/"
    detail = browser.get(found["Location"]).content.decode()
    assert booking.reference in detail
    listed = browser.get("/staff/bookings/", {"room": "42"}).content.decode()
    assert booking.reference in listed
    exported = browser.get("/staff/bookings/export.csv", {"room": "42"}).content.decode()
    assert exported.splitlines()[1].startswith(f"{booking.reference},{booking.id},")
    # The id as the site's own addresses show it finds the booking too.
    pasted = browser.get("/staff/bookings/find/", {"ref": f" {booking.id} "})
    assert pasted["Location"] == f"/staff/bookings/{booking.id}/"
    unknown_id = booking.id[:-1] + ("a" if booking.id[-1] != "a" else "b")
    for typed in ("B-2222-2222", "", "{x}*", "🙂" * 50, "B-0O1I-LLLL", unknown_id):
        missing = browser.get("/staff/bookings/find/", {"ref": typed})
        assert missing.status_code == 302 and missing["Location"] == "/staff/bookings/"
    assert client_for(buyer).get("/staff/bookings/find/", {"ref": spoken}).status_code == 403


def test_staff_find_a_booking_moved_to_another_room_at_its_new_address(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """A reference names the room a booking was made in; moved to another room, the booking
    lives on under a new id there, and finding it leads straight to that one."""
    booking = book(r, buyer, room=42)
    browser = client_for(staff)
    moved = browser.post(
        f"/staff/bookings/{booking.id}/move/", {"date": day(5).isoformat(), "room": "43"}
    )
    assert moved.status_code == 302, moved.content.decode()[:500]
    (now,) = [b for b in bookings_of(client=r, owner_id=str(buyer.id)) if b.status != "moved"]
    assert now.room == 43 and now.reference == booking.reference
    for address in (f"/staff/bookings/{booking.reference}/", "/staff/bookings/find/"):
        found = browser.get(address, {"ref": booking.reference})
        assert found.status_code == 302 and found["Location"] == f"/staff/bookings/{now.id}/"


@pytest.mark.parametrize(
    "value",
    ["a@ex\u2028ample.com", "a@ex\u2029ample.com", "a@exa\u200bmple.com", "a@" + "x" * 64 + ".com"],
)
def test_an_address_no_mail_server_could_take_is_refused_and_nothing_is_written(
    value: str, r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """A line separator (or an invisible format character) in the domain, or a label IDNA
    cannot encode: the address would fail on every try, so it is never stored."""
    with pytest.raises(ValidationError):
        email_normalise(value)
    answer = client_for(buyer).post("/accounts/me/email/", {"email": value, "language": "en"})
    assert answer.status_code == 400
    assert not r.hget(ks.PERSON.key(person_id=buyer.id), "email")
    assert not r.exists(ks.MAIL_OUTBOX.key())
    assert address_sendable("anna@bücher.example") and address_sendable("anna@example.test")
