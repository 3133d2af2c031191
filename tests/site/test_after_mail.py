"""Mail that reaches the buyer: the outbox, the file backend, cancellations, password reset."""

from __future__ import annotations

import email
import email.header
import re
import time
from collections.abc import Callable
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.core.mail.backends.base import BaseEmailBackend
from django.test import Client

from accounts import emails, services
from booking.domain.parser import slot_request_parse
from booking.domain.records import Booking
from booking.domain.rules import booking_new_id
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from strongroom import keyspace as ks
from strongroom import outbox_delivery, outbox_take
from strongroom.decoders import text_stream
from strongroom.outbox import BATCH, EVERY_BOX, FULL_PASS_COUNT, outbox_pending, sender_woken
from strongroom.outbox_delivery import outbox_send
from strongroom.outbox_sender import (
    SENDER_GAP_S,
    SENDER_RETRY_S,
    sender_boxes,
    sender_pass,
    sender_pause,
)
from strongroom.store import round_trips
from tests.booking_support import day
from tests.conftest import CLUSTER_PRIMARIES, ON_CLUSTER, Someone
from tests.mail_support import mail_to_files, with_address


@pytest.fixture
def mail_dir(settings: object, tmp_path: Path) -> Path:
    return mail_to_files(settings, tmp_path / "mail")


def messages_in(directory: Path) -> list[Message]:
    return [email.message_from_bytes(p.read_bytes()) for p in sorted(directory.glob("*.eml"))]


def body_of(message: Message) -> str:
    for part in message.walk():
        if part.get_content_type() == "text/plain":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            return payload.decode(part.get_content_charset() or "utf-8")
    raise AssertionError("no text part")


def subject_of(message: Message) -> str:
    return str(email.header.make_header(email.header.decode_header(message["Subject"])))


def book(
    r: redis.Redis, someone: Someone, *, cls: str = "A", room: int = 7, **extra: int
) -> Booking:
    req = slot_request_parse(cls=cls, room=room, dates=[day(5)], **extra)  # type: ignore[arg-type]
    result = booking_claim(
        client=r, owner_id=str(someone.id), request=req, booking_id=booking_new_id(room=room)
    )
    assert result.ok and result.booking is not None
    return result.booking


def test_staff_cancellation_mails_the_reason_in_the_buyers_language_and_shows_it(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    mail_dir: Path,
) -> None:
    with_address(r, buyer, "anna@example.test", language="zh-hans")
    booking = book(r, buyer)
    outbox_send(client=r)  # the receipt
    answer = client_for(staff).post(
        f"/staff/bookings/{booking.id}/cancel/", {"reason": "Room 251 safe under repair"}
    )
    assert answer.status_code == 302
    report = outbox_send(client=r)
    assert report.sent == 1 and report.failed == 0
    cancelled = [m for m in messages_in(mail_dir) if booking.reference in subject_of(m)]
    assert len(cancelled) == 2  # the receipt, then the cancellation
    last = cancelled[-1]
    assert last["To"] == "anna@example.test"
    assert subject_of(last).startswith("已取消")
    text = body_of(last)
    assert "工作人员" in text and "Room 251 safe under repair" in text
    # The receipt's calendar event comes back CANCELLED under the same UID.
    receipt_ics, cancel_ics = (
        next(p for p in m.walk() if p.get_content_type() == "text/calendar").get_payload(
            decode=True
        )
        for m in cancelled
    )
    uid = f"UID:{booking.id}-{day(5).isoformat()}@".encode()
    assert uid in receipt_ics and b"STATUS:CONFIRMED" in receipt_ics
    assert uid in cancel_ics and b"STATUS:CANCELLED" in cancel_ics and b"SEQUENCE:1" in cancel_ics
    # The download names the same event the same way, whatever address it came from (a
    # calendar app updates the event instead of adding a copy).
    assert isinstance(receipt_ics, bytes)
    full_uid = re.search(rb"UID:[^\r\n]+", receipt_ics)
    assert full_uid is not None
    for host in ("127.0.0.1:8123", "localhost"):
        download = client_for(buyer).get(f"/book/mine/{booking.id}/calendar.ics", HTTP_HOST=host)
        assert download.status_code == 200, download.status_code
        assert full_uid.group(0) in download.content
    page = client_for(buyer).get("/book/mine/").content.decode()
    assert "Room 251 safe under repair" in page
    assert booking.reference in page


def test_the_receipt_carries_the_pickup_code_and_a_calendar_file(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    with_address(r, buyer, "anna@example.test")
    booking = book(r, buyer, cls="B", hour_start=8, hour_end=12)
    assert outbox_send(client=r).sent == 1
    (message,) = messages_in(mail_dir)
    text = body_of(message)
    code = booking.pickup_code()
    assert f"{code[:5]}-{code[5:]}" in text and booking.reference in text
    assert "08:00–12:00 (Shanghai time)" in text  # whose clock the hours follow
    calendars = [p for p in message.walk() if p.get_content_type() == "text/calendar"]
    assert len(calendars) == 1


def test_a_class_c_receipt_lists_its_boxes_as_numbers(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    """Mail is plain text (no autoescape): the boxes read "3, 17", never a Python tuple."""
    with_address(r, buyer, "anna@example.test")
    req = slot_request_parse(
        cls="C", room=9, dates=[day(5)], hour_start=8, hour_end=10, boxes="3,17"
    )
    booking_claim(client=r, owner_id=str(buyer.id), request=req, booking_id=booking_new_id(room=9))
    assert outbox_send(client=r).sent == 1
    text = body_of(messages_in(mail_dir)[0])
    assert "Boxes: 3, 17" in text and "(3" not in text


def test_a_buyer_without_a_verified_address_gets_no_mail_and_the_entry_goes(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    book(r, buyer)
    report = outbox_send(client=r)
    assert (report.sent, report.dropped) == (0, 1)
    assert not outbox_pending(client=r)
    assert not mail_dir.exists() or not list(mail_dir.iterdir())


def test_after_a_full_batch_the_sender_goes_on_at_once_and_otherwise_rests(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    """A burst of bookings leaves more than a batch due: the next batch goes at once, not a
    period later; after a partial batch (or a lease held elsewhere) the sender rests a moment,
    and the wakes within it share one pass."""
    box = ks.BOOKING_OUTBOX.key(room="001")
    queue_entries(r, 1, BATCH + 5)
    first = outbox_send(client=r, boxes=[box])
    assert first.handled == BATCH and first.more == (box,) and sender_pause(first) == 0
    second = outbox_send(client=r, boxes=[box])
    assert second.handled == 5 and sender_pause(second) == SENDER_GAP_S > 0
    assert not outbox_pending(client=r)
    assert sender_pause(None) == SENDER_RETRY_S


def test_between_full_passes_the_sender_reads_only_the_outboxes_its_process_wrote_to(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    """A booking or a cancellation names its room's outbox to this process's sender, which then
    reads that outbox alone; every outbox is read when a full pass is due or asked for."""
    with_address(r, buyer, "buyer@example.com")
    sender_woken()
    first, second = book(r, buyer, room=7), book(r, buyer, room=8)
    assert sender_woken() == {ks.BOOKING_OUTBOX.key(room="007"), ks.BOOKING_OUTBOX.key(room="008")}
    booking_cancel(client=r, booking_id=first.id, actor_id=str(buyer.id), actor_is_staff=False)
    assert sender_woken() == {ks.BOOKING_OUTBOX.key(room="007")}

    report = sender_pass(client=r, boxes=[ks.BOOKING_OUTBOX.key(room="007")])
    # Room 7's cancellation is sent; the receipt of the cancelled booking is dropped.
    assert report is not None and (report.sent, report.dropped) == (1, 1)
    assert [p.member for p in outbox_pending(client=r)] == [f"confirm|{second.id}|{buyer.id}"]
    report = sender_pass(client=r)
    assert report is not None and report.sent == 1
    assert len(messages_in(mail_dir)) == 2

    assert sender_boxes({"b", "a"}, full_due=False) == ["a", "b"]
    assert sender_boxes({"a"}, full_due=True) is None
    assert sender_boxes({"a", EVERY_BOX}, full_due=False) is None
    assert sender_boxes(set(), full_due=False) == []


def test_a_batch_of_receipts_reads_the_store_a_few_times_not_a_few_times_a_message(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    mail_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bookings and their owners' addresses are read for the whole batch: the same round
    trips for 2 receipts as for 40, and each buyer gets their own receipts."""
    # Only the pass's own round trips are counted: no keep-alive touch on a slow machine.
    monkeypatch.setattr(outbox_delivery, "TOUCH_S", 600.0)
    monkeypatch.setattr(outbox_delivery, "RECOVER_MS", 1_200_000)
    with_address(r, buyer, "anna@example.test")
    with_address(r, second_buyer, "bo@example.test")

    def trips_to_send(count: int, first_room: int) -> int:
        for room in range(first_room, first_room + count):
            book(r, buyer if room % 2 else second_buyer, room=room)
        with round_trips() as trips:
            assert outbox_send(client=r).sent == count
        return trips.count

    few, many = trips_to_send(2, 1), trips_to_send(40, 3)
    # the new entries (and, for new outboxes, their groups and a second read), the bookings,
    # the bookings with the addresses: 5 pipelines (on a cluster one round trip per primary
    # each reaches); then one acknowledgement per message
    reads = 5 * (CLUSTER_PRIMARIES if ON_CLUSTER else 1)
    assert many <= reads + 40
    assert few - 2 == many - 40 or ON_CLUSTER
    assert not outbox_pending(client=r)
    sent = [message["To"] for message in messages_in(mail_dir)]
    assert sorted(set(sent)) == ["anna@example.test", "bo@example.test"] and len(sent) == 42


def test_receipts_of_buyers_without_an_address_are_dropped_unread(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, mail_dir: Path
) -> None:
    """The receipt's entry names its owner: the bookings of buyers without a verified address
    are not read (their entries go), while a receipt queued before entries named the owner is
    still sent."""
    with_address(r, second_buyer, "bo@example.test")
    for room in range(1, 31):
        book(r, buyer, room=room)
    with round_trips() as trips:
        report = outbox_send(client=r)
    assert (report.sent, report.dropped) == (0, 30)
    # the new entries (groups made, read again), the owners' addresses; then, for all 30
    # entries together, the receipts owed (sent once the buyer confirms an address) and the
    # acknowledgements: 6 pipelines, not 2 round trips an entry
    assert trips.count <= 6 * (CLUSTER_PRIMARIES if ON_CLUSTER else 1)
    assert r.scard(ks.BOOKING_RECEIPTS_OWED.key(owner_id=buyer.id)) == 30
    older = book(r, second_buyer, room=31)
    box = ks.BOOKING_OUTBOX.key(room="031")
    r.delete(box)  # the receipt as entries were written before they named the owner
    r.xadd(box, {"m": f"confirm|{older.id}"})
    assert outbox_send(client=r).sent == 1
    (message,) = messages_in(mail_dir)
    assert message["To"] == "bo@example.test" and older.reference in message["Subject"]


def test_a_receipt_owed_until_an_address_is_confirmed_says_when_the_booking_was_made(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, mail_dir: Path
) -> None:
    """Sent an hour after the booking (the address confirmed only then), a receipt says when
    the booking was made and why it comes now: it is not read as a new booking. One sent at
    once says nothing of the kind."""
    late_word = "this receipt comes now that your email address is confirmed"
    with_address(r, second_buyer, "bo@example.test")
    book(r, second_buyer, room=12)
    owed = book(r, buyer, room=11)
    assert outbox_send(client=r).sent == 1
    (prompt,) = messages_in(mail_dir)
    assert late_word not in body_of(prompt)
    with time_machine.travel(time.time() + 3600, tick=False):
        with_address(r, buyer, "anna@example.test")  # confirming queues what was owed
        assert outbox_send(client=r).sent == 1
    (late,) = [m for m in messages_in(mail_dir) if m["To"] == "anna@example.test"]
    assert owed.reference in late["Subject"] and late_word in body_of(late)


def test_a_pass_cut_before_its_drops_are_written_leaves_them_to_be_rendered_again(
    r: redis.Redis, buyer: Someone, mail_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dropped entries are acknowledged only after the receipts owed are written: a pass
    that loses the store in between acknowledges none, and the pass that takes them over owes
    each receipt once."""
    # Taken over after 2 s idle (not 3); a pass counts itself lost after 1 s untouched, and it
    # touches its entries every 0.2 s: a busy machine's slow pass is not taken for a lost one.
    for module in (outbox_delivery, outbox_take):  # its one value, where each reads it
        monkeypatch.setattr(module, "RECOVER_MS", 2000)
    monkeypatch.setattr(outbox_delivery, "TOUCH_S", 0.2)
    bookings = [book(r, buyer, room=room) for room in range(40, 46)]
    written = outbox_delivery.pipeline_send

    def store_gone(client: redis.Redis, commands: object) -> None:
        raise redis.ConnectionError("the store went away")

    monkeypatch.setattr(outbox_delivery, "pipeline_send", store_gone)
    with pytest.raises(redis.ConnectionError):
        outbox_send(client=r)
    owed = ks.BOOKING_RECEIPTS_OWED.key(owner_id=buyer.id)
    assert not r.exists(owed) and len(outbox_pending(client=r)) == 6
    monkeypatch.setattr(outbox_delivery, "pipeline_send", written)
    time.sleep(2.1)  # idle for longer than RECOVER_MS: taken over as a dead sender's
    assert outbox_send(client=r).dropped == 6
    assert r.smembers(owed) == {b.id for b in bookings} and r.ttl(owed) > 0
    assert not outbox_pending(client=r) and not messages_in(mail_dir)


def queue_entries(r: redis.Redis, room: int, count: int) -> list[str]:
    """Outbox entries of a room, appended as the claim function appends them."""
    members = [f"confirm|{room:03d}-n{n}" for n in range(count)]
    for member in members:
        r.xadd(ks.BOOKING_OUTBOX.key(room=f"{room:03d}"), {"m": member})
    return members


def test_a_backlog_is_read_a_few_at_a_time_per_room_and_the_long_room_is_read_again_at_once(
    r: redis.Redis, mail_dir: Path
) -> None:
    """A full pass reads a few new entries of every outbox (a long one cannot starve the
    others) and names the outboxes that may hold more: the sender's next pass reads those at
    once. Entries whose booking is gone are dropped, each acknowledged."""
    long = queue_entries(r, 5, 30)
    short = [m for room in (1, 2, 3) for m in queue_entries(r, room, 1)]
    first = outbox_send(client=r)
    assert first.dropped == FULL_PASS_COUNT + len(short)
    assert first.more == (ks.BOOKING_OUTBOX.key(room="005"),) and sender_pause(first) == 0
    left = [p.member for p in outbox_pending(client=r)]
    assert left == long[FULL_PASS_COUNT:]
    second = outbox_send(client=r, boxes=first.more)
    assert second.dropped == len(long) - FULL_PASS_COUNT and not outbox_pending(client=r)
    assert r.xlen(ks.BOOKING_OUTBOX.key(room="005")) == 0


class BrokenBackend(BaseEmailBackend):
    def send_messages(self, email_messages: object) -> int:
        raise ConnectionRefusedError("the mail server is away")


def test_a_message_that_cannot_be_sent_is_kept_and_retried_later(
    r: redis.Redis, buyer: Someone, settings: object, mail_dir: Path
) -> None:
    with_address(r, buyer, "anna@example.test")
    book(r, buyer)
    settings.EMAIL_BACKEND = f"{__name__}.BrokenBackend"  # type: ignore[attr-defined]
    at = int(time.time() * 1000) + 1_000
    assert outbox_send(client=r, at_ms=at).failed == 1
    (pending,) = outbox_pending(client=r)
    assert pending.attempts == 1 and "mail server is away" in pending.last_error
    assert pending.due_ms == at + 60_000  # a minute later
    assert outbox_send(client=r, at_ms=at + 1_000).failed == 0  # not due yet: not tried
    assert outbox_send(client=r, at_ms=at + 60_000).failed == 1
    (pending,) = outbox_pending(client=r)
    assert pending.attempts == 2 and pending.due_ms == at + 60_000 + 120_000
    settings.EMAIL_BACKEND = "strongroom.mail.FilePerMessageBackend"  # type: ignore[attr-defined]
    assert outbox_send(client=r, at_ms=at + 180_000).sent == 1
    assert not outbox_pending(client=r)
    assert r.hlen(ks.MAIL_TRIES.key()) == 0
    assert len(messages_in(mail_dir)) == 1


def test_a_failed_message_is_due_at_its_next_try_however_often_the_pass_touches_its_own(
    r: redis.Redis, buyer: Someone, settings: object, mail_dir: Path, monkeypatch: Any
) -> None:
    """The pass touches the entries it works on (so no other sender takes them); a touch that
    came after a failure's idle mark made the failed entry look busy again, and its next try
    waited RECOVER_MS more (a flaky receipt test under load). Touching all the time: every
    failed entry stays idle, and the next pass takes them all up at once."""
    monkeypatch.setattr(outbox_delivery, "TOUCH_S", 0.0002)
    with_address(r, buyer, "anna@example.test")
    for room in range(21, 33):
        book(r, buyer, room=room)
    settings.EMAIL_BACKEND = f"{__name__}.BrokenBackend"  # type: ignore[attr-defined]
    at = int(time.time() * 1000) + 1_000
    assert outbox_send(client=r, at_ms=at).failed == 12
    idle = [
        int(p["time_since_delivered"])
        for room in range(21, 33)
        for p in r.xpending_range(
            ks.BOOKING_OUTBOX.key(room=f"{room:03d}"), "senders", "-", "+", 10
        )
    ]
    assert len(idle) == 12 and min(idle) >= outbox_delivery.RECOVER_MS, idle
    assert outbox_send(client=r, at_ms=at + 60_000).failed == 12  # all due again, all tried


def test_a_booking_post_takes_no_extra_round_trip_for_its_mail(
    r: redis.Redis, buyer: Someone
) -> None:
    """The receipt is written by the claim function itself: it is there when the claim returns."""
    booking = book(r, buyer)
    entries = text_stream(r.xrange(ks.BOOKING_OUTBOX.key(room="007")))
    assert [fields["m"] for _, fields in entries] == [f"confirm|{booking.id}|{buyer.id}"]


def test_a_buyer_cancellation_mails_the_buyer_without_a_staff_reason(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    with_address(r, buyer, "anna@example.test")
    booking = book(r, buyer)
    done = booking_cancel(
        client=r, booking_id=booking.id, actor_id=str(buyer.id), actor_is_staff=False
    )
    assert done.ok
    outbox_send(client=r)
    texts = [body_of(m) for m in messages_in(mail_dir)]
    assert any("You cancelled your booking" in t for t in texts)


def reset_link(directory: Path) -> str:
    (message,) = [m for m in messages_in(directory) if "password" in subject_of(m).lower()]
    match = re.search(r"https?://[^/\s]+(/accounts/password/reset/\S+)", body_of(message))
    assert match
    return match.group(1)


def test_password_reset_works_once_and_not_twice(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    with_address(r, buyer, "anna@example.test")
    browser = Client()
    answer = browser.post("/accounts/password/forgot/", {"login": "ANNA@example.test"})
    assert answer.status_code == 200
    outbox_send(client=r)
    link = reset_link(mail_dir)
    page = browser.get(link)
    assert page.status_code == 200
    assert "no-store" in page["Cache-Control"]  # its address carries the token
    new = {"new_password1": "a-fresh-Secret-42", "new_password2": "a-fresh-Secret-42"}
    assert browser.post(link, new).status_code == 302
    login = services.login_attempt(
        client=r, username=buyer.username, password="a-fresh-Secret-42", client_id="t"
    )
    assert login.person is not None
    again = Client()
    assert again.get(link).status_code == 400
    other = {"new_password1": "another-Secret-43", "new_password2": "another-Secret-43"}
    assert again.post(link, other).status_code == 400
    still = services.login_attempt(
        client=r, username=buyer.username, password="a-fresh-Secret-42", client_id="t"
    )
    assert still.person is not None


def test_a_reset_through_the_mail_lifts_the_lock_guessing_left_on_that_connection(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    """Five wrong passwords lock (name, connection); the owner who resets through the mail
    logs in with the new password from that connection at once, not in 15 minutes."""
    with_address(r, buyer, "anna@example.test")
    for n in range(5):
        Client().post("/accounts/login/", {"username": buyer.username, "password": f"bad-{n}"})
    locked = Client().post(
        "/accounts/login/", {"username": buyer.username, "password": buyer.password}
    )
    assert locked.status_code == 429
    Client().post("/accounts/password/forgot/", {"login": buyer.username})
    outbox_send(client=r)
    new = {"new_password1": "a-fresh-Secret-42", "new_password2": "a-fresh-Secret-42"}
    assert Client().post(reset_link(mail_dir), new).status_code == 302
    answer = Client().post(
        "/accounts/login/", {"username": buyer.username, "password": "a-fresh-Secret-42"}
    )
    assert answer.status_code == 302


def test_a_reset_link_expires(r: redis.Redis, buyer: Someone, mail_dir: Path) -> None:
    with_address(r, buyer, "anna@example.test")
    Client().post("/accounts/password/forgot/", {"login": buyer.username})
    outbox_send(client=r)
    link = reset_link(mail_dir)
    assert Client().get(link).status_code == 200
    # A timestamp, not a datetime: Django's generator reads the naive local clock.
    with time_machine.travel(time.time() + 61 * 60, tick=False):
        assert Client().get(link).status_code == 400


def test_forgot_password_says_the_same_for_unknown_people_and_sends_nothing(
    r: redis.Redis, mail_dir: Path
) -> None:
    answer = Client().post("/accounts/password/forgot/", {"login": "nobody@example.test"})
    assert answer.status_code == 200
    assert outbox_send(client=r).sent == 0


def test_email_verification_keeps_the_way_back(
    r: redis.Redis,
    mail_dir: Path,
    settings: object,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    settings.AUTH_PASSWORD_VALIDATORS = []  # type: ignore[attr-defined]
    browser = Client()
    back = "/book/?cls=A&room=7&date=2026-12-05"
    answer = browser.post(
        "/accounts/signup/",
        {
            "username": "newcomer",
            "email": "New@Example.test",
            "password1": "long-enough-pass-1",
            "password2": "long-enough-pass-1",
            "next": back,
        },
    )
    assert answer.status_code == 302 and answer["Location"] == back
    outbox_send(client=r)
    (message,) = messages_in(mail_dir)
    assert message["To"] == "new@example.test"
    match = re.search(r"https?://[^/\s]+(/accounts/verify/\S+)", body_of(message))
    assert match
    # Opening the link (a mail scanner, a link preview) confirms nothing: its page's button does.
    opened = Client().get(match.group(1))
    assert opened.status_code == 200 and "new@example.test" in opened.content.decode()
    assert r.hget(ks.PERSON_BY_EMAIL.key(), "new@example.test") is None
    verified = Client().post(match.group(1))
    assert verified.status_code == 302 and verified["Location"] == back
    person_id = r.hget(ks.PERSON_BY_EMAIL.key(), "new@example.test")
    assert person_id is not None
    assert r.hget(ks.PERSON.key(person_id=person_id), "email_verified") == "1"
    # Opened where someone else is signed in, the link does not say "your address".
    elsewhere = client_for(buyer).post(match.group(1), follow=True).content.decode()
    assert "another account" in elsewhere and "Your email address is confirmed" not in elsewhere


def test_staff_see_the_mail_queue_with_attempts_and_errors(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    settings: object,
    client_for: Callable[[Someone], Client],
    mail_dir: Path,
) -> None:
    with_address(r, buyer, "anna@example.test")
    booking = book(r, buyer)
    settings.EMAIL_BACKEND = f"{__name__}.BrokenBackend"  # type: ignore[attr-defined]
    outbox_send(client=r)
    page = client_for(staff).get("/staff/mail/").content.decode()
    assert f"{booking.id}" in page and "mail server is away" in page and "room 007" in page
    assert client_for(buyer).get("/staff/mail/").status_code == 403


def test_the_served_site_sends_queued_mail_by_itself(
    r: redis.Redis, buyer: Someone, tmp_path: Path
) -> None:
    """gunicorn workers run the sender thread: a queued message becomes a file, unprompted."""
    from django.conf import settings as django_settings

    from strongroom.outbox import mail_queue
    from tests.conftest import serve_site, site_env

    with_address(r, buyer, "anna@example.test")
    data_dir = tmp_path / "site"
    env = site_env(str(django_settings.REDIS_URL), data_dir, STRONGROOM_MAIL_SENDER="1")
    process, _base = serve_site(env, workers=1)
    try:
        mail_queue(r, kind="reset", args=(buyer.id, "served"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list((data_dir / "mail").glob("*.eml")):
            time.sleep(0.2)
        (message,) = messages_in(data_dir / "mail")
        assert message["To"] == "anna@example.test"
        assert not outbox_pending(client=r)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_resending_the_confirmation_link_queues_one_message_per_ten_minutes(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    browser = client_for(buyer)
    browser.post(
        "/accounts/me/email/",
        {"email": "anna@example.test", "language": "en", "current_password": buyer.password},
    )
    for _ in range(5):
        assert browser.post("/accounts/me/email/again/").status_code == 302
    kinds = [p.kind for p in outbox_pending(client=r)]
    assert kinds == ["verify", "verify"]  # the first link and one resend


def test_changing_the_address_back_and_forth_cannot_flood_an_inbox(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    browser = client_for(buyer)
    for n in range(20):
        address = "target@example.org" if n % 2 else "other@example.org"
        response = browser.post(
            "/accounts/me/email/",
            {"email": address, "language": "en", "current_password": buyer.password},
        )
        assert response.status_code == 302
    assert [p.kind for p in outbox_pending(client=r)] == ["verify"] * emails.VERIFY_MAILS_PER_PERSON
    page = browser.get("/accounts/me/", follow=True).content.decode()
    assert "ask for the link again from your account later" in page.replace("\n", " ")
    assert r.hget(ks.PERSON.key(person_id=buyer.id), "email") == "target@example.org"
    # Other people's accounts add at most a few more mails to one address, in all.
    r.delete(ks.MAIL_OUTBOX.key())
    for someone in (second_buyer, staff):
        for _ in range(3):
            emails.email_set(client=r, person_id=someone.id, email="victim@example.org")
            emails.email_set(client=r, person_id=someone.id, email="")
    assert len(outbox_pending(client=r)) == emails.VERIFY_MAILS_PER_ADDRESS


def test_asking_for_a_reset_again_and_again_sends_one_mail(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    with_address(r, buyer, "anna@example.test")
    for _ in range(5):
        Client().post("/accounts/password/forgot/", {"login": buyer.username})
    assert outbox_send(client=r).sent == 1
